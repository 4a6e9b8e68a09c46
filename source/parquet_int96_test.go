package source_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/volga-go/volga/source"
)

// int96 returns the INT96 timestamp (as Spark writes them) of t.
func int96(t time.Time) parquet.Int96 {
	var v parquet.Int96
	days := t.Unix() / 86400
	binary.LittleEndian.PutUint64(v[:8], uint64(t.Sub(time.Unix(days*86400, 0)).Nanoseconds()))
	binary.LittleEndian.PutUint32(v[8:], uint32(days+2440588)) // Julian day
	return v
}

// writeInt96File writes a file of an int64 column id and an optional
// INT96 column valid_to, with parquet/file's low-level writer.
func writeInt96File(t *testing.T, path string, ids []int64, times []parquet.Int96, defs []int16) {
	t.Helper()
	sc := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{
		schema.NewInt64Node("id", parquet.Repetitions.Required, -1),
		schema.MustPrimitive(schema.NewPrimitiveNode("valid_to", parquet.Repetitions.Optional, parquet.Types.Int96, -1, -1)),
	}, -1))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := file.NewParquetWriter(f, sc)
	rg, err := w.AppendRowGroupChecked()
	if err != nil {
		t.Fatal(err)
	}
	cw, err := rg.NextColumn()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	if cw, err = rg.NextColumn(); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.(*file.Int96ColumnChunkWriter).WriteBatch(times, defs, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	rg.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetInt96: INT96 timestamps (Spark's) read as nanosecond
// timestamps; one beyond the nanosecond range (9999-12-31, a common
// "valid to" sentinel) is an error naming the column, not a wrong time.
func TestParquetInt96(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2024, 3, 1, 12, 30, 0, 5, time.UTC)
	good := filepath.Join(dir, "good.parquet")
	writeInt96File(t, good, []int64{1, 2}, []parquet.Int96{int96(at)}, []int16{0, 1})
	src, err := source.NewParquet(good)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ts := rec.Column(1).(*array.Timestamp)
	if rec.NumRows() != 2 || ts.IsValid(0) || int64(ts.Value(1)) != at.UnixNano() {
		t.Fatalf("read %v, want [null %d]", ts, at.UnixNano())
	}
	rec.Release()
	src.Close()

	bad := filepath.Join(dir, "bad.parquet")
	writeInt96File(t, bad, []int64{1, 2}, []parquet.Int96{int96(at), int96(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))}, []int16{1, 1})
	src, err = source.NewParquet(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Read(context.Background())
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "column valid_to:") || !strings.Contains(err.Error(), "INT96") {
		t.Fatalf("Read: %v, want an error naming column valid_to", err)
	}
}
