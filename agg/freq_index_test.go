package agg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFreqIndexRandom checks freqIndex against a map under random adds
// and removals, for key domains small (long probe runs, many removals by
// backward shift) and large (growth).
func TestFreqIndexRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, domain := range []int{1, 3, 17, 200, 5000} {
		var fi freqIndex[string]
		var fu freqIndex[uint64]
		want := map[string]int64{}
		var total int64
		for step := range 20000 {
			if step%5000 == 4999 {
				fi.reset()
				fu.reset()
				clear(want)
				total = 0
			}
			x := rng.IntN(domain)
			k := fmt.Sprint("k", x)
			d := int64(rng.IntN(5) - 2)
			old := want[k]
			n := max(old+d, 0)
			s, gotOld, gotN := fi.add(k, d)
			_, uOld, uN := fu.add(uint64(x), d)
			if gotOld != old || gotN != n || uOld != old || uN != n {
				t.Fatalf("domain %d step %d: add(%q, %d) = %d, %d (uint %d, %d), want %d, %d", domain, step, k, d, gotOld, gotN, uOld, uN, old, n)
			}
			if n > 0 && fi.slots[s].k != k {
				t.Fatalf("slot %d holds %q, want %q", s, fi.slots[s].k, k)
			}
			total += n - old
			if n == 0 {
				delete(want, k)
			} else {
				want[k] = n
			}
			if fi.len() != len(want) || fi.total != total || fu.len() != len(want) {
				t.Fatalf("domain %d step %d: len %d (uint %d) total %d, want %d, %d", domain, step, fi.len(), fu.len(), fi.total, len(want), total)
			}
			if step%97 == 0 {
				got := map[string]int64{}
				fi.each(func(k string, n int64) { got[k] = n })
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("domain %d step %d: each gives %v, want %v", domain, step, got, want)
				}
				for k := range want {
					if s := fi.slotOf(k); s < 0 || fi.slots[s].k != k {
						t.Fatalf("slotOf(%q) = %d", k, s)
					}
				}
				if s := fi.slotOf("absent"); s >= 0 {
					t.Fatalf("slotOf(absent) = %d", s)
				}
			}
		}
	}
}
