package window

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// BenchmarkGroupBatch: GROUP BY key, tumble(ts, 10 s) with count, sum and
// max over 500 000 rows of 25 000 keys (about a window a row, as an
// hourly GROUP BY of users is), in batches of 8 192 rows, as a batch run
// feeds it: time-ordered rows released as their times pass (the source's
// lower bound), and the same rows sorted by key, released key by key
// (Clustered, FinishBefore at the start of each batch's last key), a
// range of rows a window at a time (emitRuns) and, for comparison,
// through the general path's tables and sorts; and the same clustered
// rows in hopping windows of 10 s every 5 s.
func BenchmarkGroupBatch(b *testing.B) {
	const keys, batches, rows = 25_000, 61, 8192
	timeOrdered := benchRecords(keys, batches, rows)
	byKey := sortedByKey(b, timeOrdered, rows)
	defer func() {
		for _, r := range slices.Concat(timeOrdered, byKey) {
			r.Release()
		}
	}()
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cfg := GroupConfig{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, SizeMs: 10_000, SlideMs: 10_000,
		Aggs: []agg.Func{bindFunc(b, "count", agg.Arg{Star: true, Col: -1}), bindFunc(b, "sum", amount), bindFunc(b, "max", amount)}}
	for _, c := range []struct {
		name      string
		recs      []arrow.RecordBatch
		clustered bool
		general   bool
		slide     int64
	}{{"time-ordered", timeOrdered, false, false, 10_000}, {"clustered", byKey, true, false, 10_000},
		{"clustered-general", byKey, true, true, 10_000},
		{"clustered-hop", byKey, true, false, 5_000}, {"clustered-hop-general", byKey, true, true, 5_000}} {
		b.Run(c.name, func(b *testing.B) {
			defer func(old bool) { runsOff = old }(runsOff)
			runsOff = c.general
			cfg := cfg
			cfg.Clustered = c.clustered
			cfg.SlideMs = c.slide
			b.ReportAllocs()
			windows := 0
			for b.Loop() {
				g, err := NewGroup(cfg, tileSchema)
				if err != nil {
					b.Fatal(err)
				}
				windows = 0
				emit := func(outs []arrow.RecordBatch, err error) {
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range outs {
						windows += int(o.NumRows())
						o.Release()
					}
				}
				for _, r := range c.recs {
					if _, _, err := g.Push(r); err != nil {
						b.Fatal(err)
					}
					ts := r.Column(0).(*array.Int64).Int64Values()
					if c.clustered {
						keys := r.Column(2).(*array.Int64).Int64Values()
						seqs := r.Column(1).(*array.Int64).Int64Values()
						i := len(keys) - 1
						for i > 0 && keys[i-1] == keys[len(keys)-1] {
							i--
						}
						g.FinishBefore(seqs[i], true)
						emit(g.Advance(context.Background(), None))
					} else {
						emit(g.Advance(context.Background(), ts[len(ts)-1]-1))
					}
				}
				emit(g.Advance(context.Background(), End))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batches*rows), "ns/row")
			b.ReportMetric(float64(windows), "windows")
		})
	}
}

// sortedByKey returns the rows of recs (tileSchema) sorted by key (column
// 2), each key's in time order, with sequence numbers in the new order,
// in batches of rows.
func sortedByKey(tb testing.TB, recs []arrow.RecordBatch, rows int) []arrow.RecordBatch {
	tb.Helper()
	type row struct {
		ts, key int64
		amount  float64
		tag     string
	}
	var all []row
	for _, r := range recs {
		ts := r.Column(0).(*array.Int64).Int64Values()
		key := r.Column(2).(*array.Int64).Int64Values()
		amount := r.Column(3).(*array.Float64).Float64Values()
		tag := r.Column(4).(*array.String)
		for i := range ts {
			all = append(all, row{ts[i], key[i], amount[i], tag.Value(i)})
		}
	}
	slices.SortStableFunc(all, func(a, b row) int { return cmp.Compare(a.key, b.key) })
	var out []arrow.RecordBatch
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
	defer bld.Release()
	for i, r := range all {
		bld.Field(0).(*array.Int64Builder).Append(r.ts)
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
		bld.Field(2).(*array.Int64Builder).Append(r.key)
		bld.Field(3).(*array.Float64Builder).Append(r.amount)
		bld.Field(4).(*array.StringBuilder).Append(r.tag)
		if (i+1)%rows == 0 || i == len(all)-1 {
			out = append(out, bld.NewRecordBatch())
		}
	}
	return out
}
