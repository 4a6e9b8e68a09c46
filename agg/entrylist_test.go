package agg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// entryListTypes are the result types entryListBuilder builds.
var entryListTypes = []arrow.DataType{
	arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	)),
	arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64),
	arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
	arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	)),
	arrow.MapOf(arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64),
}

// refAppendEntry appends an entry to b, Arrow's builder of dt, as
// entryListBuilder.add (string v) or addInt (int64 iv) does.
func refAppendEntry(b array.Builder, v string, iv int64, w uint64, valid bool) {
	var sb *array.StructBuilder
	var kb, ib array.Builder
	switch b := b.(type) {
	case *array.ListBuilder:
		sb = b.ValueBuilder().(*array.StructBuilder)
		kb, ib = sb.FieldBuilder(0), sb.FieldBuilder(1)
	case *array.MapBuilder:
		sb = b.ValueBuilder().(*array.StructBuilder)
		kb, ib = b.KeyBuilder(), b.ItemBuilder()
	}
	sb.Append(true)
	if sk, ok := kb.(*array.StringBuilder); ok {
		sk.Append(v)
	} else {
		kb.(*array.Int64Builder).Append(iv)
	}
	switch {
	case !valid:
		ib.AppendNull()
	case ib.Type().ID() == arrow.FLOAT64:
		ib.(*array.Float64Builder).Append(math.Float64frombits(w))
	default:
		ib.(*array.Int64Builder).Append(int64(w))
	}
}

// refAppendRow starts a valid row of b.
func refAppendRow(b array.Builder) {
	switch b := b.(type) {
	case *array.ListBuilder:
		b.Append(true)
	case *array.MapBuilder:
		b.Append(true)
	}
}

// TestEntryListBuilderMatchesArrow: random sequences of every operation
// of array.Builder (rows of entries, NULL and empty rows, NULL items,
// SetNull, Resize, Reserve, arrays taken midway) build the
// same arrays through entryListBuilder as through Arrow's own builder,
// and every buffer goes back to the allocator.
func TestEntryListBuilderMatchesArrow(t *testing.T) {
	for ti, dt := range entryListTypes {
		for seed := range uint64(30) {
			t.Run(fmt.Sprintf("%s/%d", dt, seed), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				defer mem.AssertSize(t, 0)
				rng := rand.New(rand.NewPCG(seed, uint64(ti)))
				elem, ok := entryListType(dt)
				if !ok {
					t.Fatalf("entryListType(%s) refused", dt)
				}
				got := newEntryListBuilder(mem, dt, elem)
				want := array.NewBuilder(mem, dt)
				defer got.Release()
				defer want.Release()
				compare := func() {
					t.Helper()
					g, w := got.NewArray(), want.NewArray()
					defer g.Release()
					defer w.Release()
					if !arrow.TypeEqual(g.DataType(), w.DataType()) {
						t.Fatalf("type %s, want %s", g.DataType(), w.DataType())
					}
					if !array.Equal(g, w) {
						t.Fatalf("array\n%v\nwant\n%v", g, w)
					}
				}
				for op := range 300 {
					switch rng.IntN(12) {
					case 0:
						got.AppendNull()
						want.AppendNull()
					case 1:
						n := rng.IntN(3)
						got.AppendNulls(n)
						want.AppendNulls(n)
					case 2:
						got.AppendEmptyValue()
						want.AppendEmptyValue()
					case 3:
						n := rng.IntN(3)
						got.AppendEmptyValues(n)
						want.AppendEmptyValues(n)
					case 4:
						if n := got.Len(); n > 0 {
							i := rng.IntN(n)
							got.SetNull(i)
							want.SetNull(i)
						}
					case 5:
						k := rng.IntN(40)
						if rng.IntN(2) == 0 {
							got.Reserve(k)
							want.Reserve(k)
							k += got.Len()
						} else if k < got.Len() {
							got.Resize(k) // never drops rows (Arrow's would)
						} else {
							got.Resize(k)
							want.Resize(k)
						}
						if got.Cap() < max(k, got.Len()) {
							t.Fatalf("room for %d rows: cap %d", k, got.Cap())
						}
					case 6:
						if op%5 == 0 {
							compare()
						}
					default:
						refAppendRow(want)
						for range rng.IntN(6) {
							v := fmt.Sprintf("v%d", rng.IntN(50))
							if rng.IntN(4) == 0 {
								v = ""
							}
							w := rng.Uint64()
							if dt.(arrow.ListLikeType).Elem().(*arrow.StructType).Field(1).Type.ID() == arrow.FLOAT64 {
								w = math.Float64bits(rng.NormFloat64())
							}
							valid := dt.ID() == arrow.LIST || rng.IntN(5) > 0
							iv := rng.Int64N(100) - 50
							if elem.Field(0).Type.ID() == arrow.INT64 {
								got.addInt(iv, w, valid)
							} else {
								got.add(v, w, valid)
							}
							refAppendEntry(want, v, iv, w, valid)
						}
						got.endRow()
					}
					if got.Len() != want.Len() || got.NullN() != want.NullN() {
						t.Fatalf("op %d: %d rows, %d NULL; want %d, %d", op, got.Len(), got.NullN(), want.Len(), want.NullN())
					}
					for i := range got.Len() {
						if got.IsNull(i) != want.IsNull(i) {
							t.Fatalf("op %d: IsNull(%d) = %v", op, i, got.IsNull(i))
						}
					}
				}
				compare()
			})
		}
	}
}

