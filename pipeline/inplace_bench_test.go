package pipeline

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// BenchmarkBatchResults: a batch run of features-4's query (BENCHMARKS.md)
// over 2 tasks, 400 000 time-ordered events of 20 000 users in 8 192-row
// batches, with the tasks' results written in place into each batch's
// window.Dest ("in-place") or sent as result arrays the merger gathers
// into arrival order ("gather", as before in-place writing existed, and
// as lists and maps still are).
func BenchmarkBatchResults(b *testing.B) {
	const events, users, batchRows = 400_000, 20_000, 8192
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(7, 8))
	var recs []arrow.RecordBatch
	const span = 30 * 86_400_000
	for lo := 0; lo < events; lo += batchRows {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := lo; i < min(events, lo+batchRows); i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.Int64Builder).Append(rng.Int64N(users))
			bld.Field(2).(*array.Int64Builder).Append(int64(i) * span / events)
			bld.Field(3).(*array.Float64Builder).Append(rng.Float64() * 100)
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	plan, err := ParseSQL(`SELECT id, user_id, ts,
       sum(amount) OVER w1h AS spend_1h, count(*) OVER w24h AS n_24h,
       avg(amount) OVER w7d AS avg_7d,   max(amount) OVER w1h AS max_1h
FROM tx
WINDOW w1h  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       w24h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '24' HOUR PRECEDING AND CURRENT ROW),
       w7d  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)`)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(plan, schema, "ts")
	if err != nil {
		b.Fatal(err)
	}
	for _, inPlace := range []bool{false, true} {
		name := "gather"
		if inPlace {
			name = "in-place"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { resultsInPlace = old }(resultsInPlace)
			resultsInPlace = inPlace
			before := destRuns.Load()
			b.ReportAllocs()
			for b.Loop() {
				rows := 0
				out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
					rows += int(rec.NumRows())
					rec.Release()
					return nil
				})
				src := source.NewMemory(schema, recs...)
				if err := c.Run(context.Background(), src, out, RunOptions{Mode: Batch, Parallelism: 2}); err != nil {
					b.Fatal(err)
				}
				src.Close()
				if rows != events {
					b.Fatalf("%d rows out, want %d", rows, events)
				}
			}
			if wrote := destRuns.Load() > before; wrote != inPlace {
				b.Fatalf("results written in place: %v, want %v", wrote, inPlace)
			}
			perRow(b, events)
		})
	}
}
