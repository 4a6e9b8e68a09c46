package expr

import (
	"fmt"
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
	tFloat64 = arrow.PrimitiveTypes.Float64
	tString  = arrow.BinaryTypes.String
	tBool    = arrow.FixedWidthTypes.Boolean
	tNull    = arrow.Null
)

// commonType is the type two operands are converted to before a
// comparison, CASE or coalesce: integers widen to int64, any float makes
// float64, strings become string, a timestamp absorbs a string (parsed as
// RFC 3339), NULL takes the other side's type.
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

// normal is the canonical type of a value of type t in typed loops.
func normal(t arrow.DataType) arrow.DataType {
	switch {
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
