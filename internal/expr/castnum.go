package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// floatToIntNode is CAST of a float to SIGNED (int64) or UNSIGNED
// (uint64) as DuckDB casts a DOUBLE: the value rounds to the nearest
// integer, ties to even (2.5 -> 2, 3.5 -> 4, 2.7 -> 3), and NaN, ±Inf and
// values outside the target's range fail, for UNSIGNED every negative
// value (-0.4 too), as in DuckDB, which checks the range before rounding.
// (arrow-go's cast with AllowFloatTruncate truncates toward zero and,
// worse, turns NaN and out-of-range values into arbitrary integers such
// as -9223372036854775808 without an error.)
type floatToIntNode struct {
	child node // float64
	to    arrow.DataType
	text  string
}

func (c *floatToIntNode) dtype() arrow.DataType { return c.to }
func (c *floatToIntNode) String() string        { return c.text }
func (c *floatToIntNode) eval(ev *evalCtx) (arrow.Array, error) {
	a, err := c.child.eval(ev)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	in := a.(*array.Float64)
	// The bounds are powers of two, exact in float64.
	lo, hi := -9223372036854775808.0, 9223372036854775808.0
	unsigned := c.to.ID() == arrow.UINT64
	if unsigned {
		lo, hi = 0, 18446744073709551616.0
	}
	bld := array.NewBuilder(ev.mem, c.to)
	defer bld.Release()
	bld.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if in.IsNull(i) {
			bld.AppendNull()
			continue
		}
		v := in.Value(i)
		if !(v >= lo && v < hi) { // NaN fails both
			return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("cannot cast %v to %s: out of range", v, c.to), Text: c.text}
		}
		r := math.RoundToEven(v)
		if unsigned {
			bld.(*array.Uint64Builder).UnsafeAppend(uint64(r))
		} else {
			bld.(*array.Int64Builder).UnsafeAppend(int64(r))
		}
	}
	return bld.NewArray(), nil
}

// toStringNode is CAST of a float or a timestamp to CHAR (VARCHAR) with
// DuckDB's text, which arrow's cast kernel does not give: a float as
// DuckDB (and Python's repr) writes a DOUBLE, the shortest text that reads
// back to the same value, fixed-point with at least one decimal (1.0,
// 1000000000000000.0) for a decimal exponent from -5 to 15 and in
// scientific notation otherwise (1e-05, 1.5e+16), nan, inf, -inf; a
// timestamp as "2006-01-02 15:04:05" in UTC with its fraction of a second,
// if any, without trailing zeros (arrow writes "2006-01-02
// 15:04:05.000Z").
type toStringNode struct {
	child node // a float or a timestamp
	text  string
}

func (c *toStringNode) dtype() arrow.DataType { return tString }
func (c *toStringNode) String() string        { return c.text }
func (c *toStringNode) eval(ev *evalCtx) (arrow.Array, error) {
	a, err := c.child.eval(ev)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	b := array.NewStringBuilder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch x := a.(type) {
		case *array.Float64:
			b.Append(duckFloat(x.Value(i), 64))
		case *array.Float32:
			b.Append(duckFloat(float64(x.Value(i)), 32))
		case *array.Timestamp:
			unit := x.DataType().(*arrow.TimestampType).Unit
			b.Append(x.Value(i).ToTime(unit).UTC().Format("2006-01-02 15:04:05.999999999"))
		default:
			return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("cannot cast %s to a string here", a.DataType()), Text: c.text}
		}
	}
	return b.NewArray(), nil
}

// duckFloat writes f as DuckDB casts a DOUBLE (bits 64) or FLOAT (32) to
// VARCHAR.
func duckFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// The shortest digits, and the decimal exponent of the first one.
	e := strconv.FormatFloat(f, 'e', -1, bits)
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= 16 {
		mant = strings.TrimSuffix(mant, ".0")
		sign := "+"
		if x < 0 {
			sign, x = "-", -x
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, x)
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
