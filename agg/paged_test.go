package agg

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestWindowsReadOnlyEdges runs every aggregate's Window over RANGE frames
// on rows held the way a paging window operator holds them: the rows of
// the tile at the frame's lower edge in Rows.Older, the newest rows on
// top, nothing in between (a read there panics). Tiled windows (Tiler)
// get the tile length. Results must equal a fresh state per frame.
func TestWindowsReadOnlyEdges(t *testing.T) {
	cases := append(standardCases(), mlCases()...)
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			f := c.bind(t)
			for seed := range seeds(20) {
				rng := rand.New(rand.NewPCG(seed, 11))
				r := randRows(rng, 50+rng.IntN(600))
				tile := []int64{1, 2, 5, 10}[rng.IntN(4)]
				prec := tile * (3 + rng.Int64N(12))
				fr := rangeFramesEx(r, prec, rng.IntN(2) == 0)
				got := evalPaged(t, f, r, fr, tile, rng)
				want := bruteForce(f, r, fr)
				for j := range fr.lo {
					g, w := valueOf(got, j), valueOf(want, j)
					if !approxEqual(g, w, 1e-9) {
						t.Fatalf("seed %d tile %d frame %d [%d,%d): paged window %v, fresh state %v", seed, tile, j, fr.lo[j], fr.hi[j], g, w)
					}
				}
				got.Release()
				want.Release()
			}
		})
	}
}

// rangeFramesEx are the frames of RANGE prec PRECEDING AND CURRENT ROW
// (with its peers), optionally excluding the current row.
func rangeFramesEx(r *Rows, prec int64, exclude bool) frames {
	var f frames
	for j := range r.Len() {
		t := r.Ts[j]
		l := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= t-prec })
		h := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > t })
		f.lo = append(f.lo, r.Base+int64(l))
		f.hi = append(f.hi, r.Base+int64(h))
		if exclude {
			f.ex = append(f.ex, r.Base+int64(j))
		}
	}
	return f
}

// evalPaged evaluates the frames in random chunks; before each chunk the
// window sees only the rows from its previous lower bound to the end of
// the tile holding the chunk's last lower bound, and the rows from the
// chunk's first row (or the previous upper bound) on.
func evalPaged(t *testing.T, f Func, r *Rows, fr frames, tile int64, rng *rand.Rand) arrow.Array {
	t.Helper()
	w := f.NewWindow()
	if tw, ok := w.(Tiler); ok {
		tw.SetTile(tile)
	}
	b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer b.Release()
	n := len(fr.lo)
	prevLo, prevHi := fr.lo[0], fr.lo[0]
	for start := 0; start < n; {
		end := min(n, start+1+rng.IntN(30))
		loEnd := fr.lo[end-1]
		tileEnd := (floorDiv(r.TsAt(min(loEnd, r.End()-1)), tile) + 1) * tile
		edgeEnd := r.Base + int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= tileEnd }))
		top := min(prevHi, r.Base+int64(start))
		view := sliceRows(r, top, r.End())
		if edgeEnd < top {
			view.Older = []Rows{*sliceRows(r, prevLo, edgeEnd)}
		} else {
			view = sliceRows(r, prevLo, r.End())
		}
		var ex []int64
		if fr.ex != nil {
			ex = fr.ex[start:end]
		}
		w.Eval(view, fr.lo[start:end], fr.hi[start:end], ex, b)
		prevLo, prevHi = loEnd, fr.hi[end-1]
		start = end
	}
	return b.NewArray()
}

// sliceRows copies rows [from, to) of r.
func sliceRows(r *Rows, from, to int64) *Rows {
	c := cloneRows(r)
	dropBelow(c, from)
	k := int(to - c.Base)
	c.Ts = c.Ts[:k]
	for i := range c.Cols {
		c.Cols[i] = c.Cols[i].Slice(0, k)
	}
	return c
}
