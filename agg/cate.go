package agg

import (
	"encoding/binary"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
		return &cateFunc[int64]{c, intOps, keyCmp(intOps)}, nil
	case keyUint:
		return &cateFunc[uint64]{c, uintOps, keyCmp(uintOps)}, nil
	case keyString:
		return &cateFunc[string]{c, stringOps, keyCmp(stringOps)}, nil
	}
	return &cateFunc[bool]{c, boolOps, keyCmp(boolOps)}, nil
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
	cmp func(a, b G) int
}

func (f *cateFunc[G]) Name() string { return f.name }
func (f *cateFunc[G]) ResultType() arrow.DataType {
	return arrow.MapOf(f.gt, f.inner.ResultType())
}
func (f *cateFunc[G]) Retractable() bool { return f.inner.Retractable() }

// newResultBuilder returns an entryListBuilder for string and int64
// categories whose base states give their results as words (sum,
// count, avg).
func (f *cateFunc[G]) newResultBuilder(mem memory.Allocator) array.Builder {
	switch any(f).(type) {
	case *cateFunc[string], *cateFunc[int64]:
	default:
		return nil
	}
	if _, ok := f.inner.NewState().(wordResult); !ok {
		return nil
	}
	return entryListBuilderOf(mem, f.ResultType())
}
func (f *cateFunc[G]) NewState() State {
	return &cateState[G]{f: f}
}
func (f *cateFunc[G]) NewWindow() Window {
	if f.inner.Retractable() {
		return newOwnRetractWindow[cateState[G]](cateState[G]{f: f})
	}
	return NewStackWindow(f.NewState)
}

// cateSlot is a category with its base state and number of rows.
type cateSlot[G comparable] struct {
	g G
	n int64
	s State
}

// cateState keeps one slot per category and ord, the slot numbers sorted
// by category: a row of a known category costs a binary search, a new or
// vanished one also a shift of ord (O(categories) int32s, no pointers), and
// results read the slots in order with no lookups. The slots (and base
// states) of vanished categories are recycled.
type cateState[G comparable] struct {
	f     *cateFunc[G]
	slots []cateSlot[G]
	ord   []int32 // slot numbers, ascending by category
	// free is the first unused slot plus one (0: none); an unused slot's
	// n is -1 minus the next one's free.
	free int32
}

// rowKey returns the category of row i, or false if the row is skipped.
func (s *cateState[G]) rowKey(r *Rows, i int) (G, bool) {
	var zero G
	f := s.f
	if f.cond >= 0 && !rowTrue(&r.Cols[f.cond], i) {
		return zero, false
	}
	gc := &r.Cols[f.gcol]
	if gc.Null[i] || f.xcol >= 0 && r.Cols[f.xcol].Null[i] {
		return zero, false
	}
	return f.ops.get(gc, i), true
}

// find returns the position of g in ord and whether it is there (the
// insertion point otherwise).
func (s *cateState[G]) find(g G) (int, bool) {
	c := s.f.cmp
	ord, slots := s.ord, s.slots
	lo, hi := 0, len(ord)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c(slots[ord[m]].g, g) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(ord) && slots[ord[lo]].g == g
}

// entry returns the slot of category g, adding it if needed.
func (s *cateState[G]) entry(g G) *cateSlot[G] {
	i, ok := s.find(g)
	if ok {
		return &s.slots[s.ord[i]]
	}
	var k int32
	if s.free > 0 {
		k = s.free - 1
		e := &s.slots[k]
		s.free = int32(-1 - e.n)
		e.s.Reset()
		e.g, e.n = g, 0
	} else {
		k = int32(len(s.slots))
		s.slots = append(s.slots, cateSlot[G]{g: g, s: s.f.inner.NewState()})
	}
	s.ord = slices.Insert(s.ord, i, k)
	return &s.slots[k]
}

// sizeHint makes room for n categories if there is none yet.
func (s *cateState[G]) sizeHint(n int) {
	if cap(s.slots) == 0 && n > 1 {
		s.slots = make([]cateSlot[G], 0, n)
		s.ord = make([]int32, 0, n)
	}
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
	i, ok := s.find(g)
	if !ok {
		return
	}
	k := s.ord[i]
	e := &s.slots[k]
	rt, ok := e.s.(Retractor)
	if !ok {
		return
	}
	rt.Retract(r, a)
	if e.n--; e.n <= 0 {
		s.ord = slices.Delete(s.ord, i, i+1)
		var zero G
		e.g, e.n = zero, int64(-1-s.free)
		s.free = k + 1
	}
}

func (s *cateState[G]) Merge(o State) {
	x := o.(*cateState[G])
	for _, k := range x.ord {
		xe := &x.slots[k]
		e := s.entry(xe.g)
		e.s.Merge(xe.s)
		e.n += xe.n
	}
}

func (s *cateState[G]) AppendResult(b array.Builder) {
	if eb, ok := b.(*entryListBuilder); ok {
		switch ss := any(s).(type) {
		case *cateState[string]:
			appendCateEntries(ss, eb, (*entryListBuilder).add)
			return
		case *cateState[int64]:
			appendCateEntries(ss, eb, (*entryListBuilder).addInt)
			return
		}
	}
	mb, ok := b.(*array.MapBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	mb.Append(true)
	if len(s.ord) == 0 {
		return
	}
	kb, ib := mb.KeyBuilder(), mb.ItemBuilder()
	// Appending the entries' struct slots here, rather than leaving it to
	// the next MapBuilder.Append, spares a recursive Reserve per row.
	sb, _ := mb.ValueBuilder().(*array.StructBuilder)
	if sb != nil {
		growAhead(mb, sb, len(s.ord), kb)
	}
	put := s.f.ops.put
	for _, k := range s.ord {
		e := &s.slots[k]
		if sb != nil {
			sb.Append(true)
		}
		put(kb, e.g)
		e.s.AppendResult(ib)
	}
}

// appendCateEntries appends the result of a *_cate whose base states are
// wordResults to eb, each entry through add (entryListBuilder.add or
// addInt).
func appendCateEntries[G comparable](s *cateState[G], eb *entryListBuilder, add func(*entryListBuilder, G, uint64, bool)) {
	for _, k := range s.ord {
		e := &s.slots[k]
		w, valid := e.s.(wordResult).resultWord()
		add(eb, e.g, w, valid)
	}
	eb.endRow()
}

func (s *cateState[G]) Reset() {
	var zero G
	for _, k := range s.ord {
		s.slots[k].g, s.slots[k].n = zero, int64(-1-s.free)
		s.free = k + 1
	}
	s.ord = s.ord[:0]
}

// MarshalBinary writes the number of categories, then for each in
// ascending order its key, row count and length-prefixed base state.
func (s *cateState[G]) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *cateState[G]) AppendBinary(out []byte) ([]byte, error) {
	out = binary.AppendUvarint(out, uint64(len(s.ord)))
	for _, k := range s.ord {
		e := &s.slots[k]
		out = s.f.ops.enc(out, e.g)
		out = binary.AppendVarint(out, e.n)
		var err error
		if out, err = AppendEncoded(out, e.s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *cateState[G]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &cateState[G]{f: s.f}
	ops := s.f.ops
	n := d.count(3)
	for i := range n {
		g := ops.dec(&d)
		cnt := d.varint()
		inner := d.bytes()
		if d.err != nil {
			return d.err
		}
		if cnt <= 0 || i > 0 && !ops.less(t.slots[t.ord[len(t.ord)-1]].g, g) {
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
