package window

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/statestore"
)

func benchRecords(keys, n, rows int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []arrow.RecordBatch
	var seq int64
	ts := int64(1_700_000_000_000)
	for range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for range rows {
			ts += int64(rng.IntN(3))
			b.Field(0).(*array.Int64Builder).Append(ts)
			b.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			b.Field(2).(*array.Int64Builder).Append(int64(rng.IntN(keys)))
			b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(10000)) / 100)
			b.Field(4).(*array.StringBuilder).Append("abcd"[rng.IntN(4):][:1])
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// openOp returns a new operator over tileSchema; the caller closes it
// (newOp closes it when the test ends).
func openOp(tb testing.TB, cfg Config) *Operator {
	tb.Helper()
	op, err := New(cfg, tileSchema)
	if err != nil {
		tb.Fatal(err)
	}
	return op
}

// push pushes rec into op, failing on an error.
func push(tb testing.TB, op *Operator, rec arrow.RecordBatch) {
	tb.Helper()
	if _, _, err := op.Push(rec); err != nil {
		tb.Fatal(err)
	}
}

// advanceDiscard advances op to wm and releases what it emits.
func advanceDiscard(tb testing.TB, op *Operator, wm int64) {
	tb.Helper()
	err := op.AdvanceFunc(context.Background(), wm, func(rec arrow.RecordBatch) error {
		rec.Release()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkOperatorStreaming: 100k rows over 5000 keys in batches of
// 1000, the watermark advanced after each; RANGE, ROWS and UNBOUNDED
// frames; no store (the hot path).
func BenchmarkOperatorStreaming(b *testing.B) {
	recs := benchRecords(5000, 100, 1000)
	bind := func(name string, args ...agg.Arg) agg.Func {
		f, err := agg.Bind(name, args)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	aggs := func() []agg.Func {
		return []agg.Func{bind("count", agg.Arg{Star: true, Col: -1}), bind("sum", amount), bind("max", amount), bind("first_value", amount)}
	}
	cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, Windows: []Spec{
		{Frame: Frame{Preceding: 10_000}, Aggs: aggs()},
		{Frame: Frame{Rows: true, Preceding: 5}, Aggs: aggs()},
		{Frame: Frame{Unbounded: true}, Aggs: aggs()},
	}}
	b.ReportAllocs()
	for b.Loop() {
		op := openOp(b, cfg)
		for _, r := range recs {
			push(b, op, r)
			ts := r.Column(0).(*array.Int64).Int64Values()
			advanceDiscard(b, op, ts[len(ts)-1]-5)
		}
		op.Close()
	}
}

// BenchmarkCheckpointBadger: Checkpoint of 100k dirty keys to a view of a
// Badger store (one write batch, not a transaction per key).
func BenchmarkCheckpointBadger(b *testing.B) {
	b.ReportAllocs()
	benchCheckpoints(b, 10_000, 100_000, func(op *Operator) error {
		_, err := op.Checkpoint()
		return err
	})
}

// benchCheckpoints times checkpoint on operators that have taken
// benchRecords(keys, 100, 2000) with a sum over a frame of preceding ms,
// their state going to Badger on disk; it reports the keys written.
func benchCheckpoints(b *testing.B, preceding int64, keys int, checkpoint func(op *Operator) error) {
	db, err := statestore.OpenBadger(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	sum, _ := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4},
		Windows: []Spec{{Frame: Frame{Preceding: preceding}, Aggs: []agg.Func{sum}}},
		Store:   statestore.Sub(db, "op/0/0/")}
	recs := benchRecords(keys, 100, 2000)
	for b.Loop() {
		b.StopTimer()
		op, err := New(cfg, tileSchema)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if _, _, err := op.Push(r); err != nil {
				b.Fatal(err)
			}
		}
		outs, err := op.Advance(context.Background(), End)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			o.Release()
		}
		b.StartTimer()
		if err := checkpoint(op); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(op.Stats().CheckpointKeys), "keys/op")
		op.Close()
	}
}

