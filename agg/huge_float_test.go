package agg

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// hugeFloats are finite floats whose sums overflow float64 (or nearly),
// on a coarse grid together with smallFloats, so that exact sums are
// easy to tell from wrong ones.
var (
	hugeFloats  = []float64{math.MaxFloat64, -math.MaxFloat64, 0x1p1023, -0x1p1023, 0x1.8p1023, 0x1p1000, -0x1p1000, 0x1p960, -0x1p960, 1e308, -1e308}
	smallFloats = []float64{1, -1, 0.5, 3, -2.25, 0x1p959, -0x1p959}
)

// withHugeFloats returns rows whose colFloat values come from hugeFloats
// (a third of them) and smallFloats, NULLs kept.
func withHugeFloats(rng *rand.Rand, n int) *Rows {
	r := randRows(rng, n)
	col := &r.Cols[colFloat]
	for i := range col.F64 {
		if rng.IntN(3) == 0 {
			col.F64[i] = hugeFloats[rng.IntN(len(hugeFloats))]
		} else {
			col.F64[i] = smallFloats[rng.IntN(len(smallFloats))]
		}
	}
	return r
}

// exactFloatSum returns the exact sum of the non-NULL values of column c
// over rows rounded once to float64 (±Inf beyond its range), and their
// count.
func exactFloatSum(r *Rows, c int, rows []int64) (float64, int) {
	s := new(big.Float).SetPrec(4096)
	n := 0
	for _, a := range rows {
		if v := colValue(r, c, a); v != nil {
			s.Add(s, new(big.Float).SetFloat64(v.(float64)))
			n++
		}
	}
	f, _ := s.Float64()
	return f, n
}

// oracleExactSum is sum(x) of floats as the exact sum rounded once; SQL
// leaves the order of a sum open, and this is the order-free answer.
func oracleExactSum(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		s, n := exactFloatSum(r, c, rows)
		if n == 0 {
			return nil
		}
		return s
	}
}

// oracleExactAvg is avg(x) of floats as the exact mean rounded once (as
// internal/testutil's reference computes it): finite whenever the mean
// is, even when the sum is beyond float64.
func oracleExactAvg(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		s := new(big.Float).SetPrec(4096)
		n := 0
		for _, a := range rows {
			if v := colValue(r, c, a); v != nil {
				s.Add(s, new(big.Float).SetFloat64(v.(float64)))
				n++
			}
		}
		if n == 0 {
			return nil
		}
		f, _ := s.Quo(s, new(big.Float).SetInt64(int64(n))).Float64()
		return f
	}
}

// TestFloatSumHugeValues: sums of floats near the top of the float64
// range (1e308, MaxFloat64 ...) are ±Inf while their exact sum is beyond
// it (their mean is finite) and exact again once the huge values leave
// the frame, whichever way
// they are computed: a fresh state, AddRange, a sliding window that
// retracts, merged parts, a decoded state. Summed in one compensated sum,
// 1e308 + 1e308 was Inf + -Inf = NaN, and a sliding sum or avg stayed NaN
// for every later frame of the key.
func TestFloatSumHugeValues(t *testing.T) {
	cases := []aggCase{
		{name: "sum", args: []Arg{colArg(colFloat)}, oracle: oracleExactSum(colFloat)},
		{name: "avg", args: []Arg{colArg(colFloat)}, oracle: oracleExactAvg(colFloat)},
		{name: "sum_where", args: []Arg{colArg(colFloat), colArg(colCond)}, oracle: oracleWhere(oracleExactSum(colFloat), colCond)},
		{name: "avg_cate", args: []Arg{colArg(colFloat), colArg(colCat)}, oracle: oracleCate(oracleExactAvg(colFloat), colFloat, colCat, -1)},
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			f := c.bind(t)
			for seed := range seeds(60) {
				rng := rand.New(rand.NewPCG(seed, 53))
				r := withHugeFloats(rng, 1+rng.IntN(60))
				check := func(what string, j int, rows []int64, got any) {
					t.Helper()
					if want := c.oracle(r, rows); !approxEqual(got, want, 1e-12) {
						t.Fatalf("seed %d %s %d: values %v: got %v, want %v", seed, what, j, frameVals(r, c, rows), got, want)
					}
				}
				// Fresh states and the sliding window, frame by frame.
				fr := randFrames(rng, r)
				fresh := bruteForce(f, r, fr)
				win, _ := evalWindow(f, r, fr, rng)
				for j := range fr.lo {
					check("fresh state, frame", j, fr.frameRows(j), valueOf(fresh, j))
					check("window, frame", j, fr.frameRows(j), valueOf(win, j))
				}
				fresh.Release()
				win.Release()
				// AddRange, merges of parts, decoding, retraction.
				all := make([]int64, 0, r.Len())
				for a := r.Base; a < r.End(); a++ {
					all = append(all, a)
				}
				if s := f.NewState(); isRangeAdder(s) {
					ra := s.(RangeAdder)
					k := r.Base + rng.Int64N(int64(r.Len())+1)
					ra.AddRange(r, r.Base, k)
					ra.AddRange(r, k, r.End())
					check("AddRange of all rows", 0, all, result(f, s))
					sameState(t, f, s, stateOf(f, r, all), "AddRange of all rows")
				}
				i := rng.IntN(len(all) + 1)
				m := stateOf(f, r, all[:i])
				m.Merge(stateOf(f, r, all[i:]))
				check("merged parts", i, all, result(f, m))
				d := redecoded(t, f, m, seed)
				check("decoded state", 0, all, result(f, d))
				keep := slices.Clone(all[i:])
				for _, a := range all[:i] {
					d.(Retractor).Retract(r, a)
				}
				check("decoded state less the first rows", i, keep, result(f, d))
			}
		})
	}
}

