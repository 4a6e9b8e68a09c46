package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRowsOfSplitsLikeTheHash: for 1 to 7 tasks, the rows rowsOf gives
// each task of a single int64 key column (the branch-free path, with and
// without NULLs, whole and sliced) are exactly the rows whose key hash
// modulo the tasks is that task, in order; every row goes to one task.
func TestRowsOfSplitsLikeTheHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, nulls := range []bool{false, true} {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range 5000 {
			if nulls && i%11 == 4 {
				b.AppendNull()
			} else {
				b.Append(rng.Int64() >> rng.IntN(60))
			}
		}
		whole := b.NewArray()
		b.Release()
		for _, col := range []arrow.Array{whole, array.NewSlice(whole, 17, 4001)} {
			rows := col.Len()
			var h keyHasher
			for n := 1; n <= 7; n++ {
				seen := make([]int, rows)
				for p := range n {
					got := h.rowsOf([]int32{-1}, []arrow.Array{col}, rows, p, n)
					if got[0] != -1 {
						t.Fatalf("nulls=%v n=%d p=%d: dst's first element overwritten", nulls, n, p)
					}
					got = got[1:]
					var want []int32
					for i := range rows {
						if h.hash([]arrow.Array{col}, i)%uint64(n) == uint64(p) {
							want = append(want, int32(i))
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("nulls=%v len=%d n=%d p=%d: %d rows, want %d (first %v vs %v)", nulls, rows, n, p, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
					}
					for _, i := range got {
						seen[i]++
					}
				}
				for i, c := range seen {
					if c != 1 {
						t.Fatalf("nulls=%v n=%d: row %d went to %d tasks", nulls, n, i, c)
					}
				}
			}
			if col != whole {
				col.Release()
			}
		}
		whole.Release()
	}
}
