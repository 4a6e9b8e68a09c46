package agg

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var _ = register(&Def{
	Name:      "sum",
	Signature: "sum(x integer|float)",
	Doc:       "Sum of the non-NULL values: int64 for integer x (summed exactly, as in 128 bits; uint64 values as unsigned), float64 for float x (NaN when the frame holds a NaN or both infinities, else ±Inf when it holds one, as in DuckDB); NULL when there are none or when the exact sum of integers does not fit in BIGINT.",
	MinArgs:   1, MaxArgs: 1,
	Bind: func(d *Def, args []Arg) (Func, error) {
		k, err := numericArg(d, args[0])
		if err != nil {
			return nil, err
		}
		return &sumFunc{col: args[0].Col, float: k == KindFloat64, unsigned: isUnsigned64(args[0].Type)}, nil
	},
})

// numericArg checks that a is a numeric column (not a timestamp).
func numericArg(d *Def, a Arg) (Kind, error) {
	if a.Star || a.IsConst || a.Type == nil {
		return 0, sigError(d, "the argument must be a column or expression")
	}
	k, err := KindOf(a.Type)
	if err != nil || (k != KindInt64 && k != KindFloat64) || a.Type.ID() == arrow.TIMESTAMP || a.Type.ID() == arrow.DATE32 || a.Type.ID() == arrow.DATE64 || a.Type.ID() == arrow.DURATION {
		return 0, sigError(d, "got argument of type %s", a.Type)
	}
	return k, nil
}

type sumFunc struct {
	col      int
	float    bool
	unsigned bool // uint64 x: values from 2^63 up are not negative
}

func (f *sumFunc) Name() string { return "sum" }
func (f *sumFunc) ResultType() arrow.DataType {
	if f.float {
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.PrimitiveTypes.Int64
}
func (f *sumFunc) Retractable() bool { return true }
func (f *sumFunc) NewState() State {
	switch {
	case f.float:
		return &sumFloatState{col: f.col}
	case f.unsigned:
		return &sumUintState{sumIntState{col: f.col}}
	}
	return &sumIntState{col: f.col}
}

// NewWindow holds the state in the window's own allocation (see
// newOwnRetractWindow): one object, one cache miss, per key visit.
func (f *sumFunc) NewWindow() Window {
	switch {
	case f.float:
		return newOwnRetractWindow[sumFloatState](sumFloatState{col: f.col})
	case f.unsigned:
		return newOwnRetractWindow[sumUintState](sumUintState{sumIntState{col: f.col}})
	}
	return newOwnRetractWindow[sumIntState](sumIntState{col: f.col})
}

// sumIntState sums integers exactly in 128 bits, as DuckDB sums BIGINT
// into a HUGEINT: adding, retracting and merging never wrap, so a frame
// whose running sum left the int64 range on the way still ends exact. A
// sum that does not fit in int64 (the result type) is NULL.
type sumIntState struct {
	col int
	n   int64
	sum int128
}

func (s *sumIntState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n++
		s.sum.add(c.I64[i])
	}
}

func (s *sumIntState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n--
		s.sum.sub(c.I64[i])
	}
}

func (s *sumIntState) Merge(o State) {
	x := o.(*sumIntState)
	s.n += x.n
	s.sum.addWide(x.sum)
}

func (s *sumIntState) AppendResult(b array.Builder) {
	v, ok := s.sum.int64()
	if s.n == 0 || !ok {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(v)
}

func (s *sumIntState) resultWord() (uint64, bool) {
	v, ok := s.sum.int64()
	return uint64(v), ok && s.n != 0
}

func (s *sumIntState) Reset() { s.n, s.sum = 0, int128{} }

func (s *sumIntState) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender):
// varint n and varint sum when the sum fits in an int64 (the only form
// before sums were 128-bit, so older checkpoints decode unchanged), else
// varint ^n (negative, which marks this form), varint int64(lo) and
// varint hi. A wide encoding cut after lo is thus rejected, not read as a
// narrow one.
func (s *sumIntState) AppendBinary(out []byte) ([]byte, error) {
	v, ok := s.sum.int64()
	if ok {
		return binary.AppendVarint(binary.AppendVarint(out, s.n), v), nil
	}
	out = binary.AppendVarint(out, ^s.n)
	out = binary.AppendVarint(out, v)
	return binary.AppendVarint(out, s.sum.hi), nil
}

