package agg

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "count",
	Signature: "count(*) or count(x any)",
	Doc:       "Number of rows (count(*)) or of non-NULL values of x; 0 when there are none.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		a := args[0]
		switch {
		case a.Star:
			return &countFunc{col: -1}, nil
		case a.IsConst:
			// count(1) counts rows, count(NULL) counts nothing.
			return &countFunc{col: -1, none: a.Const == nil}, nil
		case a.Type == nil:
			return nil, sigError(d, "the argument must be *, a column or an expression")
		}
		if _, err := KindOf(a.Type); err != nil {
			return nil, sigError(d, "got argument of type %s", a.Type)
		}
		return &countFunc{col: a.Col}, nil
	},
})

// countFunc is count(*) (col < 0) or count(x).
type countFunc struct {
	col  int
	none bool // count(NULL): always 0
}

func (f *countFunc) Name() string               { return "count" }
func (f *countFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (f *countFunc) Retractable() bool          { return true }
func (f *countFunc) NewState() State            { return &countState{col: f.col, none: f.none} }
func (f *countFunc) NewWindow() Window {
	if f.col < 0 {
		return &countStarWindow{none: f.none}
	}
	return newOwnRetractWindow[countState](countState{col: f.col, none: f.none})
}

// countState counts rows, or non-NULL values of its column.
type countState struct {
	col  int
	none bool
	n    int64
}

func (s *countState) counts(r *Rows, a int64) bool {
	if s.col < 0 {
		return !s.none
	}
	return !r.Cols[s.col].Null[a-r.Base]
}

func (s *countState) Add(r *Rows, a int64) {
	if s.counts(r, a) {
		s.n++
	}
}

func (s *countState) Retract(r *Rows, a int64) {
	if s.counts(r, a) {
		s.n--
	}
}

func (s *countState) Merge(o State) { s.n += o.(*countState).n }

func (s *countState) AppendResult(b array.Builder) { appendInt(b, s.n) }

func (s *countState) resultWord() (uint64, bool) { return uint64(s.n), true }

func (s *countState) Reset() { s.n = 0 }

func (s *countState) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *countState) AppendBinary(out []byte) ([]byte, error) {
	return binary.AppendVarint(out, s.n), nil
}

func (s *countState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.nonNeg()
	if err := d.finish(); err != nil {
		return err
	}
	s.n = n
	return nil
}

// countStarWindow answers count(*) from the frame bounds alone.
type countStarWindow struct{ none bool }

func (w *countStarWindow) Eval(r *Rows, lo, hi, ex []int64, b array.Builder) {
	bb, _ := b.(*array.Int64Builder)
	for j := range lo {
		var n int64
		if !w.none && hi[j] > lo[j] {
			n = hi[j] - lo[j]
			if ex != nil && ex[j] >= lo[j] && ex[j] < hi[j] {
				n--
			}
		}
		if bb != nil {
			bb.Append(n)
		} else {
			appendInt(b, n)
		}
	}
}
