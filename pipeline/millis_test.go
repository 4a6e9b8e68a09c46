package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestMillisView: an event-time column already in int64 milliseconds
// (int64, timestamp[ms]) without NULLs is shared, sliced ones included,
// with the values appendMillis would copy; other units, slices with
// NULLs and other types are not (nil); the view holds its own reference
// to the values (released before it, the column does not free them; the
// checked allocator sees every buffer freed in the end).
func TestMillisView(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(3, 3))
	vals := make([]int64, 1000)
	for i := range vals {
		vals[i] = rng.Int64N(1<<45) - 1<<44
	}
	build := func(dt arrow.DataType, nulls bool) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for i, v := range vals {
			switch {
			case nulls && i%7 == 3:
				b.AppendNull()
			case dt.ID() == arrow.INT64:
				b.(*array.Int64Builder).Append(v)
			default:
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			}
		}
		return b.NewArray()
	}
	copyOf := func(col arrow.Array) []int64 {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.Resize(col.Len())
		appendMillis(b, col)
		a := b.NewInt64Array()
		defer a.Release()
		return slices.Clone(a.Int64Values())
	}
	for _, tc := range []struct {
		name  string
		dt    arrow.DataType
		nulls bool
		view  bool
	}{
		{"int64", arrow.PrimitiveTypes.Int64, false, true},
		{"timestamp[ms]", &arrow.TimestampType{Unit: arrow.Millisecond}, false, true},
		{"timestamp[us]", &arrow.TimestampType{Unit: arrow.Microsecond}, false, false},
		{"timestamp[s]", &arrow.TimestampType{Unit: arrow.Second}, false, false},
		{"timestamp[ms] with NULLs", &arrow.TimestampType{Unit: arrow.Millisecond}, true, true},
		{"int32", arrow.PrimitiveTypes.Int32, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var col arrow.Array
			if tc.dt.ID() == arrow.INT32 {
				b := array.NewInt32Builder(mem)
				b.AppendValues([]int32{1, 2, 3}, nil)
				col = b.NewArray()
				b.Release()
			} else {
				col = build(tc.dt, tc.nulls)
			}
			n := int64(col.Len())
			for _, bounds := range [][2]int64{{0, n}, {1, 2}, {n / 7, n - n/9}} {
				part := array.NewSlice(col, bounds[0], bounds[1])
				v := millisView(part)
				if wantView := tc.view && part.NullN() == 0; (v != nil) != wantView {
					t.Fatalf("slice %v (%d NULLs): view %v, want %v", bounds, part.NullN(), v != nil, wantView)
				}
				if v == nil {
					part.Release()
					continue
				}
				want := copyOf(part)
				part.Release() // the view keeps the values alive
				got := v.(*array.Int64).Int64Values()
				if v.DataType().ID() != arrow.INT64 || v.NullN() != 0 || !slices.Equal(got, want) {
					t.Fatalf("slice %v: view %v (%d NULLs), want %v", bounds, got[:min(5, len(got))], v.NullN(), want[:min(5, len(want))])
				}
				v.Release()
			}
			col.Release()
		})
	}
}
