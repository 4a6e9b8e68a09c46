package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "topn_frequency",
	Signature: "topn_frequency(x any, k integer constant >= 1)",
	Doc:       "The k most frequent non-NULL values of x with their counts, count descending then value ascending, as list<struct<value, count>>.",
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
			return &topnFunc[int64]{col: col, k: k, dt: dt, ops: intOps}, nil
		case keyUint:
			return &topnFunc[uint64]{col: col, k: k, dt: dt, ops: uintOps}, nil
		case keyFloat:
			return &topnFunc[uint64]{col: col, k: k, dt: dt, ops: floatKeyOps}, nil
		case keyString:
			return &topnFunc[string]{col: col, k: k, dt: dt, ops: stringOps}, nil
		}
		return &topnFunc[bool]{col: col, k: k, dt: dt, ops: boolOps}, nil
	},
})

type topnFunc[K comparable] struct {
	col, k int
	dt     arrow.DataType
	ops    *valueOps[K]
}

func (f *topnFunc[K]) Name() string { return "topn_frequency" }
func (f *topnFunc[K]) ResultType() arrow.DataType {
	return arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: f.dt},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	))
}
func (f *topnFunc[K]) Retractable() bool { return true }
func (f *topnFunc[K]) NewState() State {
	return &topnState[K]{col: f.col, k: f.k, bag: bag[K]{ops: f.ops}}
}
func (f *topnFunc[K]) NewWindow() Window { return NewRetractWindow(f.NewState) }

// freqEntry is a distinct value with its multiplicity.
type freqEntry[K any] struct {
	n int64
	k K
}

// topnState keeps value -> count in a map and the (count, value) pairs in
// a skip list ordered by count descending then value ascending: a row
// moves one pair, O(log distinct), and a result reads the first k pairs,
// O(k). Nothing is rescanned.
type topnState[K comparable] struct {
	col, k int
	bag    bag[K]
	sl     *skiplist[freqEntry[K]]
}

func (s *topnState[K]) update(k K, delta int64) {
	old, n := s.bag.add(k, delta)
	if old == n {
		return
	}
	if s.sl == nil {
		ops := s.bag.ops
		s.sl = newSkiplist(func(a, b freqEntry[K]) bool {
			if a.n != b.n {
				return a.n > b.n
			}
			return ops.less(a.k, b.k)
		})
	}
	if old > 0 {
		s.sl.Delete(freqEntry[K]{old, k})
	}
	if n > 0 {
		s.sl.Insert(freqEntry[K]{n, k})
	}
}

func (s *topnState[K]) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), 1)
	}
}

func (s *topnState[K]) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), -1)
	}
}

func (s *topnState[K]) Merge(o State) {
	for k, n := range o.(*topnState[K]).bag.counts {
		s.update(k, n)
	}
}

func (s *topnState[K]) AppendResult(b array.Builder) {
	lb, ok := b.(*array.ListBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	lb.Append(true)
	if s.sl == nil {
		return
	}
	sb, ok := lb.ValueBuilder().(*array.StructBuilder)
	if !ok {
		return
	}
	vb := sb.FieldBuilder(0)
	cb, _ := sb.FieldBuilder(1).(*array.Int64Builder)
	left := s.k
	s.sl.Each(func(e freqEntry[K]) bool {
		sb.Append(true)
		s.bag.ops.put(vb, e.k)
		cb.Append(e.n)
		left--
		return left > 0
	})
}

func (s *topnState[K]) Reset() {
	s.bag.reset()
	if s.sl != nil {
		s.sl.Reset()
	}
}

func (s *topnState[K]) MarshalBinary() ([]byte, error) { return s.bag.appendBinary(nil), nil }

func (s *topnState[K]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &topnState[K]{col: s.col, k: s.k, bag: bag[K]{ops: s.bag.ops}}
	decodeBag(&d, s.bag.ops, func(k K, n int64) { t.update(k, n) })
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
