package agg

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
)

// valueOps gathers what the value-typed aggregates (min, max, first_value,
// top ...) need to know about the Go type T that holds one value of a
// Column's Kind: how to read it from a Column, order it, append it to a
// result builder and encode it.
type valueOps[T any] struct {
	get  func(c *Column, i int) T
	less func(a, b T) bool
	put  func(b array.Builder, v T)
	enc  func(dst []byte, v T) []byte
	dec  func(d *decoder) T
}

var (
	intOps = &valueOps[int64]{
		get:  func(c *Column, i int) int64 { return c.I64[i] },
		less: func(a, b int64) bool { return a < b },
		put:  appendInt,
		enc:  binary.AppendVarint,
		dec:  (*decoder).varint,
	}
	// uintOps orders UINT64 columns, whose values are kept in Column.I64
	// bit for bit.
	uintOps = &valueOps[uint64]{
		get:  func(c *Column, i int) uint64 { return uint64(c.I64[i]) },
		less: func(a, b uint64) bool { return a < b },
		put:  func(b array.Builder, v uint64) { appendInt(b, int64(v)) },
		enc:  binary.AppendUvarint,
		dec:  (*decoder).uvarint,
	}
	floatOps = &valueOps[float64]{
		get:  func(c *Column, i int) float64 { return c.F64[i] },
		less: floatLess,
		put:  appendFloat,
		enc: func(dst []byte, v float64) []byte {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		},
		dec: (*decoder).float,
	}
	stringOps = &valueOps[string]{
		get:  func(c *Column, i int) string { return c.Str[i] },
		less: func(a, b string) bool { return a < b },
		put:  appendString,
		enc: func(dst []byte, v string) []byte {
			return append(binary.AppendUvarint(dst, uint64(len(v))), v...)
		},
		dec: func(d *decoder) string { return string(d.bytes()) },
	}
	boolOps = &valueOps[bool]{
		get:  func(c *Column, i int) bool { return c.Bool[i] },
		less: func(a, b bool) bool { return !a && b },
		put:  appendBool,
		enc: func(dst []byte, v bool) []byte {
			if v {
				return append(dst, 1)
			}
			return append(dst, 0)
		},
		dec: func(d *decoder) bool {
			switch d.byte() {
			case 0:
				return false
			case 1:
				return true
			}
			d.err = errCorrupt
			return false
		},
	}
)

// floatLess orders floats as SQL engines do: NaN is larger than every
// other value (and equal to itself).
func floatLess(a, b float64) bool {
	if a != a {
		return false
	}
	if b != b {
		return true
	}
	return a < b
}

// isUnsigned64 reports whether dt is uint64, whose order differs from the
// int64 it is stored as.
func isUnsigned64(dt arrow.DataType) bool { return dt != nil && dt.ID() == arrow.UINT64 }

// AppendValue appends value i of c (possibly NULL) to b, a builder of
// c.Type. It is the one place that maps a Column's storage back to Arrow
// builders; a builder of another type gets a NULL.
func AppendValue(b array.Builder, c *Column, i int) {
	if c.Null[i] {
		b.AppendNull()
		return
	}
	switch c.Kind {
	case KindInt64:
		appendInt(b, c.I64[i])
	case KindFloat64:
		appendFloat(b, c.F64[i])
	case KindString:
		appendString(b, c.Str[i])
	case KindBool:
		appendBool(b, c.Bool[i])
	default:
		b.AppendNull()
	}
}

// appendInt appends v to an integer-like builder (integers of any width,
// timestamps, dates, durations), converting to the builder's width.
func appendInt(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v)
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Uint64Builder:
		b.Append(uint64(v))
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint8Builder:
		b.Append(uint8(v))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v))
	case *array.Date64Builder:
		b.Append(arrow.Date64(v))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(v))
	case *array.Float64Builder:
		b.Append(float64(v))
	default:
		b.AppendNull()
	}
}

// appendFloat appends v to a float builder of any width.
func appendFloat(b array.Builder, v float64) {
	switch b := b.(type) {
	case *array.Float64Builder:
		b.Append(v)
	case *array.Float32Builder:
		b.Append(float32(v))
	case *array.Float16Builder:
		b.Append(float16.New(float32(v)))
	default:
		b.AppendNull()
	}
}

// appendString appends v to a string builder of any layout.
func appendString(b array.Builder, v string) {
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v)
	case *array.LargeStringBuilder:
		b.Append(v)
	case *array.StringViewBuilder:
		b.Append(v)
	default:
		b.AppendNull()
	}
}

// appendBool appends v to a boolean builder.
func appendBool(b array.Builder, v bool) {
	if bb, ok := b.(*array.BooleanBuilder); ok {
		bb.Append(v)
		return
	}
	b.AppendNull()
}

// Compute appends to b the aggregate of f over the given rows of r
// (absolute row numbers), using a fresh state: it serves request-time
// lookups that aggregate rows outside any sliding window. Rows are
// aggregated in ascending order (order-sensitive aggregates such as
// first_value see them in (ts, arrival) order); rows that r does not hold
// are ignored.
func Compute(f Func, r *Rows, rows []int64, b array.Builder) {
	s := f.NewState()
	if !slices.IsSorted(rows) {
		rows = slices.Sorted(slices.Values(rows))
	}
	base, end := r.Base, r.End()
	for _, a := range rows {
		if a >= base && a < end {
			s.Add(r, a)
		}
	}
	s.AppendResult(b)
}

// byte reads one byte.
func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errCorrupt
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a non-negative element count that cannot exceed the bytes
// left (each element takes at least minSize bytes), so a corrupt count
// never causes a huge allocation.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(len(d.b)/minSize) {
		d.err = errCorrupt
		return 0
	}
	return int(n)
}

// nonNeg reads a varint that must be >= 0.
func (d *decoder) nonNeg() int64 {
	v := d.varint()
	if v < 0 && d.err == nil {
		d.err = errCorrupt
	}
	return v
}

// valueArg checks that a is a column or expression of a type the engine
// keeps in window state, and returns its kind.
func valueArg(d *Def, a Arg) (Kind, error) {
	if a.Star || a.IsConst || a.Type == nil {
		return 0, sigError(d, "the argument must be a column or expression")
	}
	k, err := KindOf(a.Type)
	if err != nil {
		return 0, sigError(d, "got argument of type %s", a.Type)
	}
	return k, nil
}
