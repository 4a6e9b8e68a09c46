package agg

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "ew_avg",
	Signature: "ew_avg(x integer|float, alpha float constant in (0, 1])",
	Doc:       "Exponentially weighted mean Σ w_i x_i / Σ w_i, w_i = (1-alpha)^i, i = 0 for the newest non-NULL value (pandas ewm adjust=True, ignore_na=True); NULL when there are none.",
	MinArgs:   2, MaxArgs: 2,
	Bind: func(d *Def, args []Arg) (Func, error) {
		if _, err := numericArg(d, args[0]); err != nil {
			return nil, err
		}
		alpha, err := constFloat(d, args[1], "alpha")
		if err != nil {
			return nil, err
		}
		if !(alpha > 0 && alpha <= 1) {
			return nil, sigError(d, "alpha must be in (0, 1], got %v", alpha)
		}
		return &ewAvgFunc{col: args[0].Col, decay: 1 - alpha}, nil
	},
})

type ewAvgFunc struct {
	col   int
	decay float64 // 1 - alpha
}

func (f *ewAvgFunc) Name() string               { return "ew_avg" }
func (f *ewAvgFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *ewAvgFunc) Retractable() bool          { return false }
func (f *ewAvgFunc) NewState() State            { return &ewAvgState{col: f.col, decay: f.decay} }
func (f *ewAvgFunc) NewWindow() Window          { return NewStackWindow(f.NewState) }

// ewAvgState keeps S = Σ d^i x_i and W = Σ d^i over its n values, i = 0
// for the newest, d = 1-alpha. A newer value scales both by d; merging a
// later state o scales the receiver by d^o.n. Weights only shrink, so the
// sums stay well conditioned (no cancellation for same-sign weights).
type ewAvgState struct {
	col   int
	decay float64
	n     int64
	s, w  float64
}

func (s *ewAvgState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := int(a - r.Base); !c.Null[i] {
		s.s = s.s*s.decay + c.Float(i)
		s.w = s.w*s.decay + 1
		s.n++
	}
}

func (s *ewAvgState) Merge(o State) {
	x := o.(*ewAvgState)
	if x.n == 0 {
		return
	}
	f := math.Pow(s.decay, float64(x.n))
	s.s = s.s*f + x.s
	s.w = s.w*f + x.w
	s.n += x.n
}

func (s *ewAvgState) AppendResult(b array.Builder) {
	if s.n == 0 {
		b.AppendNull()
		return
	}
	appendFloat(b, s.s/s.w)
}

func (s *ewAvgState) Reset() { s.n, s.s, s.w = 0, 0, 0 }

func (s *ewAvgState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, s.n)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s.s))
	return binary.LittleEndian.AppendUint64(out, math.Float64bits(s.w)), nil
}

func (s *ewAvgState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.nonNeg()
	sum, w := d.float(), d.float()
	if err := d.finish(); err != nil {
		return err
	}
	if n > 0 && !(w > 0) {
		return errCorrupt
	}
	s.n, s.s, s.w = n, sum, w
	return nil
}
