package agg

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

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
//
// The sums are kept per magnitude class of d: class c holds the values
// with |d| in [2^(32c-12), 2^(32c+20)), their count and their sums scaled
// by 2^-32c (d² by 2^-64c), so that no sum overflows (class 0, from about
// 0.00024 to a million, holds the deviations of most data, whose
// variance then costs one class); a class whose values
// have all been retracted is dropped. A value far from the others (1e15
// next to values near 1, or 1e308) thus leaves no rounding trace in the
// sums of the others once it leaves the frame. (With one sum for all, a
// sliding window that had held it reported 0, or NaN once the squares
// overflowed, for every later frame of the key: the rounding noise of its
// square stayed in S2, and so did its peak.) The classes are combined in
// the scale of the largest one, and the result scaled back: a variance
// beyond float64 is +Inf, its square root often finite.
type varianceState struct {
	col  int
	kind varKind
	n    int64 // finite values
	bad  int64 // NaN and infinite values
	k    float64
	cls  []varClass // the classes holding values with d != 0, ascending
	// mixed is set when a class's count may not match the values its
	// sums hold (after Merge, or decoded from the encoding that had one
	// sum for all): classes are then dropped only when the state empties.
	mixed bool
}

// varClass is one magnitude class of a varianceState.
type varClass struct {
	c      int32
	n      int64
	s1, s2 dd // Σ d·2^-32c and Σ d²·2^-64c
	// peak is the largest s2.hi since the class was last empty: rounding
	// noise in s2 is a tiny fraction of it, and a variance below that
	// noise (a frame of equal values) is reported as exactly 0.
	peak float64
}

// pow2 returns 2^e (0 below the subnormals, +Inf above float64).
func pow2(e int) float64 {
	if e >= -1022 && e <= 1023 {
		return math.Float64frombits(uint64(e+1023) << 52)
	}
	return math.Ldexp(1, e)
}

// scaled returns x times f, a power of two.
func (x dd) scaled(f float64) dd { return dd{x.hi * f, x.lo * f} }

// sq returns x² (dropping lo²).
func (x dd) sq() dd {
	p, e := twoProd(x.hi, x.hi)
	e += 2 * x.hi * x.lo
	return dd{p, e}
}

// varClassShift places the classes' bounds: class c holds |d| from
// 2^(32c-varClassShift).
const varClassShift = 12

// deviation returns the class of d = x-K and d scaled into it, or false
// when x is K.
func (s *varianceState) deviation(x float64) (int32, dd, bool) {
	dh, dl := twoSum(x, -s.k)
	if e := int(math.Float64bits(dh)>>52&0x7ff) - 1023; uint(e+varClassShift) < 32 {
		return 0, dd{dh, dl}, true // |d| in [2^-12, 2^20): class 0, scale 1
	}
	if dh == 0 {
		return 0, dd{}, false
	}
	e0 := 0
	if math.IsInf(dh, 0) { // beyond float64: take it in a 2^-64 scale
		dh, dl = twoSum(x*0x1p-64, -s.k*0x1p-64)
		e0 = 64
	}
	_, e := math.Frexp(dh) // |dh| in [2^(e-1), 2^e)
	c := int32(floorDiv(int64(e-1+e0+varClassShift), 32))
	sh := e0 - 32*int(c)
	if sh == 0 {
		return c, dd{dh, dl}, true
	}
	if sh >= -1022 && sh <= 1023 {
		f := pow2(sh)
		return c, dd{dh * f, dl * f}, true
	}
	return c, dd{math.Ldexp(dh, sh), math.Ldexp(dl, sh)}, true
}

// class returns the index of class c in s.cls, inserting it if need be.
func (s *varianceState) class(c int32) int {
	i := 0
	for i < len(s.cls) && s.cls[i].c < c {
		i++
	}
	if i == len(s.cls) || s.cls[i].c != c {
		s.cls = slices.Insert(s.cls, i, varClass{c: c})
	}
	return i
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
		s.k, s.cls, s.mixed = x, s.cls[:0], false
	}
	s.n++
	c, d, ok := s.deviation(x)
	if !ok {
		return
	}
	b := &s.cls[s.class(c)]
	b.n++
	b.s1 = b.s1.add(d)
	b.s2 = b.s2.add(d.sq())
	b.peak = max(b.peak, b.s2.hi)
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
		s.n, s.k, s.cls, s.mixed = 0, 0, s.cls[:0], false
		return
	}
	c, d, ok := s.deviation(x)
	if !ok {
		return
	}
	i := s.class(c)
	b := &s.cls[i]
	if b.n--; b.n == 0 && !s.mixed {
		s.cls = slices.Delete(s.cls, i, i+1) // exactly nothing left
		return
	}
	b.s1 = b.s1.add(d.neg())
	b.s2 = b.s2.add(d.sq().neg())
	if b.n <= 0 && b.s1 == (dd{}) && b.s2 == (dd{}) {
		// A mixed state's class that its retractions emptied exactly.
		s.cls = slices.Delete(s.cls, i, i+1)
	}
}

