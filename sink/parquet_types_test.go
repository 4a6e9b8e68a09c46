package sink

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// coercedSchema has the types Parquet cannot hold as they are: pqarrow
// writes timestamp[s] as milliseconds, time32[s] as time32[ms] and date64
// as date32, top-level and nested.
var coercedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, Nullable: true},
	{Name: "t32", Type: arrow.FixedWidthTypes.Time32s, Nullable: true},
	{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
	{Name: "tss", Type: arrow.ListOf(&arrow.TimestampType{Unit: arrow.Second}), Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date64, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}), Nullable: true},
}, nil)

// coercedBatch returns n rows from row first; row i is at 2024-01-01 plus
// i days and i seconds, every fourth one NULL.
func coercedBatch(first, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, coercedSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		sec := int64(1704067200 + i*86400 + i)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%4 == 3 {
			for k := 1; k < len(b.Fields()); k++ {
				b.Field(k).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(sec))
		b.Field(2).(*array.Time32Builder).Append(arrow.Time32(3600 + i))
		b.Field(3).(*array.Date64Builder).Append(arrow.Date64((sec - int64(i)) * 1000))
		lb := b.Field(4).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.TimestampBuilder).Append(arrow.Timestamp(sec))
		lb.ValueBuilder().(*array.TimestampBuilder).Append(arrow.Timestamp(sec + 1))
		sb := b.Field(5).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Date64Builder).Append(arrow.Date64((sec - int64(i)) * 1000))
		mb := b.Field(6).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("at")
		mb.ItemBuilder().(*array.TimestampBuilder).Append(arrow.Timestamp(sec))
	}
	return b.NewRecordBatch()
}

// TestParquetSinkCheckpointsCoercedTypes: under checkpoints, Close reads
// the staged epochs back and writes them to the file; the types Parquet
// stores coerced (timestamp[s], time32[s], date64, also nested) keep their
// values, the file equal to the one a run without checkpoints writes. It
// got timestamps 1000 times too large, times overflowed and date64
// columns failed the Close.
func TestParquetSinkCheckpointsCoercedTypes(t *testing.T) {
	ctx := context.Background()
	b := []arrow.RecordBatch{coercedBatch(0, 5), coercedBatch(5, 4), coercedBatch(9, 3)}
	defer func() {
		for _, r := range b {
			r.Release()
		}
	}()
	dir := t.TempDir()

	// plain writes the batches without checkpoints.
	plain := func(name string, b ...arrow.RecordBatch) string {
		path := filepath.Join(dir, name)
		s, err := NewParquet(path, nil, WithRowGroupSize(3))
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, b...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return readParquet(t, path)
	}
	want, wantFirst := plain("plain.parquet", b...), plain("first.parquet", b[:2]...)
	for _, v := range []string{
		"\n0|2024-01-01T00:00:00Z|01:00:00|2024-01-01|",
		"\n10|2024-01-11T00:00:10Z|01:00:10|2024-01-11|2024-01-11T00:00:10Z,2024-01-11T00:00:11Z|2024-01-11|at:2024-01-11T00:00:10Z|",
	} {
		if !strings.Contains(want, v) {
			t.Fatalf("the file written without checkpoints lacks %q:\n%s", v, want)
		}
	}

	ckpt := filepath.Join(dir, "ckpt.parquet")
	s, err := NewParquet(ckpt, nil, WithRowGroupSize(3))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, b[0])
	mustPrepare(t, s, 1)
	mustCommit(t, s, 1)
	mustWrite(t, s, b[1])
	st2 := mustPrepare(t, s, 2)
	mustCommit(t, s, 2)
	mustWrite(t, s, b[2])
	mustPrepare(t, s, 3)
	mustCommit(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readParquet(t, ckpt); got != want {
		t.Fatalf("written under checkpoints:\n%s\nwithout:\n%s", got, want)
	}

	// A restart from epoch 2 cuts the file back to its first two epochs,
	// reading the file itself back.
	s, err = NewParquet(ckpt, nil, WithRowGroupSize(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 2, st2); err != nil {
		t.Fatal(err)
	}
	if got := readParquet(t, ckpt); got != wantFirst {
		t.Fatalf("cut back to epoch 2:\n%s\nwant:\n%s", got, wantFirst)
	}
	mustWrite(t, s, b[2])
	mustPrepare(t, s, 3)
	mustCommit(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readParquet(t, ckpt); got != want {
		t.Fatalf("after the restart:\n%s\nwant:\n%s", got, want)
	}
}

// TestParquetSinksUnsupportedType: a column of a type Parquet cannot hold
// is refused with an error naming the column and its type, whether the
// schema is given or comes with the first batch, and no file appears.
func TestParquetSinksUnsupportedType(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "wait", Type: arrow.FixedWidthTypes.Duration_ms, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.DurationBuilder).Append(1500)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), `column "wait" of type duration[ms]`) {
			t.Errorf("%s: %v, want an error naming column wait and its type", what, err)
		}
	}
	dir := t.TempDir()
	file, parts := filepath.Join(dir, "out.parquet"), filepath.Join(dir, "parts")
	_, err := NewParquet(file, schema)
	check("NewParquet", err)
	_, err = NewParquetDir(parts, schema)
	check("NewParquetDir", err)
	s, err := NewParquet(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("Parquet.Write", s.Write(ctx, rec))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := NewParquetDir(parts, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("ParquetDir.Write", d.Write(ctx, rec))
	d.Close()
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s written", file)
	}
	if ps, _ := filepath.Glob(filepath.Join(parts, "*.parquet")); len(ps) > 0 {
		t.Errorf("files written: %v", ps)
	}
}