// BenchmarkOperatorPaging: one 30-day frame over 20 keys with 1 000 events
// a day each for 60 days, one Advance a day, without and with row paging
// (into Badger on disk); reports ns per row and the rows and bytes (the
// encoded key state) a key holds in memory at the end.
func BenchmarkOperatorPaging(b *testing.B) {
	const day, keys, perDay, days = 24 * 3600_000, 20, 1000, 60
	var recs []arrow.RecordBatch
	rng := rand.New(rand.NewPCG(3, 3))
	ts, seq := int64(1_700_000_000_000), int64(0)
	for range days {
		bl := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for range keys * perDay {
			ts += rng.Int64N(2 * day / (keys * perDay))
			bl.Field(0).(*array.Int64Builder).Append(ts)
			bl.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			bl.Field(2).(*array.Int64Builder).Append(rng.Int64N(keys))
			bl.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(10000)) / 100)
			bl.Field(4).(*array.StringBuilder).Append("abcd"[rng.IntN(4):][:1])
		}
		recs = append(recs, bl.NewRecordBatch())
		bl.Release()
	}
	for _, paged := range []bool{false, true} {
		name := "all-rows"
		if paged {
			name = "paged"
		}
		b.Run(name, func(b *testing.B) {
			cfg := pagedConfig(b, 30*day, 3600_000, 0)
			cfg.Windows = cfg.Windows[:1]
			var rows, bytes float64
			for b.Loop() {
				c := cfg
				if paged {
					st, err := statestore.OpenBadger(b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					c.Store, c.PageRows = st, 4096
					defer st.Close()
				}
				op, err := New(c, tileSchema)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if _, _, err := op.Push(r); err != nil {
						b.Fatal(err)
					}
					v := r.Column(0).(*array.Int64).Int64Values()
					outs, err := op.Advance(context.Background(), v[len(v)-1])
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range outs {
						o.Release()
					}
				}
				rows = float64(op.Stats().Retained) / keys
				bytes = 0
				for _, ks := range op.states {
					enc, err := op.encodeKeyState(ks)
					if err != nil {
						b.Fatal(err)
					}
					bytes += float64(len(enc)) / keys
				}
				op.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys*perDay*days), "ns/row")
			b.ReportMetric(rows, "rows/key")
			b.ReportMetric(bytes, "bytes/key")
		})
	}
}

// BenchmarkIncrementalCheckpoint: a checkpoint of 100 changed keys among
// 200 000 held, in memory: the barrier step visits the changed keys
// (Operator.dirtyIDs), not every key.
func BenchmarkIncrementalCheckpoint(b *testing.B) {
	sum, _ := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4},
		Windows: []Spec{{Frame: Frame{Preceding: 10_000}, Aggs: []agg.Func{sum}}},
		Store:   statestore.NewMemory()}
	op := openOp(b, cfg)
	defer op.Close()
	ts := int64(1_700_000_000_000)
	push := func(rec arrow.RecordBatch) {
		defer rec.Release()
		if _, _, err := op.Push(rec); err != nil {
			b.Fatal(err)
		}
		last := rec.Column(0).(*array.Int64).Value(int(rec.NumRows()) - 1)
		outs, err := op.Advance(context.Background(), last)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			o.Release()
		}
	}
	seq := int64(0)
	batch := func(keys []int64) arrow.RecordBatch {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		defer bld.Release()
		for _, k := range keys {
			ts++
			bld.Field(0).(*array.Int64Builder).Append(ts)
			bld.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			bld.Field(2).(*array.Int64Builder).Append(k)
			bld.Field(3).(*array.Float64Builder).Append(1)
			bld.Field(4).(*array.StringBuilder).Append("a")
		}
		return bld.NewRecordBatch()
	}
	all := make([]int64, 200_000)
	for i := range all {
		all[i] = int64(i)
	}
	push(batch(all))
	if _, err := op.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	few := make([]int64, 100)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := range few {
			few[i] = rng.Int64N(int64(len(all)))
		}
		push(batch(few))
		b.StartTimer()
		if _, err := op.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(op.Stats().CheckpointKeys), "keys/op")
}

// BenchmarkCheckpointEncoderIdle: a checkpoint of 20 000 changed keys,
// ten rows each, into Badger on disk, written by the encoder alone while
// the operator waits (an idle pipeline). The encoder rests only when it
// is in a working operator's way (ckptPacer), so here it writes at full
// speed; the time is barrier to flushed batch.
func BenchmarkCheckpointEncoderIdle(b *testing.B) {
	benchCheckpoints(b, 1<<40, 20_000, func(op *Operator) error {
		if _, err := op.BeginCheckpoint(); err != nil {
			return err
		}
		<-op.CheckpointEncoded()
		flush, err := op.WriteCheckpoint(0)
		if err != nil {
			return err
		}
		return flush()
	})
}
