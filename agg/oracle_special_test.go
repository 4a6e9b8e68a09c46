package agg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// nonASCII are strings whose byte order differs from their order by
// code point or by any collation: SQL engines (DuckDB) compare strings
// byte by byte.
var nonASCII = []string{"é", "e\u0301", "日本", "ß", "Z", "\u00a0", "𝄞"}

// wideSpecialRows is specialRows with non-ASCII strings in the string
// value and category columns too.
func wideSpecialRows(rng *rand.Rand, n int) *Rows {
	r := specialRows(rng, n)
	for _, c := range []int{colStr, colCat} {
		col := &r.Cols[c]
		for i := range col.Str {
			if !col.Null[i] && rng.IntN(4) == 0 {
				col.Str[i] = nonASCII[rng.IntN(len(nonASCII))]
			}
		}
	}
	return r
}

// TestOracleOnSpecialValues compares a fresh state per frame with the
// brute-force oracle of every aggregate over rows holding NaN, ±Inf, -0
// and 0, empty and non-ASCII strings. (TestPathsAgreeOnSpecialValues
// shows every other path equals the fresh state; this ties the fresh
// state to SPEC §4.)
func TestOracleOnSpecialValues(t *testing.T) {
	for _, c := range allCases() {
		if c.oracle == nil || c.noOracle {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			f := c.bind(t)
			for seed := range seeds(30) {
				rng := rand.New(rand.NewPCG(seed, 43))
				r := wideSpecialRows(rng, 1+rng.IntN(150))
				fr := randFrames(rng, r)
				want := bruteForce(f, r, fr)
				for j := range fr.lo {
					got, o := valueOf(want, j), c.oracle(r, fr.frameRows(j))
					if !approxEqual(got, o, c.tolerance()) {
						t.Fatalf("seed %d frame %d rows %v: state %v, oracle %v", seed, j, frameVals(r, c, fr.frameRows(j)), got, o)
					}
				}
				want.Release()
			}
		})
	}
}

// frameVals lists the values of the case's column arguments over rows,
// for failure messages.
func frameVals(r *Rows, c aggCase, rows []int64) string {
	s := ""
	for _, a := range rows {
		s += "("
		for _, arg := range c.args {
			if arg.Col >= 0 {
				s += fmt.Sprintf("%v ", colValue(r, arg.Col, a))
			}
		}
		s += ")"
	}
	return s
}

// TestWindowCodecResume: a Window encoded after any call (WindowCodec),
// decoded into a fresh Window of the same Func, and given the following
// frames, gives the results of the Window that was never encoded, over
// random frames (EXCLUDE CURRENT ROW included) with rows dropped as the
// operator drops them, on ordinary and special values.
func TestWindowCodecResume(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			f := c.bind(t)
			for seed := range seeds(30) {
				rng := rand.New(rand.NewPCG(seed, 47))
				var r *Rows
				if seed%2 == 0 {
					r = randRows(rng, 1+rng.IntN(200))
				} else {
					r = wideSpecialRows(rng, 1+rng.IntN(200))
				}
				fr := randFrames(rng, r)
				want := bruteForce(f, r, fr)
				w := f.NewWindow()
				wr := cloneRows(r)
				b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
				n := len(fr.lo)
				for start := 0; start < n; {
					end := min(n, start+1+rng.IntN(20))
					var ex []int64
					if fr.ex != nil {
						ex = fr.ex[start:end]
					}
					w.Eval(wr, fr.lo[start:end], fr.hi[start:end], ex, b)
					drop := fr.lo[end-1]
					if fr.unbounded {
						drop = fr.hi[end-1]
						if fr.ex != nil && end < n && fr.ex[end] >= 0 {
							drop = min(drop, fr.ex[end])
						}
					}
					dropBelow(wr, drop)
					start = end
					if rng.IntN(2) == 0 {
						data, err := w.(WindowCodec).MarshalBinary()
						if err != nil {
							t.Fatalf("seed %d: MarshalBinary: %v", seed, err)
						}
						w = f.NewWindow()
						if err := w.(WindowCodec).UnmarshalBinary(data); err != nil {
							t.Fatalf("seed %d: UnmarshalBinary: %v", seed, err)
						}
					}
				}
				got := b.NewArray()
				b.Release()
				for j := range fr.lo {
					g, wv := valueOf(got, j), valueOf(want, j)
					if !approxEqual(g, wv, 1e-9) {
						t.Fatalf("seed %d frame %d [%d,%d) minus %v: resumed window %v, fresh state %v", seed, j, fr.lo[j], fr.hi[j], exAt(fr, j), g, wv)
					}
				}
				got.Release()
				want.Release()
			}
		})
	}
}
