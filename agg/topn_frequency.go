package agg

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "topn_frequency",
	Signature: "topn_frequency(x any, k integer constant >= 1)",
	Doc:       "The k most frequent non-NULL values of x with their counts, count descending then value ascending (floats: NaN last, -0 counted as 0), as list<struct<value, count>>; empty for none.",
	MinArgs:   2, MaxArgs: 2,
	Bind: func(d *Def, args []Arg) (Func, error) {
		kind, err := valueArg(d, args[0])
		if err != nil {
			return nil, err
		}
		k, err := constPositiveInt(d, args[1], "k")
		if err != nil {
			return nil, err
		}
		col, dt := args[0].Col, args[0].Type
		switch keyKindOf(dt, kind) {
		case keyInt:
			return newTopnFunc(col, k, dt, intOps), nil
		case keyUint:
			return newTopnFunc(col, k, dt, uintOps), nil
		case keyFloat:
			return newTopnFunc(col, k, dt, floatKeyOps), nil
		case keyString:
			return newTopnFunc(col, k, dt, stringOps), nil
		}
		return newTopnFunc(col, k, dt, boolOps), nil
	},
})

type topnFunc[K comparable] struct {
	col, k int
	dt     arrow.DataType
	ops    *valueOps[K]
	cmp    func(a, b K) int
	// before orders (count, value) pairs: count descending, then value
	// ascending.
	before func(a, b freqEntry[K]) bool
	// ordMax is topnOrdMax (tests lower it).
	ordMax int
}

func newTopnFunc[K comparable](col, k int, dt arrow.DataType, ops *valueOps[K]) *topnFunc[K] {
	c := keyCmp(ops)
	return &topnFunc[K]{col: col, k: k, dt: dt, ops: ops, cmp: c, ordMax: topnOrdMax, before: func(a, b freqEntry[K]) bool {
		if a.n != b.n {
			return a.n > b.n
		}
		return c(a.k, b.k) < 0
	}}
}

func (f *topnFunc[K]) Name() string { return "topn_frequency" }
func (f *topnFunc[K]) ResultType() arrow.DataType {
	return arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: f.dt},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	))
}
func (f *topnFunc[K]) Retractable() bool { return true }
func (f *topnFunc[K]) NewState() State   { return &topnState[K]{f: f} }
func (f *topnFunc[K]) NewWindow() Window {
	return newOwnRetractWindow[topnState[K]](topnState[K]{f: f})
}

// newResultBuilder returns an entryListBuilder for string and int64
// values.
func (f *topnFunc[K]) newResultBuilder(mem memory.Allocator) array.Builder {
	switch any(f).(type) {
	case *topnFunc[string], *topnFunc[int64]:
		return entryListBuilderOf(mem, f.ResultType())
	}
	return nil
}

// freqEntry is a distinct value with its multiplicity.
type freqEntry[K any] struct {
	n int64
	k K
}

// topnOrdMax is the number of distinct values up to which a topnState
// keeps its order as a sorted slice; beyond it, a skip list.
const topnOrdMax = 1024

// topnState counts values in a freqIndex and keeps the distinct values
// ordered by count descending then value ascending, so a result reads the
// first k, O(k). Up to topnOrdMax distinct values the order is ord, a
// slice of slot numbers: a row moves its value past the values it
// overtakes (usually a few; O(distinct) int32s at worst), with no
// allocation. Beyond, it is a skip list of (count, value) pairs, O(log
// distinct) per row; the state returns to the slice when the values fall
// below a quarter of topnOrdMax.
type topnState[K comparable] struct {
	f   *topnFunc[K]
	fi  freqIndex[K]
	ord []int32
	sl  *skiplist[freqEntry[K]]
	big bool // the order is in sl, not ord
}

