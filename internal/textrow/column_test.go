package textrow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestNewColumnTypes(t *testing.T) {
	for _, dt := range []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float32,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		arrow.FixedWidthTypes.Date32, &arrow.TimestampType{Unit: arrow.Nanosecond},
	} {
		if c, ok := NewColumn(arrow.Field{Name: "x", Type: dt}, nil); !ok || c.Name() != "x" || !arrow.TypeEqual(c.Type(), dt) {
			t.Errorf("%s: not supported", dt)
		}
	}
	for _, dt := range []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Date64} {
		if _, ok := NewColumn(arrow.Field{Name: "x", Type: dt}, nil); ok {
			t.Errorf("%s: supported", dt)
		}
	}
}

// parseOne parses s of kind k into a fresh column of type dt and returns
// the value appended, nil for NULL, or the error.
func parseOne(t *testing.T, dt arrow.DataType, k Kind, s string) (any, error) {
	t.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	c, ok := NewColumn(arrow.Field{Name: "x", Type: dt}, b)
	if !ok {
		t.Fatalf("%s not supported", dt)
	}
	if err := c.Parse(k, s); err != nil {
		return nil, err
	}
	c.Append()
	arr := b.NewArray()
	defer arr.Release()
	if arr.IsNull(0) {
		return nil, nil
	}
	return arr.GetOneForMarshal(0), nil
}

func TestParse(t *testing.T) {
	tsMs := &arrow.TimestampType{Unit: arrow.Millisecond}
	for _, c := range []struct {
		dt   arrow.DataType
		k    Kind
		s    string
		want any // nil for NULL; error for a failure
	}{
		{arrow.PrimitiveTypes.Int64, Number, "-7", int64(-7)},
		{arrow.PrimitiveTypes.Int64, String, "7", int64(7)},
		{arrow.PrimitiveTypes.Int64, Text, "7", int64(7)},
		{arrow.PrimitiveTypes.Int64, Text, "", nil},
		{arrow.PrimitiveTypes.Int64, String, "", nil},
		{arrow.PrimitiveTypes.Int64, Null, "", nil},
		{arrow.PrimitiveTypes.Int64, Bool, "true", errors.New(`column "x": cannot parse "true" as int64`)},
		{arrow.PrimitiveTypes.Int64, Number, "4.5", errors.New(`column "x": cannot parse "4.5" as int64`)},
		{arrow.PrimitiveTypes.Int8, Number, "300", errors.New(`column "x": cannot parse "300" as int8`)},
		{arrow.PrimitiveTypes.Uint16, Number, "65535", uint16(65535)},
		{arrow.PrimitiveTypes.Uint16, Number, "-1", errors.New(`column "x": cannot parse "-1" as uint16`)},
		{arrow.PrimitiveTypes.Float32, Number, "1.5", float32(1.5)},
		{arrow.PrimitiveTypes.Float64, Nested, "[1]", errors.New(`column "x": cannot parse "[1]" as float64`)},
		{arrow.FixedWidthTypes.Boolean, Text, "TRUE", true},
		{arrow.FixedWidthTypes.Boolean, Bool, "false", false},
		{arrow.FixedWidthTypes.Boolean, Number, "1", errors.New(`column "x": cannot parse "1" as bool`)},
		{arrow.BinaryTypes.String, String, "", ""},
		{arrow.BinaryTypes.String, Text, "", nil},
		{arrow.BinaryTypes.String, Number, "12", "12"},
		{arrow.BinaryTypes.LargeString, Nested, `{"k":true}`, `{"k":true}`},
		{tsMs, String, "2024-01-03T10:00:00.5+01:00", "2024-01-03T09:00:00.5"},
		{tsMs, Number, "1704276000500", "2024-01-03T10:00:00.5"},
		{tsMs, String, "1704276000500", "2024-01-03T10:00:00.5"},
		{tsMs, Number, "1.5", errors.New(`column "x": cannot parse "1.5" as timestamp[ms]`)},
		{arrow.BinaryTypes.String, String, "a\xffb", errors.New(`column "x": cannot parse "a\xffb" as utf8: not valid UTF-8`)},
		{arrow.BinaryTypes.LargeString, Text, "\xe6\x97", errors.New(`column "x": cannot parse "\xe6\x97" as large_utf8: not valid UTF-8`)},
		{arrow.FixedWidthTypes.Timestamp_ns, String, "2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775807Z"},
		{arrow.FixedWidthTypes.Timestamp_ns, String, "2262-04-11T23:47:16.854775808Z", errors.New(`column "x": cannot parse "2262-04-11T23:47:16.854775808Z" as timestamp[ns, tz=UTC]: ` + whyNanoRange)},
		{arrow.FixedWidthTypes.Timestamp_ns, Text, "1600-01-01 00:00:00", errors.New(`column "x": cannot parse "1600-01-01 00:00:00" as timestamp[ns, tz=UTC]: ` + whyNanoRange)},
		{tsMs, Text, "3000-01-01 00:00:00", "3000-01-01T00:00:00"},
		{arrow.FixedWidthTypes.Date32, String, "2024-02-29", "2024-02-29"},
		{arrow.FixedWidthTypes.Date32, String, "3 May", errors.New(`column "x": cannot parse "3 May" as date32`)},
	} {
		got, err := parseOne(t, c.dt, c.k, c.s)
		if werr, ok := c.want.(error); ok {
			if err == nil || err.Error() != werr.Error() {
				t.Errorf("%s %d %q: error %v, want %v", c.dt, c.k, c.s, err, werr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %d %q: %#v (%v), want %#v", c.dt, c.k, c.s, got, err, c.want)
		}
	}
}

func TestValueError(t *testing.T) {
	c, _ := NewColumn(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32}, nil)
	long := strings.Repeat("x", 100)
	err := c.Parse(String, long)
	ve, ok := errors.AsType[*ValueError](err)
	if !ok {
		t.Fatalf("%T %v", err, err)
	}
	if ve.Column != "n" || ve.Value != long[:64]+"..." || !arrow.TypeEqual(ve.Type, arrow.PrimitiveTypes.Int32) {
		t.Fatalf("%+v", ve)
	}
}

// TestCut: values quoted in errors are cut without splitting a UTF-8
// character.
func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc..."},
		{"aé", 2, "a..."},
		{"aéb", 3, "aé..."},
		{"日本", 4, "日..."},
		{"日本", 2, "\xe6\x97..."}, // no character fits: the bytes
		{"\xff\xff\xff\xff\xff", 2, "\xff\xff..."},
	} {
		if got := cut(c.s, c.n); got != c.want {
			t.Errorf("cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestSetTime(t *testing.T) {
	for unit, want := range map[arrow.TimeUnit]int64{
		arrow.Second:      1704276000,
		arrow.Millisecond: 1704276000123,
		arrow.Microsecond: 1704276000123456,
		arrow.Nanosecond:  1704276000123456789,
	} {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: unit})
		c, _ := NewColumn(arrow.Field{Name: "t", Type: b.Type()}, b)
		c.SetNull()
		c.SetTime(time.Date(2024, 1, 3, 11, 0, 0, 123456789, time.FixedZone("", 3600)))
		if c.IsNull() {
			t.Fatal("SetTime left the value NULL")
		}
		c.Append()
		arr := b.NewTimestampArray()
		if got := int64(arr.Value(0)); got != want {
			t.Errorf("%s: %d, want %d", unit, got, want)
		}
		arr.Release()
		b.Release()
	}
}

