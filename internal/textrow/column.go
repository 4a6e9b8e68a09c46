package textrow

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/values"
)

// ValueError reports a value that does not parse as its column's type.
// Its fields let a source word the dead-letter reason in its own terms;
// Error gives the wording of the file sources.
type ValueError struct {
	Column string         // the column (or field) name
	Value  string         // the offending text, cut to 64 bytes and "..."
	Type   arrow.DataType // the column's type
	// Why says what is wrong with a value that has the type's form, ""
	// when it does not have it: a time out of the range of the column's
	// unit, a string that is not valid UTF-8.
	Why string
}

func (e *ValueError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("column %q: cannot parse %q as %s: %s", e.Column, e.Value, e.Type, e.Why)
	}
	return fmt.Sprintf("column %q: cannot parse %q as %s", e.Column, e.Value, e.Type)
}

// The range of a timestamp[ns] column: int64 nanoseconds since the epoch.
var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// whyNanoRange is the reason of a time a timestamp[ns] column cannot hold.
const whyNanoRange = "out of the range of nanoseconds since 1970 (1677-09-21T00:12:43Z to 2262-04-11T23:47:16Z)"

// whyUTF8 is the reason of a string column's value that is not UTF-8.
const whyUTF8 = "not valid UTF-8"

// Column parses the raw values of one schema field into a pending value
// and appends the pending value to the field's builder on Append. Parsing
// a whole row first and appending only when every field parsed keeps the
// builders consistent when a row turns out to be a dead letter.
//
// Parse rules, whatever the kind of the value unless said otherwise:
// integers and floats parse the text with strconv at the column's width
// (a JSON string holding a number is accepted, true/false and nested
// values are not); bool accepts true and false in any case; string takes
// the text as is, if it is valid UTF-8 (an Arrow string must be); a
// timestamp is an integer in the column's unit or a date-time ParseTime
// reads, which a timestamp[ns] column holds only from 1677 to 2262; a
// date32 is 2006-01-02. JSON null, untyped empty
// text, and an empty string in a column that is not a string are NULL.
type Column struct {
	name string
	dt   arrow.DataType
	id   arrow.Type
	bits int
	unit arrow.TimeUnit
	b    array.Builder

	// The pending value: one of the fields below, by id.
	null bool
	i    int64
	u    uint64
	f    float64
	bv   bool
	s    string
}

// NewColumn returns the column for field f, appending to b (which may be
// nil until Bind). ok is false when f's type is not one a Column parses:
// signed and unsigned integers, float32, float64, bool, string,
// large_string, timestamp (any unit) and date32.
func NewColumn(f arrow.Field, b array.Builder) (c *Column, ok bool) {
	c = &Column{name: f.Name, dt: f.Type, id: f.Type.ID(), b: b}
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
		return nil, false
	}
	return c, true
}

// Name returns the field name.
func (c *Column) Name() string { return c.name }

// Type returns the field type.
func (c *Column) Type() arrow.DataType { return c.dt }

// Bind makes Append append to b, a builder of the column's type.
func (c *Column) Bind(b array.Builder) { c.b = b }

// SetNull makes the pending value NULL.
func (c *Column) SetNull() { c.null = true }

// IsNull reports whether the pending value is NULL.
func (c *Column) IsNull() bool { return c.null }

// SetTime makes t the pending value of a timestamp column, in the
// column's unit.
func (c *Column) SetTime(t time.Time) {
	c.null, c.i = false, values.Units(t, c.unit)
}

// Parse parses s, a value of kind k, into the pending value. It returns a
// *ValueError when s does not parse as the column's type.
func (c *Column) Parse(k Kind, s string) error {
	c.null = false
	if k == Null || (s == "" && (k == Text || c.id != arrow.STRING && c.id != arrow.LARGE_STRING)) {
		c.null = true
		return nil
	}
	var err error
	switch c.id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		if k == Bool || k == Nested {
			return c.fail(s)
		}
		c.i, err = strconv.ParseInt(s, 10, c.bits)
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		if k == Bool || k == Nested {
			return c.fail(s)
		}
		c.u, err = strconv.ParseUint(s, 10, c.bits)
	case arrow.FLOAT32, arrow.FLOAT64:
		if k == Bool || k == Nested {
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
		if !utf8.ValidString(s) {
			return c.failWhy(s, whyUTF8)
		}
		c.s = s
	case arrow.TIMESTAMP:
		if isInteger(s) {
			c.i, err = strconv.ParseInt(s, 10, 64)
			break
		}
		var t time.Time
		if t, err = ParseTime(s); err == nil {
			if c.unit == arrow.Nanosecond && (t.Before(minNanoTime) || t.After(maxNanoTime)) {
				// UnixNano would wrap around to another time.
				return c.failWhy(s, whyNanoRange)
			}
			c.i = values.Units(t, c.unit)
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

func (c *Column) fail(s string) error { return c.failWhy(s, "") }

func (c *Column) failWhy(s, why string) error {
	return &ValueError{Column: c.name, Value: cut(s, 64), Type: c.dt, Why: why}
}

// cut returns s cut to at most n bytes followed by "...", when it is
// longer, without splitting a UTF-8 character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && k > n-utf8.UTFMax && !utf8.RuneStart(s[k]) {
		k--
	}
	if k == 0 || !utf8.RuneStart(s[k]) {
		k = n // not UTF-8 there anyway
	}
	return s[:k] + "..."
}

// Append appends the pending value to the builder.
func (c *Column) Append() {
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

// Decoder parses JSON objects into a set of columns, by key.
type Decoder struct {
	cols  []*Column
	index map[string]int // key -> column; the last of equal names wins
	gen   []uint32       // per column: the row generation it was last set in
	row   uint32
}

// NewDecoder returns a decoder filling cols.
func NewDecoder(cols []*Column) *Decoder {
	d := &Decoder{cols: cols, index: make(map[string]int, len(cols)), gen: make([]uint32, len(cols))}
	for i, c := range cols {
		d.index[c.name] = i
	}
	return d
}

// Decode parses the JSON object s, which must be valid JSON, into the
// pending values of the columns: a member whose key names a column is
// parsed into it, other members are ignored, and a column without a
// member is NULL. It returns ErrNotObject, or the first *ValueError, in
// which case the pending values are partly set and must not be appended.
func (d *Decoder) Decode(s string) error {
	d.row++
	if d.row == 0 { // wrapped: clear the generations
		clear(d.gen)
		d.row = 1
	}
	err := ScanObject(s, func(key string, k Kind, v string) error {
		i, ok := d.index[key]
		if !ok {
			return nil
		}
		d.gen[i] = d.row
		return d.cols[i].Parse(k, v)
	})
	if err != nil {
		return err
	}
	for i, c := range d.cols {
		if d.gen[i] != d.row {
			c.null = true
		}
	}
	return nil
}
