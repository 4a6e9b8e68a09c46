package agg

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestExtremumWindowExclusionState: a max window holds the part that
// EXCLUDE CURRENT ROW frames need only once such a frame came; encoded
// and decoded half way (re-encoding gives the same bytes, and a window
// that never left a row out stays without that part), it gives what a
// window never encoded gives, frame for frame.
func TestExtremumWindowExclusionState(t *testing.T) {
	fn, err := Bind("max", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 2000
	all := randFloatRows(rng, n, 8, 1)
	for _, exclude := range []bool{false, true} {
		var los, his, exs []int64
		var lo int64
		for a := int64(0); a < n; a++ {
			lo = max(lo, a-int64(rng.IntN(40)))
			ex := int64(-1)
			if exclude && rng.IntN(2) == 0 {
				ex = a
			}
			los, his, exs = append(los, lo), append(his, a+1), append(exs, ex)
		}
		run := func(encode bool) []any {
			win := fn.NewWindow()
			b := array.NewFloat64Builder(memory.DefaultAllocator)
			defer b.Release()
			for s := 0; s < n; {
				e := min(n, s+1+rng.IntN(30))
				var ex []int64
				if exclude {
					ex = exs[s:e]
				}
				win.Eval(rowsFrom(all, los[s]), los[s:e], his[s:e], ex, b)
				if encode && s < n/2 && e >= n/2 {
					win = reencoded(t, fn, win)
					if x := win.(*extremumWindow[float64]).x; (x != nil) != exclude {
						t.Fatalf("exclude %v: decoded window has the exclusion part: %v", exclude, x != nil)
					}
				}
				s = e
			}
			if x := win.(*extremumWindow[float64]).x; (x != nil) != exclude {
				t.Fatalf("exclude %v: window has the exclusion part: %v", exclude, x != nil)
			}
			arr := b.NewFloat64Array()
			defer arr.Release()
			out := make([]any, n)
			for i := range n {
				if arr.IsValid(i) {
					out[i] = arr.Value(i)
				}
			}
			return out
		}
		want, got := run(false), run(true)
		for i := range n {
			if got[i] != want[i] {
				t.Fatalf("exclude %v: row %d: %v after a decode, %v without", exclude, i, got[i], want[i])
			}
		}
		// And the brute force, for the frames with the row left out.
		for i := range n {
			var best any
			for k := los[i]; k < his[i]; k++ {
				if k == exs[i] || all.Cols[0].Null[k] {
					continue
				}
				if v := all.Cols[0].F64[k]; best == nil || v > best.(float64) {
					best = v
				}
			}
			if best != want[i] {
				t.Fatalf("exclude %v: row %d: %v, brute force %v", exclude, i, want[i], best)
			}
		}
	}
}
