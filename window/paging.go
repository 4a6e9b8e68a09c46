package window

import (
	"encoding/binary"

	"errors"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow/array"
	"math"
	"sort"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/statestore"
)

// Row paging (Config.PageRows) keeps a key's memory bounded whatever the
// length of its longest RANGE frame:
//
// The operator holds, for the longest frame (the paged window), only the
// rows of the tile at its lower edge (keyState.edge, which windows see as
// Rows.Older) and, on top (keyState.rows), the rows every other frame
// still needs plus the newest ones. The rows in between, which no frame
// reads until the paged window's lower edge reaches them, are written to
// the store in pages of about PageRows rows ("p/" + encoded key + first
// row, see statestore/FORMAT.md) and read back, in order, just before the
// lower edge enters them. The paged window's aggregates keep their sliding
// state by tile (agg.Tiler), so they neither hold nor read the middle rows
// either. Memory per key is then the edge tile's rows, the other frames'
// rows and one state per tile: it grows with frame length / tile length,
// not with the number of rows in the frame.
//
// Before rows are paged out, the paged window's tiles (see tiles.go) are
// extended over them, so a lookup of a paged key merges tiles and reads
// only the pages holding rows at its frame's edges (under the shared
// lock, without keeping them). The tiles are part of a paged key's stored
// state, so a restored or reloaded key keeps them.

// pagePrefix is the store prefix of row pages.
const pagePrefix = "p/"

// pageRef is a page of rows [from, to) in the store, with the event times
// of its first and last rows.
type pageRef struct {
	from, to     int64
	minTs, maxTs int64
}

// pagingPlan is what an Operator pages: window w with tiles of tile ms.
type pagingPlan struct {
	w    int
	prec int64
	tile int64
	rows int
}

// planPaging checks that cfg can page and returns the plan (nil when
// PageRows is 0).
func planPaging(cfg Config) (*pagingPlan, error) {
	if cfg.PageRows <= 0 {
		if cfg.PageRows < 0 {
			return nil, errors.New("window: PageRows must not be negative")
		}
		return nil, nil
	}
	switch {
	case cfg.Store == nil:
		return nil, errors.New("window: row paging needs a store (Config.Store)")
	case cfg.AllowedLateness > 0:
		return nil, errors.New("window: row paging cannot be combined with allowed lateness (late rows need their whole frames in memory)")
	case cfg.Retention > 0:
		return nil, errors.New("window: row paging cannot be combined with lookup retention")
	case cfg.ProbeCol > 0:
		return nil, errors.New("window: row paging does not serve probe rows (backfill)")
	}
	p := &pagingPlan{w: -1, rows: cfg.PageRows}
	for w, spec := range cfg.Windows {
		f := spec.Frame
		if f.Rows || f.Unbounded || f.EndPreceding != 0 {
			continue
		}
		if p.w < 0 || f.Preceding > p.prec {
			p.w, p.prec = w, f.Preceding
		}
	}
	if p.w < 0 {
		return nil, errors.New("window: row paging needs a RANGE ... PRECEDING AND CURRENT ROW frame")
	}
	for _, fn := range cfg.Windows[p.w].Aggs {
		if _, ok := fn.(agg.RangeEvaluator); ok {
			return nil, fmt.Errorf("window: row paging does not support %s in the longest frame", fn.Name())
		}
	}
	p.tile = cfg.TileSize
	if p.tile <= 0 {
		p.tile = TileSize(p.prec)
	}
	return p, nil
}

// CanPage reports why cfg cannot page its rows (Config.PageRows), or nil.
func CanPage(cfg Config) error {
	if cfg.PageRows == 0 {
		cfg.PageRows = 1
	}
	_, err := planPaging(cfg)
	return err
}

func tileEnd(t, tile int64) int64 { return (floorDiv(t, tile) + 1) * tile }

// pageStoreKey is the store key of key id's page starting at row from.
func (o *Operator) pageStoreKey(id int32, from int64) []byte {
	k := append([]byte(pagePrefix), o.encs[id]...)
	return binary.BigEndian.AppendUint64(k, uint64(from))
}

// firstAtOrAfter returns the first held row of r (segments included) with
// event time >= t, or r.End().
func firstAtOrAfter(r *agg.Rows, t int64) int64 {
	for i := range r.Older {
		s := &r.Older[i]
		if n := s.Len(); n > 0 && s.Ts[n-1] >= t {
			return s.Base + int64(sort.Search(n, func(k int) bool { return s.Ts[k] >= t }))
		}
	}
	return r.Base + int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= t }))
}

