package sink_test

import (
	"context"
	"errors"
	"io"
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

// TestCompressedOutputReadsBack: CSV and JSON-lines output to .gz and .zst
// files, published in several checkpoint epochs (each its own gzip
// member or zstd frame) or at Close, reads back through source.Open as
// the rows written, in order.
func TestCompressedOutputReadsBack(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	batch := func(first, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := first; i < first+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("n,\"q\"", i%4))
		}
		return b.NewRecordBatch()
	}
	ctx := context.Background()
	for _, name := range []string{"out.csv.gz", "out.csv.zst", "out.jsonl.gz", "out.ndjson.zst"} {
		for _, ckpt := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), name)
			s, err := sink.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var want [][]any
			for e := uint64(1); e <= 4; e++ {
				rec := batch(int(e)*100, int(e)*7)
				want = append(want, sink.Rows(rec)...)
				if err := s.Write(ctx, rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
				if ckpt {
					c := s.(sink.Committer)
					if _, err := c.PrepareCommit(ctx, e); err != nil {
						t.Fatal(err)
					}
					if err := c.Commit(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			src, err := source.Open(path, source.WithSchema(schema))
			if err != nil {
				t.Fatalf("%s (checkpoints %v): %v", name, ckpt, err)
			}
			var got [][]any
			for {
				rec, err := src.Read(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s (checkpoints %v): %v", name, ckpt, err)
				}
				got = append(got, sink.Rows(rec)...)
				rec.Release()
			}
			src.Close()
			// In CSV an empty name is written as an empty field, read
			// back as NULL.
			for _, r := range want {
				if r[1] == "" && strings.Contains(name, ".csv") {
					r[1] = nil
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s (checkpoints %v): read back %d rows unlike the %d written", name, ckpt, len(got), len(want))
			}
		}
	}
	if _, err := sink.Open(filepath.Join(t.TempDir(), "out.parquet.gz")); err == nil || !strings.Contains(err.Error(), "Parquet compresses inside") {
		t.Fatalf("out.parquet.gz: %v", err)
	}
}
