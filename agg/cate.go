package agg

import (
	"encoding/binary"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The per-category aggregates: <base>_cate(x, g) and
// <base>_cate_where(x, c, g) for count, sum, avg, min and max.
var (
	_ = registerCate("count", "x any")
	_ = registerCate("sum", "x integer|float")
	_ = registerCate("avg", "x integer|float")
	_ = registerCate("min", "x number|string|timestamp|bool")
	_ = registerCate("max", "x number|string|timestamp|bool")
)

const cateTypes = "g integer|string|timestamp|bool"

func registerCate(base, x string) *Def {
	register(&Def{
		Name:      base + "_cate_where",
		Signature: base + "_cate_where(" + x + ", c boolean, " + cateTypes + ")",
		Doc:       base + " of x per distinct non-NULL category g over the rows where c is TRUE, as a map with keys ascending.",
		MinArgs:   3, MaxArgs: 3,
		Bind: func(d *Def, args []Arg) (Func, error) {
			if err := condArg(d, args[1]); err != nil {
				return nil, err
			}
			return bindCate(d, base, args[0], args[2], args[1].Col)
		},
	})
	return register(&Def{
		Name:      base + "_cate",
		Signature: base + "_cate(" + x + ", " + cateTypes + ")",
		Doc:       base + " of x per distinct non-NULL category g, as a map with keys ascending; rows with NULL g or x are skipped.",
		MinArgs:   2, MaxArgs: 2,
		Bind: func(d *Def, args []Arg) (Func, error) {
			return bindCate(d, base, args[0], args[1], -1)
		},
	})
}

func bindCate(d *Def, base string, x, g Arg, cond int) (Func, error) {
	if x.Star {
		return nil, sigError(d, "* is not a valid value argument")
	}
	inner, err := bindBase(d, base, x)
	if err != nil {
		return nil, err
	}
	if g.Star || g.IsConst || g.Type == nil {
		return nil, sigError(d, "the category must be a column or expression")
	}
	k, err := KindOf(g.Type)
	if err != nil || k == KindFloat64 {
		return nil, sigError(d, "category type %s is unsupported", g.Type)
	}
	c := cateCommon{name: d.Name, inner: inner, xcol: x.Col, gcol: g.Col, cond: cond, gt: g.Type}
	switch keyKindOf(g.Type, k) {
	case keyInt:
		return &cateFunc[int64]{c, intOps}, nil
	case keyUint:
		return &cateFunc[uint64]{c, uintOps}, nil
	case keyString:
		return &cateFunc[string]{c, stringOps}, nil
	}
	return &cateFunc[bool]{c, boolOps}, nil
}

type cateCommon struct {
	name             string
	inner            Func
	xcol, gcol, cond int // cond < 0: no condition
	gt               arrow.DataType
}

type cateFunc[G comparable] struct {
	cateCommon
	ops *valueOps[G]
}

func (f *cateFunc[G]) Name() string { return f.name }
func (f *cateFunc[G]) ResultType() arrow.DataType {
	return arrow.MapOf(f.gt, f.inner.ResultType())
}
func (f *cateFunc[G]) Retractable() bool { return f.inner.Retractable() }
func (f *cateFunc[G]) NewState() State {
	return &cateState[G]{f: &f.cateCommon, ops: f.ops}
}
func (f *cateFunc[G]) NewWindow() Window {
	if f.inner.Retractable() {
		return NewRetractWindow(f.NewState)
	}
	return NewStackWindow(f.NewState)
}

// cateEntry is the base state of one category and its number of rows.
type cateEntry struct {
	n int64
	s State
}

// cateState keeps a base state per category, the categories in ascending
// order (a sorted slice: a new category costs O(categories), a row of a
// known one O(1)), and recycles the states of vanished categories.
type cateState[G comparable] struct {
	f    *cateCommon
	ops  *valueOps[G]
	m    map[G]*cateEntry
	keys []G
	free []*cateEntry
}

// rowKey returns the category of row i, or false if the row is skipped.
func (s *cateState[G]) rowKey(r *Rows, i int) (G, bool) {
	var zero G
	if s.f.cond >= 0 && !rowTrue(&r.Cols[s.f.cond], i) {
		return zero, false
	}
	gc := &r.Cols[s.f.gcol]
	if gc.Null[i] || s.f.xcol >= 0 && r.Cols[s.f.xcol].Null[i] {
		return zero, false
	}
	return s.ops.get(gc, i), true
}

func (s *cateState[G]) cmp(a, b G) int {
	switch {
	case s.ops.less(a, b):
		return -1
	case s.ops.less(b, a):
		return 1
	}
	return 0
}

func (s *cateState[G]) entry(g G) *cateEntry {
	if e, ok := s.m[g]; ok {
		return e
	}
	if s.m == nil {
		s.m = make(map[G]*cateEntry)
	}
	var e *cateEntry
	if n := len(s.free); n > 0 {
		e = s.free[n-1]
		s.free = s.free[:n-1]
		e.s.Reset()
	} else {
		e = &cateEntry{s: s.f.inner.NewState()}
	}
	s.m[g] = e
	i, _ := slices.BinarySearchFunc(s.keys, g, s.cmp)
	s.keys = slices.Insert(s.keys, i, g)
	return e
}

func (s *cateState[G]) drop(g G, e *cateEntry) {
	delete(s.m, g)
	if i, ok := slices.BinarySearchFunc(s.keys, g, s.cmp); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
	e.n = 0
	s.free = append(s.free, e)
}

func (s *cateState[G]) Add(r *Rows, a int64) {
	if g, ok := s.rowKey(r, int(a-r.Base)); ok {
		e := s.entry(g)
		e.s.Add(r, a)
		e.n++
	}
}

// Retract undoes Add; it is only called when the base is retractable.
func (s *cateState[G]) Retract(r *Rows, a int64) {
	g, ok := s.rowKey(r, int(a-r.Base))
	if !ok {
		return
	}
	e, ok := s.m[g]
	if !ok {
		return
	}
	rt, ok := e.s.(Retractor)
	if !ok {
		return
	}
	rt.Retract(r, a)
	if e.n--; e.n <= 0 {
		s.drop(g, e)
	}
}

func (s *cateState[G]) Merge(o State) {
	x := o.(*cateState[G])
	for _, g := range x.keys {
		xe := x.m[g]
		e := s.entry(g)
		e.s.Merge(xe.s)
		e.n += xe.n
	}
}

func (s *cateState[G]) AppendResult(b array.Builder) {
	mb, ok := b.(*array.MapBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	mb.Append(true)
	kb, ib := mb.KeyBuilder(), mb.ItemBuilder()
	for _, g := range s.keys {
		s.ops.put(kb, g)
		s.m[g].s.AppendResult(ib)
	}
}

func (s *cateState[G]) Reset() {
	for _, g := range s.keys {
		e := s.m[g]
		e.n = 0
		s.free = append(s.free, e)
	}
	clear(s.m)
	s.keys = s.keys[:0]
}

// MarshalBinary writes the number of categories, then for each in
// ascending order its key, row count and length-prefixed base state.
func (s *cateState[G]) MarshalBinary() ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(s.keys)))
	for _, g := range s.keys {
		e := s.m[g]
		inner, err := e.s.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = s.ops.enc(out, g)
		out = binary.AppendVarint(out, e.n)
		out = binary.AppendUvarint(out, uint64(len(inner)))
		out = append(out, inner...)
	}
	return out, nil
}

func (s *cateState[G]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &cateState[G]{f: s.f, ops: s.ops}
	n := d.count(3)
	for i := range n {
		g := s.ops.dec(&d)
		cnt := d.varint()
		inner := d.bytes()
		if d.err != nil {
			return d.err
		}
		if cnt <= 0 || i > 0 && !s.ops.less(t.keys[len(t.keys)-1], g) {
			return errCorrupt
		}
		e := t.entry(g)
		if err := e.s.UnmarshalBinary(inner); err != nil {
			return err
		}
		e.n = cnt
	}
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
