package agg

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Kind is the storage class of a Column.
type Kind uint8

const (
	// KindInt64 stores integers, and timestamps in their own unit.
	KindInt64 Kind = iota + 1
	// KindFloat64 stores floating point numbers.
	KindFloat64
	// KindString stores strings.
	KindString
	// KindBool stores booleans.
	KindBool
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindInt64:
		return "int64"
	case KindFloat64:
		return "float64"
	case KindString:
		return "string"
	case KindBool:
		return "bool"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// KindOf returns the storage kind for an Arrow type, or an error for a type
// the engine does not keep in window state.
func KindOf(dt arrow.DataType) (Kind, error) {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return KindInt64, nil
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return KindFloat64, nil
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return KindString, nil
	case arrow.BOOL:
		return KindBool, nil
	}
	return 0, fmt.Errorf("unsupported column type %s", dt)
}

// Column is an owned, typed, growable vector of values of one Arrow type:
// the form in which window state keeps the argument values of rows. Only
// the slice of its Kind is used. Null[i] marks NULL values.
type Column struct {
	// Type is the logical Arrow type of the values (results of min, max,
	// first_value ... have this type).
	Type arrow.DataType
	// Kind selects the slice that holds the values.
	Kind Kind
	I64  []int64
	F64  []float64
	Str  []string
	Bool []bool
	// Null[i] is true when value i is NULL.
	Null []bool
}

// NewColumn returns an empty column for values of type dt.
func NewColumn(dt arrow.DataType) (Column, error) {
	k, err := KindOf(dt)
	if err != nil {
		return Column{}, err
	}
	return Column{Type: dt, Kind: k}, nil
}

// Len is the number of values.
func (c *Column) Len() int { return len(c.Null) }

// IsNull reports whether value i is NULL.
func (c *Column) IsNull(i int) bool { return c.Null[i] }

// AppendArrow appends rows of arr (all rows when rows is nil). arr must be
// of the column's Type.
func (c *Column) AppendArrow(arr arrow.Array, rows []int32) {
	n := arr.Len()
	if rows != nil {
		n = len(rows)
	}
	at := func(j int) int {
		if rows == nil {
			return j
		}
		return int(rows[j])
	}
	start := len(c.Null)
	c.Null = growBool(c.Null, n)
	if arr.NullN() > 0 {
		for j := 0; j < n; j++ {
			c.Null[start+j] = arr.IsNull(at(j))
		}
	}
	switch c.Kind {
	case KindInt64:
		c.I64 = growI64(c.I64, n)
		dst := c.I64[start:]
		switch a := arr.(type) {
		case *array.Int64:
			v := a.Int64Values()
			if rows == nil {
				copy(dst, v)
			} else {
				for j, r := range rows {
					dst[j] = v[r]
				}
			}
		case *array.Timestamp:
			v := a.TimestampValues()
			for j := 0; j < n; j++ {
				dst[j] = int64(v[at(j)])
			}
		default:
			for j := 0; j < n; j++ {
				dst[j] = intAt(arr, at(j))
			}
		}
	case KindFloat64:
		c.F64 = growF64(c.F64, n)
		dst := c.F64[start:]
		switch a := arr.(type) {
		case *array.Float64:
			v := a.Float64Values()
			if rows == nil {
				copy(dst, v)
			} else {
				for j, r := range rows {
					dst[j] = v[r]
				}
			}
		case *array.Float32:
			for j := 0; j < n; j++ {
				dst[j] = float64(a.Value(at(j)))
			}
		case *array.Float16:
			for j := 0; j < n; j++ {
				dst[j] = float64(a.Value(at(j)).Float32())
			}
		}
	case KindString:
		c.Str = growStr(c.Str, n)
		dst := c.Str[start:]
		switch a := arr.(type) {
		case *array.String:
			for j := 0; j < n; j++ {
				if !c.Null[start+j] {
					dst[j] = a.Value(at(j))
				}
			}
		case *array.LargeString:
			for j := 0; j < n; j++ {
				if !c.Null[start+j] {
					dst[j] = a.Value(at(j))
				}
			}
		case *array.StringView:
			for j := 0; j < n; j++ {
				if !c.Null[start+j] {
					dst[j] = a.Value(at(j))
				}
			}
		}
	case KindBool:
		c.Bool = growBool(c.Bool, n)
		dst := c.Bool[start:]
		a := arr.(*array.Boolean)
		for j := 0; j < n; j++ {
			dst[j] = a.Value(at(j))
		}
	}
}

func intAt(arr arrow.Array, i int) int64 {
	switch a := arr.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint64:
		return int64(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Date64:
		return int64(a.Value(i))
	case *array.Duration:
		return int64(a.Value(i))
	}
	return 0
}

// AppendFrom appends value i of o, which has the same Kind.
func (c *Column) AppendFrom(o *Column, i int) {
	c.Null = append(c.Null, o.Null[i])
	switch c.Kind {
	case KindInt64:
		c.I64 = append(c.I64, o.I64[i])
	case KindFloat64:
		c.F64 = append(c.F64, o.F64[i])
	case KindString:
		c.Str = append(c.Str, o.Str[i])
	case KindBool:
		c.Bool = append(c.Bool, o.Bool[i])
	}
}

// AppendNull appends a NULL.
func (c *Column) AppendNull() {
	c.Null = append(c.Null, true)
	switch c.Kind {
	case KindInt64:
		c.I64 = append(c.I64, 0)
	case KindFloat64:
		c.F64 = append(c.F64, 0)
	case KindString:
		c.Str = append(c.Str, "")
	case KindBool:
		c.Bool = append(c.Bool, false)
	}
}

