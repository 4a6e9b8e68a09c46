package source_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/source"
)

// TestMemoryLowerBound: after every Read, LowerBound is the least time
// (milliseconds, rounded down) of the batches not wholly returned, for
// timestamps of every unit and int64 times, with NULLs and sliced reads.
func TestMemoryLowerBound(t *testing.T) {
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64,
		&arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond},
		&arrow.TimestampType{Unit: arrow.Microsecond}, &arrow.TimestampType{Unit: arrow.Nanosecond}}
	toMillis := map[arrow.TimeUnit]func(int64) int64{
		arrow.Second: func(v int64) int64 { return v * 1000 }, arrow.Millisecond: func(v int64) int64 { return v },
		arrow.Microsecond: func(v int64) int64 { return floorDiv(v, 1000) }, arrow.Nanosecond: func(v int64) int64 { return floorDiv(v, 1000000) },
	}
	for seed := range uint64(30) {
		dt := types[seed%uint64(len(types))]
		t.Run(fmt.Sprintf("%d-%s", seed, dt), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: dt, Nullable: true}}, nil)
			ms := func(v int64) int64 { return v }
			if tt, ok := dt.(*arrow.TimestampType); ok {
				ms = toMillis[tt.Unit]
			}
			var recs []arrow.RecordBatch
			var batches [][]int64 // math.MinInt64: NULL
			for range 1 + rng.IntN(6) {
				b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
				var vals []int64
				for range 1 + rng.IntN(12) {
					v := rng.Int64N(2_000_000_000) - 1_000_000_000
					if rng.IntN(8) == 0 {
						b.Field(0).AppendNull()
						v = math.MinInt64
					} else if ib, ok := b.Field(0).(*array.Int64Builder); ok {
						ib.Append(v)
					} else {
						b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
					}
					vals = append(vals, v)
				}
				recs = append(recs, b.NewRecordBatch())
				b.Release()
				batches = append(batches, vals)
			}
			src := source.NewMemorySliced(schema, rng.IntN(5), recs...)
			for _, r := range recs {
				r.Release()
			}
			defer src.Close()
			batch, row := 0, 0 // the next row, by our count
			check := func() {
				t.Helper()
				want := int64(math.MaxInt64)
				for _, vals := range batches[batch:] {
					for _, v := range vals {
						if v != math.MinInt64 {
							want = min(want, ms(v))
						}
					}
				}
				got, ok := src.LowerBound("ts")
				if !ok || got != want {
					t.Fatalf("at batch %d row %d: bound %d, %v; want %d", batch, row, got, ok, want)
				}
			}
			check()
			for {
				rec, err := src.Read(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if row += int(rec.NumRows()); row == len(batches[batch]) {
					batch, row = batch+1, 0
				}
				rec.Release()
				check()
			}
			if _, ok := src.LowerBound("nope"); ok {
				t.Error("a bound for a column that does not exist")
			}
		})
	}
}
