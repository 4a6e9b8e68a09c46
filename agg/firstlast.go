package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var (
	_ = register(&Def{
		Name:      "first_value",
		Signature: "first_value(x any)",
		Doc:       "Value of x (possibly NULL) at the earliest row of the frame in (ts, arrival) order; NULL for an empty frame.",
		MinArgs:   1, MaxArgs: 1,
		Bind: func(d *Def, args []Arg) (Func, error) { return bindEdge(d, args, false) },
	})
	_ = register(&Def{
		Name:      "last_value",
		Signature: "last_value(x any)",
		Doc:       "Value of x (possibly NULL) at the latest row of the frame in (ts, arrival) order; NULL for an empty frame.",
		MinArgs:   1, MaxArgs: 1,
		Bind: func(d *Def, args []Arg) (Func, error) { return bindEdge(d, args, true) },
	})
)

func bindEdge(d *Def, args []Arg, last bool) (Func, error) {
	k, err := valueArg(d, args[0])
	if err != nil {
		return nil, err
	}
	f := &edgeFunc{name: d.Name, col: args[0].Col, dt: args[0].Type, last: last}
	switch {
	case k == KindInt64:
		f.newState = func() State { return &edgeState[int64]{col: f.col, last: last, ops: intOps} }
	case k == KindFloat64:
		f.newState = func() State { return &edgeState[float64]{col: f.col, last: last, ops: floatOps} }
	case k == KindString:
		f.newState = func() State { return &edgeState[string]{col: f.col, last: last, ops: stringOps} }
	default:
		f.newState = func() State { return &edgeState[bool]{col: f.col, last: last, ops: boolOps} }
	}
	return f, nil
}

// edgeFunc is first_value (last false) or last_value.
type edgeFunc struct {
	name     string
	col      int
	dt       arrow.DataType
	last     bool
	newState func() State
}

func (f *edgeFunc) Name() string               { return f.name }
func (f *edgeFunc) ResultType() arrow.DataType { return f.dt }
func (f *edgeFunc) Retractable() bool          { return false }
func (f *edgeFunc) NewState() State            { return f.newState() }

// NewWindow returns a window that reads the first (last) row of each frame:
// its lower (upper) bound, or the row next to it when that one is left out.
// Rows below an unbounded frame's fixed lower bound are dropped from Rows
// once absorbed, so the window copies the values it may need again while
// the rows are entering the frame (and so are still held): first_value
// needs rows lo and lo+1, last_value rows hi-1 and hi-2. Two slots,
// chosen by the row number's parity, hold exactly those.
func (f *edgeFunc) NewWindow() Window {
	return &edgeWindow{col: f.col, last: f.last, dt: f.dt}
}

type edgeWindow struct {
	col   int
	last  bool
	dt    arrow.DataType
	hi    int64 // rows below hi have entered the frame
	slots [2]edgeCopy
}

// edgeCopy is a copy of the value of row abs (valid when val has one value).
type edgeCopy struct {
	abs int64
	val Column
}

// keep copies the value of row a of r into its slot.
func (w *edgeWindow) keep(r *Rows, a int64) {
	c := &w.slots[a&1]
	if c.val.Len() == 1 && c.abs == a {
		return
	}
	if c.val.Type == nil {
		c.val, _ = NewColumn(w.dt)
	}
	c.val.DropFront(c.val.Len())
	r = r.At(a)
	c.val.AppendFrom(&r.Cols[w.col], int(a-r.Base))
	c.abs = a
}

// value returns the column and position holding row a's value.
func (w *edgeWindow) value(r *Rows, a int64) (*Column, int) {
	if c := &w.slots[a&1]; c.val.Len() == 1 && c.abs == a {
		return &c.val, 0
	}
	w.keep(r, a)
	return &w.slots[a&1].val, 0
}

func (w *edgeWindow) Eval(r *Rows, lo, hi, ex []int64, b array.Builder) {
	for j := range lo {
		l, h := lo[j], hi[j]
		if h > w.hi {
			// Rows [w.hi, h) enter the frame now: copy the ones this
			// window may read again once they are no longer held.
			from, to := max(w.hi, l), min(h, l+2)
			if w.last {
				from, to = max(w.hi, h-2, l), h
			}
			for a := from; a < to; a++ {
				w.keep(r, a)
			}
			w.hi = h
		}
		if ex != nil && ex[j] >= l && ex[j] < h {
			if ex[j] == l {
				l++
			} else if ex[j] == h-1 {
				h--
			}
		}
		if l >= h {
			b.AppendNull()
			continue
		}
		a := l
		if w.last {
			a = h - 1
		}
		c, i := w.value(r, a)
		AppendValue(b, c, i)
	}
}

// edgeState keeps the first or last row's value, which may be NULL. Rows
// are added in (ts, arrival) order, and a merged state's rows come after
// the receiver's.
type edgeState[T any] struct {
	col  int
	last bool
	ops  *valueOps[T]
	has  bool // a row was seen
	null bool // its value is NULL
	v    T
}

func (s *edgeState[T]) Add(r *Rows, a int64) {
	if s.has && !s.last {
		return
	}
	c := &r.Cols[s.col]
	i := int(a - r.Base)
	s.has, s.null = true, c.Null[i]
	if s.null {
		var zero T
		s.v = zero
	} else {
		s.v = s.ops.get(c, i)
	}
}

func (s *edgeState[T]) Merge(o State) {
	x := o.(*edgeState[T])
	if x.has && (!s.has || s.last) {
		s.has, s.null, s.v = true, x.null, x.v
	}
}

func (s *edgeState[T]) AppendResult(b array.Builder) {
	if !s.has || s.null {
		b.AppendNull()
		return
	}
	s.ops.put(b, s.v)
}

func (s *edgeState[T]) Reset() {
	var zero T
	s.has, s.null, s.v = false, false, zero
}

// MarshalBinary writes 0 (no row), 2 (a NULL value) or 1 and the value.
func (s *edgeState[T]) MarshalBinary() ([]byte, error) {
	switch {
	case !s.has:
		return []byte{0}, nil
	case s.null:
		return []byte{2}, nil
	}
	return s.ops.enc([]byte{1}, s.v), nil
}

func (s *edgeState[T]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	var v T
	tag := d.byte()
	switch {
	case d.err != nil:
	case tag == 1:
		v = s.ops.dec(&d)
	case tag > 2:
		d.err = errCorrupt
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.has, s.null, s.v = tag != 0, tag == 2, v
	return nil
}
