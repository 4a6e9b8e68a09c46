package agg

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// specialFloats are the float values whose order and identity SQL engines
// treat specially: NaN (equal to itself, above +Inf), the infinities, and
// the two zeros (one value).
var specialFloats = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1.5, -2}

// specialRows is randRows with the float columns drawing often from
// specialFloats and the string column holding empty strings.
func specialRows(rng *rand.Rand, n int) *Rows {
	r := randRows(rng, n)
	for _, c := range []int{colFloat, colDrift} {
		col := &r.Cols[c]
		for i := range col.F64 {
			if !col.Null[i] && rng.IntN(5) < 2 {
				col.F64[i] = specialFloats[rng.IntN(len(specialFloats))]
			}
		}
	}
	col := &r.Cols[colStr]
	for i := range col.Str {
		if !col.Null[i] && rng.IntN(4) == 0 {
			col.Str[i] = ""
		}
	}
	return r
}

// TestPathsAgreeOnSpecialValues: over rows with NaN, ±Inf, -0 and 0 and
// empty strings, every aggregate gives the same result whichever way the
// window operator computes it: a sliding Window (retraction, two-stack
// queue or deque), a tiled Window reading only the frame's edge rows, a
// fresh state per frame, states of parts merged, a state with rows added
// and retracted, and a state decoded from its encoding.
func TestPathsAgreeOnSpecialValues(t *testing.T) {
	for _, c := range append(standardCases(), mlCases()...) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			f := c.bind(t)
			for seed := range seeds(30) {
				rng := rand.New(rand.NewPCG(seed, 41))
				r := specialRows(rng, 1+rng.IntN(200))
				check := func(what string, got, want any) {
					t.Helper()
					if !approxEqual(got, want, c.tolerance()) {
						t.Fatalf("seed %d: %s %v, fresh state %v", seed, what, got, want)
					}
				}
				// Sliding windows of random frames.
				fr := randFrames(rng, r)
				got, _ := evalWindow(f, r, fr, rng)
				want := bruteForce(f, r, fr)
				for j := range fr.lo {
					check("window", valueOf(got, j), valueOf(want, j))
				}
				got.Release()
				want.Release()
				// Tiled windows over RANGE frames.
				tile := []int64{1, 2, 5}[rng.IntN(3)]
				fr = rangeFramesEx(r, tile*(2+rng.Int64N(8)), rng.IntN(2) == 0)
				got = evalPaged(t, f, r, fr, tile, rng)
				want = bruteForce(f, r, fr)
				for j := range fr.lo {
					check("tiled window", valueOf(got, j), valueOf(want, j))
				}
				got.Release()
				want.Release()
				// Merges of three consecutive parts.
				n := int64(r.Len())
				i := rng.Int64N(n + 1)
				k := i + rng.Int64N(n-i+1)
				part := func(l, h int64) []int64 {
					var out []int64
					for a := l; a < h; a++ {
						out = append(out, r.Base+a)
					}
					return out
				}
				whole := result(f, stateOf(f, r, part(0, n)))
				m := stateOf(f, r, part(0, i))
				m.Merge(stateOf(f, r, part(i, k)))
				m.Merge(stateOf(f, r, part(k, n)))
				check("merged state", result(f, m), whole)
				// Decoded state.
				data, err := m.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				d := f.NewState()
				if err := d.UnmarshalBinary(data); err != nil {
					t.Fatalf("seed %d: decode: %v", seed, err)
				}
				check("decoded state", result(f, d), whole)
				// Added then retracted.
				if f.Retractable() {
					s := f.NewState()
					all := part(0, n)
					extra := slices.Clone(all)
					rng.Shuffle(len(extra), func(a, b int) { extra[a], extra[b] = extra[b], extra[a] })
					extra = extra[:rng.IntN(len(extra)+1)]
					for _, a := range all {
						s.Add(r, a)
					}
					for _, a := range extra {
						s.Add(r, a)
					}
					for _, a := range extra {
						s.(Retractor).Retract(r, a)
					}
					check("retracted state", result(f, s), whole)
				}
			}
		})
	}
}

