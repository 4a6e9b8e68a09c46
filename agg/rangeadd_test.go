package agg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// withSpecialFloats returns a copy of r whose float columns hold NaN,
// both infinities and both zeros at a tenth of their non-NULL rows each.
func withSpecialFloats(rng *rand.Rand, r *Rows) *Rows {
	r = cloneRows(r)
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	for _, c := range []int{colFloat, colDrift} {
		col := &r.Cols[c]
		for i := range col.F64 {
			if !col.Null[i] && rng.IntN(10) == 0 {
				col.F64[i] = special[rng.IntN(len(special))]
			}
		}
	}
	return r
}

// checkRangeAdd checks, for states that are RangeAdders, that AddRange
// over runs of rows is Add row by row: the same encoding bit for bit and
// the same result, from an empty state and from one that has rows
// already, over runs of every length (empty ones included).
func checkRangeAdd(t *testing.T, c aggCase) {
	f := c.bind(t)
	if _, ok := f.NewState().(RangeAdder); !ok {
		return
	}
	for seed := range seeds(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		r := randRows(rng, 1+rng.IntN(300))
		if seed%2 == 1 {
			r = withSpecialFloats(rng, r)
		}
		byRow, byRange := f.NewState(), f.NewState()
		ra := byRange.(RangeAdder)
		// Consecutive runs from a random start, as lookups add a frame
		// edge by edge; sometimes rows added first one by one to both.
		a := r.Base + rng.Int64N(int64(len(r.Ts)))
		for a < r.End() {
			n := rng.Int64N(min(r.End()-a, 64) + 1)
			if rng.IntN(4) == 0 {
				byRow.Add(r, a)
				byRange.Add(r, a)
				a++
				continue
			}
			for k := a; k < a+n; k++ {
				byRow.Add(r, k)
			}
			ra.AddRange(r, a, a+n)
			a += n
			what := fmt.Sprintf("seed %d: after rows up to %d", seed, a)
			sameState(t, f, byRange, byRow, what)
		}
	}
}

// sameState fails unless got and want encode to the same bytes and give
// the same result (NaN, -0 and +0 told apart).
func sameState(t *testing.T, f Func, got, want State, what string) {
	t.Helper()
	gd, err1 := got.MarshalBinary()
	wd, err2 := want.MarshalBinary()
	if err1 != nil || err2 != nil || string(gd) != string(wd) {
		t.Fatalf("%s: AddRange state encodes as %x, Add row by row as %x (%v, %v)", what, gd, wd, err1, err2)
	}
	g, w := fmt.Sprintf("%#v", result(f, got)), fmt.Sprintf("%#v", result(f, want))
	if g != w {
		t.Fatalf("%s: AddRange gives %s, Add row by row %s", what, g, w)
	}
}

// TestRangeAdders pins which standard aggregates add runs of rows in one
// call (the lookups' fast path): a state that stops being a RangeAdder
// would only be slower, which no other test would see.
func TestRangeAdders(t *testing.T) {
	want := map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true,
		"var_samp": true, "var_pop": true, "stddev_samp": true, "stddev_pop": true, "variance": true, "stddev": true}
	for _, c := range standardCases() {
		_, ok := c.bind(t).NewState().(RangeAdder)
		if ok != want[c.name] {
			t.Errorf("%v: RangeAdder %t, want %t", c, ok, want[c.name])
		}
	}
}
