package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var (
	_ = register(&Def{
		Name:      "min",
		Signature: "min(x number|string|timestamp|bool)",
		Doc:       "Smallest non-NULL value of x, of x's type; NULL when there are none. Floats order as in DuckDB: NaN above +Inf, -0 equal to 0.",
		MinArgs:   1, MaxArgs: 1,
		Bind: func(d *Def, args []Arg) (Func, error) { return bindExtremum(d, args, false) },
	})
	_ = register(&Def{
		Name:      "max",
		Signature: "max(x number|string|timestamp|bool)",
		Doc:       "Largest non-NULL value of x, of x's type; NULL when there are none. Floats order as in DuckDB: NaN above +Inf (the largest), -0 equal to 0.",
		MinArgs:   1, MaxArgs: 1,
		Bind: func(d *Def, args []Arg) (Func, error) { return bindExtremum(d, args, true) },
	})
)

func bindExtremum(d *Def, args []Arg, isMax bool) (Func, error) {
	k, err := valueArg(d, args[0])
	if err != nil {
		return nil, err
	}
	return newExtremumFunc(d.Name, args[0].Col, args[0].Type, k, isMax), nil
}

// newExtremumFunc returns min or max of the column col of type dt.
func newExtremumFunc(name string, col int, dt arrow.DataType, k Kind, isMax bool) Func {
	switch {
	case k == KindInt64 && isUnsigned64(dt):
		return &extremumFunc[uint64]{name: name, col: col, cond: -1, dt: dt, isMax: isMax, ops: uintOps}
	case k == KindInt64:
		return &extremumFunc[int64]{name: name, col: col, cond: -1, dt: dt, isMax: isMax, ops: intOps}
	case k == KindFloat64:
		return &extremumFunc[float64]{name: name, col: col, cond: -1, dt: dt, isMax: isMax, ops: floatOps}
	case k == KindString:
		return &extremumFunc[string]{name: name, col: col, cond: -1, dt: dt, isMax: isMax, ops: stringOps}
	default:
		return &extremumFunc[bool]{name: name, col: col, cond: -1, dt: dt, isMax: isMax, ops: boolOps}
	}
}

// extremumFunc is min (isMax false) or max over values held as T.
type extremumFunc[T any] struct {
	name  string
	col   int
	cond  int // condition column of min_where/max_where, or -1
	dt    arrow.DataType
	isMax bool
	ops   *valueOps[T]
}

func (f *extremumFunc[T]) Name() string               { return f.name }
func (f *extremumFunc[T]) ResultType() arrow.DataType { return f.dt }
func (f *extremumFunc[T]) Retractable() bool          { return false }
func (f *extremumFunc[T]) NewState() State {
	return &extremumState[T]{col: f.col, isMax: f.isMax, ops: f.ops}
}

// NewWindow returns a monotonic-deque window: O(1) amortised per row.
func (f *extremumFunc[T]) NewWindow() Window {
	return f.condWindow(f.cond)
}

// condWindow returns the deque window over the rows whose column cond is
// TRUE (all rows when cond < 0).
func (f *extremumFunc[T]) condWindow(cond int) Window {
	return &extremumWindow[T]{col: f.col, cond: cond, isMax: f.isMax, ops: f.ops}
}

// extremumState is the min or max of a set of rows: whether there is a
// non-NULL value, and the best one.
type extremumState[T any] struct {
	col   int
	isMax bool
	ops   *valueOps[T]
	has   bool
	v     T
}

// better reports whether a should replace b.
func (s *extremumState[T]) better(a, b T) bool {
	if s.isMax {
		return s.ops.less(b, a)
	}
	return s.ops.less(a, b)
}

func (s *extremumState[T]) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.offer(s.ops.get(c, i))
	}
}

func (s *extremumState[T]) offer(v T) {
	if !s.has || s.better(v, s.v) {
		s.v, s.has = v, true
	}
}

func (s *extremumState[T]) Merge(o State) {
	if x := o.(*extremumState[T]); x.has {
		s.offer(x.v)
	}
}

func (s *extremumState[T]) AppendResult(b array.Builder) {
	if !s.has {
		b.AppendNull()
		return
	}
	s.ops.put(b, s.v)
}

func (s *extremumState[T]) Reset() {
	var zero T
	s.has, s.v = false, zero
}

func (s *extremumState[T]) MarshalBinary() ([]byte, error) {
	if !s.has {
		return []byte{0}, nil
	}
	return s.ops.enc([]byte{1}, s.v), nil
}

