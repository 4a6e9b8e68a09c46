package agg

import (
	"slices"

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
			return newTop1Func(col, intOps), nil
		case keyFloat:
			return newTop1Func(col, floatKeyOps), nil
		case keyString:
			return newTop1Func(col, stringOps), nil
		}
		return newTop1Func(col, boolOps), nil
	},
})

type top1Func[K comparable] struct {
	col int
	ops *valueOps[K]
	cmp func(a, b K) int // orders the encoding's pairs
}

func newTop1Func[K comparable](col int, ops *valueOps[K]) *top1Func[K] {
	return &top1Func[K]{col: col, ops: ops, cmp: keyCmp(ops)}
}

func (f *top1Func[K]) Name() string               { return "top1_ratio" }
func (f *top1Func[K]) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *top1Func[K]) Retractable() bool          { return true }
func (f *top1Func[K]) NewState() State            { return &top1State[K]{f: f} }
func (f *top1Func[K]) NewWindow() Window {
	return newOwnRetractWindow[top1State[K]](top1State[K]{f: f})
}

// fofEntry is a multiplicity held by some values, and how many.
type fofEntry struct{ c, num int64 }

// top1State counts values in a freqIndex (an open-addressing table that
// a row changes without allocating, unlike a Go map, which rehashes as a
// 30-day window fills) and keeps fof, the distinct
// multiplicities with the number of values holding each, largest first:
// the largest count is fof[0], exact after any change. fof is short (its
// counts sum to at most the number of rows, so it has fewer than
// sqrt(2*rows) entries) and a row changes one or two of them.
type top1State[K comparable] struct {
	f   *top1Func[K]
	fi  freqIndex[K]
	fof []fofEntry // descending by c
}

// fofAdd changes the number of values holding count c by d.
func (s *top1State[K]) fofAdd(c, d int64) {
	fof := s.fof
	lo, hi := 0, len(fof)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if fof[m].c > c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(fof) && fof[lo].c == c {
		if fof[lo].num += d; fof[lo].num <= 0 {
			s.fof = slices.Delete(fof, lo, lo+1)
		}
		return
	}
	if d > 0 {
		s.fof = slices.Insert(fof, lo, fofEntry{c, d})
	}
}

func (s *top1State[K]) update(k K, delta int64) {
	_, old, n := s.fi.add(k, delta)
	if old == n {
		return
	}
	if old > 0 {
		s.fofAdd(old, -1)
	}
	if n > 0 {
		s.fofAdd(n, 1)
	}
}

func (s *top1State[K]) sizeHint(n int) { s.fi.sizeHint(n) }

func (s *top1State[K]) Add(r *Rows, a int64) {
	c := &r.Cols[s.f.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.f.ops.get(c, i), 1)
	}
}

func (s *top1State[K]) Retract(r *Rows, a int64) {
	c := &r.Cols[s.f.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.update(s.f.ops.get(c, i), -1)
	}
}

func (s *top1State[K]) Merge(o State) {
	o.(*top1State[K]).fi.each(s.update)
}

func (s *top1State[K]) AppendResult(b array.Builder) {
	if s.fi.total == 0 || len(s.fof) == 0 {
		appendFloat(b, 0)
		return
	}
	appendFloat(b, float64(s.fof[0].c)/float64(s.fi.total))
}

func (s *top1State[K]) Reset() {
	s.fi.reset()
	s.fof = s.fof[:0]
}

func (s *top1State[K]) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *top1State[K]) AppendBinary(out []byte) ([]byte, error) {
	return s.fi.appendBinary(out, s.f.ops, s.f.cmp), nil
}

func (s *top1State[K]) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := &top1State[K]{f: s.f}
	decodeBag(&d, s.f.ops, t.update)
	if err := d.finish(); err != nil {
		return err
	}
	*s = *t
	return nil
}
