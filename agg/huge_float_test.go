package agg

import (
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

// oracleExactAvg is avg(x) of floats as DuckDB computes it, the sum over
// the count, with the sum exact rounded once: +Inf when the sum
// overflows.
func oracleExactAvg(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		s, n := exactFloatSum(r, c, rows)
		if n == 0 {
			return nil
		}
		return s / float64(n)
	}
}

// TestFloatSumHugeValues: sums of floats near the top of the float64
// range (1e308, MaxFloat64 ...) are ±Inf while their exact sum is beyond
// it and exact again once the huge values leave the frame, whichever way
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
				if ra, ok := f.NewState().(RangeAdder); ok {
					s := f.NewState()
					ra = s.(RangeAdder)
					k := r.Base + rng.Int64N(int64(r.Len())+1)
					ra.AddRange(r, r.Base, k)
					ra.AddRange(r, k, r.End())
					check("AddRange of all rows", 0, all, result(f, s))
				}
				i := rng.IntN(len(all) + 1)
				m := stateOf(f, r, all[:i])
				m.Merge(stateOf(f, r, all[i:]))
				check("merged parts", i, all, result(f, m))
				data, err := m.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				d := f.NewState()
				if err := d.UnmarshalBinary(data); err != nil {
					t.Fatalf("seed %d: decoding: %v", seed, err)
				}
				check("decoded state", 0, all, result(f, d))
				for cut := range len(data) {
					if err := f.NewState().UnmarshalBinary(data[:cut]); err == nil {
						t.Fatalf("seed %d: truncated encoding (%d of %d bytes) accepted", seed, cut, len(data))
					}
				}
				keep := slices.Clone(all[i:])
				for _, a := range all[:i] {
					d.(Retractor).Retract(r, a)
				}
				check("decoded state less the first rows", i, keep, result(f, d))
			}
		})
	}
}
