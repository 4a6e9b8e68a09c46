package agg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestEwAvgCanonical: ew_avg's Window and EvalRange (what lookups use)
// give the same bits for every frame, whatever frames came before, with
// EXCLUDE CURRENT ROW, NULLs, rows dropped from the front, an encode /
// decode of the window half way, and a candidate row; and both are within
// rounding of the one-by-one definition.
func TestEwAvgCanonical(t *testing.T) {
	for _, alpha := range []float64{0.3, 0.05, 1} {
		fn, err := Bind("ew_avg", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}, constArg(alpha)})
		if err != nil {
			t.Fatal(err)
		}
		re := fn.(RangeEvaluator)
		rng := rand.New(rand.NewPCG(uint64(alpha*100), 9))
		const n = 3000
		all := randFloatRows(rng, n, 10, 100)
		for _, width := range []int64{1, 7, 64, 500} {
			for _, exclude := range []bool{false, true} {
				win := fn.NewWindow()
				b := array.NewFloat64Builder(memory.DefaultAllocator)
				var los, his, exs []int64
				var lo int64
				for a := int64(0); a < n; a++ {
					if rng.IntN(3) > 0 {
						lo = max(lo, a+1-width-int64(rng.IntN(3)))
					}
					lo = max(lo, 0)
					ex := int64(-1)
					if exclude {
						ex = a
					}
					los, his, exs = append(los, lo), append(his, a+1), append(exs, ex)
				}
				// Evaluate in chunks; encode and decode the window once.
				for s := 0; s < n; {
					e := min(n, s+1+rng.IntN(50))
					var ex []int64
					if exclude {
						ex = exs[s:e]
					}
					// The window sees rows from its frames' low end on.
					r := rowsFrom(all, los[s])
					win.Eval(r, los[s:e], his[s:e], ex, b)
					if s < n/2 && e >= n/2 {
						win = reencoded(t, fn, win)
					}
					s = e
				}
				got := b.NewFloat64Array()
				st := fn.NewState()
				for a := range n {
					want, ok := canonRange(re, st, all, los[a], his[a], exs[a])
					if got.IsNull(a) != !ok || ok && math.Float64bits(got.Value(a)) != math.Float64bits(want) {
						t.Fatalf("alpha %v width %d exclude %v: row %d frame [%d,%d): window %v, EvalRange %v", alpha, width, exclude, a, los[a], his[a], got.Value(a), want)
					}
					if ok {
						// One by one, within rounding.
						one := fn.NewState()
						for k := los[a]; k < his[a]; k++ {
							if k != exs[a] {
								one.Add(all, k)
							}
						}
						x := one.(*ewAvgState)
						if d := math.Abs(x.s/x.w - want); d > 1e-9*math.Max(1, math.Abs(want)) {
							t.Fatalf("row %d: %v, one by one %v", a, want, x.s/x.w)
						}
					}
				}
				got.Release()
				b.Release()
			}
		}
		// A candidate is the row after the frame.
		st, st2 := fn.NewState(), fn.NewState()
		cand := rowsFrom(all, 100)
		cand.Ts, cand.Base = cand.Ts[:1], 0
		cand.Cols = []Column{all.Cols[0].Slice(100, 101)}
		re.EvalRange(st, all, 40, 77, cand)
		moved := &Rows{Ts: append([]int64{}, all.Ts[:77]...), Cols: []Column{all.Cols[0].Slice(0, 77)}}
		moved.Ts = append(moved.Ts, 77)
		moved.Cols[0].AppendRange(&all.Cols[0], 100, 101)
		re.EvalRange(st2, moved, 40, 78, nil)
		if *st.(*ewAvgState) != *st2.(*ewAvgState) {
			t.Errorf("candidate: %+v, as row 77: %+v", st, st2)
		}
	}
}

// rowsFrom returns the rows of all from absolute row a on.
// reencoded returns a new window of fn decoded from win's encoding, and
// checks that it encodes to the same bytes.
func reencoded(t *testing.T, fn Func, win Window) Window {
	t.Helper()
	data, err := win.(WindowCodec).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	w2 := fn.NewWindow()
	if err := w2.(WindowCodec).UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if again, err := w2.(WindowCodec).MarshalBinary(); err != nil || string(again) != string(data) {
		t.Fatalf("re-encoding the decoded window differs (%v)", err)
	}
	return w2
}

