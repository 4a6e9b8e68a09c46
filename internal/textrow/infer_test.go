package textrow

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		k    Kind
		s    string
		want Inferred
	}{
		{Null, "", InferUnknown},
		{Bool, "true", InferBool},
		{Nested, "[1]", InferString},
		{Number, "-12", InferInt},
		{Number, "99999999999999999999", InferFloat},
		{Number, "1.5", InferFloat},
		{Number, "1e3", InferFloat},
		{String, "", InferUnknown},
		{String, "12", InferString},
		{String, "2024-01-03T10:00:00Z", InferTimestamp},
		{String, "2024-01-03T10:00:00.5+02:00", InferTimestamp},
		{String, "2024-01-03", InferString},
		{Text, "", InferUnknown},
		{Text, "+12", InferInt},
		{Text, "99999999999999999999", InferFloat},
		{Text, ".5", InferFloat},
		{Text, "1.5e-3", InferFloat},
		{Text, "1e", InferString},
		{Text, "NaN", InferNonFinite},
		{Text, "nan", InferNonFinite},
		{Text, "+Inf", InferNonFinite},
		{Text, "-inf", InferNonFinite},
		{Text, "Infinity", InferNonFinite},
		{Text, "+NaN", InferString}, // strconv.ParseFloat does not read it
		{Text, "Nan2", InferString},
		{Text, "infinite", InferString},
		{String, "NaN", InferString}, // a JSON string is text
		{Text, "TRUE", InferBool},
		{Text, "false", InferBool},
		{Text, "2024-01-03T10:00:00Z", InferTimestamp},
		{Text, "2024-13-03T10:00:00Z", InferString},
		{Text, "hello", InferString},
	} {
		if got := Classify(c.k, c.s); got != c.want {
			t.Errorf("Classify(%d, %q) = %d, want %d", c.k, c.s, got, c.want)
		}
		// Whatever Classify takes for a number, a float64 column reads.
		if c.k == Text && (c.want == InferFloat || c.want == InferNonFinite) {
			if _, err := parseOne(t, arrow.PrimitiveTypes.Float64, Text, c.s); err != nil {
				t.Errorf("%q is classified a number but does not parse: %v", c.s, err)
			}
		}
	}
}

func TestMerge(t *testing.T) {
	all := []Inferred{InferUnknown, InferInt, InferFloat, InferBool, InferTimestamp, InferNonFinite, InferString}
	number := func(t Inferred) bool { return t == InferInt || t == InferFloat || t == InferNonFinite }
	for _, a := range all {
		for _, b := range all {
			var want Inferred
			switch {
			case a == InferUnknown:
				want = b
			case b == InferUnknown || a == b:
				want = a
			case number(a) && number(b):
				want = InferFloat
			default:
				want = InferString
			}
			if got := a.Merge(b); got != want {
				t.Errorf("%d.Merge(%d) = %d, want %d", a, b, got, want)
			}
			if a.Merge(b) != b.Merge(a) {
				t.Errorf("Merge(%d, %d) is not symmetric", a, b)
			}
		}
	}
	if !arrow.TypeEqual(InferUnknown.DataType(), arrow.BinaryTypes.String) {
		t.Errorf("a column seen only as NULL is %s", InferUnknown.DataType())
	}
	if !arrow.TypeEqual(InferNonFinite.DataType(), arrow.BinaryTypes.String) {
		t.Errorf("a column seen only as NaN is %s", InferNonFinite.DataType())
	}
}

func TestInference(t *testing.T) {
	var in Inference
	if s := in.Schema(); s.NumFields() != 0 {
		t.Fatalf("empty inference: %v", s)
	}
	for _, v := range []string{
		`{"a":1,"b":1,"c":"2024-01-03T10:00:00Z","d":true,"e":null}`,
		`{"a":2,"b":1.5,"c":"x","d":1,"e":"","f":"2024-01-03T10:00:00Z"}`,
		`{"a":99999999999999999999,"g":{"x":1}}`,
		`[1, 2]`,
	} {
		in.Object(v)
	}
	want := []struct {
		name string
		dt   arrow.DataType
	}{
		{"a", arrow.PrimitiveTypes.Float64},
		{"b", arrow.PrimitiveTypes.Float64},
		{"c", arrow.BinaryTypes.String},
		{"d", arrow.BinaryTypes.String},
		{"e", arrow.BinaryTypes.String},
		{"f", arrow.FixedWidthTypes.Timestamp_ms},
		{"g", arrow.BinaryTypes.String},
	}
	s := in.Schema()
	if s.NumFields() != len(want) {
		t.Fatalf("%v", s)
	}
	for i, w := range want {
		f := s.Field(i)
		if f.Name != w.name || !arrow.TypeEqual(f.Type, w.dt) || !f.Nullable {
			t.Errorf("field %d: %s %s (nullable %t), want %s %s", i, f.Name, f.Type, f.Nullable, w.name, w.dt)
		}
	}
}

