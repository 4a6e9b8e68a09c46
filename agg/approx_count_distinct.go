package agg

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "approx_count_distinct",
	Signature: "approx_count_distinct(x any)",
	Doc:       "Number of distinct non-NULL values of x: exact up to 1000 distinct values, then a HyperLogLog estimate (standard error 1.6%).",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		k, err := valueArg(d, args[0])
		if err != nil {
			return nil, err
		}
		return &approxDistinctFunc{col: args[0].Col, kind: k}, nil
	},
})

const (
	// hllExact is the number of distinct values kept exactly.
	hllExact = 1000
	hllP     = 12
	hllM     = 1 << hllP
)

// approxDistinctFunc is approx_count_distinct. States count exactly up to
// hllExact distinct values and then switch to a HyperLogLog sketch with
// 2^12 registers: standard error 1.04/√4096 ≈ 1.6%, so about 99.7% of
// estimates lie within ±4.9% of the truth. Sliding windows hold every row
// of their frame anyway, so their Window counts exactly (a retractable
// value -> count map, O(1) per row): its results are always exact, which is
// within the bound.
type approxDistinctFunc struct {
	col  int
	kind Kind
}

func (f *approxDistinctFunc) Name() string               { return "approx_count_distinct" }
func (f *approxDistinctFunc) ResultType() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (f *approxDistinctFunc) Retractable() bool          { return false }
func (f *approxDistinctFunc) NewState() State {
	return &approxDistinctState{col: f.col, set: multiset{kind: f.kind}}
}
func (f *approxDistinctFunc) NewWindow() Window {
	return NewRetractWindow(func() State { return &countDistinctState{col: f.col, set: multiset{kind: f.kind}} })
}

type approxDistinctState struct {
	col  int
	set  multiset // exact mode
	regs []uint8  // sketch mode when not nil
}

// mix64 is the splitmix64 finaliser: a bijective 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// hashString is 64-bit FNV-1a, mixed.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

func hashBool(b bool) uint64 {
	if b {
		return mix64(0x5bd1e995)
	}
	return mix64(0x1b873593)
}

func (s *approxDistinctState) insertHash(h uint64) {
	idx := h >> (64 - hllP)
	rho := uint8(bits.LeadingZeros64(h<<hllP|1<<(hllP-1)) + 1)
	if rho > s.regs[idx] {
		s.regs[idx] = rho
	}
}

// toSketch moves the exact values into registers.
func (s *approxDistinctState) toSketch() {
	if s.regs != nil {
		return
	}
	s.regs = make([]uint8, hllM)
	s.sketchSet(&s.set)
	s.set.reset()
}

func (s *approxDistinctState) sketchSet(m *multiset) {
	for k := range m.ints {
		s.insertHash(mix64(uint64(k)))
	}
	for k := range m.strs {
		s.insertHash(hashString(k))
	}
	for i, n := range m.bools {
		if n > 0 {
			s.insertHash(hashBool(i == 1))
		}
	}
}

func (s *approxDistinctState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := int(a - r.Base)
	if c.Null[i] {
		return
	}
	if s.regs == nil {
		s.set.add(c, i, 1)
		if s.set.distinct() > hllExact {
			s.toSketch()
		}
		return
	}
	switch c.Kind {
	case KindInt64, KindFloat64:
		s.insertHash(mix64(uint64(intKey(c, i))))
	case KindString:
		s.insertHash(hashString(c.Str[i]))
	case KindBool:
		s.insertHash(hashBool(c.Bool[i]))
	}
}

func (s *approxDistinctState) Merge(o State) {
	x := o.(*approxDistinctState)
	if s.regs == nil && x.regs == nil {
		s.set.merge(&x.set)
		if s.set.distinct() > hllExact {
			s.toSketch()
		}
		return
	}
	s.toSketch()
	if x.regs == nil {
		s.sketchSet(&x.set)
		return
	}
	for i, v := range x.regs {
		s.regs[i] = max(s.regs[i], v)
	}
}

func (s *approxDistinctState) estimate() int64 {
	if s.regs == nil {
		return int64(s.set.distinct())
	}
	var sum float64
	zeros := 0
	for _, v := range s.regs {
		sum += math.Ldexp(1, -int(v))
		if v == 0 {
			zeros++
		}
	}
	m := float64(hllM)
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting
	}
	return int64(math.Round(e))
}

func (s *approxDistinctState) AppendResult(b array.Builder) { appendInt(b, s.estimate()) }

func (s *approxDistinctState) Reset() {
	s.set.reset()
	s.regs = nil
}

// MarshalBinary writes 0 and the exact multiset, or 1 and the registers.
func (s *approxDistinctState) MarshalBinary() ([]byte, error) {
	if s.regs == nil {
		return s.set.appendBinary([]byte{0}), nil
	}
	return append([]byte{1}, s.regs...), nil
}

func (s *approxDistinctState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	t := approxDistinctState{col: s.col, set: multiset{kind: s.set.kind}}
	switch d.byte() {
	case 0:
		t.set.decode(&d)
		if d.err == nil && t.set.distinct() > hllExact {
			d.err = errCorrupt
		}
	case 1:
		if len(d.b) != hllM {
			return errCorrupt
		}
		t.regs = make([]uint8, hllM)
		copy(t.regs, d.b)
		d.b = nil
		for _, v := range t.regs {
			if v > 64-hllP+1 {
				return errCorrupt
			}
		}
	default:
		return errCorrupt
	}
	if err := d.finish(); err != nil {
		return err
	}
	*s = t
	return nil
}