// syncOlder points the rows' Older segments at the key's edge rows.
func (ks *keyState) syncOlder() {
	if ks.edge == nil || ks.edge.Len() == 0 {
		ks.rows.Older = nil
		return
	}
	if len(ks.rows.Older) != 1 {
		ks.rows.Older = make([]agg.Rows, 1)
	}
	ks.rows.Older[0] = *ks.edge
}

// pageIn reads back the pages the paged window's lower edge reaches while
// rows up to event time tLast are evaluated: every page below the tile
// holding its new lower bound, and the pages holding that tile's rows.
func (o *Operator) pageIn(id int32, ks *keyState, tLast int64) error {
	p := o.paging
	if len(ks.pages) == 0 {
		return nil
	}
	start := tLast - p.prec
	need := tileEnd(start, p.tile)
	loaded := 0
	for _, pg := range ks.pages {
		prevMax := ks.dropped
		if ks.edge != nil && ks.edge.Len() > 0 {
			prevMax = ks.edge.Ts[ks.edge.Len()-1]
		}
		if pg.minTs >= need && prevMax >= start {
			break
		}
		rows, err := o.readPage(id, pg)
		if err != nil {
			return err
		}
		if ks.edge == nil || ks.edge.Len() == 0 {
			ks.edge = rows
		} else {
			ks.edge.Ts = append(ks.edge.Ts, rows.Ts...)
			for j := range ks.edge.Cols {
				ks.edge.Cols[j].AppendRange(&rows.Cols[j], 0, rows.Len())
			}
		}
		if prevMax < start && pg.maxTs >= start {
			// The new lower bound is in this page: its tile must be
			// held too.
			i := sort.Search(rows.Len(), func(k int) bool { return rows.Ts[k] >= start })
			need = max(need, tileEnd(rows.Ts[i], p.tile))
		}
		o.pageGarbage = append(o.pageGarbage, o.pageStoreKey(id, pg.from))
		o.stats.PagesRead++
		loaded++
	}
	if loaded > 0 {
		ks.pages = ks.pages[loaded:]
		if len(ks.pages) == 0 {
			ks.pages = nil
		}
	}
	ks.syncOlder()
	return nil
}

// readPage reads one page of key id.
func (o *Operator) readPage(id int32, pg pageRef) (*agg.Rows, error) {
	key := o.pageStoreKey(id, pg.from)
	v, ok := o.unflushed[string(key)]
	var err error
	if !ok {
		v, err = o.cfg.Store.Get(key)
	}
	if err != nil {
		return nil, fmt.Errorf("window: reading rows %d-%d of key %q: %w", pg.from, pg.to, o.encs[id], err)
	}
	rows := &agg.Rows{Base: pg.from, Cols: o.ArgColumns()}
	d := reader{b: v}
	decodeRowsInto(&d, rows)
	if d.err == nil && (rows.End() != pg.to || len(d.b) != 0) {
		d.fail()
	}
	if d.err != nil {
		return nil, fmt.Errorf("window: rows %d-%d of key %q: %w", pg.from, pg.to, o.encs[id], d.err)
	}
	return rows, nil
}

