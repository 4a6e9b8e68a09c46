package source_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/source"
)

// features4Schema is the schema of the benchmarks' features-4 event log
// (bench/internal/gen).
var features4Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "merchant", Type: arrow.BinaryTypes.String},
}, nil)

// writeFeatures4 writes a features-4-like event log of n rows to path the
// way bench/internal/gen does (NewParquetWriter: Snappy, 256 Ki-row row
// groups, the Arrow schema stored, dictionary encoding on by default):
// ids rising, 100 000 users, timestamps sorted over 30 days, log-normal
// amounts, 1 000 merchants.
func writeFeatures4(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(256*1024),
	)
	w, err := pqarrow.NewFileWriter(features4Schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 0x766f6c6761))
	start := int64(1704067200000)
	span := int64(30 * 24 * 3600 * 1000)
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = start + rng.Int64N(span)
	}
	slices.Sort(ts)
	b := array.NewRecordBuilder(memory.DefaultAllocator, features4Schema)
	defer b.Release()
	for lo := 0; lo < n; lo += 64 * 1024 {
		for i := lo; i < min(lo+64*1024, n); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Int64Builder).Append(rng.Int64N(100_000))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts[i]))
			b.Field(3).(*array.Float64Builder).Append(math.Round(math.Exp(3+rng.NormFloat64())*100) / 100)
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("m%04d", rng.IntN(1000)))
		}
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkParquetReadFeatures4: reading a 2 M-row features-4 event log
// (8 row groups) with the default batch size, every column and the four
// columns the features-4 query uses, with one decoder and with two.
// ns/row is the time per row the caller of Read waits (with two decoders
// on two cores, about half the decoding CPU); cpu-ns/row is the process's
// CPU time per row (decoding, GC), which a busy machine disturbs less;
// allocs/row and B/row count every allocation of the process during the
// reads.
func BenchmarkParquetReadFeatures4(b *testing.B) {
	const rows = 2_000_000
	path := filepath.Join(b.TempDir(), "features-4.parquet")
	writeFeatures4(b, path, rows)
	for _, proj := range parquetBenchProjections {
		for _, dec := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/decoders%d", proj.name, dec), func(b *testing.B) {
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				cpu0 := processCPU()
				for b.Loop() {
					opts := append([]source.Option{source.WithDecoders(dec)}, proj.opts...)
					src, err := source.NewParquetFiles([]string{path}, opts...)
					if err != nil {
						b.Fatal(err)
					}
					if n := drainRows(b, src); n != rows {
						b.Fatalf("%d rows", n)
					}
				}
				cpu := processCPU() - cpu0
				runtime.ReadMemStats(&ms1)
				total := float64(b.N) * rows
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/row")
				b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/row")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/row")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/total, "B/row")
			})
		}
	}
}

var parquetBenchProjections = []struct {
	name string
	opts []source.Option
}{
	{name: "all"},
	{name: "features4cols", opts: []source.Option{source.WithColumns("id", "user_id", "ts", "amount")}},
}

// BenchmarkClusteredFeatures4 reads a features-4-like log of 1 M events
// (in time order, 100 000 users) clustered by user: the whole log read
// and decoded, the users numbered, the rows ordered and copied out batch
// by batch (source.NewClustered, as volga.WithClusterInput does), and
// spilled to parts on disk first, against reading it in file order.
func BenchmarkClusteredFeatures4(b *testing.B) {
	const rows = 1_000_000
	path := filepath.Join(b.TempDir(), "features-4.parquet")
	writeFeatures4(b, path, rows)
	for _, c := range []struct {
		name  string
		by    []string
		spill bool
	}{{"file-order", nil, false}, {"by-user", []string{"user_id"}, false}, {"by-merchant", []string{"merchant"}, false},
		{"by-user-spilled", []string{"user_id"}, true}} {
		b.Run(c.name, func(b *testing.B) {
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := processCPU()
			for b.Loop() {
				var src source.Source
				src, err := source.NewParquetFiles([]string{path})
				if err != nil {
					b.Fatal(err)
				}
				if c.by != nil {
					var opts []source.Option
					if c.spill {
						opts = append(opts, source.WithSpill(b.TempDir(), 1))
					}
					if src, err = source.NewClustered(src, c.by, opts...); err != nil {
						b.Fatal(err)
					}
				}
				if n := drainRows(b, src); n != rows {
					b.Fatalf("%d rows", n)
				}
			}
			cpu := processCPU() - cpu0
			runtime.ReadMemStats(&ms1)
			total := float64(b.N) * rows
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/row")
			b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/row")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/row")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/total, "B/row")
		})
	}
}
