package window

import (
	"sort"
	"sync"

	"github.com/volga-go/volga/agg"
)

// Tiling makes lookups over long windows cheap: a key's rows for one
// window are pre-aggregated into epoch-aligned tiles (one state per
// aggregate per tile), so that a lookup merges the whole tiles inside its
// frame and adds only the rows at the frame's two edges, which tiles
// cannot replace. Results are the same as adding every row (up to the
// rounding of floating-point sums, which merge in a different order).
//
// Tiles are built for a key on its first lookup whose frame holds more
// than tileMinRows rows, then extended from the rows that arrived since,
// on later lookups. With row paging (paging.go) the paged frame's tiles
// are extended at ingest, before rows go to the store, and lookups read
// only the pages at their frame's edges. (The sliding windows of
// merge-only aggregates keep their own tiles, see agg.Tiler.)

// tileMinRows is the frame size from which a lookup uses tiles. Below it,
// adding the rows costs less than building the key's tiles on its first
// lookup (which shows in the latency tail when many keys are looked up
// once).
const tileMinRows = 256

// niceTiles are the tile lengths the operator picks from (ms).
var niceTiles = []int64{
	1, 10, 100, 1000, 10_000, 60_000, 5 * 60_000, 15 * 60_000,
	3600_000, 6 * 3600_000, 24 * 3600_000,
}

// TileSize returns the tile length the operator uses for a RANGE frame of
// the given length: the largest of 1 ms, 10 ms, 100 ms, 1 s, 10 s, 1 min,
// 5 min, 15 min, 1 h, 6 h and 1 day that fits 32 times in the frame.
func TileSize(frameMs int64) int64 {
	size := niceTiles[0]
	for _, t := range niceTiles {
		if t*32 <= frameMs {
			size = t
		}
	}
	return size
}

// tileSet is one key's tiles for one window.
type tileSet struct {
	size  int64
	tiles []tile
	built int64 // rows below built are in tiles
}

type tile struct {
	start    int64
	from, to int64 // absolute rows [from, to)
	states   []agg.State
}

// keyTiles holds a key's tile sets, one per window (nil until built).
type keyTiles struct {
	mu   sync.Mutex
	sets []*tileSet
}

// extend brings the tiles up to date with rows [low, end) of r: tiles
// whose rows all lie below low go, rows from the last call's end to end
// go into tiles (read through r.At). It restarts from scratch when rows it
// never tiled were dropped.
func (ts *tileSet) extend(r *agg.Rows, low, end int64, aggs []agg.Func) {
	if ts.built < low {
		ts.tiles, ts.built = nil, low
	}
	k := 0
	for k < len(ts.tiles) && ts.tiles[k].to <= low {
		k++
	}
	if k > 0 {
		ts.tiles = append(ts.tiles[:0], ts.tiles[k:]...)
	}
	for a := ts.built; a < end; {
		x := r.At(a)
		t := x.Ts[a-x.Base]
		start := floorDiv(t, ts.size) * ts.size
		n := len(ts.tiles)
		if n == 0 || ts.tiles[n-1].start != start {
			if n > 0 {
				compact(ts.tiles[n-1].states)
			}
			st := make([]agg.State, len(aggs))
			for i, f := range aggs {
				st[i] = f.NewState()
			}
			ts.tiles = append(ts.tiles, tile{start: start, from: a, to: a, states: st})
			n++
		}
		// The run of rows from a in this tile and in x: each state takes
		// it in one go (addRows), in row order as row by row.
		b, segEnd := a+1, min(end, x.End())
		for b < segEnd && x.Ts[b-x.Base] < start+ts.size {
			b++
		}
		tl := &ts.tiles[n-1]
		for _, st := range tl.states {
			addRows(st, x, a, b)
		}
		tl.to = b
		a = b
	}
	ts.built = max(ts.built, end)
}

// compact drops from a complete tile's states what only a retraction
// would need (agg.Compacter): tiles are only merged.
func compact(states []agg.State) {
	for _, st := range states {
		if c, ok := st.(agg.Compacter); ok {
			c.Compact()
		}
	}
}

// span returns the tiles lying wholly inside rows [lo, hi): indices
// [i, j) of ts.tiles (i == j when none).
func (ts *tileSet) span(lo, hi int64) (int, int) {
	i := sort.Search(len(ts.tiles), func(k int) bool { return ts.tiles[k].from >= lo })
	j := i
	for j < len(ts.tiles) && ts.tiles[j].to <= hi {
		j++
	}
	return i, j
}

// evalTiled appends to st the rows [lo, hi) of r for aggregate number agg
// of a window: the edge rows one by one, the whole tiles by merging.
func evalTiled(st agg.State, r *agg.Rows, ts *tileSet, aggIdx int, lo, hi int64) {
	i, j := ts.span(lo, hi)
	if i == j {
		addRows(st, r, lo, hi)
		return
	}
	addRows(st, r, lo, ts.tiles[i].from)
	for k := i; k < j; k++ {
		st.Merge(ts.tiles[k].states[aggIdx])
	}
	addRows(st, r, ts.tiles[j-1].to, hi)
}

// addRows adds rows [lo, hi) of r (read through r.At) to st in order: a
// run of rows a segment of r holds in one AddRange call when st is an
// agg.RangeAdder, else row by row.
func addRows(st agg.State, r *agg.Rows, lo, hi int64) {
	ra, ok := st.(agg.RangeAdder)
	if !ok {
		for a := lo; a < hi; a++ {
			st.Add(r.At(a), a)
		}
		return
	}
	for lo < hi {
		s := r.At(lo)
		end := min(hi, s.End())
		if lo < s.Base || end <= lo {
			// A row r does not hold (a caller's bug): read it as Add
			// would.
			for a := lo; a < hi; a++ {
				st.Add(r.At(a), a)
			}
			return
		}
		ra.AddRange(s, lo, end)
		lo = end
	}
}
