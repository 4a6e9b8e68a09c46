package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/textrow"
)

// inferSchema derives a schema from sampled message values: the keys in
// the order first seen, typed by the JSON-lines inference rules. Values
// that are not JSON objects are skipped.
func inferSchema(values [][]byte) *arrow.Schema {
	var in textrow.Inference
	for _, v := range values {
		if json.Valid(v) {
			in.Object(string(v))
		}
	}
	return in.Schema()
}

// decoder turns message values into rows of a record builder.
type decoder struct {
	schema  *arrow.Schema     // output schema
	cols    []*textrow.Column // one per output column
	fields  *textrow.Decoder  // fills the columns read from the JSON fields
	timeCol int               // output column holding event time
	msgTime bool              // timeCol is filled from the message timestamp
	avro    *avroValues       // decodes Avro values; nil: JSON
	nfields int               // the columns read from the values' fields
}

// newDecoder builds the decoder for the JSON fields of fields; when
// timeColumn is not empty, a timestamp[ms] column of that name holding the
// message timestamp is appended. timeField names the JSON field that
// holds event time otherwise.
func newDecoder(fields *arrow.Schema, timeField, timeColumn string) (*decoder, error) {
	d := &decoder{timeCol: -1}
	index := make(map[string]int, fields.NumFields())
	out := make([]arrow.Field, 0, fields.NumFields()+1)
	for _, f := range fields.Fields() {
		if _, dup := index[f.Name]; dup {
			return nil, fmt.Errorf("schema: duplicate field %q", f.Name)
		}
		c, ok := textrow.NewColumn(f, nil)
		if !ok {
			return nil, fmt.Errorf("schema: column %q: type %s is not supported (use integers, floats, bool, string, large_string, timestamp or date32)", f.Name, f.Type)
		}
		index[f.Name] = len(d.cols)
		d.cols = append(d.cols, c)
		out = append(out, f)
	}
	d.fields = textrow.NewDecoder(d.cols)
	d.nfields = len(d.cols)
	switch {
	case timeField != "":
		i, ok := index[timeField]
		if !ok {
			return nil, fmt.Errorf("time field %q is not in the schema (or not in the sampled messages)", timeField)
		}
		if dt := d.cols[i].Type(); dt.ID() != arrow.TIMESTAMP && dt.ID() != arrow.INT64 {
			return nil, fmt.Errorf("time field %q is %s; it must be a timestamp (RFC 3339 strings) or int64 epoch milliseconds", timeField, dt)
		}
		d.timeCol = i
	default:
		if _, dup := index[timeColumn]; dup {
			return nil, fmt.Errorf("the message fields already have a %q field: set TimeColumn to another name, or TimeField to use that field as event time", timeColumn)
		}
		f := arrow.Field{Name: timeColumn, Type: arrow.FixedWidthTypes.Timestamp_ms}
		c, _ := textrow.NewColumn(f, nil)
		d.timeCol = len(d.cols)
		d.msgTime = true
		d.cols = append(d.cols, c)
		out = append(out, f)
	}
	d.schema = arrow.NewSchema(out, nil)
	return d, nil
}

// bind attaches the decoder's columns to the builders of b, which must
// have been made for d.schema.
func (d *decoder) bind(b *array.RecordBuilder) {
	for i, c := range d.cols {
		c.Bind(b.Field(i))
	}
}

var (
	errTombstone   = errors.New("message has no value (a tombstone)")
	errInvalidUTF8 = errors.New("invalid UTF-8")
)

// decode appends the row held in value (with message timestamp ts) to the
// bound builders, or returns the reason it cannot, leaving them untouched.
func (d *decoder) decode(value []byte, ts time.Time) error {
	if d.avro != nil {
		if err := d.decodeAvro(value); err != nil {
			return err
		}
		return d.finish(ts)
	}
	switch {
	case value == nil:
		return errTombstone
	case !json.Valid(value):
		return textrow.ErrInvalidJSON
	case !utf8.Valid(value):
		// encoding/json accepts invalid UTF-8 in strings; an Arrow string
		// column must not hold it.
		return errInvalidUTF8
	}
	if err := d.fields.Decode(string(value)); err != nil {
		return fieldError(err)
	}
	return d.finish(ts)
}

// fieldError words a value a column cannot take as a message's dead-letter
// reason (a field, not a CSV column), with why it cannot when the value
// has the type's form (out of range, not UTF-8).
func fieldError(err error) error {
	ve, ok := errors.AsType[*textrow.ValueError](err)
	if !ok {
		return err
	}
	if ve.Why != "" {
		return fmt.Errorf("field %q: cannot decode %q as %s: %s", ve.Column, ve.Value, ve.Type, ve.Why)
	}
	return fmt.Errorf("field %q: cannot decode %q as %s", ve.Column, ve.Value, ve.Type)
}

// decodeAvro makes the fields of the Avro record in value the pending
// values of the columns, by name.
func (d *decoder) decodeAvro(value []byte) error {
	if value == nil {
		return errTombstone
	}
	m, err := d.avro.decode(value)
	if err != nil {
		return err
	}
	for _, c := range d.cols[:d.nfields] {
		if err := setAvro(c, m[c.Name()]); err != nil {
			return fieldError(err)
		}
	}
	return nil
}

// finish sets the event time of the decoded row and appends it.
func (d *decoder) finish(ts time.Time) error {
	tc := d.cols[d.timeCol]
	if d.msgTime {
		if ts.IsZero() {
			return errors.New("message has no timestamp")
		}
		tc.SetTime(ts)
	} else if tc.IsNull() {
		return fmt.Errorf("event-time field %q is missing or null", tc.Name())
	}
	for _, c := range d.cols {
		c.Append()
	}
	return nil
}
