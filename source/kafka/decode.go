package kafka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// member is one key/value pair of a JSON object, in document order.
type member struct {
	key string
	raw json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// scanObject splits the JSON object in value into its members, in
// document order. It reports invalid JSON and values that are not objects.
func scanObject(value []byte, dst []member) ([]member, error) {
	if !json.Valid(value) {
		return dst, errors.New("invalid JSON")
	}
	trimmed := bytes.TrimLeft(value, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return dst, errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil { // '{'
		return dst, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return dst, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return dst, err
		}
		dst = append(dst, member{key: key, raw: raw})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return dst, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return dst, errors.New("trailing data after the JSON object")
	}
	return dst, nil
}

// kind is the JSON type of a raw value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindNested // object or array
)

// classifyRaw returns the kind of raw and its scalar text: the unquoted
// string, the number literal, "true"/"false", or the raw JSON text of an
// object or array.
func classifyRaw(raw json.RawMessage) (kind, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return kindNull, "", nil
	}
	switch raw[0] {
	case 'n':
		return kindNull, "", nil
	case 't':
		return kindBool, "true", nil
	case 'f':
		return kindBool, "false", nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return kindNull, "", err
		}
		return kindString, s, nil
	case '{', '[':
		return kindNested, string(raw), nil
	}
	return kindNumber, string(raw), nil
}

// inferred is the type that a field's sampled values suggest so far; the
// rules are those of the JSON-lines source.
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

