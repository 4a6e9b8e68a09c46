package window

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// BenchmarkLookupDuringIngest measures what ingest costs a concurrent
// lookup: an operator holding 30 days of rows for 20 000 keys (~50 rows
// each, the lookup workload's 30-day pipeline at 1 M events, one of its
// two tasks) ingests batches of 250 rows (its share of the workload's
// 500-row batches) while another goroutine looks keys up. Advance holds
// the operator's write lock for a whole batch, so its duration (advance-
// p50/p99-us) bounds how long a lookup can wait; lookup-p50/p99-us are
// the lookups' latencies meanwhile.
func BenchmarkLookupDuringIngest(b *testing.B) {
	const (
		keys = 20_000
		span = 30 * 86_400_000
	)
	rng := rand.New(rand.NewPCG(5, 6))
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	bind := func(name string, args ...agg.Arg) agg.Func {
		f, err := agg.Bind(name, args)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, Retention: 2 * span,
		Windows: []Spec{{Frame: Frame{Preceding: span}, Aggs: []agg.Func{
			bind("sum", amount), bind("count", agg.Arg{Star: true, Col: -1}), bind("avg", amount), bind("max", amount)}}}}
	var seq, ts int64
	batch := func(rows int, step int64) arrow.RecordBatch {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		defer bld.Release()
		for range rows {
			ts += rng.Int64N(2 * step)
			bld.Field(0).(*array.Int64Builder).Append(ts)
			bld.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			bld.Field(2).(*array.Int64Builder).Append(rng.Int64N(keys))
			bld.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
			bld.Field(4).(*array.StringBuilder).Append("a")
		}
		return bld.NewRecordBatch()
	}
	op, err := New(cfg, tileSchema)
	if err != nil {
		b.Fatal(err)
	}
	defer op.Close()
	ctx := context.Background()
	advance := func(rec arrow.RecordBatch) time.Duration {
		if _, _, err := op.Push(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		t0 := time.Now()
		outs, err := op.Advance(ctx, ts-1)
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			o.Release()
		}
		return d
	}
	const logRows = keys * 50
	for range logRows / 4096 {
		advance(batch(4096, span/logRows))
	}
	types := op.KeyTypes()
	bld := make([]array.Builder, 0, 4)
	for _, rt := range op.ResultTypes() {
		bld = append(bld, array.NewBuilder(memory.DefaultAllocator, rt))
	}
	states := op.NewLookupStates()
	b.ResetTimer()
	var stop atomic.Bool
	var lookups []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lrng := rand.New(rand.NewPCG(8, 9))
		var key []byte
		for !stop.Load() {
			key, _ = EncodeKeyValues(key[:0], types, []any{lrng.Int64N(keys)})
			t := ts - lrng.Int64N(span)
			t0 := time.Now()
			if _, err := op.LookupWith(key, t, nil, bld, states); err != nil {
				panic(err)
			}
			lookups = append(lookups, time.Since(t0))
			for _, b := range bld {
				b.NewArray().Release()
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	var adv []time.Duration
	for b.Loop() {
		adv = append(adv, advance(batch(250, span/logRows)))
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	b.StopTimer()
	for _, s := range [][]time.Duration{adv, lookups} {
		slices.Sort(s)
	}
	q := func(s []time.Duration, f float64) float64 {
		return float64(s[int(f*float64(len(s)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(adv, 0.5), "advance-p50-us")
	b.ReportMetric(q(adv, 0.99), "advance-p99-us")
	b.ReportMetric(q(lookups, 0.5), "lookup-p50-us")
	b.ReportMetric(q(lookups, 0.99), "lookup-p99-us")
}
