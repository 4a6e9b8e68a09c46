package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestPositionRoundTrip(t *testing.T) {
	for _, next := range []map[int]int64{{}, {0: 0}, {0: 5, 3: 1 << 40, 1: 17}} {
		b := encodePosition("events", next)
		got, err := decodePosition("events", b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(next) {
			t.Fatalf("%v -> %v", next, got)
		}
		for p, o := range next {
			if got[p] != o {
				t.Fatalf("%v -> %v", next, got)
			}
		}
		if string(encodePosition("events", got)) != string(b) {
			t.Fatal("encoding is not canonical")
		}
	}
	b := encodePosition("events", map[int]int64{2: 9})
	for i := range len(b) {
		if _, err := decodePosition("events", b[:i]); err == nil {
			t.Fatalf("truncated position (%d of %d bytes) accepted", i, len(b))
		}
	}
	if _, err := decodePosition("other", b); err == nil || !strings.Contains(err.Error(), `topic "events"`) {
		t.Fatalf("position of another topic: %v", err)
	}
}

func TestDecodeTypes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "ms", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	d, err := newDecoder(schema, "ms", "")
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, d.schema)
	defer b.Release()
	d.bind(b)
	good := []string{
		`{"i8":-5,"u32":"7","f32":1.5,"s":{"k":true},"d":"2024-02-29","us":"2024-01-03T10:00:00.000001Z","ms":1700000000000}`,
		`{"i8":null,"s":"","d":"","us":1,"ms":5}`,
	}
	for _, g := range good {
		if err := d.decode([]byte(g), time.Time{}); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	bad := map[string]string{
		`{"i8":300,"ms":1}`:     `field "i8": cannot decode "300" as int8`,
		`{"u32":-1,"ms":1}`:     `field "u32": cannot decode "-1" as uint32`,
		`{"f32":true,"ms":1}`:   `field "f32": cannot decode "true" as float32`,
		`{"d":"3 May","ms":1}`:  `field "d": cannot decode "3 May" as date32`,
		`{"us":[1],"ms":1}`:     `field "us": cannot decode "[1]" as timestamp[us]`,
		`{"i8":1}`:              `event-time field "ms" is missing or null`,
		`{"i8":1,"ms":"later"}`: `field "ms": cannot decode "later" as int64`,
	}
	for in, want := range bad {
		if err := d.decode([]byte(in), time.Time{}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if rec.NumRows() != 2 {
		t.Fatalf("%d rows: dead letters reached the builders", rec.NumRows())
	}
	if got := rec.Column(3).(*array.LargeString).Value(0); got != `{"k":true}` {
		t.Fatalf("nested value as string: %q", got)
	}
	if got := rec.Column(3).(*array.LargeString).Value(1); got != "" || rec.Column(3).IsNull(1) {
		t.Fatal("empty string is not NULL in a string column")
	}
	if !rec.Column(4).IsNull(1) || !rec.Column(0).IsNull(1) || !rec.Column(1).IsNull(1) {
		t.Fatal("null, empty and missing values must be NULL")
	}
	if got := rec.Column(5).(*array.Timestamp).Value(0); got != arrow.Timestamp(time.Date(2024, 1, 3, 10, 0, 0, 1000, time.UTC).UnixMicro()) {
		t.Fatalf("timestamp[us] %d", got)
	}
	if got := rec.Column(4).(*array.Date32).Value(0).ToTime(); !got.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("date %v", got)
	}
}

func TestInferSchemaRules(t *testing.T) {
	s := inferSchema([][]byte{
		[]byte(`{"a":1,"b":1,"c":"2024-01-03T10:00:00Z","d":true,"e":null}`),
		[]byte(`{"a":2,"b":1.5,"c":"x","d":1,"e":""}`),
		[]byte(`{"a":99999999999999999999}`),
		[]byte(`garbage`),
	})
	want := []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.BinaryTypes.String, arrow.BinaryTypes.String}
	if s.NumFields() != len(want) {
		t.Fatalf("%v", s)
	}
	for i, w := range want {
		if !arrow.TypeEqual(s.Field(i).Type, w) {
			t.Errorf("field %s: %s, want %s", s.Field(i).Name, s.Field(i).Type, w)
		}
	}
}