func TestMixNote(t *testing.T) {
	add := func(vals ...string) *Mix {
		var m Mix
		for i, v := range vals {
			m.Add(Classify(Text, v), v, int64(i+2))
		}
		return &m
	}
	for _, tt := range []struct {
		vals []string
		want string
	}{
		{[]string{"1", "2", "x", "4", "5"}, `line 4 holds "x", where 4 of the 5 values sampled are int64`},
		{[]string{"1.5", "2", "", "n/a", "3"}, `line 5 holds "n/a", where 3 of the 4 values sampled are float64`},
		{[]string{"2024-01-03T10:00:00Z", "2024-01-03T11:00:00Z", "yesterday"}, `line 4 holds "yesterday", where 2 of the 3 values sampled are timestamp[ms, tz=UTC]`},
		{[]string{"1", "true", "2", "3"}, `line 3 holds "true", where 3 of the 4 values sampled are int64`},
		{[]string{"1", "NaN", "2", "x"}, `line 5 holds "x", where 3 of the 4 values sampled are float64`},
		{[]string{"1", "Inf", "2"}, ""},    // float64: nothing to say
		{[]string{"a", "b", "1"}, ""},      // mostly strings: a string column
		{[]string{"1", "2.5", "3"}, ""},    // numbers only: float64, nothing to say
		{[]string{"x", "1", "2", "y"}, ""}, // half and half
		{nil, ""},
	} {
		if got := add(tt.vals...).Note(); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.vals, got, tt.want)
		}
	}
}

// TestInferenceColumns: declared columns (a CSV header) keep their order
// and are string without values; values added by name follow the rules
// of Classify and Mix.
func TestInferenceColumns(t *testing.T) {
	var in Inference
	in.Columns("b", "a", "empty")
	for i, row := range [][2]string{{"1", "x"}, {"2.5", "y"}, {"NaN", "z"}, {"", "w"}} {
		in.Value("b", Text, row[0], int64(i+2))
		in.Value("a", Text, row[1], int64(i+2))
	}
	in.Value("late", Text, "true", 9)
	want := arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "empty", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "late", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	if s := in.Schema(); !s.Equal(want) {
		t.Fatalf("schema %s, want %s", s, want)
	}
	if n := in.Notes(); n != nil {
		t.Fatalf("notes %v", n)
	}
}

// TestParseTime: RFC 3339 in both letter cases, and the SQL/pandas form
// with a space and maybe no offset (UTC), are date-times; other text is
// not, and inference agrees with ParseTime.
func TestParseTime(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2024-01-03T10:00:00Z", utc(2024, 1, 3, 10, 0, 0, 0)},
		{"2024-01-03t10:00:00z", utc(2024, 1, 3, 10, 0, 0, 0)},
		{"2024-01-03T12:00:00.25+02:00", utc(2024, 1, 3, 10, 0, 0, 250_000_000)},
		{"2024-01-03 10:00:00", utc(2024, 1, 3, 10, 0, 0, 0)},
		{"2024-01-03 10:00:00.123456", utc(2024, 1, 3, 10, 0, 0, 123_456_000)},
		{"2024-01-03 12:00:00+02:00", utc(2024, 1, 3, 10, 0, 0, 0)},
		{"2024-01-03T10:00:00", utc(2024, 1, 3, 10, 0, 0, 0)},
		{"2024-01-03 10:00:00Z", utc(2024, 1, 3, 10, 0, 0, 0)},
	} {
		got, err := ParseTime(tc.in)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if Classify(Text, tc.in) != InferTimestamp || Classify(String, tc.in) != InferTimestamp {
			t.Errorf("%q not inferred as a timestamp", tc.in)
		}
	}
	for _, in := range []string{"2024-01-03", "2024-01-03 10:00", "2024-13-03 10:00:00", "2024-01-03X10:00:00", "2024-01-03 10:00:00+0200", "10:00:00 2024-01-03", "2024-01-03 10:00:00 UTC"} {
		if _, err := ParseTime(in); err == nil {
			t.Errorf("ParseTime(%q) succeeded", in)
		}
		if Classify(Text, in) == InferTimestamp {
			t.Errorf("%q inferred as a timestamp", in)
		}
	}
}
