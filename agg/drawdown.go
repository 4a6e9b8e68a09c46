package agg

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "drawdown",
	Signature: "drawdown(x integer|float)",
	Doc:       "Largest (peak - trough) / peak over a peak and a later trough, in time order, ignoring NULL, negative and NaN values (pandas reads NaN as missing); 0 for one value, NULL for none.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		if _, err := numericArg(d, args[0]); err != nil {
			return nil, err
		}
		return &drawdownFunc{col: args[0].Col}, nil
	},
})

type drawdownFunc struct{ col int }

func (f *drawdownFunc) Name() string               { return "drawdown" }
func (f *drawdownFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *drawdownFunc) Retractable() bool          { return false }
func (f *drawdownFunc) NewState() State            { return &drawdownState{col: f.col} }
func (f *drawdownFunc) NewWindow() Window          { return NewStackWindow(f.NewState) }

// drawdownState summarises a run of values by its maximum, its minimum and
// the best drawdown inside it: a later run o combines as
// max(best, o.best, (max - o.min) / max).
type drawdownState struct {
	col          int
	has          bool
	hi, lo, best float64
}

// drop is the drawdown from peak to trough (0 for a zero peak).
func drop(peak, trough float64) float64 {
	if peak <= 0 || trough >= peak {
		return 0
	}
	return (peak - trough) / peak
}

func (s *drawdownState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := int(a - r.Base)
	if c.Null[i] {
		return
	}
	v := c.Float(i)
	if !(v >= 0) { // negative or NaN
		return
	}
	s.merge(true, v, v, 0)
}

func (s *drawdownState) merge(has bool, hi, lo, best float64) {
	if !has {
		return
	}
	if !s.has {
		s.has, s.hi, s.lo, s.best = true, hi, lo, best
		return
	}
	s.best = max(s.best, best, drop(s.hi, lo))
	s.hi = max(s.hi, hi)
	s.lo = min(s.lo, lo)
}

func (s *drawdownState) Merge(o State) {
	x := o.(*drawdownState)
	s.merge(x.has, x.hi, x.lo, x.best)
}

func (s *drawdownState) AppendResult(b array.Builder) {
	if !s.has {
		b.AppendNull()
		return
	}
	appendFloat(b, s.best)
}

func (s *drawdownState) Reset() { *s = drawdownState{col: s.col} }

func (s *drawdownState) MarshalBinary() ([]byte, error) {
	if !s.has {
		return []byte{0}, nil
	}
	out := []byte{1}
	for _, f := range [...]float64{s.hi, s.lo, s.best} {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
	}
	return out, nil
}

func (s *drawdownState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	has := d.byte()
	var hi, lo, best float64
	switch {
	case d.err != nil:
	case has == 1:
		hi, lo, best = d.float(), d.float(), d.float()
	case has != 0:
		d.err = errCorrupt
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.has, s.hi, s.lo, s.best = has == 1, hi, lo, best
	return nil
}
