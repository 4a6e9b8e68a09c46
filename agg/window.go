package agg

import (
	"encoding"
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// NewRetractWindow returns the Window of a retractable aggregate: rows
// entering the frame are added to one state, rows leaving it are
// retracted, so each row costs O(1) whatever the frame's length. A row
// left out by EXCLUDE CURRENT ROW is retracted for its own result and added
// back. newState must return states that implement Retractor.
func NewRetractWindow(newState func() State) Window {
	s := newState()
	return &retractWindow{s: s.(retractState)}
}

// sizer is implemented by states that can size their structures for a
// number of rows ahead of adding them, instead of growing them row by row
// from empty: each Eval of a retract window passes its largest frame
// (capped at sizeHintMax), which bounds the number of rows, hence of
// distinct values, in the state during the call. A state takes the hint
// only where it has not allocated yet.
type sizer interface {
	sizeHint(n int)
}

// sizeHintMax caps the hints, so that a state whose many rows hold few
// distinct values does not reserve room for more than this: at most
// about 3.3 KB for top1_ratio's table of string values (128 buckets and
// 96 slots), 3.7 KB for topn_frequency's (with its order) and 2.8 KB for
// sum_cate's slots, against a few hundred bytes grown.
const sizeHintMax = 64

// ownRetractWindow is a retract window allocated together with its
// state, st (one allocation a key instead of two).
type ownRetractWindow[S any] struct {
	retractWindow
	st S
}

// newOwnRetractWindow returns a retract window over st, held in the
// window's own allocation (see NewRetractWindow).
func newOwnRetractWindow[S any, P interface {
	*S
	Retractor
	State
}](st S) Window {
	w := &ownRetractWindow[S]{st: st}
	w.s = P(&w.st)
	return w
}

// retractState is a State that can retract rows.
type retractState interface {
	State
	Retractor
}

type retractWindow struct {
	s      retractState // one interface for both: 16 bytes a window less
	lo, hi int64
	n      int64 // rows in s
}

func (w *retractWindow) Eval(r *Rows, lo, hi, ex []int64, b array.Builder) {
	if sz, ok := w.s.(sizer); ok && len(lo) > 0 {
		var n int64
		for j := range lo {
			n = max(n, hi[j]-lo[j])
		}
		sz.sizeHint(int(min(n, sizeHintMax)))
	}
	for j := range lo {
		l, h := lo[j], hi[j]
		if l >= w.hi || w.n == 0 {
			// The new frame does not overlap the old one: start afresh
			// rather than retracting everything.
			w.s.Reset()
			w.lo, w.hi, w.n = l, l, 0
		}
		for ; w.hi < h; w.hi++ {
			w.s.Add(r.At(w.hi), w.hi)
			w.n++
		}
		for ; w.lo < l; w.lo++ {
			w.s.Retract(r.At(w.lo), w.lo)
			w.n--
		}
		if ex != nil && ex[j] >= l && ex[j] < h {
			x := r.At(ex[j])
			w.s.Retract(x, ex[j])
			w.s.AppendResult(b)
			w.s.Add(x, ex[j])
		} else {
			w.s.AppendResult(b)
		}
	}
}

// NewStackWindow returns the Window of an aggregate that can only merge,
// not retract: the classic two-stack queue, where every row is added once
// and merged O(1) times amortised. EXCLUDE CURRENT ROW is served by two
// such queues, one before and one after the left-out row.
func NewStackWindow(newState func() State) Window {
	return &stackWindow{newState: newState, scratch: newState(), a: newStackQueue(newState), b: newStackQueue(newState), cache: &rowCache{newState: newState}}
}

type stackWindow struct {
	newState func() State
	scratch  State
	a, b     *stackQueue // a: [lo, ex) or [lo, hi); b: (ex, hi)
	// cache holds single-row states of the left-out row and of the rows
	// b read, which a absorbs later: by then the caller may have dropped
	// those rows (unbounded frames drop rows once absorbed).
	cache *rowCache
}

// SetTile implements Tiler.
func (w *stackWindow) SetTile(ms int64) {
	w.a.tile, w.b.tile = max(ms, 0), max(ms, 0)
}

func (w *stackWindow) Eval(r *Rows, lo, hi, ex []int64, bld array.Builder) {
	for j := range lo {
		l, h := lo[j], hi[j]
		if ex != nil && ex[j] >= l && ex[j] < h {
			w.a.slide(r, l, ex[j], w.cache, false)
			w.cache.trim(w.a.hi)
			w.cache.put(r, ex[j])
			w.b.slide(r, ex[j]+1, h, w.cache, true)
			w.scratch.Reset()
			w.a.mergeInto(w.scratch)
			w.b.mergeInto(w.scratch)
		} else {
			w.a.slide(r, l, h, w.cache, false)
			w.cache.trim(w.a.hi)
			w.scratch.Reset()
			w.a.mergeInto(w.scratch)
		}
		w.scratch.AppendResult(bld)
	}
}

// stackQueue aggregates a FIFO of rows. front holds, from the oldest
// entry (last) on, the aggregate of that entry's rows and every newer row
// in front; back holds the aggregate of the rows pushed since the last
// flip, and chunks the pushed rows themselves.
//
// Untiled (tile 0), every row is its own chunk and a flip reads the rows
// again. Tiled, a chunk is the rows of one event-time tile and carries its
// own aggregate, so a flip merges chunk states without reading rows; the
// oldest front chunk is split into single rows (read then, at the frame's
// lower edge) only when the frame's lower bound falls inside it. Memory is
// then one state per tile plus one per row of the edge tile.
type stackQueue struct {
	newState func() State
	tile     int64
	lo, hi   int64
	front    []qEntry // front[len-1] is the oldest entry's suffix aggregate
	back     State
	chunks   []qEntry // back chunks, oldest first (tiled)
	backRows []int64  // back rows, oldest first (untiled)
	openTile int64    // tile of the last chunk (tiled)
	free     []State
}

// qEntry is a run of rows [from, to) and its state.
type qEntry struct {
	from, to int64
	st       State
}

func newStackQueue(newState func() State) *stackQueue {
	return &stackQueue{newState: newState, back: newState()}
}

func (q *stackQueue) get() State {
	if n := len(q.free); n > 0 {
		s := q.free[n-1]
		q.free = q.free[:n-1]
		s.Reset()
		return s
	}
	return q.newState()
}

// slide moves the queue to rows [l, h). Rows the cache holds are merged
// from it instead of being read; with record, rows read are cached.
func (q *stackQueue) slide(r *Rows, l, h int64, cache *rowCache, record bool) {
	if l >= q.hi || h < q.hi {
		// Disjoint from the queued rows, or shrinking at the top (an
		// EXCLUDE frame after a full one ending further up): rebuild.
		q.clear()
		q.lo, q.hi = l, l
	}
	for ; q.hi < h; q.hi++ {
		a := q.hi
		var c *qEntry
		cached := cache.get(a)
		if q.tile > 0 {
			var ts int64
			if cached != nil {
				ts = cache.tsOf(a)
			} else {
				ts = r.TsAt(a)
			}
			t := floorDiv(ts, q.tile)
			if n := len(q.chunks); n == 0 || q.openTile != t {
				q.chunks = append(q.chunks, qEntry{from: a, to: a, st: q.get()})
				q.openTile = t
			}
			c = &q.chunks[len(q.chunks)-1]
			c.to = a + 1
		} else {
			q.backRows = append(q.backRows, a)
		}
		if s := cached; s != nil {
			q.back.Merge(s)
			if c != nil {
				c.st.Merge(s)
			}
		} else {
			x := r.At(a)
			q.back.Add(x, a)
			if c != nil {
				c.st.Add(x, a)
			}
			if record {
				cache.put(r, a)
			}
		}
	}
	for q.lo < l {
		if len(q.front) == 0 {
			q.flip(r)
		}
		n := len(q.front) - 1
		e := q.front[n]
		if e.to <= l {
			q.free = append(q.free, e.st)
			q.front = q.front[:n]
			q.lo = e.to
			continue
		}
		q.split(r, l)
		q.lo = l
	}
}

// split replaces the oldest front entry, which holds rows [from, to)
// with from < l < to, by single-row entries for rows [l, to), reading
// those rows.
func (q *stackQueue) split(r *Rows, l int64) {
	n := len(q.front) - 1
	e := q.front[n]
	q.front = q.front[:n]
	q.free = append(q.free, e.st)
	var next State
	if n > 0 {
		next = q.front[n-1].st
	}
	for a := e.to - 1; a >= l; a-- {
		s := q.get()
		s.Add(r.At(a), a)
		if next != nil {
			s.Merge(next)
		}
		q.front = append(q.front, qEntry{from: a, to: a + 1, st: s})
		next = s
	}
}

// flip moves the back chunks to the front, building suffix aggregates from
// the newest chunk to the oldest.
func (q *stackQueue) flip(r *Rows) {
	var next State
	for i := len(q.backRows) - 1; i >= 0; i-- {
		a := q.backRows[i]
		s := q.get()
		s.Add(r.At(a), a)
		if next != nil {
			s.Merge(next)
		}
		q.front = append(q.front, qEntry{from: a, to: a + 1, st: s})
		next = s
	}
	for i := len(q.chunks) - 1; i >= 0; i-- {
		c := q.chunks[i]
		s := c.st
		if next != nil {
			s.Merge(next)
		}
		q.front = append(q.front, qEntry{from: c.from, to: c.to, st: s})
		next = s
	}
	q.backRows = q.backRows[:0]
	clear(q.chunks)
	q.chunks = q.chunks[:0]
	q.back.Reset()
}

func (q *stackQueue) mergeInto(dst State) {
	if n := len(q.front); n > 0 {
		dst.Merge(q.front[n-1].st)
	}
	if len(q.chunks) > 0 || len(q.backRows) > 0 {
		dst.Merge(q.back)
	}
}

func (q *stackQueue) clear() {
	for _, e := range q.front {
		q.free = append(q.free, e.st)
	}
	for _, c := range q.chunks {
		q.free = append(q.free, c.st)
	}
	q.backRows = q.backRows[:0]
	clear(q.front)
	q.front = q.front[:0]
	clear(q.chunks)
	q.chunks = q.chunks[:0]
	q.back.Reset()
}

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// rowCache holds single-row states for a contiguous run of rows
// [start, start+len(states)).
type rowCache struct {
	newState func() State
	start    int64
	states   []State
	ts       []int64 // event times of the cached rows
	free     []State
}

func (c *rowCache) get(a int64) State {
	if a >= c.start && a < c.start+int64(len(c.states)) {
		return c.states[a-c.start]
	}
	return nil
}

// tsOf returns the event time of cached row a.
func (c *rowCache) tsOf(a int64) int64 { return c.ts[a-c.start] }

// put caches row a, which is read now; a row that does not extend the
// run starts a new one.
func (c *rowCache) put(r *Rows, a int64) {
	end := c.start + int64(len(c.states))
	if a >= c.start && a < end {
		return
	}
	if a != end {
		c.trim(end)
		c.start = a
	}
	var s State
	if n := len(c.free); n > 0 {
		s = c.free[n-1]
		c.free = c.free[:n-1]
		s.Reset()
	} else {
		s = c.newState()
	}
	s.Add(r.At(a), a)
	c.states = append(c.states, s)
	c.ts = append(c.ts, r.TsAt(a))
}

// trim forgets the rows below a.
func (c *rowCache) trim(a int64) {
	n := min(max(a-c.start, 0), int64(len(c.states)))
	if n == 0 {
		return
	}
	c.free = append(c.free, c.states[:n]...)
	k := copy(c.states, c.states[n:])
	clear(c.states[k:])
	c.states = c.states[:k]
	copy(c.ts, c.ts[n:])
	c.ts = c.ts[:k]
	c.start += n
}

// MarshalBinary encodes the window's sliding state (WindowCodec): its
// state, its bounds and its row count.
func (w *retractWindow) MarshalBinary() ([]byte, error) { return w.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (w *retractWindow) AppendBinary(out []byte) ([]byte, error) {
	out, err := AppendEncoded(out, w.s)
	if err != nil {
		return nil, err
	}
	out = binary.AppendVarint(out, w.lo)
	out = binary.AppendVarint(out, w.hi)
	return binary.AppendVarint(out, w.n), nil
}

// UnmarshalBinary restores a state written by MarshalBinary (WindowCodec).
func (w *retractWindow) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	sb := d.bytes()
	lo, hi, n := d.varint(), d.varint(), d.nonNeg()
	if err := d.finish(); err != nil {
		return err
	}
	if lo > hi {
		return errCorrupt
	}
	if err := w.s.UnmarshalBinary(sb); err != nil {
		return err
	}
	w.lo, w.hi, w.n = lo, hi, n
	return nil
}

// MarshalBinary encodes the window's two queues and its row cache
// (WindowCodec).
func (w *stackWindow) MarshalBinary() ([]byte, error) {
	out, err := w.a.appendBinary(nil)
	if err != nil {
		return nil, err
	}
	if out, err = w.b.appendBinary(out); err != nil {
		return nil, err
	}
	out = binary.AppendVarint(out, w.cache.start)
	out = binary.AppendUvarint(out, uint64(len(w.cache.states)))
	for i, s := range w.cache.states {
		out = binary.AppendVarint(out, w.cache.ts[i])
		if out, err = AppendEncoded(out, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UnmarshalBinary restores a state written by MarshalBinary (WindowCodec).
func (w *stackWindow) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	w.a.clear()
	w.b.clear()
	w.a.decode(&d)
	w.b.decode(&d)
	w.cache.trim(w.cache.start + int64(len(w.cache.states)))
	w.cache.start = d.varint()
	n := d.count(1)
	for range n {
		s := w.newState()
		w.cache.ts = append(w.cache.ts, d.varint())
		decodeState(&d, s)
		w.cache.states = append(w.cache.states, s)
	}
	return d.finish()
}

func (q *stackQueue) appendBinary(out []byte) ([]byte, error) {
	out = binary.AppendVarint(out, q.lo)
	out = binary.AppendVarint(out, q.hi)
	out = binary.AppendUvarint(out, uint64(len(q.front)))
	var err error
	for _, e := range q.front {
		out = binary.AppendVarint(out, e.from)
		out = binary.AppendVarint(out, e.to)
		if out, err = AppendEncoded(out, e.st); err != nil {
			return nil, err
		}
	}
	if out, err = AppendEncoded(out, q.back); err != nil {
		return nil, err
	}
	out = binary.AppendVarint(out, q.openTile)
	out = binary.AppendUvarint(out, uint64(len(q.backRows)+len(q.chunks)))
	for _, a := range q.backRows {
		out = binary.AppendVarint(out, a)
		out = binary.AppendVarint(out, a+1)
		out = append(out, 0)
	}
	for _, c := range q.chunks {
		out = binary.AppendVarint(out, c.from)
		out = binary.AppendVarint(out, c.to)
		if out, err = AppendEncoded(append(out, 1), c.st); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q *stackQueue) decode(d *decoder) {
	q.lo, q.hi = d.varint(), d.varint()
	n := d.count(3)
	for range n {
		e := qEntry{from: d.varint(), to: d.varint(), st: q.get()}
		decodeState(d, e.st)
		if e.from >= e.to {
			d.err = errCorrupt
		}
		q.front = append(q.front, e)
	}
	decodeState(d, q.back)
	q.openTile = d.varint()
	n = d.count(3)
	for range n {
		c := qEntry{from: d.varint(), to: d.varint()}
		switch d.byte() {
		case 0: // a row of an untiled queue
			if q.tile > 0 || c.to != c.from+1 {
				d.err = errCorrupt
			}
			q.backRows = append(q.backRows, c.from)
			continue
		case 1:
			c.st = q.get()
			decodeState(d, c.st)
		default:
			d.err = errCorrupt
		}
		if q.tile == 0 || c.from >= c.to {
			d.err = errCorrupt
		}
		q.chunks = append(q.chunks, c)
	}
	if d.err == nil && q.lo > q.hi {
		d.err = errCorrupt
	}
}

// AppendEncoded appends to out m's encoding preceded by its length as a
// uvarint. When m is an encoding.BinaryAppender, the encoding is written
// in place, behind a one-byte length moved up if it needs more (most
// encodings of states and windows are shorter than 128 bytes), with no
// allocation of its own; otherwise it is MarshalBinary's.
func AppendEncoded(out []byte, m encoding.BinaryMarshaler) ([]byte, error) {
	a, ok := m.(encoding.BinaryAppender)
	if !ok {
		b, err := m.MarshalBinary()
		if err != nil {
			return nil, err
		}
		return append(binary.AppendUvarint(out, uint64(len(b))), b...), nil
	}
	at := len(out)
	out, err := a.AppendBinary(append(out, 0))
	if err != nil {
		return nil, err
	}
	n := len(out) - at - 1
	if n < 0x80 {
		out[at] = byte(n)
		return out, nil
	}
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(n))
	out = append(out, hdr[:h-1]...) // room for the longer length
	copy(out[at+h:], out[at+1:at+1+n])
	copy(out[at:], hdr[:h])
	return out, nil
}

// decodeState reads an encoding written by AppendEncoded into s.
func decodeState(d *decoder, s State) {
	b := d.bytes()
	if d.err != nil {
		return
	}
	if err := s.UnmarshalBinary(b); err != nil {
		d.err = err
	}
}