// nullableFloatRows is one float64 column holding vals (nil is NULL).
func nullableFloatRows(vals ...any) *Rows {
	col, _ := NewColumn(arrow.PrimitiveTypes.Float64)
	r := &Rows{Base: 10}
	for i, v := range vals {
		r.Ts = append(r.Ts, int64(i))
		if v == nil {
			col.AppendNull()
			continue
		}
		col.Null = append(col.Null, false)
		col.F64 = append(col.F64, v.(float64))
	}
	r.Cols = []Column{col}
	return r
}

// TestSumFloatForgetsNonFinite: sum(x) over ROWS BETWEEN 1 PRECEDING AND
// CURRENT ROW of NaN, 1, +Inf, -Inf, 2, 3 is NaN, NaN, +Inf, NaN, -Inf,
// 5: a NaN or an infinity counts only while it is in the frame. The
// retracting window (and a state that took them and gave them back)
// stayed NaN after the first NaN left the frame, as did sum_where and
// sum_cate, which share the state.
func TestSumFloatForgetsNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	r := nullableFloatRows(nan, 1.0, inf, -inf, 2.0, 3.0)
	want := []float64{nan, nan, inf, nan, -inf, 5}
	f, err := Bind("sum", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	w := f.NewWindow()
	for j := range int64(6) {
		w.Eval(r, []int64{max(r.Base, r.Base+j-1)}, []int64{r.Base + j + 1}, nil, b)
	}
	got := b.NewFloat64Array()
	defer got.Release()
	for j, v := range want {
		if g := got.Value(j); !(g == v || math.IsNaN(g) && math.IsNaN(v)) {
			t.Errorf("frame %d: sum %v, want %v", j, g, v)
		}
	}
	// A state given the rows and then all but the last two back.
	s := f.NewState()
	for a := r.Base; a < r.End(); a++ {
		s.Add(r, a)
	}
	for a := r.Base; a < r.End()-2; a++ {
		s.(Retractor).Retract(r, a)
	}
	if g := result(f, s); g != 5.0 {
		t.Errorf("after retracting the non-finite values: sum %v, want 5", g)
	}
}

// TestSumFloatEncoding: a float sum of finite values encodes as before
// NaNs and infinities were counted apart (count, sum, compensation), so
// checkpoints written before decode; one holding them round-trips.
func TestSumFloatEncoding(t *testing.T) {
	f, err := Bind("sum", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	// n = 2, sum 3.5, compensation 0, as the earlier encoding wrote them.
	old := binary.AppendVarint(nil, 2)
	old = binary.LittleEndian.AppendUint64(old, math.Float64bits(3.5))
	old = binary.LittleEndian.AppendUint64(old, 0)
	r := nullableFloatRows(1.25, 2.25, math.Inf(-1), math.NaN())
	s := stateOf(f, r, []int64{10, 11})
	if data, _ := s.MarshalBinary(); !bytes.Equal(data, old) {
		t.Fatalf("finite sum encodes as %x, want %x", data, old)
	}
	d := f.NewState()
	if err := d.UnmarshalBinary(old); err != nil || result(f, d) != 3.5 {
		t.Fatalf("decoding the earlier encoding: %v, %v", result(f, d), err)
	}
	s.Add(r, 12)
	s.Add(r, 13)
	data, _ := s.MarshalBinary()
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	d.(Retractor).Retract(r, 13)
	if g := result(f, d); g != math.Inf(-1) {
		t.Fatalf("decoded state less its NaN: %v, want -Inf", g)
	}
	d.(Retractor).Retract(r, 12)
	if g := result(f, d); g != 3.5 {
		t.Fatalf("decoded state less its NaN and -Inf: %v, want 3.5", g)
	}
}