// hugeVarFloats are finite floats whose deviations square beyond
// float64, or nearly, mixed with ordinary ones: no two distinct huge
// values are close (their variance is then well conditioned, wherever
// the state's shift is).
var hugeVarFloats = []float64{math.MaxFloat64, -math.MaxFloat64, 1e300, -1e300, 1e200, 2e154, -1.5e154, 1e145, 1e18, -1e15}

// withHugeVarFloats returns rows whose colFloat values are a fifth from
// hugeVarFloats, the rest small integers and halves.
func withHugeVarFloats(rng *rand.Rand, n int) *Rows {
	r := randRows(rng, n)
	col := &r.Cols[colFloat]
	for i := range col.F64 {
		if rng.IntN(5) == 0 {
			col.F64[i] = hugeVarFloats[rng.IntN(len(hugeVarFloats))]
		} else {
			col.F64[i] = float64(rng.IntN(21)-10) / 2
		}
	}
	return r
}

// oracleExactVariance is the variance of the float values computed
// exactly and rounded once (+Inf beyond float64); the standard deviation
// is the square root of the exact variance, rounded once.
func oracleExactVariance(c int, samp, sqrt bool) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		var vals []*big.Rat
		sum := new(big.Rat)
		for _, a := range rows {
			if v := colValue(r, c, a); v != nil {
				x := new(big.Rat).SetFloat64(v.(float64))
				vals = append(vals, x)
				sum.Add(sum, x)
			}
		}
		n := int64(len(vals))
		if n == 0 || samp && n == 1 {
			return nil
		}
		mean := new(big.Rat).Quo(sum, big.NewRat(n, 1))
		m2 := new(big.Rat)
		for _, x := range vals {
			d := new(big.Rat).Sub(x, mean)
			m2.Add(m2, d.Mul(d, d))
		}
		div := n
		if samp {
			div = n - 1
		}
		v := m2.Quo(m2, big.NewRat(div, 1))
		if sqrt {
			f, _ := new(big.Float).SetPrec(200).Sqrt(new(big.Float).SetPrec(200).SetRat(v)).Float64()
			return f
		}
		f, _ := v.Float64()
		return f
	}
}

