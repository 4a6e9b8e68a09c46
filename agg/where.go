package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The conditional aggregates: count_where, sum_where, avg_where,
// min_where, max_where.
var (
	_ = registerWhere("count", "count_where(x any | *, c boolean)")
	_ = registerWhere("sum", "sum_where(x integer|float, c boolean)")
	_ = registerWhere("avg", "avg_where(x integer|float, c boolean)")
	_ = registerWhere("min", "min_where(x number|string|timestamp|bool, c boolean)")
	_ = registerWhere("max", "max_where(x number|string|timestamp|bool, c boolean)")
)

func registerWhere(base, sig string) *Def {
	return register(&Def{
		Name:      base + "_where",
		Signature: sig,
		Doc:       base + " over the rows where c is TRUE (NULL counts as FALSE).",
		MinArgs:   2, MaxArgs: 2,
		Bind: func(d *Def, args []Arg) (Func, error) {
			inner, err := bindBase(d, base, args[0])
			if err != nil {
				return nil, err
			}
			if err := condArg(d, args[1]); err != nil {
				return nil, err
			}
			return &whereFunc{name: d.Name, inner: inner, cond: args[1].Col}, nil
		},
	})
}

// bindBase binds the base aggregate of a _where or _cate function to its
// value argument, reporting errors against the derived function.
func bindBase(d *Def, base string, x Arg) (Func, error) {
	bd, ok := Lookup(base)
	if !ok {
		return nil, sigError(d, "no base aggregate %s", base)
	}
	f, err := bd.Bind(bd, []Arg{x})
	if err != nil {
		switch {
		case x.Star:
			return nil, sigError(d, "* is not a valid value argument")
		case x.IsConst || x.Type == nil:
			return nil, sigError(d, "the value argument must be a column or expression")
		}
		return nil, sigError(d, "got value argument of type %s", x.Type)
	}
	return f, nil
}

// condArg checks a condition argument: a boolean column or expression.
func condArg(d *Def, c Arg) error {
	if c.Star || c.IsConst || c.Type == nil || c.Type.ID() != arrow.BOOL {
		t := "*"
		switch {
		case c.IsConst:
			t = "a constant"
		case c.Type != nil:
			t = c.Type.String()
		}
		return sigError(d, "the condition must be a boolean column or expression, got %s", t)
	}
	return nil
}

// rowTrue reports whether row i of the condition column is TRUE.
func rowTrue(c *Column, i int) bool { return !c.Null[i] && c.Bool[i] }

// whereFunc applies a base aggregate to the rows whose condition is TRUE.
type whereFunc struct {
	name  string
	inner Func
	cond  int
}

func (f *whereFunc) Name() string               { return f.name }
func (f *whereFunc) ResultType() arrow.DataType { return f.inner.ResultType() }
func (f *whereFunc) Retractable() bool          { return f.inner.Retractable() }
func (f *whereFunc) NewState() State {
	s := &whereState{inner: f.inner.NewState(), cond: f.cond}
	s.r, _ = s.inner.(Retractor)
	return s
}

func (f *whereFunc) NewWindow() Window {
	if cw, ok := f.inner.(interface{ condWindow(int) Window }); ok {
		return cw.condWindow(f.cond)
	}
	if f.inner.Retractable() {
		return NewRetractWindow(f.NewState)
	}
	return NewStackWindow(f.NewState)
}

// whereState forwards the rows whose condition is TRUE to the base state.
type whereState struct {
	inner State
	r     Retractor
	cond  int
}

func (s *whereState) Add(r *Rows, a int64) {
	if rowTrue(&r.Cols[s.cond], int(a-r.Base)) {
		s.inner.Add(r, a)
	}
}

// Retract undoes Add; it is only called when the base is retractable.
func (s *whereState) Retract(r *Rows, a int64) {
	if s.r != nil && rowTrue(&r.Cols[s.cond], int(a-r.Base)) {
		s.r.Retract(r, a)
	}
}

func (s *whereState) Merge(o State)                  { s.inner.Merge(o.(*whereState).inner) }
func (s *whereState) AppendResult(b array.Builder)   { s.inner.AppendResult(b) }
func (s *whereState) Reset()                         { s.inner.Reset() }
func (s *whereState) MarshalBinary() ([]byte, error) { return s.inner.MarshalBinary() }
func (s *whereState) UnmarshalBinary(data []byte) error {
	return s.inner.UnmarshalBinary(data)
}
