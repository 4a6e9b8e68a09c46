package window

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestFrameEdgeSearch: the galloping searches of a frame's edges agree
// with a bisection of the whole array, over sorted arrays with runs of
// equal times and values below, at and above every element.
func TestFrameEdgeSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(70)
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = int64(rng.IntN(3 * n))
		}
		slices.Sort(ts)
		for end := range n {
			for v := ts[0] - 2; v <= ts[end]; v++ {
				want := sort.Search(n, func(k int) bool { return ts[k] >= v })
				if got := firstAtLeast(ts, end, v); got != want {
					t.Fatalf("firstAtLeast(%v, %d, %d) = %d, want %d", ts, end, v, got, want)
				}
			}
		}
		for from := range n + 1 {
			lo := ts[0] - 2
			if from > 0 {
				lo = ts[from-1] // every row before from is at or below v
			}
			for v := lo; v <= ts[n-1]+2; v++ {
				want := sort.Search(n, func(k int) bool { return ts[k] > v })
				if got := firstAbove(ts, from, v); got != want {
					t.Fatalf("firstAbove(%v, %d, %d) = %d, want %d", ts, from, v, got, want)
				}
			}
		}
	}
}
