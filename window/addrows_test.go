package window

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/agg"
)

// segmentedRows returns rows [base, base+n) of a float column (NULLs
// included), held as Older segments and a current one the way row paging
// holds a frame's lower edge: segs gives the lengths of the Older ones.
func segmentedRows(rng *rand.Rand, base int64, segs []int, n int) *agg.Rows {
	col := func(m int) agg.Column {
		c := agg.Column{Type: arrow.PrimitiveTypes.Float64, Kind: agg.KindFloat64}
		for range m {
			if rng.IntN(5) == 0 {
				c.AppendNull()
				continue
			}
			c.F64 = append(c.F64, rng.NormFloat64()*1e3)
			c.Null = append(c.Null, false)
		}
		return c
	}
	ts := func(from int64, m int) []int64 {
		out := make([]int64, m)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	r := &agg.Rows{}
	at := base
	for _, m := range segs {
		r.Older = append(r.Older, agg.Rows{Base: at, Ts: ts(at, m), Cols: []agg.Column{col(m)}})
		at += int64(m)
	}
	r.Base, r.Ts, r.Cols = at, ts(at, n-int(at-base)), []agg.Column{col(n - int(at-base))}
	return r
}

// TestAddRowsSegments checks addRows against Add row by row (read through
// At) over rows held in several segments, for a RangeAdder (sum, avg, max)
// and a state without AddRange (first_value): the same encoding.
func TestAddRowsSegments(t *testing.T) {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	funcs := []agg.Func{bindFunc(t, "sum", amount), bindFunc(t, "avg", amount), bindFunc(t, "max", amount), bindFunc(t, "first_value", amount)}
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		segs := make([]int, rng.IntN(4))
		total := 0
		for i := range segs {
			segs[i] = 1 + rng.IntN(20)
			total += segs[i]
		}
		n := total + 1 + rng.IntN(40)
		base := rng.Int64N(1000)
		r := segmentedRows(rng, base, segs, n)
		lo := base + rng.Int64N(int64(n))
		hi := lo + rng.Int64N(base+int64(n)-lo+1)
		for _, f := range funcs {
			want, got := f.NewState(), f.NewState()
			for a := lo; a < hi; a++ {
				want.Add(r.At(a), a)
			}
			addRows(got, r, lo, hi)
			wd, _ := want.MarshalBinary()
			gd, _ := got.MarshalBinary()
			if string(wd) != string(gd) {
				t.Fatalf("trial %d, %s over [%d, %d) of segments %v from %d: addRows state %x, Add row by row %x",
					trial, f.Name(), lo, hi, segs, base, gd, wd)
			}
		}
	}
	if _, ok := funcs[0].NewState().(agg.RangeAdder); !ok {
		t.Fatal("sum is not a RangeAdder: the test no longer covers the segment walk")
	}
	if _, ok := funcs[3].NewState().(agg.RangeAdder); ok {
		t.Fatal("first_value is a RangeAdder: the test no longer covers the row-by-row path")
	}
}
