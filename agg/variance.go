package agg

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// varKind selects one of the four variance functions.
type varKind uint8

const (
	varSamp varKind = iota
	varPop
	stddevSamp
	stddevPop
)

var (
	_ = registerVariance("var_samp", varSamp, "Sample variance of the non-NULL values of x; NULL for fewer than two values.", "variance")
	_ = registerVariance("var_pop", varPop, "Population variance of the non-NULL values of x; 0 for one value, NULL for none.")
	_ = registerVariance("stddev_samp", stddevSamp, "Sample standard deviation of the non-NULL values of x; NULL for fewer than two values.", "stddev")
	_ = registerVariance("stddev_pop", stddevPop, "Population standard deviation of the non-NULL values of x; 0 for one value, NULL for none.")
)

func registerVariance(name string, k varKind, doc string, aliases ...string) *Def {
	return register(&Def{
		Name:      name,
		Signature: name + "(x integer|float)",
		Doc:       doc,
		MinArgs:   1, MaxArgs: 1,
		Bind: func(d *Def, args []Arg) (Func, error) {
			kind, err := numericArg(d, args[0])
			if err != nil {
				return nil, err
			}
			return &varianceFunc{name: d.Name, col: args[0].Col, kind: k, ints: kind == KindInt64, unsigned: isUnsigned64(args[0].Type)}, nil
		},
	}, aliases...)
}

type varianceFunc struct {
	name     string
	col      int
	kind     varKind
	ints     bool // integer argument: exact arithmetic
	unsigned bool // uint64 argument: values from 2^63 up are not negative
}

func (f *varianceFunc) Name() string               { return f.name }
func (f *varianceFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (f *varianceFunc) Retractable() bool          { return true }
func (f *varianceFunc) NewState() State {
	switch {
	case f.unsigned:
		return &varianceUintState{varianceIntState{col: f.col, kind: f.kind}}
	case f.ints:
		return &varianceIntState{col: f.col, kind: f.kind}
	}
	return &varianceState{col: f.col, kind: f.kind}
}
func (f *varianceFunc) NewWindow() Window { return NewRetractWindow(f.NewState) }

// varianceState keeps, for the finite values x of its rows, their count n
// and the sums of d = x-K and d² in double-double arithmetic (about 106
// bits), where the shift K is the first value added since the state was
// last empty. The variance (S2 - S1²/n)/n is computed in double-double as
// well, so cancellation costs nothing visible in float64 unless the values
// sit more than ~1e10 standard deviations away from K; retraction
// subtracts exactly the terms that were added. NaN and ±Inf are counted
// apart and make the result NaN while they are in the frame.
type varianceState struct {
	col    int
	kind   varKind
	n      int64 // finite values
	bad    int64 // NaN and infinite values
	k      float64
	s1, s2 dd
	// peak is the largest S2 since the state was empty: rounding noise
	// in S2 is a tiny fraction of it, and a variance below that noise
	// (a frame of equal values) is reported as exactly 0.
	peak float64
}

// terms returns d = x-K and d² as double-doubles.
func (s *varianceState) terms(x float64) (dd, dd) {
	dh, dl := twoSum(x, -s.k)
	p, e := twoProd(dh, dh)
	e += 2 * dh * dl
	return dd{dh, dl}, dd{p, e}
}

func (s *varianceState) value(r *Rows, a int64) (float64, bool) {
	c := &r.Cols[s.col]
	i := int(a - r.Base)
	if c.Null[i] {
		return 0, false
	}
	return c.Float(i), true
}

func (s *varianceState) Add(r *Rows, a int64) {
	if x, ok := s.value(r, a); ok {
		s.add(x)
	}
}

func (s *varianceState) add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		s.bad++
		return
	}
	if s.n == 0 {
		s.k, s.s1, s.s2, s.peak = x, dd{}, dd{}, 0
	}
	s.n++
	d, d2 := s.terms(x)
	s.s1 = s.s1.add(d)
	s.s2 = s.s2.add(d2)
	s.peak = max(s.peak, s.s2.hi)
}

func (s *varianceState) Retract(r *Rows, a int64) {
	x, ok := s.value(r, a)
	if !ok {
		return
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		s.bad--
		return
	}
	s.n--
	if s.n <= 0 {
		s.n, s.k, s.s1, s.s2, s.peak = 0, 0, dd{}, dd{}, 0
		return
	}
	d, d2 := s.terms(x)
	s.s1 = s.s1.add(d.neg())
	s.s2 = s.s2.add(d2.neg())
}

