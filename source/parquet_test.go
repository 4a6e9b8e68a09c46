package source_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

var usSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// writeParquet writes n rows starting at first with the Parquet sink.
func writeParquet(t *testing.T, path string, first, n int) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, usSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1704276000_000000 + int64(i)))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("u", i%4+1))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	writeRecord(t, path, rec, 4)
}

// writeRecord writes rec to a Parquet file with the Parquet sink, in row
// groups of group rows.
func writeRecord(t testing.TB, path string, rec arrow.RecordBatch, group int64) {
	t.Helper()
	s, err := sink.NewParquet(path, nil, sink.WithRowGroupSize(group))
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

func TestParquet(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeParquet(t, p1, 0, 10)
	writeParquet(t, p2, 10, 5)

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	src, err := source.NewParquetFiles([]string{p1, p2}, source.WithBatchSize(3), source.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if !arrow.TypeEqual(src.Schema().Field(0).Type, usSchema.Field(0).Type) {
		t.Fatalf("timestamp unit changed: %s", src.Schema().Field(0).Type)
	}
	rows, sizes := readAll(t, src)
	if len(rows) != 15 {
		t.Fatalf("rows %d (sizes %v)", len(rows), sizes)
	}
	for _, n := range sizes {
		if n > 3 {
			t.Fatalf("batch of %d rows > batch size 3", n)
		}
	}
	for i, r := range rows {
		if r[2] != float64(i)/2 || (i%3 == 0) != (r[1] == nil) {
			t.Fatalf("row %d: %v", i, r)
		}
	}

	// Seek into the middle of the first file and to the second file.
	for _, skip := range []int{4, 12} {
		if err := src.Seek(make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
		got := 0
		var pos []byte
		for got < skip {
			rec, err := src.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got += int(rec.NumRows())
			rec.Release()
		}
		pos, _ = src.Position()
		after, _ := readAll(t, src)
		if err := src.Seek(pos); err != nil {
			t.Fatal(err)
		}
		again, _ := readAll(t, src)
		if !reflect.DeepEqual(after, again) || !reflect.DeepEqual(after, rows[got:]) {
			t.Fatalf("seek after %d rows: %v, want %v", got, again, rows[got:])
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestParquetErrors(t *testing.T) {
	if _, err := source.NewParquet(); err == nil {
		t.Fatal("no files accepted")
	}
	if _, err := source.NewParquet(writeFile(t, "bad.parquet", "not parquet")); err == nil {
		t.Fatal("garbage accepted")
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "a.parquet")
	writeParquet(t, good, 0, 3)
	other := filepath.Join(dir, "b.parquet")
	s, _ := sink.NewParquet(other, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil))
	s.Close()
	src, err := source.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readAll(t, src)
	src.Close()
	if len(rows) != 3 {
		t.Fatalf("rows %d", len(rows))
	}
	mixed, err := source.NewParquet(good, other)
	if err != nil {
		t.Fatal(err)
	}
	defer mixed.Close()
	for {
		rec, err := mixed.Read(context.Background())
		if err != nil {
			if !strings.Contains(err.Error(), "columns") {
				t.Fatalf("schema mismatch error: %v", err)
			}
			break
		}
		rec.Release()
	}
}
