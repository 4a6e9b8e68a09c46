package agg

import (
	"encoding"
	"encoding/binary"
	"math"
)

// WindowCodec is implemented by the Windows whose sliding state can be
// saved and restored exactly, so that a window operator can checkpoint a
// key, or evict it from memory, and carry on later with bit-identical
// results. UnmarshalBinary must be called on a fresh Window made by the
// same Func's NewWindow as the one that was encoded; the encoding is
// private to the Window kind (and may change with this package's
// version). Every Window this package makes implements it.
//
// The state includes the values a Window copied from rows it may need
// again after the caller dropped them (see Window), so an UNBOUNDED
// PRECEDING frame, whose absorbed rows are gone, is restored exactly.
type WindowCodec interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

var (
	_ WindowCodec = (*retractWindow)(nil)
	_ WindowCodec = (*stackWindow)(nil)
	_ WindowCodec = (*countStarWindow)(nil)
	_ WindowCodec = (*extremumWindow[int64])(nil)
	_ WindowCodec = (*edgeWindow)(nil)
	_ WindowCodec = (*percentileWindow)(nil)
)

// MarshalBinary implements WindowCodec: count(*) keeps no state.
func (w *countStarWindow) MarshalBinary() ([]byte, error) { return []byte{}, nil }

// AppendBinary appends what MarshalBinary returns: nothing.
func (w *countStarWindow) AppendBinary(out []byte) ([]byte, error) { return out, nil }

// UnmarshalBinary implements WindowCodec.
func (w *countStarWindow) UnmarshalBinary(data []byte) error {
	if len(data) != 0 {
		return errCorrupt
	}
	return nil
}

// MarshalBinary implements WindowCodec: the live part of both deques and
// the copied rows.
//
// A window that never left a row out (no extremumExcl) is encoded as one
// with an empty second deque and no copies.
func (w *extremumWindow[T]) MarshalBinary() ([]byte, error) { return w.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (w *extremumWindow[T]) AppendBinary(out []byte) ([]byte, error) {
	x := w.x
	if x == nil {
		x = &extremumExcl[T]{}
	}
	out = w.appendDeque(out, &w.a)
	out = w.appendDeque(out, &x.b)
	out = binary.AppendVarint(out, x.cstart)
	out = binary.AppendUvarint(out, uint64(len(x.cvals)))
	for i, v := range x.cvals {
		if x.cskip[i] {
			out = append(out, 0)
			continue
		}
		out = w.ops.enc(append(out, 1), v)
	}
	return out, nil
}

func (w *extremumWindow[T]) appendDeque(out []byte, d *monoDeque[T]) []byte {
	out = binary.AppendVarint(out, d.hi)
	out = binary.AppendUvarint(out, uint64(len(d.vals)-d.head))
	for i := d.head; i < len(d.vals); i++ {
		out = binary.AppendVarint(w.ops.enc(out, d.vals[i]), d.rows[i])
	}
	return out
}

func (w *extremumWindow[T]) decodeDeque(d *decoder, q *monoDeque[T]) {
	q.clear()
	q.hi = d.varint()
	n := d.count(2)
	for range n {
		v := w.ops.dec(d)
		q.vals = append(q.vals, v)
		q.rows = append(q.rows, d.varint())
	}
}

// UnmarshalBinary implements WindowCodec.
func (w *extremumWindow[T]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	w.decodeDeque(&d, &w.a)
	x := w.x
	if x == nil {
		x = &extremumExcl[T]{}
	}
	w.decodeDeque(&d, &x.b)
	x.cstart = d.varint()
	n := d.count(1)
	x.cvals, x.cskip = x.cvals[:0], x.cskip[:0]
	for range n {
		var v T
		skip := false
		switch d.byte() {
		case 0:
			skip = true
		case 1:
			v = w.ops.dec(&d)
		default:
			d.err = errCorrupt
		}
		x.cvals = append(x.cvals, v)
		x.cskip = append(x.cskip, skip)
	}
	if w.x == nil && (x.b.hi != 0 || len(x.b.vals) > 0 || x.cstart != 0 || n > 0) {
		w.x = x
	} else if w.x != nil && x.b.hi == 0 && len(x.b.vals) == 0 && x.cstart == 0 && n == 0 {
		w.x = nil
	}
	return d.finish()
}

// MarshalBinary implements WindowCodec: the frame's upper bound and the
// two copied edge values.
func (w *edgeWindow) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, w.hi)
	for i := range w.slots {
		c := &w.slots[i]
		if c.val.Len() != 1 {
			out = append(out, 0)
			continue
		}
		out = binary.AppendVarint(append(out, 1), c.abs)
		out = appendColumnValue(out, &c.val, 0)
	}
	return out, nil
}

// UnmarshalBinary implements WindowCodec.
func (w *edgeWindow) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	w.hi = d.varint()
	for i := range w.slots {
		c := &w.slots[i]
		if c.val.Type == nil {
			c.val, _ = NewColumn(w.dt)
		}
		c.val.DropFront(c.val.Len())
		c.abs = 0
		switch d.byte() {
		case 0:
		case 1:
			c.abs = d.varint()
			decodeColumnValue(&d, &c.val)
		default:
			d.err = errCorrupt
		}
	}
	return d.finish()
}

// appendColumnValue appends value i of c: a NULL flag, then the value.
func appendColumnValue(out []byte, c *Column, i int) []byte {
	if c.Null[i] {
		return append(out, 1)
	}
	out = append(out, 0)
	switch c.Kind {
	case KindInt64:
		out = binary.AppendVarint(out, c.I64[i])
	case KindFloat64:
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(c.F64[i]))
	case KindString:
		out = append(binary.AppendUvarint(out, uint64(len(c.Str[i]))), c.Str[i]...)
	case KindBool:
		out = boolOps.enc(out, c.Bool[i])
	}
	return out
}

// decodeColumnValue appends to c a value written by appendColumnValue.
func decodeColumnValue(d *decoder, c *Column) {
	switch d.byte() {
	case 0:
	case 1:
		c.AppendNull()
		return
	default:
		d.err = errCorrupt
		return
	}
	c.Null = append(c.Null, false)
	switch c.Kind {
	case KindInt64:
		c.I64 = append(c.I64, d.varint())
	case KindFloat64:
		c.F64 = append(c.F64, d.float())
	case KindString:
		c.Str = append(c.Str, string(d.bytes()))
	case KindBool:
		c.Bool = append(c.Bool, boolOps.dec(d))
	default:
		d.err = errCorrupt
	}
}

// MarshalBinary implements WindowCodec: the bounds and the frame's values
// in order.
func (w *percentileWindow) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, w.lo)
	out = binary.AppendVarint(out, w.hi)
	out = binary.AppendUvarint(out, uint64(w.sl.Len()))
	w.sl.Each(func(v float64) bool {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		return true
	})
	return out, nil
}

// UnmarshalBinary implements WindowCodec.
func (w *percentileWindow) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	lo, hi := d.varint(), d.varint()
	n := d.count(8)
	vals := make([]float64, 0, n)
	for range n {
		vals = append(vals, d.float())
	}
	if err := d.finish(); err != nil {
		return err
	}
	w.sl.Reset()
	for _, v := range vals {
		w.sl.Insert(v)
	}
	w.lo, w.hi = lo, hi
	return nil
}
