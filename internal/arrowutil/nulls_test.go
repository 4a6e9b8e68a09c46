package arrowutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCountNulls: after CountNulls, the slice of a list column (whose null
// counts Arrow leaves unknown) has its own and its values' null counts
// stored, and they are right.
func TestCountNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	vb := lb.ValueBuilder().(*array.Int64Builder)
	for i := range 10 {
		if i%4 == 3 {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		vb.Append(int64(i))
		vb.AppendNull()
	}
	full := lb.NewArray()
	lb.Release()
	defer full.Release()
	sl := array.NewSlice(full, 2, 9) // rows 2..8: nulls at 3 and 7
	defer sl.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: sl.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{sl}, int64(sl.Len()))
	defer rec.Release()
	if n := rec.Column(0).Data().NullN(); n >= 0 {
		t.Fatalf("the slice's null count is already known (%d): the test shows nothing", n)
	}
	CountNulls(rec)
	d := rec.Column(0).Data()
	if d.NullN() != 2 {
		t.Errorf("list nulls = %d, want 2", d.NullN())
	}
	if c := d.Children()[0]; c.NullN() != 8 {
		t.Errorf("value nulls = %d, want 8 (one per non-null list of 16 values)", c.NullN())
	}
}
