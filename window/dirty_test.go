package window

import (
	"math/rand/v2"
	"testing"
)

// TestDirtyListBounded: keys dirtied, cleaned (as evictions clean them)
// and dirtied again without a checkpoint keep the dirty list within a
// bound, each dirty key listed once after a compaction, and the list
// always holds every dirty key.
func TestDirtyListBounded(t *testing.T) {
	const keys = 300
	o := &Operator{kmeta: make([]keyMeta, keys)}
	rng := rand.New(rand.NewPCG(1, 1))
	for step := range 100_000 {
		id := int32(rng.IntN(keys))
		if rng.IntN(2) == 0 {
			o.markDirty(id)
		} else {
			o.kmeta[id].dirty = false // written by an eviction
		}
		if len(o.dirtyIDs) > 2*keys+1024+1 {
			t.Fatalf("step %d: %d ids listed for %d keys", step, len(o.dirtyIDs), keys)
		}
		if step%997 == 0 {
			listed := map[int32]bool{}
			for _, d := range o.dirtyIDs {
				listed[d] = true
			}
			for k := range o.kmeta {
				if o.kmeta[k].dirty && !listed[int32(k)] {
					t.Fatalf("step %d: dirty key %d not listed", step, k)
				}
			}
		}
	}
}
