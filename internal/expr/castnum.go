package expr

import (
	"fmt"
	"math"

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
