package source

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// valueKind says what a raw value was in its input: untyped CSV text, or
// one of the JSON value types.
type valueKind uint8

const (
	kindText   valueKind = iota // CSV field: "" is NULL
	kindString                  // JSON string (unescaped)
	kindNumber                  // JSON number (its literal text)
	kindBool                    // JSON true/false ("true"/"false")
	kindNull                    // JSON null or a missing key
	kindNested                  // JSON object or array (its raw text)
)

// column decodes raw values of one schema field into a pending value and
// appends the pending value to the field's builder. Decoding a whole row
// first and appending only when every field decoded keeps the builders
// consistent when a row turns out to be a dead letter.
type column struct {
	name string
	dt   arrow.DataType
	id   arrow.Type
	bits int
	unit arrow.TimeUnit
	b    array.Builder

	null bool
	i    int64
	u    uint64
	f    float64
	bv   bool
	s    string
}

func newColumn(f arrow.Field, b array.Builder) (*column, error) {
	c := &column{name: f.Name, dt: f.Type, id: f.Type.ID(), b: b}
	switch c.id {
	case arrow.INT8, arrow.UINT8:
		c.bits = 8
	case arrow.INT16, arrow.UINT16:
		c.bits = 16
	case arrow.INT32, arrow.UINT32, arrow.FLOAT32:
		c.bits = 32
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64:
		c.bits = 64
	case arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.DATE32:
	case arrow.TIMESTAMP:
		c.unit = f.Type.(*arrow.TimestampType).Unit
	default:
		return nil, fmt.Errorf("source: column %q: type %s is not supported by text sources", f.Name, f.Type)
	}
	return c, nil
}

// setNull makes the pending value NULL.
func (c *column) setNull() { c.null = true }

// parse decodes s of kind k into the pending value.
func (c *column) parse(k valueKind, s string) error {
	c.null = false
	if k == kindNull || (s == "" && (k == kindText || c.id != arrow.STRING && c.id != arrow.LARGE_STRING)) {
		c.null = true
		return nil
	}
	var err error
	switch c.id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		if k == kindBool || k == kindNested {
			return c.fail(s)
		}
		c.i, err = strconv.ParseInt(s, 10, c.bits)
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		if k == kindBool || k == kindNested {
			return c.fail(s)
		}
		c.u, err = strconv.ParseUint(s, 10, c.bits)
	case arrow.FLOAT32, arrow.FLOAT64:
		if k == kindBool || k == kindNested {
			return c.fail(s)
		}
		c.f, err = strconv.ParseFloat(s, c.bits)
	case arrow.BOOL:
		switch {
		case strings.EqualFold(s, "true"):
			c.bv = true
		case strings.EqualFold(s, "false"):
			c.bv = false
		default:
			return c.fail(s)
		}
	case arrow.STRING, arrow.LARGE_STRING:
		c.s = s
	case arrow.TIMESTAMP:
		if isInteger(s) {
			c.i, err = strconv.ParseInt(s, 10, 64)
			break
		}
		var t time.Time
		if t, err = time.Parse(time.RFC3339Nano, s); err == nil {
			c.i = toUnit(t, c.unit)
		}
	case arrow.DATE32:
		var t time.Time
		if t, err = time.Parse(time.DateOnly, s); err == nil {
			c.i = int64(arrow.Date32FromTime(t))
		}
	}
	if err != nil {
		return c.fail(s)
	}
	return nil
}

func (c *column) fail(s string) error {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Errorf("column %q: cannot parse %q as %s", c.name, s, c.dt)
}

func toUnit(t time.Time, u arrow.TimeUnit) int64 {
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

// append appends the pending value to the builder.
func (c *column) append() {
	if c.null {
		c.b.AppendNull()
		return
	}
	switch b := c.b.(type) {
	case *array.Int64Builder:
		b.Append(c.i)
	case *array.Int32Builder:
		b.Append(int32(c.i))
	case *array.Int16Builder:
		b.Append(int16(c.i))
	case *array.Int8Builder:
		b.Append(int8(c.i))
	case *array.Uint64Builder:
		b.Append(c.u)
	case *array.Uint32Builder:
		b.Append(uint32(c.u))
	case *array.Uint16Builder:
		b.Append(uint16(c.u))
	case *array.Uint8Builder:
		b.Append(uint8(c.u))
	case *array.Float64Builder:
		b.Append(c.f)
	case *array.Float32Builder:
		b.Append(float32(c.f))
	case *array.BooleanBuilder:
		b.Append(c.bv)
	case *array.StringBuilder:
		b.Append(c.s)
	case *array.LargeStringBuilder:
		b.Append(c.s)
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(c.i))
	case *array.Date32Builder:
		b.Append(arrow.Date32(c.i))
	}
}

// inferred is the type a column's sampled values suggest so far.
type inferred uint8

const (
	inferUnknown inferred = iota // only NULLs seen
	inferInt
	inferFloat
	inferBool
	inferTimestamp
	inferString
)

// merge widens a by b: int and float make float; any other mix of known
// types makes string.
func (a inferred) merge(b inferred) inferred {
	switch {
	case a == inferUnknown:
		return b
	case b == inferUnknown || a == b:
		return a
	case (a == inferInt && b == inferFloat) || (a == inferFloat && b == inferInt):
		return inferFloat
	}
	return inferString
}

func (a inferred) dataType() arrow.DataType {
	switch a {
	case inferInt:
		return arrow.PrimitiveTypes.Int64
	case inferFloat:
		return arrow.PrimitiveTypes.Float64
	case inferBool:
		return arrow.FixedWidthTypes.Boolean
	case inferTimestamp:
		return arrow.FixedWidthTypes.Timestamp_ms
	}
	return arrow.BinaryTypes.String
}

// classify infers the type of one raw value.
func classify(k valueKind, s string) inferred {
	switch k {
	case kindNull:
		return inferUnknown
	case kindBool:
		return inferBool
	case kindNested:
		return inferString
	case kindNumber:
		if isInteger(s) {
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return inferInt
			}
		}
		return inferFloat
	case kindString:
		if s == "" {
			return inferUnknown
		}
		if looksTimestamp(s) {
			return inferTimestamp
		}
		return inferString
	}
	// CSV text.
	switch {
	case s == "":
		return inferUnknown
	case isInteger(s):
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return inferInt
		}
		return inferFloat // too large for int64
	case isDecimal(s):
		return inferFloat
	case strings.EqualFold(s, "true") || strings.EqualFold(s, "false"):
		return inferBool
	case looksTimestamp(s):
		return inferTimestamp
	}
	return inferString
}

// isInteger reports whether s is an optional sign followed by digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDecimal reports whether s is a decimal number in the usual notation:
// [sign] digits [. digits] [e [sign] digits], with digits on at least one
// side of the point. Words such as NaN or Inf are not numbers here.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// looksTimestamp reports whether s is an RFC 3339 date-time.
func looksTimestamp(s string) bool {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
