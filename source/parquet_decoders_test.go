package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

var decSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// writeDecFile writes rows [first, first+n) in row groups of rg rows.
func writeDecFile(t testing.TB, path string, first, n, rg int) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, decSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("u%d", i%37))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	s, err := sink.NewParquet(path, nil, sink.WithRowGroupSize(int64(rg)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// sequentialBatches reads the files with one pqarrow record reader per
// file, as the source did before it decoded row groups ahead: the
// reference for the batches Read must return.
func sequentialBatches(t *testing.T, paths []string, batch int) (rows [][]any, sizes []int64) {
	t.Helper()
	for _, path := range paths {
		f, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: int64(batch)}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			rows = append(rows, sink.Rows(rec)...)
			sizes = append(sizes, rec.NumRows())
		}
		rr.Release()
		f.Close()
	}
	return rows, sizes
}

// TestParquetDecodersSameBatches: with any number of decoders, and row
// groups that are or are not a multiple of the batch size, Read returns
// the batches a single sequential reader returns (same rows, same batch
// boundaries, which watermarks and checkpoint positions depend on), and
// Seek to every position Position reported resumes exactly there.
func TestParquetDecodersSameBatches(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		files [][3]int // first, n, row group
		batch int
	}{
		{files: [][3]int{{0, 40, 8}}, batch: 4},                                       // aligned
		{files: [][3]int{{0, 41, 7}}, batch: 3},                                       // batches run across row groups
		{files: [][3]int{{0, 23, 5}, {23, 9, 4}, {32, 0, 4}, {32, 30, 11}}, batch: 6}, // files, an empty one
		{files: [][3]int{{0, 50, 50}}, batch: 7},                                      // one row group
		{files: [][3]int{{0, 30, 3}, {30, 12, 12}}, batch: 100},                       // batch larger than a file
	}
	for ci, c := range cases {
		var paths []string
		for fi, f := range c.files {
			p := filepath.Join(dir, fmt.Sprintf("c%d-f%d.parquet", ci, fi))
			writeDecFile(t, p, f[0], f[1], f[2])
			paths = append(paths, p)
		}
		wantRows, wantSizes := sequentialBatches(t, paths, c.batch)
		for _, dec := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("case%d/decoders%d", ci, dec), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				defer mem.AssertSize(t, 0)
				src, err := source.NewParquetFiles(paths, source.WithBatchSize(c.batch), source.WithDecoders(dec), source.WithAllocator(mem))
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				// Read everything, recording the position before each batch.
				var positions [][]byte
				var rows [][]any
				var sizes []int64
				for {
					pos, _ := src.Position()
					rec, err := src.Read(context.Background())
					if errors.Is(err, io.EOF) {
						positions = append(positions, pos)
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					positions = append(positions, pos)
					rows = append(rows, sink.Rows(rec)...)
					sizes = append(sizes, rec.NumRows())
					rec.Release()
				}
				if !reflect.DeepEqual(sizes, wantSizes) || !reflect.DeepEqual(rows, wantRows) {
					t.Fatalf("batches %v, want %v (rows equal: %v)", sizes, wantSizes, reflect.DeepEqual(rows, wantRows))
				}
				// Resume from every position.
				done := 0
				for k, pos := range positions {
					if err := src.Seek(pos); err != nil {
						t.Fatalf("seek to position %d: %v", k, err)
					}
					got, gotSizes := readAll(t, src)
					if !same(got, wantRows[done:]) || !same(gotSizes, wantSizes[k:]) {
						t.Fatalf("after seek to batch %d: %d rows in %v, want %d in %v", k, len(got), gotSizes, len(wantRows[done:]), wantSizes[k:])
					}
					if k < len(wantSizes) {
						done += int(wantSizes[k])
					}
				}
				// Seek back to the start after a partial read and stop
				// early: Close releases what was decoded ahead.
				if err := src.Seek(positions[0]); err != nil {
					t.Fatal(err)
				}
				if rec, err := src.Read(context.Background()); err == nil {
					rec.Release()
				}
			})
		}
	}
}

// TestParquetSeekInRowGroup: a position in the middle of a row group
// (another batch size than the run that wrote it) and at a file's end.
func TestParquetSeekInRowGroup(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeDecFile(t, a, 0, 20, 6)
	writeDecFile(t, b, 20, 10, 6)
	all, _ := sequentialBatches(t, []string{a, b}, 5)
	src, err := source.NewParquetFiles([]string{a, b}, source.WithBatchSize(5))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pos := func(file, row uint64) []byte {
		p := make([]byte, 16)
		for k := range 8 {
			p[7-k] = byte(file >> (8 * k))
			p[15-k] = byte(row >> (8 * k))
		}
		return p
	}
	for _, c := range []struct {
		file, row uint64
		from      int
	}{{0, 7, 7}, {0, 13, 13}, {0, 20, 20}, {1, 0, 20}, {1, 4, 24}, {2, 0, 30}} {
		if err := src.Seek(pos(c.file, c.row)); err != nil {
			t.Fatalf("seek (%d, %d): %v", c.file, c.row, err)
		}
		got, sizes := readAll(t, src)
		if !same(got, all[c.from:]) {
			t.Fatalf("seek (%d, %d): %d rows (%v), want %d", c.file, c.row, len(got), sizes, len(all[c.from:]))
		}
	}
	if err := src.Seek(pos(0, 21)); err == nil {
		t.Fatal("seek past the end of a file accepted")
	}
}

// TestParquetReadCancelled: a cancelled Read loses no row.
func TestParquetReadCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.parquet")
	writeDecFile(t, path, 0, 100, 9)
	want, _ := sequentialBatches(t, []string{path}, 4)
	src, err := source.NewParquetFiles([]string{path}, source.WithBatchSize(4), source.WithDecoders(2))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var rows [][]any
	for i := 0; ; i++ {
		if i%3 == 0 {
			if _, err := src.Read(cancelled); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Read: %v", err)
			}
		}
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, sink.Rows(rec)...)
		rec.Release()
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
}

// same is reflect.DeepEqual, a nil slice equal to an empty one.
func same[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// BenchmarkParquetRead: reading a 1 M-row file of 16 row groups (ids,
// strings, floats) with one decoder and with two. ns/row is the time per
// row the caller of Read waits; with more decoders than cores the figures
// only show the overhead.
func BenchmarkParquetRead(b *testing.B) {
	const rows, rg = 1 << 20, 1 << 16
	path := filepath.Join(b.TempDir(), "bench.parquet")
	writeDecFile(b, path, 0, rows, rg)
	for _, dec := range []int{1, 2} {
		b.Run(fmt.Sprintf("decoders%d", dec), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				src, err := source.NewParquetFiles([]string{path}, source.WithDecoders(dec))
				if err != nil {
					b.Fatal(err)
				}
				if n := drainRows(b, src); n != rows {
					b.Fatalf("%d rows", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
		})
	}
}
