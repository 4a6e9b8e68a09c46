package source_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// resultSchema has the column types of the engine's results: keys, times,
// numbers and the list, list-of-struct (topn_frequency) and map (_cate)
// aggregates, with NULLs and empty lists and maps.
var resultSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "tsus", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "avg", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "top", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "topn", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	)), Nullable: true},
	{Name: "cate", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "cnt", Type: arrow.MapOf(arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

func resultBatch(first, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, resultSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		null := i%5 == 4
		if null {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("u%d", i%7))
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1704067200000 + int64(i)*1500))
		if null {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1704067200000000 + int64(i)*7))
		}
		b.Field(3).(*array.Int64Builder).Append(int64(i))
		if null {
			b.Field(4).AppendNull()
			b.Field(5).AppendNull()
		} else {
			b.Field(4).(*array.Float64Builder).Append(float64(i) / 3)
			b.Field(5).(*array.BooleanBuilder).Append(i%3 == 0)
		}
		lb := b.Field(6).(*array.ListBuilder)
		tb := b.Field(7).(*array.ListBuilder)
		mb := b.Field(8).(*array.MapBuilder)
		cb := b.Field(9).(*array.MapBuilder)
		if null {
			lb.AppendNull()
			tb.AppendNull()
			mb.AppendNull()
			cb.AppendNull()
			continue
		}
		lb.Append(true)
		tb.Append(true)
		mb.Append(true)
		cb.Append(true)
		for k := range i % 4 { // empty for i%4 == 0
			lb.ValueBuilder().(*array.Float64Builder).Append(float64(i*10 + k))
			sb := tb.ValueBuilder().(*array.StructBuilder)
			sb.Append(true)
			if k == 2 {
				sb.FieldBuilder(0).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("v%d", k))
			}
			sb.FieldBuilder(1).(*array.Int64Builder).Append(int64(i - k))
			mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("c%d", k))
			mb.ItemBuilder().(*array.Float64Builder).Append(float64(k) + 0.5)
			cb.KeyBuilder().(*array.Int64Builder).Append(int64(k))
			cb.ItemBuilder().(*array.Int64Builder).Append(int64(i))
		}
	}
	return b.NewRecordBatch()
}

// TestParquetResultRoundTrip: the engine's result types written by the
// Parquet sinks (one file, with and without checkpoints, and a directory
// of files) read back through the Parquet source with the same values,
// in row groups, batches and files that do not line up.
func TestParquetResultRoundTrip(t *testing.T) {
	ctx := context.Background()
	batches := []arrow.RecordBatch{resultBatch(0, 37), resultBatch(37, 1), resultBatch(38, 50)}
	var want [][]any
	for _, b := range batches {
		want = append(want, sink.Rows(b)...)
		defer b.Release()
	}
	type committer interface {
		sink.Sink
		sink.Committer
	}
	write := func(t *testing.T, s sink.Sink, ckpt bool) {
		for i, b := range batches {
			if err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			if ckpt {
				c := s.(committer)
				if _, err := c.PrepareCommit(ctx, uint64(i+1)); err != nil {
					t.Fatal(err)
				}
				if err := c.Commit(ctx, uint64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		dir  bool
		ckpt bool
	}{{"file", false, false}, {"file-checkpoints", false, true}, {"dir", true, false}, {"dir-checkpoints", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			var s sink.Sink
			var err error
			if tc.dir {
				s, err = sink.NewParquetDir(path, nil, sink.WithRowGroupSize(16), sink.WithFileRows(30))
			} else {
				path += ".parquet"
				s, err = sink.NewParquet(path, nil, sink.WithRowGroupSize(16))
			}
			if err != nil {
				t.Fatal(err)
			}
			write(t, s, tc.ckpt)
			for _, batch := range []int{1, 7, 1000} {
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				src, err := source.NewParquetFiles([]string{path}, source.WithBatchSize(batch), source.WithDecoders(2), source.WithAllocator(mem))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := readAll(t, src)
				src.Close()
				mem.AssertSize(t, 0)
				if len(got) != len(want) {
					t.Fatalf("batch %d: %d rows, want %d", batch, len(got), len(want))
				}
				for i := range want {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("batch %d: row %d:\n got %v\nwant %v", batch, i, got[i], want[i])
					}
				}
			}
		})
	}
}
