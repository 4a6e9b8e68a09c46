package window

import (
	"testing"

	"github.com/volga-go/volga/internal/testutil"
)

// TestWinTableRandom checks winTable against a Go map under random puts,
// gets and deletes (deletion's backward shift in particular: keys from a
// small range collide and form long probe runs), through growth, resets
// and iteration.
func TestWinTableRandom(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		for _, keys := range []int32{8, 64, 5000} {
			tab := newWinTable(rng.IntN(10))
			want := map[int32]*groupWin{}
			wins := make([]groupWin, 64)
			for op := range 20_000 {
				k := rng.Int32N(keys)
				switch r := rng.IntN(10); {
				case r < 4:
					w := &wins[rng.IntN(len(wins))]
					tab.put(k, w)
					want[k] = w
				case r < 7:
					tab.del(k)
					delete(want, k)
				case r < 9:
					if got := tab.get(k); got != want[k] {
						t.Fatalf("seed %d keys %d op %d: get(%d) = %p, want %p", seed, keys, op, k, got, want[k])
					}
				default:
					if rng.IntN(200) == 0 {
						tab.reset()
						clear(want)
					}
				}
				if tab.len() != len(want) {
					t.Fatalf("seed %d keys %d op %d: len %d, want %d", seed, keys, op, tab.len(), len(want))
				}
			}
			seen := map[int32]bool{}
			tab.each(func(k int32, w *groupWin) {
				if seen[k] || want[k] != w {
					t.Fatalf("seed %d keys %d: each gave key %d (%p) twice or wrongly (want %p)", seed, keys, k, w, want[k])
				}
				seen[k] = true
			})
			if len(seen) != len(want) {
				t.Fatalf("seed %d keys %d: each gave %d keys, want %d", seed, keys, len(seen), len(want))
			}
			for k, w := range want {
				if got := tab.get(k); got != w {
					t.Fatalf("seed %d keys %d: get(%d) = %p at the end, want %p", seed, keys, k, got, w)
				}
			}
		}
	}
}