func (s *extremumState[T]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	var v T
	has := d.byte()
	switch {
	case d.err != nil:
	case has == 1:
		v = s.ops.dec(&d)
	case has != 0:
		d.err = errCorrupt
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.has, s.v = has == 1, v
	return nil
}

// extremumWindow slides min or max with monotonic deques. Deque a covers
// [lo, hi), or [lo, ex) when a row is left out, and deque b covers
// (ex, hi).
type extremumWindow[T any] struct {
	col   int
	cond  int // condition column, or -1
	isMax bool
	ops   *valueOps[T]
	a     monoDeque[T]
	// x is what a frame with the current row left out (EXCLUDE CURRENT
	// ROW) needs besides a, allocated at the first such frame: a window
	// per key and aggregate, most never need it (it doubled the window's
	// size).
	x *extremumExcl[T]
}

// extremumExcl is the second deque of an extremumWindow whose frames leave
// the current row out, over the rows after it, and copies of the left-out
// row and of the rows b read, for a to take later without reading rows
// the caller may have dropped.
type extremumExcl[T any] struct {
	b      monoDeque[T]
	cstart int64
	cvals  []T
	cskip  []bool // NULL, or condition not TRUE
}

// excl returns w.x, allocated if need be.
func (w *extremumWindow[T]) excl() *extremumExcl[T] {
	if w.x == nil {
		w.x = &extremumExcl[T]{}
	}
	return w.x
}

func (w *extremumWindow[T]) Eval(r *Rows, lo, hi, ex []int64, b array.Builder) {
	for j := range lo {
		l, h := lo[j], max(hi[j], lo[j])
		var v T
		var ok bool
		if ex != nil && ex[j] >= l && ex[j] < h {
			x := w.excl()
			w.slide(&w.a, r, l, ex[j], false)
			w.trim(w.a.hi)
			w.row(r, ex[j], true) // copy the left-out row for a
			w.slide(&x.b, r, ex[j]+1, h, true)
			v, ok = w.a.front()
			if v2, ok2 := x.b.front(); ok2 && (!ok || w.better(v2, v)) {
				v, ok = v2, true
			}
		} else {
			w.slide(&w.a, r, l, h, false)
			w.trim(w.a.hi)
			v, ok = w.a.front()
		}
		if ok {
			w.ops.put(b, v)
		} else {
			b.AppendNull()
		}
	}
}

func (w *extremumWindow[T]) better(a, b T) bool {
	if w.isMax {
		return w.ops.less(b, a)
	}
	return w.ops.less(a, b)
}

// row returns the value of row a and whether it counts, from the copies
// when they hold it; with record, a row read from r is copied.
func (w *extremumWindow[T]) row(r *Rows, a int64, record bool) (T, bool) {
	if x := w.x; x != nil {
		if end := x.cstart + int64(len(x.cvals)); a >= x.cstart && a < end {
			return x.cvals[a-x.cstart], !x.cskip[a-x.cstart]
		}
	}
	r = r.At(a)
	i := int(a - r.Base)
	c := &r.Cols[w.col]
	skip := c.Null[i] || w.cond >= 0 && !rowTrue(&r.Cols[w.cond], i)
	var v T
	if !skip {
		v = w.ops.get(c, i)
	}
	if record {
		x := w.excl()
		if end := x.cstart + int64(len(x.cvals)); a != end {
			w.trim(end)
			x.cstart = a
		}
		x.cvals = append(x.cvals, v)
		x.cskip = append(x.cskip, skip)
	}
	return v, !skip
}

// trim forgets the copies of rows below a.
func (w *extremumWindow[T]) trim(a int64) {
	x := w.x
	if x == nil {
		return
	}
	n := int(min(max(a-x.cstart, 0), int64(len(x.cvals))))
	if n == 0 {
		return
	}
	k := copy(x.cvals, x.cvals[n:])
	clear(x.cvals[k:])
	x.cvals = x.cvals[:k]
	copy(x.cskip, x.cskip[n:])
	x.cskip = x.cskip[:k]
	x.cstart += int64(n)
}

// slide moves deque d to cover the counted rows of [l, h).
func (w *extremumWindow[T]) slide(d *monoDeque[T], r *Rows, l, h int64, record bool) {
	if l >= d.hi || h < d.hi {
		// Disjoint from the old range, or shrinking at the top (which
		// only an irregular EXCLUDE pattern produces): rebuild.
		d.clear()
		d.hi = l
	}
	for ; d.hi < h; d.hi++ {
		v, ok := w.row(r, d.hi, record)
		if !ok {
			continue
		}
		// Keep only values strictly better than v: an older value that is
		// not better leaves the frame first and can never be the answer.
		for n := len(d.vals); n > d.head && !w.better(d.vals[n-1], v); n-- {
			d.vals = d.vals[:n-1]
			d.rows = d.rows[:n-1]
		}
		d.vals = append(d.vals, v)
		d.rows = append(d.rows, d.hi)
	}
	for d.head < len(d.rows) && d.rows[d.head] < l {
		d.head++
	}
	d.compact()
}

// monoDeque holds (value, absolute row) pairs whose values are strictly
// monotone (best first); the values are copies, never re-read from Rows.
type monoDeque[T any] struct {
	vals []T
	rows []int64
	head int   // index of the front
	hi   int64 // rows below hi have been offered
}

func (d *monoDeque[T]) front() (T, bool) {
	if d.head < len(d.vals) {
		return d.vals[d.head], true
	}
	var zero T
	return zero, false
}

func (d *monoDeque[T]) clear() {
	clear(d.vals) // drop string references
	d.vals, d.rows, d.head = d.vals[:0], d.rows[:0], 0
}

// compact moves the live part to the front of the slices once the dead
// prefix dominates, keeping memory bounded and the cost amortised O(1).
func (d *monoDeque[T]) compact() {
	if d.head < 32 || d.head < len(d.vals)/2 {
		return
	}
	n := copy(d.vals, d.vals[d.head:])
	clear(d.vals[n:])
	d.vals = d.vals[:n]
	copy(d.rows, d.rows[d.head:])
	d.rows = d.rows[:n]
	d.head = 0
}
