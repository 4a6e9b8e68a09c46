package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "top1_ratio",
	Signature: "top1_ratio(x any)",
	Doc:       "Count of the most frequent non-NULL value of x divided by the count of non-NULL values; 0 when there are none.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		kind, err := valueArg(d, args[0])
		if err != nil {
			return nil, err
		}
		col := args[0].Col
		switch keyKindOf(args[0].Type, kind) {
		case keyInt, keyUint:
			return &top1Func[int64]{col: col, ops: intOps}, nil
		case keyFloat:
			return &top1Func[uint64]{col: col, ops: floatKeyOps}, nil
		case keyString:
			return &top1Func[string]{col: col, ops: stringOps}, nil
		}
		return &top1Func[bool]{col: col, ops: boolOps}, nil
	},
})

type top1Func[K comparable] struct {
	col int
	ops *valueOps[K]
}

func (f *top1Func[K]) Name() string               { return "top1_ratio" }
func (f *top1Func[K]) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *top1Func[K]) Retractable() bool          { return true }
func (f *top1Func[K]) NewState() State            { return &top1State[K]{col: f.col, bag: bag[K]{ops: f.ops}} }
func (f *top1Func[K]) NewWindow() Window          { return NewRetractWindow(f.NewState) }

// top1State keeps value -> count and count -> number of values with that
// count, so the largest count is maintained exactly in O(1) per row: it
// only grows on Add, and on Retract it drops by one exactly when the last
// value holding it is retracted.
type top1State[K comparable] struct {
	col  int
	bag  bag[K]
	fof  map[int64]int64 // count -> number of distinct values with it
	maxc int64
}

func (s *top1State[K]) update(k K, delta int64) {
	old, n := s.bag.add(k, delta)
	if old == n {
		return
	}
	if s.fof == nil {
		s.fof = make(map[int64]int64)
	}
	if old > 0 {
		if s.fof[old]--; s.fof[old] == 0 {
			delete(s.fof, old)
		}
	}
	if n > 0 {
		s.fof[n]++
	}
	switch {
	case n > s.maxc:
		s.maxc = n
	case old == s.maxc && s.fof[old] == 0:
		// Retraction (delta -1) of the last value at the maximum: it now
		// holds old-1, which no other value exceeds.
		s.maxc = n
		for s.maxc > 0 && s.fof[s.maxc] == 0 { // only for larger decrements
			s.maxc--
		}
	}
}

func (s *top1State[K]) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), 1)
	}
}

func (s *top1State[K]) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.bag.ops.get(c, i), -1)
	}
}

func (s *top1State[K]) Merge(o State) {
	for k, n := range o.(*top1State[K]).bag.counts {
		s.update(k, n)
	}
}

func (s *top1State[K]) AppendResult(b array.Builder) {
	if s.bag.total == 0 {
		appendFloat(b, 0)
		return
	}
	appendFloat(b, float64(s.maxc)/float64(s.bag.total))
}

func (s *top1State[K]) Reset() {
	s.bag.reset()
	clear(s.fof)
	s.maxc = 0
}

func (s *top1State[K]) MarshalBinary() ([]byte, error) { return s.bag.appendBinary(nil), nil }

func (s *top1State[K]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &top1State[K]{col: s.col, bag: bag[K]{ops: s.bag.ops}}
	decodeBag(&d, s.bag.ops, func(k K, n int64) { t.update(k, n) })
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