// TestEntryListBuilderRefuses: parsing is not a result builder's job, and
// it says so; types it cannot build get no such builder.
func TestEntryListBuilderRefuses(t *testing.T) {
	dt := entryListTypes[0]
	elem, _ := entryListType(dt)
	b := newEntryListBuilder(memory.DefaultAllocator, dt, elem)
	defer b.Release()
	if err := b.AppendValueFromString("[]"); err == nil {
		t.Error("AppendValueFromString took a value")
	}
	if err := b.UnmarshalJSON([]byte("[]")); err == nil {
		t.Error("UnmarshalJSON took a value")
	}
	if b.Len() != 0 || !arrow.TypeEqual(b.Type(), dt) {
		t.Errorf("builder of %d rows of %s", b.Len(), b.Type())
	}
	for _, dt := range []arrow.DataType{
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64})),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "value", Type: arrow.FixedWidthTypes.Timestamp_ms}, arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64})),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "value", Type: arrow.BinaryTypes.LargeString}, arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64})),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
		arrow.ListOf(arrow.BinaryTypes.String),
		arrow.PrimitiveTypes.Int64,
	} {
		if _, ok := entryListType(dt); ok {
			t.Errorf("entryListType(%s) accepted", dt)
		}
	}
}

// TestResultBuilderSameResults: topn_frequency and the *_cate aggregates
// of sum, count and avg, of string and int64 values, give the same
// results through
// NewResultBuilder (an entryListBuilder) as through Arrow's builder, the
// same windows over random rows (NULLs too) and frames evaluated in the
// same chunks; other Funcs get Arrow's builder.
func TestResultBuilderSameResults(t *testing.T) {
	cat, str := colArg(colCat), colArg(colStr)
	cases := []struct {
		fn      string
		args    []Arg
		entries bool // NewResultBuilder gives an entryListBuilder
	}{
		{"topn_frequency", []Arg{str, constArg(int64(3))}, true},
		{"topn_frequency", []Arg{str, constArg(int64(40))}, true},
		{"sum_cate", []Arg{colArg(colFloat), cat}, true},
		{"sum_cate", []Arg{colArg(colInt), cat}, true},
		{"sum_cate", []Arg{colArg(colBig), cat}, true}, // NULL sums beyond int64
		{"sum_cate", []Arg{colArg(colBig), colArg(colCatInt)}, true},
		{"sum_cate", []Arg{colArg(colUBig), cat}, true}, // uint64: unsigned
		{"avg_cate", []Arg{colArg(colUBig), colArg(colCatInt)}, true},
		{"count_cate", []Arg{colArg(colInt), cat}, true},
		{"avg_cate", []Arg{colArg(colFloat), cat}, true},
		{"avg_cate", []Arg{colArg(colInt), cat}, true},
		{"sum_cate_where", []Arg{colArg(colFloat), colArg(colCond), cat}, true},
		{"sum_cate", []Arg{colArg(colFloat), colArg(colCatInt)}, true},
		{"count_cate", []Arg{colArg(colInt), colArg(colCatInt)}, true},
		{"topn_frequency", []Arg{colArg(colInt), constArg(int64(3))}, true},
		{"max_cate", []Arg{colArg(colFloat), cat}, false},
		{"sum_cate", []Arg{colArg(colFloat), colArg(colBool)}, false},
		{"topn_frequency", []Arg{colArg(colI32), constArg(int64(3))}, false},
		{"topn_frequency", []Arg{colArg(colTs), constArg(int64(3))}, false},
	}
	for _, c := range cases {
		f, err := Bind(c.fn, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.fn, err)
		}
		t.Run(fmt.Sprintf("%s/%s", c.fn, f.ResultType()), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			got := NewResultBuilder(mem, f)
			defer got.Release()
			if _, ok := got.(*entryListBuilder); ok != c.entries {
				t.Fatalf("entryListBuilder: %v, want %v", ok, c.entries)
			}
			want := array.NewBuilder(mem, f.ResultType())
			defer want.Release()
			for seed := range uint64(25) {
				rng := rand.New(rand.NewPCG(seed, 11))
				r := randRows(rng, 1+rng.IntN(150))
				fr := randFrames(rng, r)
				wg, ww := f.NewWindow(), f.NewWindow()
				for start := 0; start < len(fr.lo); {
					end := min(len(fr.lo), start+1+rng.IntN(50))
					var ex []int64
					if fr.ex != nil {
						ex = fr.ex[start:end]
					}
					wg.Eval(r, fr.lo[start:end], fr.hi[start:end], ex, got)
					ww.Eval(r, fr.lo[start:end], fr.hi[start:end], ex, want)
					start = end
				}
				g, w := got.NewArray(), want.NewArray()
				if !array.Equal(g, w) {
					t.Fatalf("seed %d:\n%v\nwant\n%v", seed, g, w)
				}
				if g.NullN() == g.Len() && g.Len() > 3 {
					t.Fatalf("seed %d: every result NULL", seed)
				}
				g.Release()
				w.Release()
			}
		})
	}
}