// posOf returns the position of slot t, which held count old, in ord.
func (s *topnState[K]) posOf(t int32, old int64, k K) int {
	ord, slots, c := s.ord, s.fi.slots, s.f.cmp
	lo, hi := 0, len(ord)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		u := ord[m]
		if u == t {
			return m
		}
		if e := &slots[u]; e.n > old || e.n == old && c(e.k, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	panic("agg: topn_frequency order lost a value")
}

// insertPos returns the first position in ord[lo:hi] whose pair does not
// come before (n, k).
func (s *topnState[K]) insertPos(lo, hi int, n int64, k K) int {
	ord, slots, c := s.ord, s.fi.slots, s.f.cmp
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e := &slots[ord[m]]; e.n > n || e.n == n && c(e.k, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (s *topnState[K]) update(k K, delta int64) {
	t, old, n := s.fi.add(k, delta)
	if old == n {
		return
	}
	if s.big {
		if old > 0 {
			s.sl.Delete(freqEntry[K]{old, k})
		}
		if n > 0 {
			s.sl.Insert(freqEntry[K]{n, k})
		} else if s.fi.len() < s.f.ordMax/4 {
			s.toSlice()
		}
		return
	}
	switch {
	case old == 0:
		if len(s.ord) >= s.f.ordMax {
			s.toSkiplist()
			s.sl.Insert(freqEntry[K]{n, k})
			return
		}
		if cap(s.ord) == 0 {
			s.ord = make([]int32, 0, cap(s.fi.slots))
		}
		s.ord = slices.Insert(s.ord, s.insertPos(0, len(s.ord), n, k), t)
	case n == 0:
		p := s.posOf(t, old, k)
		s.ord = slices.Delete(s.ord, p, p+1)
	case n > old: // moves towards the front
		p := s.posOf(t, old, k)
		q := s.insertPos(0, p, n, k)
		copy(s.ord[q+1:p+1], s.ord[q:p])
		s.ord[q] = t
	default: // moves towards the back
		p := s.posOf(t, old, k)
		q := s.insertPos(p+1, len(s.ord), n, k) - 1
		copy(s.ord[p:q], s.ord[p+1:q+1])
		s.ord[q] = t
	}
}

// toSkiplist moves the order from ord to sl.
func (s *topnState[K]) toSkiplist() {
	if s.sl == nil {
		s.sl = newSkiplist(s.f.before)
	}
	for _, t := range s.ord {
		e := &s.fi.slots[t]
		s.sl.Insert(freqEntry[K]{e.n, e.k})
	}
	s.ord = s.ord[:0]
	s.big = true
}

// toSlice moves the order from sl to ord.
func (s *topnState[K]) toSlice() {
	s.ord = s.ord[:0]
	s.sl.Each(func(e freqEntry[K]) bool {
		s.ord = append(s.ord, s.fi.slotOf(e.k))
		return true
	})
	s.sl.Reset()
	s.big = false
}

func (s *topnState[K]) sizeHint(n int) {
	s.fi.sizeHint(n)
	if cap(s.ord) == 0 && cap(s.fi.slots) > 0 {
		s.ord = make([]int32, 0, cap(s.fi.slots))
	}
}

func (s *topnState[K]) Add(r *Rows, a int64) {
	c := &r.Cols[s.f.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.f.ops.get(c, i), 1)
	}
}

func (s *topnState[K]) Retract(r *Rows, a int64) {
	c := &r.Cols[s.f.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.f.ops.get(c, i), -1)
	}
}

func (s *topnState[K]) Merge(o State) {
	o.(*topnState[K]).fi.each(s.update)
}

func (s *topnState[K]) AppendResult(b array.Builder) {
	if eb, ok := b.(*entryListBuilder); ok {
		switch ss := any(s).(type) {
		case *topnState[string]:
			appendTopnCounts(ss, eb, (*entryListBuilder).add)
			return
		case *topnState[int64]:
			appendTopnCounts(ss, eb, (*entryListBuilder).addInt)
			return
		}
	}
	lb, ok := b.(*array.ListBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	lb.Append(true)
	if s.fi.len() == 0 {
		return
	}
	sb, ok := lb.ValueBuilder().(*array.StructBuilder)
	if !ok {
		return
	}
	vb := sb.FieldBuilder(0)
	cb, _ := sb.FieldBuilder(1).(*array.Int64Builder)
	growAhead(lb, sb, min(s.f.k, s.fi.len()), vb)
	put := s.f.ops.put
	if s.big {
		left := s.f.k
		s.sl.Each(func(e freqEntry[K]) bool {
			sb.Append(true)
			put(vb, e.k)
			cb.Append(e.n)
			left--
			return left > 0
		})
		return
	}
	for _, t := range s.ord[:min(s.f.k, len(s.ord))] {
		e := &s.fi.slots[t]
		sb.Append(true)
		put(vb, e.k)
		cb.Append(e.n)
	}
}

// appendTopnCounts appends the result of a topn_frequency to eb, each
// entry through add (entryListBuilder.add or addInt).
func appendTopnCounts[K comparable](s *topnState[K], eb *entryListBuilder, add func(*entryListBuilder, K, uint64, bool)) {
	k := s.f.k
	if s.big {
		s.sl.Each(func(e freqEntry[K]) bool {
			add(eb, e.k, uint64(e.n), true)
			k--
			return k > 0
		})
	} else {
		for _, t := range s.ord[:min(k, len(s.ord))] {
			e := &s.fi.slots[t]
			add(eb, e.k, uint64(e.n), true)
		}
	}
	eb.endRow()
}

func (s *topnState[K]) Reset() {
	s.fi.reset()
	s.ord = s.ord[:0]
	if s.big {
		s.sl.Reset()
		s.big = false
	}
}

func (s *topnState[K]) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *topnState[K]) AppendBinary(out []byte) ([]byte, error) {
	return s.fi.appendBinary(out, s.f.ops, s.f.cmp), nil
}

func (s *topnState[K]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &topnState[K]{f: s.f}
	decodeBag(&d, s.f.ops, t.update)
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