// Slice returns values [i, j) as a column sharing c's memory, with
// capacity capped so that appending to it copies rather than overwriting
// c's later values.
func (c *Column) Slice(i, j int) Column {
	out := Column{Type: c.Type, Kind: c.Kind, Null: c.Null[i:j:j]}
	switch c.Kind {
	case KindInt64:
		out.I64 = c.I64[i:j:j]
	case KindFloat64:
		out.F64 = c.F64[i:j:j]
	case KindString:
		out.Str = c.Str[i:j:j]
	case KindBool:
		out.Bool = c.Bool[i:j:j]
	}
	return out
}

// AppendRange appends values [i, j) of o, a column of the same Kind.
func (c *Column) AppendRange(o *Column, i, j int) {
	c.Null = append(c.Null, o.Null[i:j]...)
	switch c.Kind {
	case KindInt64:
		c.I64 = append(c.I64, o.I64[i:j]...)
	case KindFloat64:
		c.F64 = append(c.F64, o.F64[i:j]...)
	case KindString:
		c.Str = append(c.Str, o.Str[i:j]...)
	case KindBool:
		c.Bool = append(c.Bool, o.Bool[i:j]...)
	}
}

// DropFront removes the first n values, keeping capacity when that is
// cheap.
func (c *Column) DropFront(n int) {
	if n <= 0 {
		return
	}
	c.Null = DropFront(c.Null, n)
	switch c.Kind {
	case KindInt64:
		c.I64 = DropFront(c.I64, n)
	case KindFloat64:
		c.F64 = DropFront(c.F64, n)
	case KindString:
		clear(c.Str[:n]) // let the GC have the strings
		c.Str = DropFront(c.Str, n)
	case KindBool:
		c.Bool = DropFront(c.Bool, n)
	}
}

// Gather replaces the values from position from onwards with those at
// from+perm[k] (a permutation of 0..len-from-1): it is how pending rows are
// put in event-time order.
func (c *Column) Gather(from int, perm []int32) {
	c.Null = gather(c.Null, from, perm)
	switch c.Kind {
	case KindInt64:
		c.I64 = gather(c.I64, from, perm)
	case KindFloat64:
		c.F64 = gather(c.F64, from, perm)
	case KindString:
		c.Str = gather(c.Str, from, perm)
	case KindBool:
		c.Bool = gather(c.Bool, from, perm)
	}
}

// Float returns value i as float64 (numeric kinds only); a uint64 value,
// held bit for bit in I64, is read as unsigned.
func (c *Column) Float(i int) float64 {
	if c.Kind == KindFloat64 {
		return c.F64[i]
	}
	if _, ok := c.Type.(*arrow.Uint64Type); ok {
		return float64(uint64(c.I64[i]))
	}
	return float64(c.I64[i])
}

// Value returns value i as a Go value (int64, float64, string, bool, or nil
// for NULL). Meant for tests and slow paths.
func (c *Column) Value(i int) any {
	if c.Null[i] {
		return nil
	}
	switch c.Kind {
	case KindInt64:
		return c.I64[i]
	case KindFloat64:
		return c.F64[i]
	case KindString:
		return c.Str[i]
	case KindBool:
		return c.Bool[i]
	}
	return nil
}

func gather[T any](s []T, from int, perm []int32) []T {
	tail := make([]T, len(perm))
	for k, p := range perm {
		tail[k] = s[from+int(p)]
	}
	copy(s[from:], tail)
	return s
}

// DropFront removes the first n values of s. It moves the rest to the
// front of the array, keeping its capacity for later appends, when that is
// cheap (at most 64 values left, or no more than are dropped) or when the
// array would otherwise stay mostly unused; otherwise it reslices. A
// sliding window trimmed by a row or two at a time thus appends into the
// same array instead of reallocating each time the resliced capacity runs
// out (one allocation every few rows per column for small windows). With
// 16 values as the bound, features-4's 7-day window (about 23 rows a key
// at 10 M events) still reallocated every few rows: moving up to 64 values
// (a cache line or eight) costs less than the allocation, the copy and the
// garbage (CPU -5 to -9 % in three pairs of features-4 runs).
func DropFront[T any](s []T, n int) []T {
	if n >= len(s) {
		return s[:0]
	}
	rest := len(s) - n
	if n >= rest || rest <= 64 || cap(s) > 64 && cap(s) > 4*rest {
		m := copy(s, s[n:])
		return s[:m]
	}
	return s[n:]
}

func growI64(s []int64, n int) []int64     { return grow(s, n) }
func growF64(s []float64, n int) []float64 { return grow(s, n) }
func growStr(s []string, n int) []string   { return grow(s, n) }
func growBool(s []bool, n int) []bool      { return grow(s, n) }

func grow[T any](s []T, n int) []T {
	l := len(s)
	if l+n <= cap(s) {
		s = s[:l+n]
		var zero T
		for i := l; i < l+n; i++ {
			s[i] = zero
		}
		return s
	}
	ns := make([]T, l+n, max(2*cap(s), l+n, 8))
	copy(ns, s)
	return ns
}

// canonFloat maps -0 to 0 and every NaN to one NaN, so that equal values
// (as SQL sees them) hash equally.
func canonFloat(f float64) uint64 {
	if f == 0 {
		return 0
	}
	if f != f {
		return math.Float64bits(math.NaN())
	}
	return math.Float64bits(f)
}
