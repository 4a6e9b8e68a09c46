package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// ml3Records generates n rows shaped like the ml-3 workload's input for
// one window task: keys uniform over nKeys, event times uniform over 30
// days (arrival not in event-time order), 1 000 merchants, in batches of
// 8 192 rows of tileSchema.
func ml3Records(nKeys, n int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(3, 11))
	merchants := make([]string, 1000)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("m%04d", i)
	}
	const span = 30 * 24 * 3600 * 1000
	var out []arrow.RecordBatch
	for seq := 0; seq < n; {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for i := 0; i < 8192 && seq < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(1_700_000_000_000 + rng.Int64N(span))
			b.Field(1).(*array.Int64Builder).Append(int64(seq))
			b.Field(2).(*array.Int64Builder).Append(rng.Int64N(int64(nKeys)))
			b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(50000)) / 100)
			b.Field(4).(*array.StringBuilder).Append(merchants[rng.IntN(len(merchants))])
			seq++
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// ml3Config is the window operator of the ml-3 query over tileSchema
// (arguments amount and cat): topn_frequency(merchant, 5) over 7 days,
// sum_cate(amount, merchant) over 24 hours and top1_ratio(merchant) over
// 30 days, in batch order.
func ml3Config(tb testing.TB) Config { return ml3ConfigOf(tb, arrow.BinaryTypes.String) }

// ml3ConfigOf is ml3Config with merchants of type mt.
func ml3ConfigOf(tb testing.TB, mt arrow.DataType) Config {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	merchant := agg.Arg{Type: mt, Col: 1}
	five := agg.Arg{IsConst: true, Const: int64(5), Col: -1, Type: arrow.PrimitiveTypes.Int64}
	const hour = 3600 * 1000
	return Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, BatchOrder: true, Windows: []Spec{
		{Frame: Frame{Preceding: 7 * 24 * hour}, Aggs: []agg.Func{bindFunc(tb, "topn_frequency", merchant, five)}},
		{Frame: Frame{Preceding: 24 * hour}, Aggs: []agg.Func{bindFunc(tb, "sum_cate", amount, merchant)}},
		{Frame: Frame{Preceding: 30 * 24 * hour}, Aggs: []agg.Func{bindFunc(tb, "top1_ratio", merchant)}},
	}}
}