func classify(k kind, s string) inferred {
	switch k {
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
	return inferUnknown
}

// inferSchema derives a schema from sampled message values: the keys in
// the order first seen, typed by the JSON-lines inference rules. Values
// that are not JSON objects are skipped.
func inferSchema(values [][]byte) *arrow.Schema {
	var (
		names []string
		types []inferred
		slot  = map[string]int{}
		mem   []member
	)
	for _, v := range values {
		var err error
		if mem, err = scanObject(v, mem[:0]); err != nil {
			continue
		}
		for _, m := range mem {
			i, ok := slot[m.key]
			if !ok {
				i = len(names)
				slot[m.key] = i
				names = append(names, m.key)
				types = append(types, inferUnknown)
			}
			k, s, err := classifyRaw(m.raw)
			if err != nil {
				continue
			}
			types[i] = types[i].merge(classify(k, s))
		}
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: types[i].dataType(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// column decodes the raw JSON values of one schema field into a pending
// value, appended only once every field of the row decoded, so that a
// dead-lettered row leaves the builders untouched.
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

func newColumn(f arrow.Field) (*column, error) {
	c := &column{name: f.Name, dt: f.Type, id: f.Type.ID()}
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
		return nil, fmt.Errorf("column %q: type %s is not supported (use integers, floats, bool, string, large_string, timestamp or date32)", f.Name, f.Type)
	}
	return c, nil
}

// parse decodes one raw JSON value into the pending value. A JSON null,
// and an empty string for a non-string column, are NULL.
func (c *column) parse(raw json.RawMessage) error {
	k, s, err := classifyRaw(raw)
	if err != nil {
		return c.fail(string(raw))
	}
	c.null = false
	if k == kindNull || (s == "" && c.id != arrow.STRING && c.id != arrow.LARGE_STRING) {
		c.null = true
		return nil
	}
	numeric := k == kindNumber || k == kindString
	switch c.id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		if !numeric {
			return c.fail(s)
		}
		c.i, err = strconv.ParseInt(s, 10, c.bits)
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		if !numeric {
			return c.fail(s)
		}
		c.u, err = strconv.ParseUint(s, 10, c.bits)
	case arrow.FLOAT32, arrow.FLOAT64:
		if !numeric {
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
		if k == kindNumber && isInteger(s) {
			c.i, err = strconv.ParseInt(s, 10, 64)
			break
		}
		if k != kindString {
			return c.fail(s)
		}
		var t time.Time
		if t, err = time.Parse(time.RFC3339Nano, s); err == nil {
			c.i = toUnit(t, c.unit)
		}
	case arrow.DATE32:
		if k != kindString {
			return c.fail(s)
		}
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
	return fmt.Errorf("field %q: cannot decode %q as %s", c.name, s, c.dt)
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

// looksTimestamp reports whether s is an RFC 3339 date-time.
func looksTimestamp(s string) bool {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// decoder turns message values into rows of a record builder.
type decoder struct {
	schema  *arrow.Schema // output schema
	cols    []*column     // one per output column
	index   map[string]int
	timeCol int  // output column holding event time
	msgTime bool // timeCol is filled from the message timestamp
	gen     []uint32
	row     uint32
	mem     []member
}

// newDecoder builds the decoder for the JSON fields of fields; when
// timeColumn is not empty, a timestamp[ms] column of that name holding the
// message timestamp is appended. timeField names the JSON field that
// holds event time otherwise.
func newDecoder(fields *arrow.Schema, timeField, timeColumn string) (*decoder, error) {
	d := &decoder{index: make(map[string]int, fields.NumFields()), timeCol: -1}
	out := make([]arrow.Field, 0, fields.NumFields()+1)
	for _, f := range fields.Fields() {
		if _, dup := d.index[f.Name]; dup {
			return nil, fmt.Errorf("schema: duplicate field %q", f.Name)
		}
		c, err := newColumn(f)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		d.index[f.Name] = len(d.cols)
		d.cols = append(d.cols, c)
		out = append(out, f)
	}
	switch {
	case timeField != "":
		i, ok := d.index[timeField]
		if !ok {
			return nil, fmt.Errorf("time field %q is not in the schema (or not in the sampled messages)", timeField)
		}
		if id := d.cols[i].id; id != arrow.TIMESTAMP && id != arrow.INT64 {
			return nil, fmt.Errorf("time field %q is %s; it must be a timestamp (RFC 3339 strings) or int64 epoch milliseconds", timeField, d.cols[i].dt)
		}
		d.timeCol = i
	default:
		if _, dup := d.index[timeColumn]; dup {
			return nil, fmt.Errorf("the message fields already have a %q field: set TimeColumn to another name, or TimeField to use that field as event time", timeColumn)
		}
		f := arrow.Field{Name: timeColumn, Type: arrow.FixedWidthTypes.Timestamp_ms}
		d.timeCol = len(d.cols)
		d.msgTime = true
		d.cols = append(d.cols, &column{name: timeColumn, dt: f.Type, id: arrow.TIMESTAMP, unit: arrow.Millisecond})
		out = append(out, f)
	}
	d.schema = arrow.NewSchema(out, nil)
	d.gen = make([]uint32, len(d.cols))
	return d, nil
}

// bind attaches the decoder's columns to the builders of b, which must
// have been made for d.schema.
func (d *decoder) bind(b *array.RecordBuilder) {
	for i, c := range d.cols {
		c.b = b.Field(i)
	}
}

// decode appends the row held in value (with message timestamp ts) to the
// bound builders, or returns the reason it cannot, leaving them untouched.
func (d *decoder) decode(value []byte, ts time.Time) (err error) {
	if d.mem, err = scanObject(value, d.mem[:0]); err != nil {
		return err
	}
	d.row++
	if d.row == 0 { // wrapped: clear the generations
		clear(d.gen)
		d.row = 1
	}
	for _, m := range d.mem {
		i, ok := d.index[m.key]
		if !ok {
			continue
		}
		d.gen[i] = d.row
		if err := d.cols[i].parse(m.raw); err != nil {
			return err
		}
	}
	for i, c := range d.cols {
		if d.gen[i] != d.row {
			c.null = true
		}
	}
	tc := d.cols[d.timeCol]
	if d.msgTime {
		if ts.IsZero() {
			return errors.New("message has no timestamp")
		}
		tc.null, tc.i = false, ts.UnixMilli()
	} else if tc.null {
		return fmt.Errorf("event-time field %q is missing or null", tc.name)
	}
	for _, c := range d.cols {
		c.append()
	}
	return nil
}