func (s *sumIntState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n, lo := d.varint(), d.varint()
	sum := int128{hi: lo >> 63, lo: uint64(lo)}
	if n < 0 {
		n = ^n
		hi := d.varint()
		if d.err == nil && hi == sum.hi {
			return errCorrupt // a narrow sum in the wide form
		}
		sum.hi = hi
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.sum = n, sum
	return nil
}

// sumUintState is sumIntState over uint64 values (held bit for bit in
// Column.I64): it adds them as unsigned, as DuckDB sums UBIGINT into a
// HUGEINT, so a value from 2^63 up counts as itself, not as a negative
// one. Such a sum never fits in the int64 result: it is NULL, as any
// integer sum beyond BIGINT. Results and the encoding are sumIntState's,
// so a checkpoint holds the same form for signed and unsigned sums.
type sumUintState struct{ sumIntState }

func (s *sumUintState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n++
		s.sum.addU(uint64(c.I64[i]))
	}
}

func (s *sumUintState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n--
		s.sum.subU(uint64(c.I64[i]))
	}
}

func (s *sumUintState) Merge(o State) { s.sumIntState.Merge(&o.(*sumUintState).sumIntState) }

// sumFloatState sums floats with Neumaier's compensation, so that adding
// and later retracting a value leaves (almost exactly) no trace: sliding
// sums stay within a few ulps of a fresh sum over the frame. NaNs and
// infinities are counted apart (fsum): a frame is NaN or infinite only
// while it holds one, whatever left the frame before.
type sumFloatState struct {
	col int
	n   int64
	s   fsum
}

func (s *sumFloatState) Add(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n++
		s.s.add(c.F64[i])
	}
}

func (s *sumFloatState) Retract(r *Rows, a int64) {
	c := &r.Cols[s.col]
	i := a - r.Base
	if !c.Null[i] {
		s.n--
		if s.n == 0 {
			s.s = fsum{}
			return
		}
		s.s.sub(c.F64[i])
	}
}

func (s *sumFloatState) Merge(o State) {
	x := o.(*sumFloatState)
	s.n += x.n
	s.s.merge(&x.s)
}

func (s *sumFloatState) AppendResult(b array.Builder) {
	if s.n == 0 {
		b.AppendNull()
		return
	}
	b.(*array.Float64Builder).Append(s.s.value())
}

func (s *sumFloatState) resultWord() (uint64, bool) {
	return math.Float64bits(s.s.value()), s.n != 0
}

func (s *sumFloatState) Reset() { s.n, s.s = 0, fsum{} }

func (s *sumFloatState) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends what MarshalBinary returns (encoding.BinaryAppender):
// the count n as a zigzag varint and the compensated sum (two floats); a
// state holding NaNs, infinities or huge values writes -1-n instead of n
// and the rest of fsum's encoding after the sum (so states of finite
// values encode as they did before those were counted).
func (s *sumFloatState) AppendBinary(out []byte) ([]byte, error) {
	if s.s.plain() {
		out = binary.AppendVarint(out, s.n)
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s.s.k.sum))
		return binary.LittleEndian.AppendUint64(out, math.Float64bits(s.s.k.c)), nil
	}
	return s.s.appendBinary(binary.AppendVarint(out, -1-s.n)), nil
}

func (s *sumFloatState) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	n := d.varint()
	var f fsum
	if n >= 0 {
		f.k.sum, f.k.c = d.float(), d.float()
	} else {
		n = -1 - n
		f.decode(&d)
		if d.err == nil && f.plain() {
			d.err = errCorrupt
		}
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.n, s.s = n, f
	return nil
}

// kahan is a Neumaier-compensated running sum.
type kahan struct{ sum, c float64 }

func (k *kahan) add(v float64) {
	t := k.sum + v
	if math.Abs(k.sum) >= math.Abs(v) {
		k.c += (k.sum - t) + v
	} else {
		k.c += (v - t) + k.sum
	}
	k.sum = t
}

func (k *kahan) value() float64 { return k.sum + k.c }

// errCorrupt is returned when a state encoding is malformed.
var errCorrupt = errors.New("agg: corrupt state encoding")

// decoder reads the encodings written by the states' MarshalBinary.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) float() float64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errCorrupt
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || uint64(len(d.b)) < n {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// finish reports a decoding error or trailing bytes.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) != 0 {
		return errCorrupt
	}
	return d.err
}