// randFloatRows returns n rows at times 0, 1, ... of one float64 column of
// normal values times scale, about one in nullEvery NULL.
func randFloatRows(rng *rand.Rand, n, nullEvery int, scale float64) *Rows {
	col, _ := NewColumn(arrow.PrimitiveTypes.Float64)
	all := &Rows{Cols: []Column{col}}
	for i := range n {
		all.Ts = append(all.Ts, int64(i))
		if rng.IntN(nullEvery) == 0 {
			all.Cols[0].AppendNull()
		} else {
			all.Cols[0].F64 = append(all.Cols[0].F64, rng.NormFloat64()*scale)
			all.Cols[0].Null = append(all.Cols[0].Null, false)
		}
	}
	return all
}

func rowsFrom(all *Rows, a int64) *Rows {
	return &Rows{Base: a, Ts: all.Ts[a:], Cols: []Column{all.Cols[0].Slice(int(a), len(all.Ts))}}
}

// canonRange is the canonical value of frame [lo, hi) without row ex.
func canonRange(re RangeEvaluator, st State, r *Rows, lo, hi, ex int64) (float64, bool) {
	x := st.(*ewAvgState)
	if ex >= lo && ex < hi {
		re.EvalRange(st, r, lo, ex, nil)
		a := ewNode{x.n, x.s, x.w}
		re.EvalRange(st, r, ex+1, hi, nil)
		b := ewNode{x.n, x.s, x.w}
		nd := re.(*ewAvgFunc).merge(a, b)
		x.n, x.s, x.w = nd.n, nd.s, nd.w
	} else {
		re.EvalRange(st, r, lo, hi, nil)
	}
	return x.s / x.w, x.n > 0
}

// TestEwAvgSkipsNaN: ew_avg reads NaN as missing, as pandas' ewm does
// (SPEC names pandas ewm(ignore_na=True) as its definition): over 1,
// NaN, 3 with alpha 0.5 it is (3 + 0.5*1) / (1 + 0.5) = 7/3 by the state,
// the window and EvalRange alike, and over NaN alone it is NULL. NaN made
// every frame holding one NaN.
func TestEwAvgSkipsNaN(t *testing.T) {
	nan := math.NaN()
	fn, err := Bind("ew_avg", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}, constArg(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	r := nullableFloatRows(1.0, nan, 3.0, nan)
	b := r.Base
	for _, tc := range []struct {
		lo, hi int64
		want   any // float64, or nil for NULL
	}{
		{b, b + 3, 7.0 / 3},
		{b, b + 4, 7.0 / 3},
		{b + 1, b + 2, nil},
		{b + 3, b + 4, nil},
		{b + 1, b + 4, 3.0},
	} {
		var rows []int64
		for a := tc.lo; a < tc.hi; a++ {
			rows = append(rows, a)
		}
		st := stateOf(fn, r, rows)
		bld := array.NewFloat64Builder(memory.DefaultAllocator)
		st.AppendResult(bld)
		fn.NewWindow().Eval(r, []int64{tc.lo}, []int64{tc.hi}, nil, bld)
		re := fn.NewState()
		fn.(RangeEvaluator).EvalRange(re, r, tc.lo, tc.hi, nil)
		re.AppendResult(bld)
		got := bld.NewFloat64Array()
		for i, what := range []string{"state", "window", "EvalRange"} {
			switch want := tc.want.(type) {
			case nil:
				if !got.IsNull(i) {
					t.Errorf("[%d, %d) by the %s: %v, want NULL", tc.lo-b, tc.hi-b, what, got.Value(i))
				}
			case float64:
				if got.IsNull(i) || math.Abs(got.Value(i)-want) > 1e-12 {
					t.Errorf("[%d, %d) by the %s: %v (null %v), want %v", tc.lo-b, tc.hi-b, what, got.Value(i), got.IsNull(i), want)
				}
			}
		}
		got.Release()
		bld.Release()
	}
}
