package sink_test

import (
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
)

// features4Output is the shape of features-4's output: ids, keys, times,
// and four features, three of them floats of high cardinality.
var features4Output = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "spend_1h", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "n_24h", Type: arrow.PrimitiveTypes.Int64},
	{Name: "avg_7d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "max_1h", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// features4Batch returns a batch of n rows of features4Output from row
// base on.
func features4Batch(rng *rand.Rand, base, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, features4Output)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(base + i))
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(100_000))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(base+i)*250))
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(1_000_000)) / 100)
		b.Field(4).(*array.Int64Builder).Append(rng.Int64N(40))
		b.Field(5).(*array.Float64Builder).Append(rng.Float64() * 300)
		b.Field(6).(*array.Float64Builder).Append(float64(rng.IntN(50_000)) / 100)
	}
	return b.NewRecordBatch()
}

// BenchmarkParquetWrite writes features-4's output shape to a Parquet file
// (the default options: Snappy, row groups of DefaultRowGroupSize rows).
func BenchmarkParquetWrite(b *testing.B) {
	dir := b.TempDir()
	benchWrite(b, func() (sink.Sink, error) {
		return sink.NewParquet(filepath.Join(dir, "out.parquet"), features4Output)
	})
}

// BenchmarkCSVWrite writes features-4's output shape as CSV, to a
// discarding writer.
func BenchmarkCSVWrite(b *testing.B) {
	benchWrite(b, func() (sink.Sink, error) { return sink.NewCSV(io.Discard), nil })
}

// benchWrite writes 1 Mi rows of features-4's output shape, 64 Ki rows a
// batch, to a sink newSink makes for each iteration; ns/row is per row
// written.
func benchWrite(b *testing.B, newSink func() (sink.Sink, error)) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, batch = 1 << 20, 1 << 16
	var recs []arrow.RecordBatch
	for base := 0; base < rows; base += batch {
		recs = append(recs, features4Batch(rng, base, batch))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b.ResetTimer()
	for range b.N {
		w, err := newSink()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(context.Background(), r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