// pageOut writes the middle rows of key id to the store once there are at
// least PageRows of them: the top rows between the paged window's edge
// tile and the rows the other frames need (from keepOthers on).
func (o *Operator) pageOut(wb statestore.WriteBatch, id int32, ks *keyState, keepOthers int64) error {
	p := o.paging
	r := &ks.rows
	if r.Len() == 0 {
		return nil
	}
	// With pages, the edge rows are all below them; without, they end
	// with the tile holding the paged window's lower bound.
	edgeEnd := r.Base
	if lo := ks.pagedLo; len(ks.pages) == 0 && lo < r.End() {
		edgeEnd = max(r.Base, firstAtOrAfter(r, tileEnd(r.TsAt(max(lo, ks.lowest())), p.tile)))
	}
	end := min(keepOthers, r.End())
	if end-edgeEnd < int64(p.rows) {
		return nil
	}
	if o.tileMin != math.MaxInt {
		o.extendPagedTiles(ks, end)
	}
	// Edge rows still on top move to the edge segment.
	if n := int(edgeEnd - r.Base); n > 0 {
		if ks.edge == nil || ks.edge.Len() == 0 {
			ks.edge = &agg.Rows{Base: r.Base, Cols: o.ArgColumns()}
		}
		ks.edge.Ts = append(ks.edge.Ts, r.Ts[:n]...)
		for j := range ks.edge.Cols {
			ks.edge.Cols[j].AppendRange(&r.Cols[j], 0, n)
		}
	}
	for from := edgeEnd; from < end; {
		to := min(end, from+int64(p.rows))
		if end-to < int64(p.rows)/2 {
			to = end
		}
		i, j := int(from-r.Base), int(to-r.Base)
		pg := pageRef{from: from, to: to, minTs: r.Ts[i], maxTs: r.Ts[j-1]}
		enc := appendRows(nil, r, i, j)
		key := o.pageStoreKey(id, from)
		if err := wb.Set(key, enc); err != nil {
			return fmt.Errorf("window: writing rows of key %q: %w", o.encs[id], err)
		}
		if o.unflushed == nil {
			o.unflushed = map[string][]byte{}
		}
		o.unflushed[string(key)] = enc
		ks.pages = append(ks.pages, pg)
		o.stats.PagesWritten++
		from = to
	}
	n := int(end - r.Base)
	r.Ts = agg.DropFront(r.Ts, n)
	for j := range r.Cols {
		r.Cols[j].DropFront(n)
	}
	r.Base = end
	ks.syncOlder()
	return nil
}

// trimEdge drops the key's edge rows below a (trim then drops the rest).
func (o *Operator) trimEdge(ks *keyState, a int64) {
	if e := ks.edge; e != nil && e.Len() > 0 {
		n := min(int(a-e.Base), e.Len())
		if n > 0 {
			ks.dropped = max(ks.dropped, e.Ts[n-1])
			e.Ts = agg.DropFront(e.Ts, n)
			for j := range e.Cols {
				e.Cols[j].DropFront(n)
			}
			e.Base += int64(n)
		}
		if e.Len() == 0 && len(ks.pages) == 0 {
			ks.edge = nil
		}
		ks.syncOlder()
	}
}

// flushPageGarbage deletes the pages read back since the last call.
func (o *Operator) flushPageGarbage(wb statestore.WriteBatch) error {
	for _, k := range o.pageGarbage {
		if err := wb.Delete(k); err != nil {
			return fmt.Errorf("window: deleting a page: %w", err)
		}
	}
	o.pageGarbage = o.pageGarbage[:0]
	return nil
}

// appendRows encodes rows [i, j) of r (positions): uvarint count, event
// time deltas, then every column (appendColumn).
func appendRows(out []byte, r *agg.Rows, i, j int) []byte {
	out = binary.AppendUvarint(out, uint64(j-i))
	prev := int64(0)
	for _, t := range r.Ts[i:j] {
		out = binary.AppendVarint(out, t-prev)
		prev = t
	}
	for k := range r.Cols {
		c := r.Cols[k].Slice(i, j)
		out = appendColumn(out, &c)
	}
	return out
}

// decodeRowsInto reads rows written by appendRows into r (empty columns).
func decodeRowsInto(d *reader, r *agg.Rows) {
	n := d.count(1)
	r.Ts = make([]int64, n)
	prev := int64(0)
	for i := 0; d.err == nil && i < n; i++ {
		prev += d.varint()
		if i > 0 && prev < r.Ts[i-1] {
			d.fail()
		}
		r.Ts[i] = prev
	}
	for j := 0; d.err == nil && j < len(r.Cols); j++ {
		d.decodeColumn(&r.Cols[j], n)
	}
}

// pagedView is a lookup's view of a paged key: its retained rows, with
// its edge rows and the pages read so far as Older segments.
type pagedView struct {
	o      *Operator
	id     int32
	ks     *keyState
	r      agg.Rows
	loaded []bool // by page
}

func (o *Operator) newPagedView(id int32, ks *keyState) *pagedView {
	v := &pagedView{o: o, id: id, ks: ks, loaded: make([]bool, len(ks.pages))}
	v.r = agg.Rows{Base: ks.rows.Base, Ts: ks.rows.Ts, Cols: ks.rows.Cols}
	if ks.edge != nil && ks.edge.Len() > 0 {
		v.r.Older = []agg.Rows{*ks.edge}
	}
	return v
}

