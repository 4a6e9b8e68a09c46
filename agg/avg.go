package agg

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "avg",
	Signature: "avg(x integer|float)",
	Doc:       "Mean of the non-NULL values as float64 (uint64 values as unsigned); NULL when there are none.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		k, err := numericArg(d, args[0])
		if err != nil {
			return nil, err
		}
		return &avgFunc{col: args[0].Col, float: k == KindFloat64, unsigned: isUnsigned64(args[0].Type)}, nil
	},
})

type avgFunc struct {
	col      int
	float    bool
	unsigned bool // uint64 x: values from 2^63 up are not negative
}

func (f *avgFunc) Name() string               { return "avg" }
func (f *avgFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *avgFunc) Retractable() bool          { return true }
func (f *avgFunc) NewState() State {
	switch {
	case f.float:
		return &avgFloatState{col: f.col}
	case f.unsigned:
		return &avgUintState{avgIntState{col: f.col}}
	}
	return &avgIntState{col: f.col}
}

// NewWindow holds the state in the window's own allocation (see
// newOwnRetractWindow).
func (f *avgFunc) NewWindow() Window {
	switch {
	case f.float:
		return newOwnRetractWindow[avgFloatState](avgFloatState{col: f.col})
	case f.unsigned:
		return newOwnRetractWindow[avgUintState](avgUintState{avgIntState{col: f.col}})
	}
	return newOwnRetractWindow[avgIntState](avgIntState{col: f.col})
}

// avgIntState averages integers from an exact 128-bit sum.
type avgIntState struct {
	col int
	n   int64
	sum int128
}

func (s *avgIntState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n++
		s.sum.add(c.I64[i])
	}
}

func (s *avgIntState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n--
		s.sum.sub(c.I64[i])
	}
}

func (s *avgIntState) Merge(o State) {
	x := o.(*avgIntState)
	s.n += x.n
	s.sum.addWide(x.sum)
}

func (s *avgIntState) AppendResult(b array.Builder) {
	if s.n <= 0 {
		b.AppendNull()
		return
	}
	appendFloat(b, s.sum.float()/float64(s.n))
}

func (s *avgIntState) resultWord() (uint64, bool) {
	return math.Float64bits(s.sum.float() / float64(s.n)), s.n > 0
}

func (s *avgIntState) Reset() { s.n, s.sum = 0, int128{} }

func (s *avgIntState) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *avgIntState) AppendBinary(out []byte) ([]byte, error) {
	out = binary.AppendVarint(out, s.n)
	out = binary.AppendVarint(out, s.sum.hi)
	return binary.AppendUvarint(out, s.sum.lo), nil
}

func (s *avgIntState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n, hi, lo := d.nonNeg(), d.varint(), d.uvarint()
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.sum = n, int128{hi, lo}
	return nil
}

// avgUintState is avgIntState over uint64 values (held bit for bit in
// Column.I64), summed as unsigned; results and encoding are avgIntState's.
type avgUintState struct{ avgIntState }

func (s *avgUintState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n++
		s.sum.addU(uint64(c.I64[i]))
	}
}

func (s *avgUintState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n--
		s.sum.subU(uint64(c.I64[i]))
	}
}

func (s *avgUintState) Merge(o State) { s.avgIntState.Merge(&o.(*avgUintState).avgIntState) }

// avgFloatState averages floats from a compensated sum.
type avgFloatState struct {
	col int
	n   int64
	sum fsum
}

func (s *avgFloatState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n++
		s.sum.add(c.F64[i])
	}
}

func (s *avgFloatState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		s.n--
		if s.n <= 0 {
			s.Reset()
			return
		}
		s.sum.sub(c.F64[i])
	}
}

func (s *avgFloatState) Merge(o State) {
	x := o.(*avgFloatState)
	s.n += x.n
	s.sum.merge(&x.sum)
}

func (s *avgFloatState) AppendResult(b array.Builder) {
	if s.n <= 0 {
		b.AppendNull()
		return
	}
	appendFloat(b, s.sum.mean(s.n))
}

func (s *avgFloatState) resultWord() (uint64, bool) {
	return math.Float64bits(s.sum.mean(s.n)), s.n > 0
}

func (s *avgFloatState) Reset() { s.n, s.sum = 0, fsum{} }

func (s *avgFloatState) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender).
func (s *avgFloatState) AppendBinary(out []byte) ([]byte, error) {
	return s.sum.appendBinary(binary.AppendVarint(out, s.n)), nil
}

func (s *avgFloatState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.nonNeg()
	var f fsum
	f.decode(&d)
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.sum = n, f
	return nil
}

// fsum is a retractable float sum: finite values go to a Neumaier sum,
// NaNs and infinities are counted apart, so that retracting them restores
// a finite sum exactly (a plain sum would stay NaN for ever). Finite
// values of magnitude 2^960 and up (hugeMin) are summed apart too, scaled
// by 2^-512 (exactly: they stay normal), and counted: neither sum can
// overflow (the others are below 2^1023 for fewer than 2^63 values), so
// a frame whose true sum is beyond float64 gives ±Inf, and retracting the
// huge values restores a finite sum. (Summed with the others, two values
// near 1e308 made the compensated sum Inf + -Inf, NaN, and every later
// result of a sliding window NaN.)
//
// The counts and the huge values' sum live in x, nil while there are
// none, so that the common sum costs 24 bytes of a key's state (window
// states, tiles and per-value tables hold one each). x is never changed
// in place: an fsum copied by value (a tile, a map entry) may share it,
// and every change makes a new one.
type fsum struct {
	k kahan
	x *fsumRare
}