func (s *varianceState) Merge(o State) {
	x := o.(*varianceState)
	s.bad += x.bad
	if x.n == 0 {
		return
	}
	if s.n == 0 {
		s.n, s.k, s.mixed = x.n, x.k, x.mixed
		s.cls = append(s.cls[:0], x.cls...)
		return
	}
	// Re-express x's sums around s.k: with δ = x.k - s.k,
	// Σ(v-s.k) = S1 + nδ and Σ(v-s.k)² = S2 + 2δS1 + nδ², class by
	// class, each into the larger of its class and δ's; x's values equal
	// to x.k add nδ and nδ² to δ's class.
	s.mixed = true
	cd, delta, moved := s.deviation(x.k)
	n0 := x.n
	for _, b := range x.cls {
		n0 -= b.n
		t := b.c
		if moved {
			t = max(t, cd)
		}
		f := pow2(32 * int(b.c-t))
		s1, s2 := b.s1.scaled(f), b.s2.scaled(f).scaled(f)
		if moved {
			dt := delta.scaled(pow2(32 * int(cd-t)))
			n := dd{float64(b.n), 0}
			s2 = s2.add(dt.mul(s1).mulf(2)).add(dt.sq().mul(n))
			s1 = s1.add(dt.mul(n))
		}
		y := &s.cls[s.class(t)]
		y.n += b.n
		y.s1 = y.s1.add(s1)
		y.s2 = y.s2.add(s2)
		y.peak = max(y.peak, y.s2.hi, b.peak*f*f)
	}
	if moved && n0 > 0 {
		n := dd{float64(n0), 0}
		y := &s.cls[s.class(cd)]
		y.n += n0
		y.s1 = y.s1.add(delta.mul(n))
		y.s2 = y.s2.add(delta.sq().mul(n))
		y.peak = max(y.peak, y.s2.hi)
	}
	s.n += x.n
}

func (s *varianceState) AppendResult(b array.Builder) {
	n := s.n + s.bad
	samp := s.kind.samp()
	if n == 0 || samp && n == 1 {
		b.AppendNull()
		return
	}
	if s.bad > 0 {
		appendFloat(b, math.NaN())
		return
	}
	if len(s.cls) == 0 { // every value is K
		appendFloat(b, 0)
		return
	}
	// M2 = S2 - S1²/n in the scale of the largest class.
	top := int(s.cls[len(s.cls)-1].c)
	t1, t2, noise := s.cls[0].s1, s.cls[0].s2, s.cls[0].peak
	if len(s.cls) > 1 {
		t1, t2, noise = dd{}, dd{}, 0
		for _, c := range s.cls {
			f := pow2(32 * (int(c.c) - top))
			t1 = t1.add(c.s1.scaled(f))
			t2 = t2.add(c.s2.scaled(f).scaled(f))
			noise = max(noise, c.peak*f*f)
		}
	}
	nf := float64(s.n)
	m2 := t2.add(t1.mul(t1).divf(nf).neg())
	div := nf
	if samp {
		div = nf - 1
	}
	v := m2.divf(div).float()
	if !(v > 0) || m2.hi <= 0x1p-96*noise {
		v = 0
	}
	switch {
	case s.kind == stddevSamp || s.kind == stddevPop:
		v = math.Sqrt(v)
		if top != 0 {
			v = math.Ldexp(v, 32*top)
		}
	case top != 0:
		v = math.Ldexp(v, 64*top)
	}
	appendFloat(b, v)
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
	s.n, s.bad, s.k, s.cls, s.mixed = 0, 0, 0, s.cls[:0], false
}

// MarshalBinary writes -1-n (the encoding before the classes wrote n,
// never negative), the count of NaNs and infinities, K, a flags byte
// (1: the state is mixed; 2: the classes have the bounds of
// varClassShift, which the first encoding with classes, without the
// flag, did not), and the classes: class, count, S1, S2, peak.
func (s *varianceState) MarshalBinary() ([]byte, error) {
	out := binary.AppendVarint(nil, -1-s.n)
	out = binary.AppendVarint(out, s.bad)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s.k))
	flags := byte(2)
	if s.mixed {
		flags |= 1
	}
	out = append(out, flags)
	out = binary.AppendUvarint(out, uint64(len(s.cls)))
	for _, c := range s.cls {
		out = binary.AppendVarint(out, int64(c.c))
		out = binary.AppendVarint(out, c.n)
		for _, f := range [...]float64{c.s1.hi, c.s1.lo, c.s2.hi, c.s2.lo, c.peak} {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
		}
	}
	return out, nil
}

// UnmarshalBinary decodes what MarshalBinary writes, and the earlier
// encodings: the one with one sum for all (n, bad, K, S1, S2 and peak)
// as a mixed state of one class with scale 1, and the one of classes
// with other bounds as a mixed state.
func (s *varianceState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := varianceState{col: s.col, kind: s.kind}
	n := d.varint()
	t.bad = d.nonNeg()
	t.k = d.float()
	if n >= 0 {
		t.n = n
		c := varClass{n: n, s1: dd{d.float(), d.float()}, s2: dd{d.float(), d.float()}, peak: d.float()}
		if n > 0 {
			t.cls, t.mixed = []varClass{c}, true
		}
	} else {
		t.n = -1 - n
		switch f := d.byte(); {
		case f > 3:
			d.err = errCorrupt
		case f&1 != 0 || f&2 == 0:
			// Mixed, or classes of other bounds: a value retracted
			// may then land in a class other than the one it was
			// added to, which only a mixed state allows.
			t.mixed = true
		}
		k := d.count(42)
		var total int64
		for i := range k {
			c := varClass{}
			cl := d.varint()
			c.n = d.varint()
			c.s1 = dd{d.float(), d.float()}
			c.s2 = dd{d.float(), d.float()}
			c.peak = d.float()
			if d.err != nil {
				break
			}
			if cl != int64(int32(cl)) || i > 0 && int32(cl) <= t.cls[i-1].c || !t.mixed && c.n <= 0 {
				return errCorrupt
			}
			c.c = int32(cl)
			total += c.n
			t.cls = append(t.cls, c)
		}
		if d.err == nil && (t.n == 0 && len(t.cls) > 0 || !t.mixed && total > t.n) {
			return errCorrupt
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	*s = t
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
