// Package values converts loosely typed Go values, as decoded from JSON or
// passed by callers (lookup keys, candidate rows, spine rows), to the
// types of Arrow columns. It is the one place those rules live.
package values

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Int64 returns v as an int64 when it is an integer of any Go type, a
// float (or json.Number) holding a whole number in range, or a time.Time
// (as epoch milliseconds, the engine's int64 event time).
func Int64(v any) (int64, bool) {
	switch x := v.(type) {
	case time.Time:
		return x.UnixMilli(), true
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Uint64 returns v as a uint64 when it is a non-negative integer of any
// Go type, a float (or json.Number) holding a whole number in range, or
// a time.Time at or after the epoch (as epoch milliseconds).
func Uint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint:
		return uint64(x), true
	case uint64:
		return x, true
	case float64:
		if x == math.Trunc(x) && x >= 0 && x < 1<<64 {
			return uint64(x), true
		}
		return 0, false
	case json.Number:
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n, true
		}
	}
	n, ok := Int64(v)
	return uint64(n), ok && n >= 0
}

// Float64 returns v as a float64 when it is a number of any Go type.
func Float64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case uint64:
		return float64(x), true
	case uint:
		return float64(x), true
	}
	n, ok := Int64(v)
	return float64(n), ok
}

// Time returns v as a time: a time.Time, an RFC 3339 string, or an integer
// of epoch milliseconds.
func Time(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q is not RFC 3339", x)
		}
		return t, nil
	}
	ms, ok := Int64(v)
	if !ok {
		return time.Time{}, fmt.Errorf("value %v (%T) is not a time (RFC 3339 or epoch milliseconds)", v, v)
	}
	return time.UnixMilli(ms), nil
}

// Units converts t to a count of unit since the Unix epoch.
func Units(t time.Time, u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return t.Unix()
	case arrow.Millisecond:
		return t.UnixMilli()
	case arrow.Microsecond:
		return t.UnixMicro()
	}
	return t.UnixNano()
}

// Coerce converts v to the Go value of a column of type dt: int64 for
// signed integers, uint64 for unsigned ones, float64 for floats, string,
// bool, time.Time for timestamps and (UTC midnight) for dates, []byte for
// binary. nil stays nil (NULL). An integer out
// of the column type's range is an error; every error names the value
// and the type.
func Coerce(v any, dt arrow.DataType) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func(want string) error {
		return fmt.Errorf("value %v (%T) is not %s, as column type %s needs", v, v, want, dt)
	}
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		n, ok := Int64(v)
		if !ok {
			if u, isUint := Uint64(v); isUint {
				return nil, fmt.Errorf("value %d does not fit the column's type %s", u, dt)
			}
			return nil, bad("an integer")
		}
		if !IntFits(n, dt.ID()) {
			return nil, fmt.Errorf("value %d does not fit the column's type %s", n, dt)
		}
		return n, nil
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		u, ok := Uint64(v)
		if !ok {
			if n, isInt := Int64(v); isInt {
				return nil, fmt.Errorf("value %d does not fit the column's type %s", n, dt)
			}
			return nil, bad("an integer")
		}
		if !UintFits(u, dt.ID()) {
			return nil, fmt.Errorf("value %d does not fit the column's type %s", u, dt)
		}
		return u, nil
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		f, ok := Float64(v)
		if !ok {
			return nil, bad("a number")
		}
		return f, nil
	case arrow.STRING, arrow.LARGE_STRING:
		if _, ok := v.(string); !ok {
			return nil, bad("a string")
		}
		return v, nil
	case arrow.BOOL:
		if _, ok := v.(bool); !ok {
			return nil, bad("a boolean")
		}
		return v, nil
	case arrow.TIMESTAMP:
		t, err := Time(v)
		if err != nil {
			return nil, err
		}
		return t, nil
	case arrow.DATE32, arrow.DATE64:
		d, err := Days(v)
		if err != nil {
			return nil, err
		}
		return time.UnixMilli(d * MillisPerDay).UTC(), nil
	case arrow.BINARY:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
		return nil, bad("bytes (a []byte, or a string of them)")
	}
	return v, nil
}

// MillisPerDay is the length of a day of a date column, in milliseconds.
const MillisPerDay = 86_400_000

// Days returns the day, counted from 1970-01-01, of a date value: a
// "2006-01-02" string, or a time (Time: a time.Time, an RFC 3339 string,
// epoch milliseconds), whose UTC date it is.
func Days(v any) (int64, error) {
	if s, ok := v.(string); ok {
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return d.Unix() / 86400, nil
		}
	}
	tm, err := Time(v)
	if err != nil {
		return 0, fmt.Errorf("%w, nor a date (2006-01-02)", err)
	}
	ms := tm.UnixMilli()
	days := ms / MillisPerDay
	if ms%MillisPerDay < 0 {
		days--
	}
	return days, nil
}

// IntFits reports whether n is in the range of the signed integer type
// id (any other type: true).
func IntFits(n int64, id arrow.Type) bool {
	switch id {
	case arrow.INT8:
		return n >= math.MinInt8 && n <= math.MaxInt8
	case arrow.INT16:
		return n >= math.MinInt16 && n <= math.MaxInt16
	case arrow.INT32:
		return n >= math.MinInt32 && n <= math.MaxInt32
	}
	return true
}

// UintFits reports whether u is in the range of the unsigned integer type
// id (any other type: true).
func UintFits(u uint64, id arrow.Type) bool {
	switch id {
	case arrow.UINT8:
		return u <= math.MaxUint8
	case arrow.UINT16:
		return u <= math.MaxUint16
	case arrow.UINT32:
		return u <= math.MaxUint32
	}
	return true
}

// Append appends v, coerced to the builder's type, to b (nil appends
// NULL). Timestamps given as integers are epoch milliseconds.
func Append(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	cv, err := Coerce(v, b.Type())
	if err != nil {
		return err
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(cv.(int64))
	case *array.Int32Builder:
		b.Append(int32(cv.(int64))) // Coerce checked the range
	case *array.Int16Builder:
		b.Append(int16(cv.(int64))) // Coerce checked the range
	case *array.Int8Builder:
		b.Append(int8(cv.(int64))) // Coerce checked the range
	case *array.Uint64Builder:
		b.Append(cv.(uint64))
	case *array.Uint32Builder:
		b.Append(uint32(cv.(uint64))) // Coerce checked the range
	case *array.Uint16Builder:
		b.Append(uint16(cv.(uint64))) // Coerce checked the range
	case *array.Uint8Builder:
		b.Append(uint8(cv.(uint64))) // Coerce checked the range
	case *array.Float64Builder:
		b.Append(cv.(float64))
	case *array.Float32Builder:
		b.Append(float32(cv.(float64)))
	case *array.StringBuilder:
		b.Append(cv.(string))
	case *array.LargeStringBuilder:
		b.Append(cv.(string))
	case *array.BooleanBuilder:
		b.Append(cv.(bool))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(Units(cv.(time.Time), b.Type().(*arrow.TimestampType).Unit)))
	default:
		return fmt.Errorf("values of type %s are not supported here", b.Type())
	}
	return nil
}