func TestDecoder(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	cols := make([]*Column, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i], _ = NewColumn(f, rb.Field(i))
	}
	d := NewDecoder(cols)
	rows := []struct {
		in  string
		err string
	}{
		{`{"id": 1, "v": 1.5, "s": "a", "other": [1]}`, ""},
		{`{"id": 2, "v": "abc", "s": "b"}`, `column "v": cannot parse "abc" as float64`},
		{`{"s": "only"}`, ""},
		{`[1]`, "not a JSON object"},
		{`{"id": 3, "id": 4, "v": null}`, ""},
	}
	for _, r := range rows {
		err := d.Decode(r.in)
		if r.err != "" {
			if err == nil || err.Error() != r.err {
				t.Errorf("%s: %v, want %s", r.in, err, r.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", r.in, err)
		}
		for _, c := range cols {
			c.Append()
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("%d rows: a dead letter reached the builders", rec.NumRows())
	}
	id, v, s := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float64), rec.Column(2).(*array.String)
	if id.Value(0) != 1 || v.Value(0) != 1.5 || s.Value(0) != "a" {
		t.Errorf("row 0: %v %v %v", id, v, s)
	}
	// A key missing from the row is NULL, even though set in the row before.
	if !id.IsNull(1) || !v.IsNull(1) || s.Value(1) != "only" {
		t.Errorf("row 1: %v %v %v", id, v, s)
	}
	// A repeated key: the last value wins.
	if id.Value(2) != 4 || !v.IsNull(2) || !s.IsNull(2) {
		t.Errorf("row 2: %v %v %v", id, v, s)
	}
}

func TestDecoderGenerationWrap(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	c, _ := NewColumn(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}, b)
	d := NewDecoder([]*Column{c})
	d.row = ^uint32(0) - 1
	for _, in := range []string{`{"a": 1}`, `{}`, `{"a": 2}`, `{}`} {
		if err := d.Decode(in); err != nil {
			t.Fatal(err)
		}
		c.Append()
	}
	arr := b.NewInt64Array()
	defer arr.Release()
	if arr.Value(0) != 1 || !arr.IsNull(1) || arr.Value(2) != 2 || !arr.IsNull(3) {
		t.Fatalf("across the generation wrap: %v", arr)
	}
}