// TestFloatVarianceHugeValues: the variance family over floats whose
// deviations square beyond float64 (values near 1e308 next to small
// ones), or far beyond the others' (1e15 next to values near 1), gives
// the exact result rounded (+Inf for a variance beyond float64, a finite
// standard deviation when it is one) on every path, and exact results
// again once the far values leave a sliding frame. With one sum for all,
// a sliding window that had held 1e15 next to values near 1 reported 0
// for every later frame of the key (the noise of its square, and its
// peak, stayed in S2), and one that had held 1e308 reported NaN.
//
// Sliding windows keep the first value of the key as their shift K
// while they never empty: they are checked over ROWS frames, with no
// NULL rows and a small first value (values far from a shift that left
// the frame are the documented limit of the shifted sums).
func TestFloatVarianceHugeValues(t *testing.T) {
	var cases []aggCase
	for _, fn := range []struct {
		name       string
		samp, sqrt bool
	}{{"var_samp", true, false}, {"var_pop", false, false}, {"stddev_samp", true, true}, {"stddev_pop", false, true}} {
		cases = append(cases, aggCase{name: fn.name, args: []Arg{colArg(colFloat)}, oracle: oracleExactVariance(colFloat, fn.samp, fn.sqrt)})
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			f := c.bind(t)
			for seed := range seeds(100) {
				rng := rand.New(rand.NewPCG(seed, 59))
				r := withHugeVarFloats(rng, 1+rng.IntN(60))
				r.Cols[colFloat].F64[0], r.Cols[colFloat].Null[0] = 1.5, false
				check := func(what string, j int, rows []int64, got any) {
					t.Helper()
					if want := c.oracle(r, rows); !approxEqual(got, want, 1e-9) {
						t.Fatalf("seed %d %s %d: values %v: got %v, want %v", seed, what, j, frameVals(r, c, rows), got, want)
					}
				}
				fr := randFrames(rng, r)
				fresh := bruteForce(f, r, fr)
				for j := range fr.lo {
					check("fresh state, frame", j, fr.frameRows(j), valueOf(fresh, j))
				}
				fresh.Release()
				// ROWS w PRECEDING, sometimes EXCLUDE CURRENT ROW, over
				// the rows without NULLs.
				nn := cloneRows(r)
				clear(nn.Cols[colFloat].Null)
				w := int64(1 + rng.IntN(8))
				var rf frames
				for a := nn.Base; a < nn.End(); a++ {
					rf.lo = append(rf.lo, max(nn.Base, a-w))
					rf.hi = append(rf.hi, a+1)
					rf.ex = append(rf.ex, a)
				}
				if rng.IntN(2) == 0 {
					rf.ex = nil
				}
				win, _ := evalWindow(f, nn, rf, rng)
				for j := range rf.lo {
					if want := c.oracle(nn, rf.frameRows(j)); !approxEqual(valueOf(win, j), want, 1e-9) {
						t.Fatalf("seed %d window, frame %d: values %v: got %v, want %v", seed, j, frameVals(nn, c, rf.frameRows(j)), valueOf(win, j), want)
					}
				}
				win.Release()
				all := make([]int64, 0, r.Len())
				for a := r.Base; a < r.End(); a++ {
					all = append(all, a)
				}
				// Three parts merged, in both associations.
				i := rng.IntN(len(all) + 1)
				k := i + rng.IntN(len(all)-i+1)
				m := stateOf(f, r, all[:i])
				m.Merge(stateOf(f, r, all[i:k]))
				m.Merge(stateOf(f, r, all[k:]))
				check("(A+B)+C", i, all, result(f, m))
				bc := stateOf(f, r, all[i:k])
				bc.Merge(stateOf(f, r, all[k:]))
				m2 := stateOf(f, r, all[:i])
				m2.Merge(bc)
				check("A+(B+C)", i, all, result(f, m2))
				// Encoding, then retraction of rows (the first one
				// kept) from the decoded state of all rows.
				d := redecoded(t, f, stateOf(f, r, all), seed)
				check("decoded state", 0, all, result(f, d))
				keep := all[:1]
				for _, a := range all[1:] {
					if rng.IntN(2) == 0 {
						d.(Retractor).Retract(r, a)
					} else {
						keep = append(keep, a)
					}
				}
				check("decoded state less some rows", i, keep, result(f, d))
			}
		})
	}
}

