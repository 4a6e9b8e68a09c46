package arrowutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randArray builds n random values of dt, some NULL, appended through a
// builder (which exercises nested types' children).
func randArray(mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := 0; i < n; i++ {
		appendRand(rng, b)
	}
	return b.NewArray()
}

func appendRand(rng *rand.Rand, b array.Builder) {
	if rng.IntN(7) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(rng.Int64())
	case *array.Int32Builder:
		b.Append(rng.Int32())
	case *array.Int16Builder:
		b.Append(int16(rng.Int32()))
	case *array.Float64Builder:
		b.Append(rng.Float64())
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(rng.Int64()))
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.StringBuilder:
		if rng.IntN(6) == 0 {
			b.Append("") // runs of empty values copy no bytes
			return
		}
		b.Append(fmt.Sprintf("s%d", rng.IntN(1000000)))
	case *array.LargeStringBuilder:
		b.Append(fmt.Sprintf("L%d", rng.IntN(1000)))
	case *array.MapBuilder:
		b.Append(true)
		for k := rng.IntN(4); k > 0; k-- {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", rng.IntN(100)))
			appendRand(rng, b.ItemBuilder())
		}
	case *array.ListBuilder:
		b.Append(true)
		for k := rng.IntN(5); k > 0; k-- {
			appendRand(rng, b.ValueBuilder())
		}
	case *array.StructBuilder:
		b.Append(true)
		for f := 0; f < b.NumField(); f++ {
			appendRand(rng, b.FieldBuilder(f))
		}
	default:
		panic(fmt.Sprintf("no random values for %T", b))
	}
}

func TestGatherMatchesTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int16,
		arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Timestamp_ms, arrow.FixedWidthTypes.Boolean,
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		arrow.ListOf(arrow.BinaryTypes.String), arrow.ListOf(arrow.BinaryTypes.LargeString),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true})),
		arrow.StructOf(arrow.Field{Name: "x", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := compute.WithAllocator(context.Background(), mem)
	for _, dt := range types {
		t.Run(dt.String(), func(t *testing.T) {
			for trial := 0; trial < 20; trial++ {
				// Several sources, some sliced (non-zero offsets).
				nsrc := 1 + rng.IntN(3)
				srcs := make([]arrow.Array, nsrc)
				for i := range srcs {
					a := randArray(mem, rng, dt, 1+rng.IntN(60))
					if rng.IntN(2) == 0 && a.Len() > 4 {
						s := array.NewSlice(a, 2, int64(a.Len()-1))
						a.Release()
						a = s
					}
					srcs[i] = a
				}
				// Runs at random (prefetched when there are enough of
				// them: scattered), or every source read front to back
				// (a merge, not prefetched).
				var segs []Seg
				if trial%2 == 0 {
					for k := rng.IntN(200); k > 0; k-- {
						src := int32(rng.IntN(nsrc))
						n := int32(srcs[src].Len())
						s := int32(rng.IntN(int(n)))
						e := s + 1 + int32(rng.IntN(int(min(4, n-s))))
						segs = append(segs, Seg{Src: src, Start: s, End: e})
					}
				} else {
					at := make([]int32, nsrc)
					for range 200 {
						src := int32(rng.IntN(nsrc))
						n := int32(srcs[src].Len())
						if at[src] == n {
							continue
						}
						e := at[src] + 1 + int32(rng.IntN(int(min(3, n-at[src]))))
						segs = append(segs, Seg{Src: src, Start: at[src], End: e})
						at[src] = e
					}
					if scattered(segs, nsrc) {
						t.Fatalf("trial %d: runs in order taken as scattered", trial)
					}
				}
				got, err := Gather(mem, dt, srcs, segs)
				if err != nil {
					t.Fatal(err)
				}
				all, err := array.Concatenate(srcs, mem)
				if err != nil {
					t.Fatal(err)
				}
				var idx []int32
				for _, s := range segs {
					var base int32
					for i := int32(0); i < s.Src; i++ {
						base += int32(srcs[i].Len())
					}
					for r := s.Start; r < s.End; r++ {
						idx = append(idx, base+r)
					}
				}
				ia := indexArray(mem, idx)
				want, err := compute.TakeArray(ctx, all, ia)
				if err != nil {
					t.Fatal(err)
				}
				if !array.Equal(got, want) {
					t.Fatalf("trial %d: gather\n%v\ntake\n%v", trial, got, want)
				}
				if v, ok := got.(interface{ ValidateFull() error }); ok {
					if err := v.ValidateFull(); err != nil {
						t.Fatalf("trial %d: invalid result: %v", trial, err)
					}
				}
				got.Release()
				want.Release()
				ia.Release()
				all.Release()
				ReleaseAll(srcs)
			}
		})
	}
}

// TestGatherNoBytes gathers variable-length values that copy no bytes at
// all: no rows, and rows whose strings are all empty or NULL, across two
// sources, one of them sliced.
func TestGatherNoBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.ListOf(arrow.BinaryTypes.String)} {
		b := array.NewBuilder(mem, dt)
		for i := range 6 {
			switch b := b.(type) {
			case *array.StringBuilder:
				if i%3 == 0 {
					b.AppendNull()
				} else {
					b.Append("")
				}
			case *array.LargeStringBuilder:
				b.Append("")
			case *array.ListBuilder:
				b.Append(i%2 == 0) // empty lists and NULLs
			}
		}
		a := b.NewArray()
		b.Release()
		sl := array.NewSlice(a, 2, 5)
		srcs := []arrow.Array{a, sl}
		for _, segs := range [][]Seg{nil, {{0, 0, 6}}, {{1, 0, 3}, {0, 1, 2}, {1, 2, 3}}} {
			got, err := Gather(mem, dt, srcs, segs)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range segs {
				for r := s.Start; r < s.End; r++ {
					want = append(want, srcs[s.Src].ValueStr(int(r)))
				}
			}
			if got.Len() != len(want) {
				t.Fatalf("%s %v: %d rows, want %d", dt, segs, got.Len(), len(want))
			}
			for i := range want {
				if g := got.ValueStr(i); g != want[i] {
					t.Fatalf("%s %v: row %d is %q, want %q", dt, segs, i, g, want[i])
				}
			}
			if err := got.(interface{ ValidateFull() error }).ValidateFull(); err != nil {
				t.Fatalf("%s %v: %v", dt, segs, err)
			}
			got.Release()
		}
		sl.Release()
		a.Release()
	}
}

// TestScattered checks which gathers prefetch: runs at random do, runs
// reading each source in order do not, nor do a few runs.
func TestScattered(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var random, merge []Seg
	at := []int32{0, 0}
	for range 1000 {
		r := int32(rng.IntN(1 << 20))
		random = append(random, Seg{Src: int32(rng.IntN(2)), Start: r, End: r + 1})
		src := rng.IntN(2)
		merge = append(merge, Seg{Src: int32(src), Start: at[src], End: at[src] + 2})
		at[src] += 2
	}
	if !scattered(random, 2) {
		t.Error("runs at random not taken as scattered")
	}
	if scattered(merge, 2) {
		t.Error("a merge of two sources taken as scattered")
	}
	if scattered(random[:4*ahead-1], 2) {
		t.Errorf("%d runs taken as scattered", 4*ahead-1)
	}
}
