package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "top",
	Signature: "top(x any, k integer constant >= 1)",
	Doc:       "The k largest non-NULL values of x, duplicates kept, in descending order, as a list; empty for none. Floats order as in DuckDB: NaN first (above +Inf), -0 and 0 one value (given as 0).",
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
			return &topFunc[int64]{col: col, k: k, dt: dt, ops: intOps}, nil
		case keyUint:
			return &topFunc[uint64]{col: col, k: k, dt: dt, ops: uintOps}, nil
		case keyFloat:
			return &topFunc[uint64]{col: col, k: k, dt: dt, ops: floatKeyOps}, nil
		case keyString:
			return &topFunc[string]{col: col, k: k, dt: dt, ops: stringOps}, nil
		}
		return &topFunc[bool]{col: col, k: k, dt: dt, ops: boolOps}, nil
	},
})

type topFunc[K comparable] struct {
	col, k int
	dt     arrow.DataType
	ops    *valueOps[K]
}

func (f *topFunc[K]) Name() string               { return "top" }
func (f *topFunc[K]) ResultType() arrow.DataType { return arrow.ListOf(f.dt) }
func (f *topFunc[K]) Retractable() bool          { return true }
func (f *topFunc[K]) NewState() State {
	return &topState[K]{col: f.col, k: f.k, bag: bag[K]{ops: f.ops}}
}
func (f *topFunc[K]) NewWindow() Window { return NewRetractWindow(f.NewState) }

// topState keeps the multiplicity of every distinct value and the distinct
// values in descending order in a skip list: adding or retracting a value
// costs O(log distinct), a result O(k).
type topState[K comparable] struct {
	col, k int
	bag    bag[K]
	sl     *skiplist[K] // distinct values, largest first
}

func (s *topState[K]) update(k K, delta int64) {
	old, n := s.bag.add(k, delta)
	if s.sl == nil {
		ops := s.bag.ops
		s.sl = newSkiplist(func(a, b K) bool { return ops.less(b, a) })
	}
	switch {
	case old == 0 && n > 0:
		s.sl.Insert(k)
	case old > 0 && n == 0:
		s.sl.Delete(k)
	}
}

func (s *topState[K]) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), 1)
	}
}

func (s *topState[K]) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), -1)
	}
}

func (s *topState[K]) Merge(o State) {
	for k, n := range o.(*topState[K]).bag.counts {
		s.update(k, n)
	}
}

func (s *topState[K]) AppendResult(b array.Builder) {
	lb, ok := b.(*array.ListBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	lb.Append(true)
	if s.sl == nil {
		return
	}
	vb := lb.ValueBuilder()
	left := s.k
	s.sl.Each(func(k K) bool {
		for range min(int64(left), s.bag.counts[k]) {
			s.bag.ops.put(vb, k)
			left--
		}
		return left > 0
	})
}

// Compact implements Compacter: only the largest values whose counts
// reach k stay; smaller ones can never be among the k largest again
// unless values are retracted.
func (s *topState[K]) Compact() {
	if s.sl == nil || s.bag.total <= int64(s.k) {
		return
	}
	var drop []K
	seen := int64(0)
	s.sl.Each(func(k K) bool {
		if seen >= int64(s.k) {
			drop = append(drop, k)
		}
		seen += s.bag.counts[k]
		return true
	})
	for _, k := range drop {
		s.update(k, -s.bag.counts[k])
	}
}

func (s *topState[K]) Reset() {
	s.bag.reset()
	if s.sl != nil {
		s.sl.Reset()
	}
}

func (s *topState[K]) MarshalBinary() ([]byte, error) { return s.bag.appendBinary(nil), nil }

func (s *topState[K]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &topState[K]{col: s.col, k: s.k, bag: bag[K]{ops: s.bag.ops}}
	decodeBag(&d, s.bag.ops, func(k K, n int64) { t.update(k, n) })
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