// TestVarianceForgetsFarValue: var_pop over ROWS BETWEEN 2 PRECEDING AND
// CURRENT ROW of 1, X, 1, 2, 3, 4, 5, 6 is 2/3 for the last four frames
// whatever X: the sliding window reported 0 there for X = 1e15 (the
// rounding noise of X² and its peak stayed in the sums), and NaN for
// X = 1e300.
func TestVarianceForgetsFarValue(t *testing.T) {
	f, err := Bind("var_pop", []Arg{{Type: colTypes[colFloat], Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{1e8, 1e15, -1e18, 1e200, 1e300, math.MaxFloat64} {
		r := nullableFloatRows(1.0, x, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
		var fr frames
		for a := r.Base; a < r.End(); a++ {
			fr.lo = append(fr.lo, max(r.Base, a-2))
			fr.hi = append(fr.hi, a+1)
		}
		got, _ := evalWindow(f, r, fr, rand.New(rand.NewPCG(1, 1)))
		o := oracleExactVariance(0, false, false)
		for j := range fr.lo {
			if want := o(r, fr.frameRows(j)); !approxEqual(valueOf(got, j), want, 1e-12) {
				t.Errorf("X = %g, frame %d: var_pop %v, want %v", x, j, valueOf(got, j), want)
			}
		}
		got.Release()
	}
}

// TestVarianceOldEncoding: a float variance state encoded before the
// magnitude classes (n, NaN count, K, S1, S2 and peak, one sum for all)
// decodes to the same result and carries on exactly: rows added and
// retracted after give what a state of the remaining rows gives.
func TestVarianceOldEncoding(t *testing.T) {
	f, err := Bind("var_pop", []Arg{{Type: colTypes[colFloat], Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	// 2, 4 and 7 with K = 2: d = 0, 2, 5, S1 = 7, S2 = 29.
	old := binary.AppendVarint(nil, 3)
	old = binary.AppendVarint(old, 0)
	for _, v := range []float64{2, 7, 0, 29, 0, 29} {
		old = binary.LittleEndian.AppendUint64(old, math.Float64bits(v))
	}
	r := nullableFloatRows(2.0, 4.0, 7.0, 10.0, 1e300)
	s := f.NewState()
	if err := s.UnmarshalBinary(old); err != nil {
		t.Fatal(err)
	}
	o := oracleExactVariance(0, false, false)
	if got, want := result(f, s), o(r, []int64{10, 11, 12}); !approxEqual(got, want, 1e-15) {
		t.Fatalf("decoded: %v, want %v", got, want)
	}
	s.Add(r, 13)
	s.Add(r, 14)
	s.(Retractor).Retract(r, 10)
	s.(Retractor).Retract(r, 14)
	if got, want := result(f, s), o(r, []int64{11, 12, 13}); !approxEqual(got, want, 1e-15) {
		t.Fatalf("after adding 10 and 1e300, retracting 2 and 1e300: %v, want %v", got, want)
	}
}

// TestVarianceClassBounds: deviations from 2^-12 to 2^20 share class 0,
// so a variance over ordinary data is one class; a state encoded with
// the first bounds (class 0 from 1, smaller deviations in class -1,
// scaled by 2^32), without the flag of the new ones, decodes as mixed
// and retracts its values from the classes they now fall in.
func TestVarianceClassBounds(t *testing.T) {
	f, err := Bind("var_pop", []Arg{{Type: colTypes[colFloat], Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	r := nullableFloatRows(10.0, 10.5, 10.25, 10.001, 9000.0, 10.75)
	s := f.NewState()
	for a := r.Base; a < r.End(); a++ {
		s.Add(r, a)
	}
	if n := len(s.(*varianceState).cls); n != 1 {
		t.Errorf("deviations 0.001 to 8990 in %d classes, want 1", n)
	}
	o := oracleExactVariance(0, false, false)
	if got, want := result(f, s), o(r, []int64{r.Base, r.Base + 1, r.Base + 2, r.Base + 3, r.Base + 4, r.Base + 5}); !approxEqual(got, want, 1e-15) {
		t.Fatalf("%v, want %v", got, want)
	}
	// 10, 10.5 and 10.25 with K = 10 in the first bounds: d = 0.5 and
	// 0.25 in class -1, S1 = 0.75·2^32, S2 = 0.3125·2^64.
	old := binary.AppendVarint(nil, -1-3)
	old = binary.AppendVarint(old, 0)
	old = binary.LittleEndian.AppendUint64(old, math.Float64bits(10))
	old = append(old, 0) // no flags
	old = binary.AppendUvarint(old, 1)
	old = binary.AppendVarint(old, -1)
	old = binary.AppendVarint(old, 2)
	for _, v := range []float64{0.75 * 0x1p32, 0, 0.3125 * 0x1p64, 0, 0.3125 * 0x1p64} {
		old = binary.LittleEndian.AppendUint64(old, math.Float64bits(v))
	}
	d := f.NewState()
	if err := d.UnmarshalBinary(old); err != nil {
		t.Fatal(err)
	}
	if got, want := result(f, d), o(r, []int64{r.Base, r.Base + 1, r.Base + 2}); !approxEqual(got, want, 1e-15) {
		t.Fatalf("decoded: %v, want %v", got, want)
	}
	d.(Retractor).Retract(r, r.Base+1)
	d.Add(r, r.Base+5)
	if got, want := result(f, d), o(r, []int64{r.Base, r.Base + 2, r.Base + 5}); !approxEqual(got, want, 1e-15) {
		t.Fatalf("after retracting 10.5 and adding 10.75: %v, want %v", got, want)
	}
}

func isRangeAdder(s State) bool {
	_, ok := s.(RangeAdder)
	return ok
}
