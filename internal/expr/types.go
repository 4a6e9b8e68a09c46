package expr

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"
)

func isInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// isUnsigned reports whether t is an unsigned integer type.
func isUnsigned(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// isUint64 reports whether t is uint64, the one integer type whose values
// do not all fit in int64.
func isUint64(t arrow.DataType) bool { return t.ID() == arrow.UINT64 }

func isFloat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func isNumeric(t arrow.DataType) bool { return isInt(t) || isFloat(t) }

func isString(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return true
	}
	return false
}

func isNull(t arrow.DataType) bool { return t.ID() == arrow.NULL }

func isBool(t arrow.DataType) bool { return t.ID() == arrow.BOOL }

var (
	tInt64   = arrow.PrimitiveTypes.Int64
	tUint64  = arrow.PrimitiveTypes.Uint64
	tFloat64 = arrow.PrimitiveTypes.Float64
	tString  = arrow.BinaryTypes.String
	tBool    = arrow.FixedWidthTypes.Boolean
	tNull    = arrow.Null
)

// commonType is the type two operands are converted to before a
// comparison, CASE or coalesce: integers widen to int64, unsigned integers
// to uint64 when one of them is uint64, any float makes float64, strings
// become string, a timestamp absorbs a string (parsed as RFC 3339), NULL
// takes the other side's type. (uint64 with a signed integer makes int64
// here; comparisons compare the two exactly instead, see unify, and a
// non-negative integer literal takes the uint64 side's type, see
// resultType.)
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	switch {
	case isNull(a) && isNull(b):
		return tNull, true
	case isNull(a):
		return normal(b), true
	case isNull(b):
		return normal(a), true
	case isNumeric(a) && isNumeric(b):
		if isFloat(a) || isFloat(b) {
			return tFloat64, true
		}
		if isUnsigned(a) && isUnsigned(b) && (isUint64(a) || isUint64(b)) {
			return tUint64, true
		}
		return tInt64, true
	case isString(a) && isString(b):
		return tString, true
	case isBool(a) && isBool(b):
		return tBool, true
	case a.ID() == arrow.TIMESTAMP && b.ID() == arrow.TIMESTAMP:
		return a, true
	case a.ID() == arrow.TIMESTAMP && isString(b):
		return a, true
	case isString(a) && b.ID() == arrow.TIMESTAMP:
		return b, true
	case arrow.TypeEqual(a, b):
		return a, true
	}
	return nil, false
}

// normal is the canonical type of a value of type t in typed loops:
// int64 for the integers but uint64, which stays uint64.
func normal(t arrow.DataType) arrow.DataType {
	switch {
	case isUint64(t):
		return tUint64
	case isInt(t):
		return tInt64
	case isFloat(t):
		return tFloat64
	case isString(t):
		return tString
	}
	return t
}

// coerce converts n to type t: literals at compile time, columns and
// computed values with a cast at evaluation time. An integer converted to a
// float rounds to the nearest float64 (a literal too: Go's conversion);
// a conversion between integer types fails on a value out of range.
func coerce(n node, t arrow.DataType, at sqlparser.SQLNode) (node, error) {
	if arrow.TypeEqual(n.dtype(), t) {
		return n, nil
	}
	if l, ok := n.(*litNode); ok {
		v, err := castScalar(l.val, t)
		if err != nil {
			return nil, errorf(ErrType, at, "cannot convert %s to %s: %v", l.String(), t, err)
		}
		return &litNode{val: v, text: l.text}, nil
	}
	if isNull(n.dtype()) {
		return &litNode{val: scalar.MakeNullScalar(t), text: "NULL"}, nil
	}
	opts := compute.SafeCastOptions(t)
	if isInt(n.dtype()) && isFloat(t) {
		// Implicit widening rounds an integer beyond 2^53 to the nearest
		// float64, as DuckDB does; the safe options would fail on it.
		opts.AllowFloatTruncate = true
	}
	return &castNode{child: n, to: t, text: n.String(), opts: opts}, nil
}

// castScalar converts a literal; strings convert to timestamps as RFC 3339
// (or "2006-01-02 15:04:05", UTC).
func castScalar(v scalar.Scalar, t arrow.DataType) (scalar.Scalar, error) {
	if !v.IsValid() {
		return scalar.MakeNullScalar(t), nil
	}
	// Scalar casts between int64 and uint64 wrap: 18446744073709551615
	// would become -1.
	switch x := v.(type) {
	case *scalar.Uint64:
		if t.ID() == arrow.INT64 && x.Value > math.MaxInt64 {
			return nil, fmt.Errorf("%d is out of the range of int64", x.Value)
		}
	case *scalar.Int64:
		if isUnsigned(t) && x.Value < 0 {
			return nil, fmt.Errorf("%d is out of the range of %s", x.Value, t)
		}
	}
	if ts, ok := t.(*arrow.TimestampType); ok {
		if s, ok := v.(*scalar.String); ok {
			tm, err := parseTime(s.String())
			if err != nil {
				return nil, err
			}
			val, err := arrow.TimestampFromTime(tm, ts.Unit)
			if err != nil {
				return nil, err
			}
			return scalar.NewTimestampScalar(val, t), nil
		}
	}
	return v.CastTo(t)
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp", s)
}

func nullScalar() scalar.Scalar { return scalar.MakeNullScalar(tNull) }

// nonNegIntLit reports whether n is a non-negative integer literal, which
// DuckDB types to fit the other operand: with a uint64 operand it is
// uint64 (u + 1 and coalesce(u, 0) are UBIGINT).
func nonNegIntLit(n node) bool {
	l, ok := n.(*litNode)
	if !ok || !l.val.IsValid() {
		return false
	}
	switch v := l.val.(type) {
	case *scalar.Int64:
		return v.Value >= 0
	case *scalar.Uint64:
		return true
	}
	return false
}

// unsignedPair reports whether an operator on a and b works in uint64:
// one is uint64 and the other an unsigned integer, a non-negative integer
// literal or NULL.
func unsignedPair(a, b node) bool {
	fits := func(n node) bool {
		return isUnsigned(n.dtype()) || isNull(n.dtype()) || nonNegIntLit(n)
	}
	return isUint64(a.dtype()) && fits(b) || isUint64(b.dtype()) && fits(a)
}
