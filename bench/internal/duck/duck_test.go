package duck

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/bench/internal/rows"
)

// TestLoadRecordsRoundTrip loads every column type the oracle uses, NULLs
// included, and reads it back.
func TestLoadRecordsRoundTrip(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ts := time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{-7, 0}, []bool{true, false})
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{0, 2.5}, []bool{false, true})
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"x", ""}, []bool{true, false})
	b.Field(3).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(ts.UnixMilli()), 0}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	db, err := Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.LoadRecords(ctx, "t", schema, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
	names, got, err := db.Query(ctx, "SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	want := rows.FromRecords(schema, []arrow.RecordBatch{rec})
	if d := rows.Diff(want, rows.Table{Names: names, Rows: got}, rows.Tolerance{}, nil, 5); d != "" {
		t.Errorf("round trip through DuckDB:\n%s", d)
	}
}