func (s *varianceState) Merge(o State) {
	x := o.(*varianceState)
	s.bad += x.bad
	if x.n == 0 {
		return
	}
	if s.n == 0 {
		s.n, s.k, s.s1, s.s2, s.peak = x.n, x.k, x.s1, x.s2, x.peak
		return
	}
	// Re-express x's sums around s.k: with δ = x.k - s.k,
	// Σ(v-s.k) = S1 + nδ and Σ(v-s.k)² = S2 + 2δS1 + nδ².
	dh, dl := twoSum(x.k, -s.k)
	delta := dd{dh, dl}
	n := dd{float64(x.n), 0}
	s.s1 = s.s1.add(x.s1).add(delta.mul(n))
	s.s2 = s.s2.add(x.s2).add(delta.mul(x.s1).mulf(2)).add(delta.mul(delta).mul(n))
	s.n += x.n
	s.peak = max(s.peak, x.peak, s.s2.hi)
}

func (s *varianceState) AppendResult(b array.Builder) {
	n := s.n + s.bad
	samp := s.kind == varSamp || s.kind == stddevSamp
	if n == 0 || samp && n == 1 {
		b.AppendNull()
		return
	}
	var v float64
	if s.bad > 0 {
		v = math.NaN()
	} else {
		// M2 = S2 - S1²/n
		nf := float64(s.n)
		m2 := s.s2.add(s.s1.mul(s.s1).divf(nf).neg())
		div := nf
		if samp {
			div = nf - 1
		}
		v = m2.divf(div).float()
		if m2.hi <= 0x1p-96*s.peak {
			v = 0
		}
	}
	appendFloat(b, s.kind.finish(v))
}

// finish turns a variance into the function's result.
func (k varKind) finish(v float64) float64 {
	if v < 0 {
		v = 0
	}
	if k == stddevSamp || k == stddevPop {
		return math.Sqrt(v)
	}
	return v
}

func (k varKind) samp() bool { return k == varSamp || k == stddevSamp }

func (s *varianceState) Reset() {
	s.n, s.bad, s.k, s.s1, s.s2, s.peak = 0, 0, 0, dd{}, dd{}, 0
}

func (s *varianceState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, s.n)
	out = binary.AppendVarint(out, s.bad)
	for _, f := range [...]float64{s.k, s.s1.hi, s.s1.lo, s.s2.hi, s.s2.lo, s.peak} {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
	}
	return out, nil
}

func (s *varianceState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n, bad := d.nonNeg(), d.nonNeg()
	k := d.float()
	s1 := dd{d.float(), d.float()}
	s2 := dd{d.float(), d.float()}
	peak := d.float()
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.bad, s.k, s.s1, s.s2, s.peak = n, bad, k, s1, s2, peak
	return nil
}

// dd is a double-double number hi+lo with |lo| <= ulp(hi)/2: about 106
// bits of precision.
type dd struct{ hi, lo float64 }

// twoSum returns s = fl(a+b) and the exact error a+b-s.
func twoSum(a, b float64) (float64, float64) {
	s := a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// fastTwoSum is twoSum for |a| >= |b|.
func fastTwoSum(a, b float64) (float64, float64) {
	s := a + b
	return s, b - (s - a)
}

// twoProd returns p = fl(a*b) and the exact error a*b-p.
func twoProd(a, b float64) (float64, float64) {
	p := a * b
	return p, math.FMA(a, b, -p)
}

func (x dd) add(y dd) dd {
	s, e := twoSum(x.hi, y.hi)
	t, f := twoSum(x.lo, y.lo)
	e += t
	s, e = fastTwoSum(s, e)
	e += f
	s, e = fastTwoSum(s, e)
	return dd{s, e}
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

func (x dd) mul(y dd) dd {
	p, e := twoProd(x.hi, y.hi)
	e += x.hi*y.lo + x.lo*y.hi
	p, e = fastTwoSum(p, e)
	return dd{p, e}
}

func (x dd) mulf(f float64) dd { return x.mul(dd{f, 0}) }

func (x dd) divf(f float64) dd {
	q1 := x.hi / f
	p, e := twoProd(q1, f)
	r := ((x.hi - p) - e + x.lo) / f
	q, l := fastTwoSum(q1, r)
	return dd{q, l}
}

func (x dd) float() float64 { return x.hi + x.lo }

// varianceIntState computes the variance of integers exactly: it keeps n,
// Σx in 128 bits and Σx² in 192 bits, so retraction is exact and
// n²·var_pop = nΣx² - (Σx)² is formed exactly in 256 bits before the one
// rounding to float64.
type varianceIntState struct {
	col  int
	kind varKind
	n    int64
	s1   int128
	s2   [3]uint64
}

// square returns v² as a 128-bit unsigned (hi, lo).
func square(v int64) (uint64, uint64) {
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	return bits.Mul64(u, u)
}

func (s *varianceIntState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		v := c.I64[i]
		s.n++
		s.s1.add(v)
		s.addSquare(square(v))
	}
}

func (s *varianceIntState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		v := c.I64[i]
		s.n--
		s.s1.sub(v)
		s.subSquare(square(v))
	}
}

