package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob/memblob"
)

// TestParquetObjectReadsWholeChunks: a Parquet object in a bucket is read
// a column chunk per request (with footer reads), not in pieces of the
// page buffer's 64 KiB, each of which would be a request of its own.
func TestParquetObjectReadsWholeChunks(t *testing.T) {
	const rows, groups = 1_000_000, 2
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 7919)
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	ctx := context.Background()
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(array.NewTableFromRecords(schema, []arrow.RecordBatch{rec}), &buf, rows/groups, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	if err := bucket.WriteAll(ctx, "t.parquet", buf.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	var reads, size atomic.Int64
	objectReadHook = func(n int64) { reads.Add(1); size.Add(n) }
	defer func() { objectReadHook = nil }()
	src, err := NewParquetFiles([]string{"t.parquet"}, WithFS(bucket))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n := 0
	for {
		r, err := src.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int(r.NumRows())
		r.Release()
	}
	if n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
	// Two column chunks in each row group, and a few reads of the footer.
	if got := reads.Load(); got > groups*2+4 {
		t.Errorf("%d ranged reads (%d bytes), want at most %d", got, size.Load(), groups*2+4)
	}
}
