package source_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/source"
)

var (
	_ source.Source = (*source.Memory)(nil)
	_ source.Seeker = (*source.Memory)(nil)
	_ source.Source = (*source.CSV)(nil)
	_ source.Seeker = (*source.CSV)(nil)
	_ source.Source = (*source.JSONL)(nil)
	_ source.Seeker = (*source.JSONL)(nil)
	_ source.Source = (*source.Parquet)(nil)
	_ source.Seeker = (*source.Parquet)(nil)
)

func int64Batch(mem memory.Allocator, vals ...int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

func TestMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	r1, r2 := int64Batch(mem, 1, 2, 3), int64Batch(mem, 4, 5)
	src := source.NewMemory(nil, r1, r2)
	r1.Release()
	r2.Release()
	rows, sizes := readAll(t, src)
	if !reflect.DeepEqual(sizes, []int64{3, 2}) || len(rows) != 5 || rows[4][0] != int64(5) {
		t.Fatalf("sizes %v rows %v", sizes, rows)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background()); !errors.Is(err, source.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestMemorySlicedSeek(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	r1, r2 := int64Batch(mem, 1, 2, 3), int64Batch(mem, 4, 5)
	defer r1.Release()
	defer r2.Release()
	src := source.NewMemorySliced(r1.Schema(), 2, r1, r2)
	defer src.Close()

	rec, err := src.Read(context.Background())
	if err != nil || rec.NumRows() != 2 {
		t.Fatalf("first: %v %v", rec, err)
	}
	rec.Release()
	pos, _ := src.Position()
	rows, sizes := readAll(t, src)
	if !reflect.DeepEqual(sizes, []int64{1, 2}) {
		t.Fatalf("sizes %v", sizes)
	}
	if err := src.Seek(pos); err != nil {
		t.Fatal(err)
	}
	again, _ := readAll(t, src)
	if !reflect.DeepEqual(rows, again) || again[0][0] != int64(3) {
		t.Fatalf("after Seek: %v, want %v", again, rows)
	}
	if err := src.Seek([]byte{1}); err == nil {
		t.Fatal("bad position accepted")
	}
}

func TestMemorySchemaMismatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	r := int64Batch(mem, 1)
	defer r.Release()
	other := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := source.NewMemory(other, r)
	defer src.Close()
	if _, err := src.Read(context.Background()); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("mismatched schema: %v", err)
	}
}
