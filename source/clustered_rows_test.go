package source

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPlanRowsLayout: a row stage lays its columns widest first, each at
// an offset aligned to its width, null bits after them, rows a multiple
// of 8 bytes; a row takes about what the columns take in Arrow (an int8
// column one byte, not eight), and the columns it cannot hold (long
// strings, booleans, lists) are left to the gather.
func TestPlanRowsLayout(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "long", Type: arrow.BinaryTypes.String},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).AppendNull()
	b.Field(1).(*array.StringBuilder).Append("twelve bytes")
	b.Field(2).(*array.Int64Builder).Append(1)
	b.Field(3).(*array.StringBuilder).Append("sixteen bytes!!!")
	b.Field(4).(*array.Int16Builder).Append(2)
	b.Field(5).(*array.BooleanBuilder).Append(true)
	b.Field(6).(*array.Float32Builder).Append(3)
	b.Field(7).(*array.ListBuilder).Append(true)
	rec := b.NewRecordBatch()
	defer rec.Release()
	st, rest := planRows(schema, []arrow.RecordBatch{rec}, 2)
	if want := []int{3, 5, 7}; len(rest) != len(want) || rest[0] != 3 || rest[1] != 5 || rest[2] != 7 {
		t.Fatalf("rest %v, want %v", rest, want)
	}
	type lay struct {
		field, off, width int
		kind              rowKind
		null              int
		mask              byte
	}
	want := []lay{
		{1, 0, 16, rowStr2, 0, 0},
		{6, 16, 4, rowFixed, 0, 0}, // nullable, but no NULLs: no bit
		{4, 20, 2, rowFixed, 0, 0},
		{0, 22, 1, rowFixed, 23, 1},
	}
	if len(st.cols) != len(want) {
		t.Fatalf("%d columns in the stage, want %d", len(st.cols), len(want))
	}
	for j, c := range st.cols {
		got := lay{c.field, c.off, c.width, c.kind, c.null, c.mask}
		if got != want[j] {
			t.Fatalf("column %d: %+v, want %+v", j, got, want[j])
		}
	}
	if st.stride != 24 {
		t.Fatalf("stride %d, want 24", st.stride)
	}
}