// addSquare adds the 128-bit square (hi, lo) to Σx².
func (s *varianceIntState) addSquare(hi, lo uint64) {
	var cy uint64
	s.s2[0], cy = bits.Add64(s.s2[0], lo, 0)
	s.s2[1], cy = bits.Add64(s.s2[1], hi, cy)
	s.s2[2] += cy
}

// subSquare subtracts the 128-bit square (hi, lo) from Σx².
func (s *varianceIntState) subSquare(hi, lo uint64) {
	var br uint64
	s.s2[0], br = bits.Sub64(s.s2[0], lo, 0)
	s.s2[1], br = bits.Sub64(s.s2[1], hi, br)
	s.s2[2] -= br
}

func (s *varianceIntState) Merge(o State) {
	x := o.(*varianceIntState)
	s.n += x.n
	s.s1.addWide(x.s1)
	var c uint64
	s.s2[0], c = bits.Add64(s.s2[0], x.s2[0], 0)
	s.s2[1], c = bits.Add64(s.s2[1], x.s2[1], c)
	s.s2[2] += x.s2[2] + c
}

func (s *varianceIntState) AppendResult(b array.Builder) {
	samp := s.kind.samp()
	if s.n <= 0 || samp && s.n == 1 {
		b.AppendNull()
		return
	}
	// N = n·Σx² - (Σx)² >= 0, exactly.
	nn := mul256([4]uint64{uint64(s.n)}, [4]uint64{s.s2[0], s.s2[1], s.s2[2]})
	a := s.s1
	if a.hi < 0 {
		a.lo, a.hi = -a.lo, ^a.hi
		if a.lo == 0 {
			a.hi++
		}
	}
	sq := mul256([4]uint64{a.lo, uint64(a.hi)}, [4]uint64{a.lo, uint64(a.hi)})
	var num [4]uint64
	var br uint64
	for i := range num {
		num[i], br = bits.Sub64(nn[i], sq[i], br)
	}
	if br != 0 { // cannot happen for a consistent state
		num = [4]uint64{}
	}
	v := float256(num) / float64(s.n)
	if samp {
		v /= float64(s.n - 1)
	} else {
		v /= float64(s.n)
	}
	appendFloat(b, s.kind.finish(v))
}

func (s *varianceIntState) Reset() { s.n, s.s1, s.s2 = 0, int128{}, [3]uint64{} }

func (s *varianceIntState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, s.n)
	out = binary.AppendVarint(out, s.s1.hi)
	out = binary.AppendUvarint(out, s.s1.lo)
	for _, l := range s.s2 {
		out = binary.AppendUvarint(out, l)
	}
	return out, nil
}

func (s *varianceIntState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.nonNeg()
	s1 := int128{d.varint(), d.uvarint()}
	s2 := [3]uint64{d.uvarint(), d.uvarint(), d.uvarint()}
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.s1, s.s2 = n, s1, s2
	return nil
}

// varianceUintState is varianceIntState over uint64 values (held bit for
// bit in Column.I64), read as unsigned: Σx < 2^127 and Σx² < 2^191 for
// fewer than 2^63 values, so the 128- and 192-bit sums and the 256-bit
// numerator stay exact. Results and encoding are varianceIntState's.
type varianceUintState struct{ varianceIntState }

func (s *varianceUintState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		v := uint64(c.I64[i])
		s.n++
		s.s1.addU(v)
		s.addSquare(bits.Mul64(v, v))
	}
}

func (s *varianceUintState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	if i := a - r.Base; !c.Null[i] {
		v := uint64(c.I64[i])
		s.n--
		s.s1.subU(v)
		s.subSquare(bits.Mul64(v, v))
	}
}

func (s *varianceUintState) Merge(o State) {
	s.varianceIntState.Merge(&o.(*varianceUintState).varianceIntState)
}

// mul256 multiplies little-endian 256-bit unsigned numbers modulo 2^256.
func mul256(a, b [4]uint64) [4]uint64 {
	var out [4]uint64
	for i := range 4 {
		var carry uint64
		for j := 0; i+j < 4; j++ {
			hi, lo := bits.Mul64(a[i], b[j])
			var c uint64
			lo, c = bits.Add64(lo, out[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			out[i+j], carry = lo, hi
		}
	}
	return out
}

// float256 converts a 256-bit unsigned number to the nearest float64 (to
// within an ulp).
func float256(x [4]uint64) float64 {
	return ((float64(x[3])*0x1p64+float64(x[2]))*0x1p64+float64(x[1]))*0x1p64 + float64(x[0])
}