// fsumRare is what an fsum holds of NaNs, infinities and huge values.
type fsumRare struct {
	nan, pinf, ninf int64
	// big is the sum of the huge values times 2^-512, nbig their count.
	big  kahan
	nbig int64
}

// rare returns the sum's NaN, infinity and huge-value part (all zero when
// there is none).
func (f *fsum) rare() fsumRare {
	if f.x == nil {
		return fsumRare{}
	}
	return *f.x
}

// setRare makes r the sum's part of NaNs, infinities and huge values.
func (f *fsum) setRare(r fsumRare) {
	if r.nan|r.pinf|r.ninf|r.nbig == 0 {
		f.x = nil
		return
	}
	f.x = &r
}

const (
	// hugeMin is the magnitude from which fsum sums finite values apart.
	hugeMin = 0x1p960
	// hugeDown scales the huge values down into fsum.big; hugeUp back.
	hugeDown = 0x1p-512
	hugeUp   = 0x1p512
)

func (f *fsum) add(v float64) {
	if math.Abs(v) < hugeMin { // finite and not huge (false for NaN)
		f.k.add(v)
		return
	}
	f.special(v, 1)
}

func (f *fsum) sub(v float64) {
	if math.Abs(v) < hugeMin {
		f.k.add(-v)
		return
	}
	f.special(v, -1)
}

// special counts a NaN, an infinity or a huge value in or (delta -1)
// out.
func (f *fsum) special(v float64, delta int64) {
	r := f.rare()
	switch {
	case v != v:
		r.nan += delta
	case v-v == 0: // finite: huge
		r.nbig += delta
		if r.nbig == 0 {
			r.big = kahan{} // exactly none left
		} else {
			r.big.add(float64(delta) * v * hugeDown)
		}
	case v > 0:
		r.pinf += delta
	default:
		r.ninf += delta
	}
	f.setRare(r)
}

// nonFinite reports whether the sum counts a NaN or an infinity.
func (f *fsum) nonFinite() bool { return f.x != nil && f.x.nan|f.x.pinf|f.x.ninf != 0 }

// plain reports whether the sum holds finite values below hugeMin only.
func (f *fsum) plain() bool { return f.x == nil }

func (f *fsum) merge(o *fsum) {
	f.k.add(o.k.sum)
	f.k.add(o.k.c)
	if o.x == nil {
		return
	}
	r, or := f.rare(), *o.x
	r.nan += or.nan
	r.pinf += or.pinf
	r.ninf += or.ninf
	if or.nbig != 0 {
		r.big.add(or.big.sum)
		r.big.add(or.big.c)
		r.nbig += or.nbig
	}
	f.setRare(r)
}

// value is the IEEE sum of the values.
func (f *fsum) value() float64 {
	if f.x == nil {
		return f.k.value()
	}
	r := f.x
	switch {
	case r.nan > 0 || r.pinf > 0 && r.ninf > 0:
		return math.NaN()
	case r.pinf > 0:
		return math.Inf(1)
	case r.ninf > 0:
		return math.Inf(-1)
	}
	if r.nbig == 0 {
		return f.k.value()
	}
	if r.big.value() == 0 { // huge values that cancel: the others' sum
		return f.k.value()
	}
	return f.hugeSum().float() * hugeUp
}

// hugeSum is the sum of a state holding huge values (nbig > 0) in their
// scale (times 2^-512): the four parts added in double-double (the
// others' sum may cancel the huge ones), where nothing overflows. The
// others lose only what falls below 2^-1074 scaled, nothing next to a
// huge value's ulp; scaling back up is exact or overflows to ±Inf.
func (f *fsum) hugeSum() dd {
	return dd{f.x.big.sum, 0}.add(dd{f.x.big.c, 0}).add(dd{f.k.sum * hugeDown, 0}).add(dd{f.k.c * hugeDown, 0})
}

// mean is value()/n, n > 0, but divided before the huge values' scale is
// undone: the mean of 1e308 and 1e308 is 1e308, as the exact mean
// rounded once, although their sum is +Inf.
func (f *fsum) mean(n int64) float64 {
	if f.x == nil || f.x.nbig == 0 || f.nonFinite() || f.x.big.value() == 0 {
		return f.value() / float64(n)
	}
	return f.hugeSum().divf(float64(n)).float() * hugeUp
}

// appendBinary writes the Neumaier sum, then the NaN, +Inf and -Inf
// counts; a sum holding huge values writes -1 minus the NaN count (the
// earlier encoding had no negative count) and the huge values' count
// and scaled sum after the others.
func (f *fsum) appendBinary(out []byte) []byte {
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f.k.sum))
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f.k.c))
	r := f.rare()
	if r.nbig == 0 {
		out = binary.AppendVarint(out, r.nan)
		out = binary.AppendVarint(out, r.pinf)
		return binary.AppendVarint(out, r.ninf)
	}
	out = binary.AppendVarint(out, -1-r.nan)
	out = binary.AppendVarint(out, r.pinf)
	out = binary.AppendVarint(out, r.ninf)
	out = binary.AppendVarint(out, r.nbig)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r.big.sum))
	return binary.LittleEndian.AppendUint64(out, math.Float64bits(r.big.c))
}

func (f *fsum) decode(d *decoder) {
	f.k.sum, f.k.c = d.float(), d.float()
	var r fsumRare
	nan := d.varint()
	r.pinf, r.ninf = d.nonNeg(), d.nonNeg()
	r.nan = nan
	if nan < 0 {
		r.nan = -1 - nan
		r.nbig = d.nonNeg()
		r.big.sum, r.big.c = d.float(), d.float()
		if d.err == nil && r.nbig == 0 {
			d.err = errCorrupt // the huge form without huge values
		}
	}
	f.setRare(r)
}