// load reads page i into the view.
func (v *pagedView) load(i int) error {
	if v.loaded[i] {
		return nil
	}
	rows, err := v.o.readPage(v.id, v.ks.pages[i])
	if err != nil {
		return err
	}
	k := sort.Search(len(v.r.Older), func(j int) bool { return v.r.Older[j].Base > rows.Base })
	v.r.Older = append(v.r.Older, agg.Rows{})
	copy(v.r.Older[k+1:], v.r.Older[k:])
	v.r.Older[k] = *rows
	v.loaded[i] = true
	v.o.lookupPages.Add(1)
	return nil
}

// ensure reads the pages holding rows of [lo, hi).
func (v *pagedView) ensure(lo, hi int64) error {
	for i, pg := range v.ks.pages {
		if pg.from < hi && pg.to > lo {
			if err := v.load(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// search returns the first row with event time >= t (> t with after).
func (v *pagedView) search(t int64, after bool) (int64, error) {
	pass := func(x int64) bool { return x > t || !after && x == t }
	in := func(s *agg.Rows) int64 {
		return s.Base + int64(sort.Search(s.Len(), func(k int) bool { return pass(s.Ts[k]) }))
	}
	if e := v.ks.edge; e != nil && e.Len() > 0 && pass(e.Ts[e.Len()-1]) {
		return in(e), nil
	}
	for i, pg := range v.ks.pages {
		if pass(pg.maxTs) {
			if err := v.load(i); err != nil {
				return 0, err
			}
			return in(v.r.At(pg.from)), nil
		}
	}
	return in(&v.ks.rows), nil
}

// lowest is the first row the key still needs (held or paged).
func (ks *keyState) lowest() int64 {
	switch {
	case ks.edge != nil && ks.edge.Len() > 0:
		return ks.edge.Base
	case len(ks.pages) > 0:
		return ks.pages[0].from
	}
	return ks.rows.Base
}

// lookupPaged is LookupWith for a key with paged rows: frames are found
// through the page index, the paged window merges its tiles, and only the
// pages holding rows at the frames' edges (or, without tiles, inside the
// frames) are read.
func (o *Operator) lookupPaged(id int32, ks *keyState, t int64, cand *agg.Rows, bld []array.Builder, states [][]agg.State) error {
	v := o.newPagedView(id, ks)
	low := ks.lowest()
	k := 0
	for w, spec := range o.cfg.Windows {
		f := spec.Frame
		if f.Unbounded {
			return ErrUnboundedLookup
		}
		hiEnd := t - f.EndPreceding
		if f.Rows {
			hiEnd = t
		}
		hi, err := v.search(hiEnd, true)
		if err != nil {
			return err
		}
		var lo int64
		if f.Rows {
			lo = hi - f.Preceding
			if lo < low {
				if ks.dropped != None {
					return ErrTooOld
				}
				lo = low
			}
		} else {
			start := t - f.Preceding
			if ks.dropped != None && ks.dropped >= start {
				return ErrTooOld
			}
			if lo, err = v.search(start, false); err != nil {
				return err
			}
		}
		hi = max(hi, lo)
		useCand := cand != nil && !f.ExcludeCurrent && (f.Rows || f.EndPreceding == 0)
		var tiles *tileSet
		if w == o.paging.w && hi-lo > int64(o.tileMin) && ks.tiles != nil {
			o.lockTiles(ks)
			if ts := ks.tiles.sets[w]; ts != nil && ts.built >= low {
				ts.extend(&v.r, low, ks.rows.End(), spec.Aggs)
				tiles = ts
			} else {
				ks.tiles.mu.Unlock()
			}
		}
		if tiles != nil {
			if i, j := tiles.span(lo, hi); i == j {
				err = v.ensure(lo, hi)
			} else if err = v.ensure(lo, tiles.tiles[i].from); err == nil {
				err = v.ensure(tiles.tiles[j-1].to, hi)
			}
		} else {
			err = v.ensure(lo, hi)
		}
		if err != nil {
			if tiles != nil {
				ks.tiles.mu.Unlock()
			}
			return err
		}
		c := cand
		if !useCand {
			c = nil
		}
		k = evalAggs(spec.Aggs, &v.r, tiles, lo, hi, c, bld, k, states, w)
		if tiles != nil {
			ks.tiles.mu.Unlock()
		}
	}
	return nil
}

// extendPagedTiles brings the paged window's tiles of key ks up to row end
// before rows are paged out, so that lookups merge tiles instead of
// reading the pages.
func (o *Operator) extendPagedTiles(ks *keyState, end int64) {
	o.lockTiles(ks)
	defer ks.tiles.mu.Unlock()
	w := o.paging.w
	ts := ks.tiles.sets[w]
	if ts == nil {
		ts = &tileSet{size: o.paging.tile, built: ks.rows.Base}
		ks.tiles.sets[w] = ts
	}
	ts.extend(&ks.rows, ks.lowest(), end, o.cfg.Windows[w].Aggs)
}

// decodePaging reads the paging section of a key state (encodeKeyState).
func (o *Operator) decodePaging(d *reader, ks *keyState) {
	if o.paging == nil {
		d.err = fmt.Errorf("%w: paged key state for an operator without row paging", ErrIncompatibleCheckpoint)
		return
	}
	ks.pagedLo = d.varint()
	e := &agg.Rows{Base: d.varint(), Cols: o.ArgColumns()}
	decodeRowsInto(d, e)
	n := d.count(4)
	next := e.End()
	for i := 0; d.err == nil && i < n; i++ {
		pg := pageRef{from: d.varint(), to: d.varint(), minTs: d.varint(), maxTs: d.varint()}
		if pg.from != next || pg.to <= pg.from || pg.maxTs < pg.minTs {
			d.fail()
		}
		next = pg.to
		ks.pages = append(ks.pages, pg)
	}
	if d.err == nil && next != ks.rows.Base {
		d.fail()
	}
	if e.Len() > 0 || len(ks.pages) > 0 {
		ks.edge = e
	}
	ks.syncOlder()
	o.decodePagedTiles(d, ks)
}

// appendPagedTiles appends the paged window's tiles of ks (so that a key
// restored or read back keeps serving lookups from tiles): a byte 0 for
// none, or 1, varint built, uvarint tile count and per tile varints start,
// from, to and each aggregate's state (uvarint length, MarshalBinary).
func (o *Operator) appendPagedTiles(out []byte, ks *keyState) ([]byte, error) {
	var ts *tileSet
	if ks.tiles != nil {
		o.lockTiles(ks)
		defer ks.tiles.mu.Unlock()
		ts = ks.tiles.sets[o.paging.w]
	}
	if ts == nil {
		return append(out, 0), nil
	}
	out = binary.AppendVarint(append(out, 1), ts.built)
	out = binary.AppendUvarint(out, uint64(len(ts.tiles)))
	for _, tl := range ts.tiles {
		for _, v := range []int64{tl.start, tl.from, tl.to} {
			out = binary.AppendVarint(out, v)
		}
		for _, st := range tl.states {
			b, err := st.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("window: encoding a tile: %w", err)
			}
			out = append(binary.AppendUvarint(out, uint64(len(b))), b...)
		}
	}
	return out, nil
}

// decodePagedTiles reads what appendPagedTiles wrote into ks.
func (o *Operator) decodePagedTiles(d *reader, ks *keyState) {
	switch d.byte() {
	case 0:
		return
	case 1:
	default:
		d.fail()
		return
	}
	aggs := o.cfg.Windows[o.paging.w].Aggs
	ts := &tileSet{size: o.paging.tile, built: d.varint()}
	n := d.count(3)
	prev := int64(math.MinInt64)
	for i := 0; d.err == nil && i < n; i++ {
		tl := tile{start: d.varint(), from: d.varint(), to: d.varint(), states: make([]agg.State, len(aggs))}
		if tl.from >= tl.to || tl.from < prev || tl.to > ts.built || floorDiv(tl.start, ts.size)*ts.size != tl.start {
			d.fail()
		}
		prev = tl.to
		for a, fn := range aggs {
			b := d.bytes()
			st := fn.NewState()
			if d.err == nil {
				if err := st.UnmarshalBinary(b); err != nil {
					d.err = fmt.Errorf("%w: tile state: %w", errCorruptState, err)
				}
			}
			tl.states[a] = st
		}
		ts.tiles = append(ts.tiles, tl)
	}
	if d.err != nil {
		return
	}
	ks.tiles = &keyTiles{sets: make([]*tileSet, len(o.cfg.Windows))}
	ks.tiles.sets[o.paging.w] = ts
}