// TestBatchReleaseChunks releases 30 000 rows of the ml-3 query at once,
// with result chunks of 2 048 rows, so that their list and map results are
// built in many chunks, each after the first reserved from the size of the
// one before (reserveShape), and checks every row's results against
// releasing the same rows in ten smaller steps with chunks of the default
// size.
func TestBatchReleaseChunks(t *testing.T) {
	recs := ml3Records(600, 30_000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	const t0, span = 1_700_000_000_000, 30 * 24 * 3600 * 1000
	run := func(steps, chunkRows int) map[int64]string {
		op, err := New(ml3Config(t), tileSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		op.chunkRows = chunkRows
		for _, r := range recs {
			if _, _, err := op.Push(r); err != nil {
				t.Fatal(err)
			}
		}
		out := map[int64]string{}
		collect := func(rec arrow.RecordBatch) error {
			defer rec.Release()
			seq := rec.Column(1).(*array.Int64).Int64Values()
			n := int(rec.NumCols())
			for i := range seq {
				out[seq[i]] = fmt.Sprint(rec.Column(n-3).ValueStr(i), "|", rec.Column(n-2).ValueStr(i), "|", rec.Column(n-1).ValueStr(i))
			}
			return nil
		}
		for k := 1; k < steps; k++ {
			if err := op.AdvanceFunc(context.Background(), t0+span*int64(k)/int64(steps), collect); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.AdvanceFunc(context.Background(), End, collect); err != nil {
			t.Fatal(err)
		}
		return out
	}
	whole, steps := run(1, 2048), run(10, 0)
	if len(whole) != 30_000 || len(steps) != 30_000 {
		t.Fatalf("%d and %d rows out, want 30000", len(whole), len(steps))
	}
	for seq, w := range whole {
		if s := steps[seq]; s != w {
			t.Fatalf("row %d: released at once %s, in steps %s", seq, w, s)
		}
	}
}

// BenchmarkOperatorBatchML3 runs the ml-3 query's window operator as one
// batch-mode task does: every row pushed, then one Advance to End that
// evaluates topn_frequency(merchant, 5) over 7 days, sum_cate(amount,
// merchant) over 24 hours and top1_ratio(merchant) over 30 days, builds
// the results and emits them in arrival order. ns/row and allocs/row are
// per input row.
func BenchmarkOperatorBatchML3(b *testing.B) {
	for _, perKey := range []int{10, 50} {
		const rows = 200_000
		recs := ml3Records(rows/perKey, rows)
		cfg := ml3Config(b)
		b.Run(fmt.Sprintf("rows_per_key=%d", perKey), func(b *testing.B) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			c0 := cpuNanos()
			b.ReportAllocs()
			for b.Loop() {
				op := openOp(b, cfg)
				for _, r := range recs {
					push(b, op, r)
				}
				advanceDiscard(b, op, End)
				op.Close()
			}
			runtime.ReadMemStats(&m1)
			n := float64(b.N) * rows
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/row")
			b.ReportMetric(float64(cpuNanos()-c0)/n, "cpu-ns/row")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/row")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/row")
		})
		for _, r := range recs {
			r.Release()
		}
	}
}

// cpuNanos is the process's user and system CPU time so far: on a shared
// machine, CPU time per row is steadier than wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// ml3TimedRecords generates n rows like ml3Records but in event-time
// order, as the ml-3 workload's file is, with merchants as strings
// ("m0042") or, when mt is int64, as their numbers; the schema is
// tileSchema's with cat of type mt.
func ml3TimedRecords(nKeys, n int, mt arrow.DataType) (*arrow.Schema, []arrow.RecordBatch) {
	fields := slices.Clone(tileSchema.Fields())
	fields[4].Type = mt
	schema := arrow.NewSchema(fields, nil)
	rng := rand.New(rand.NewPCG(3, 11))
	const span = 30 * 24 * 3600 * 1000
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = 1_700_000_000_000 + rng.Int64N(span)
	}
	slices.Sort(ts)
	var out []arrow.RecordBatch
	for seq := 0; seq < n; {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := 0; i < 8192 && seq < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(ts[seq])
			b.Field(1).(*array.Int64Builder).Append(int64(seq))
			b.Field(2).(*array.Int64Builder).Append(rng.Int64N(int64(nKeys)))
			b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(50000)) / 100)
			m := rng.IntN(1000)
			switch mb := b.Field(4).(type) {
			case *array.StringBuilder:
				mb.Append(fmt.Sprintf("m%04d", m))
			case *array.Int64Builder:
				mb.Append(int64(m))
			}
			seq++
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return schema, out
}

// BenchmarkOperatorML3Releases runs the ml-3 operator as a batch run over
// a time-ordered file does: 1 M rows over 20 000 keys (50 a key, as in
// the workload), released every 163 840 rows (a Parquet row group's
// worth), so every release visits nearly every key once, its state out of
// cache, and the state of all keys (30 days of rows and value counts) is
// live throughout. BenchmarkOperatorBatchML3 releases once, key by key,
// with each key's state in cache. merchant=string is the workload;
// merchant=int64 shows what string values cost in the aggregates' tables,
// the rows held and the collector (their results are numbers too, so the
// difference bounds what keeping values as numbers internally could save).
func BenchmarkOperatorML3Releases(b *testing.B) {
	const rows, keys, every = 1 << 20, 20_000, 163_840
	for _, mt := range []arrow.DataType{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64} {
		schema, recs := ml3TimedRecords(keys, rows, mt)
		cfg := ml3ConfigOf(b, mt)
		name := "merchant=string"
		if mt.ID() == arrow.INT64 {
			name = "merchant=int64"
		}
		b.Run(name, func(b *testing.B) {
			c0 := cpuNanos()
			for b.Loop() {
				op, err := New(cfg, schema)
				if err != nil {
					b.Fatal(err)
				}
				since := 0
				for _, r := range recs {
					push(b, op, r)
					if since += int(r.NumRows()); since >= every {
						ts := r.Column(0).(*array.Int64).Int64Values()
						advanceDiscard(b, op, ts[len(ts)-1]-1)
						since = 0
					}
				}
				advanceDiscard(b, op, End)
				op.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N*rows), "cpu-ns/row")
		})
		for _, r := range recs {
			r.Release()
		}
	}
}
