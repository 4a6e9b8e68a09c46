package textrow

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzClassifyParse checks that inference and decoding agree: a value
// Classify types as int, float, bool or timestamp parses as that type's
// column (the schema inferred from a sample reads the sample back without
// dead letters), to the value strconv or the time package gives, except
// a decimal too large for float64 (1e309), which Classify cannot tell from
// its form, and text that is not UTF-8, which is no string column's. A timestamp parses to the same time at every unit the time
// fits.
func FuzzClassifyParse(f *testing.F) {
	for _, s := range []string{
		"1", "-0", "+5", "007", "99999999999999999999", "1.5", ".5", "1.", "1e5", "1E-5", "1e309", "NaN", "-Inf",
		"infinity", "true", "FALSE", "2024-01-03T10:00:00Z", "2024-01-03 10:00:00.5", "2024-01-03t10:00:00.123456789z",
		"2024-01-03T10:00:00+02:00", "3000-01-01 00:00:00", "0001-01-01T00:00:00Z", "2024-02-30T00:00:00Z", "x", "",
	} {
		f.Add(s)
	}
	parse := func(t *testing.T, dt arrow.DataType, s string) arrow.Array {
		b := array.NewBuilder(memory.DefaultAllocator, dt)
		defer b.Release()
		c, _ := NewColumn(arrow.Field{Name: "x", Type: dt}, b)
		if err := c.Parse(Text, s); err != nil {
			var ve *ValueError
			if !errors.As(err, &ve) || ve.Column != "x" {
				t.Fatalf("%q as %s: error %v is not a ValueError", s, dt, err)
			}
			return nil
		}
		c.Append()
		return b.NewArray()
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := Classify(Text, s)
		if k == InferUnknown {
			if s != "" {
				t.Fatalf("%q: unknown", s)
			}
			return
		}
		dt := k.DataType()
		if k == InferNonFinite {
			dt = InferFloat.DataType() // among numbers
		}
		a := parse(t, dt, s)
		if k == InferString && !utf8.ValidString(s) {
			// Not UTF-8: no string column holds it.
			if a != nil {
				t.Fatalf("%q: parsed as a string", s)
			}
			return
		}
		if a == nil {
			if k == InferFloat {
				if _, err := strconv.ParseFloat(s, 64); errors.Is(err, strconv.ErrRange) {
					return
				}
			}
			t.Fatalf("%q: classified %s, but does not parse as it", s, dt)
		}
		defer a.Release()
		switch a := a.(type) {
		case *array.Int64:
			if v, err := strconv.ParseInt(s, 10, 64); err != nil || v != a.Value(0) {
				t.Fatalf("%q: %d", s, a.Value(0))
			}
		case *array.Float64:
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || !(v == a.Value(0) || math.IsNaN(v) && math.IsNaN(a.Value(0))) {
				t.Fatalf("%q: %v", s, a.Value(0))
			}
		case *array.Boolean:
			if a.Value(0) != (s[0] == 't' || s[0] == 'T') {
				t.Fatalf("%q: %v", s, a.Value(0))
			}
		case *array.String:
			if a.Value(0) != s {
				t.Fatalf("%q: %q", s, a.Value(0))
			}
		case *array.Timestamp:
			tm, err := ParseTime(s)
			if err != nil {
				t.Fatalf("%q: classified a timestamp, ParseTime: %v", s, err)
			}
			if got := time.UnixMilli(int64(a.Value(0))); !got.Equal(tm.Truncate(time.Millisecond)) && !got.Equal(floorMilli(tm)) {
				t.Fatalf("%q: %s, want %s", s, got.UTC(), tm.UTC())
			}
			for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Microsecond, arrow.Nanosecond} {
				u := parse(t, &arrow.TimestampType{Unit: unit}, s)
				fits := unit != arrow.Nanosecond || tm.Year() > 1677 && tm.Year() < 2262
				if (u != nil) != fits && (tm.Year() == 1677 || tm.Year() == 2262) {
					if u != nil {
						u.Release()
					}
					continue // the edges of the range: tested elsewhere
				}
				if u == nil {
					if fits {
						t.Fatalf("%q: does not parse at %s", s, unit)
					}
					continue
				}
				if fits {
					got := int64(u.(*array.Timestamp).Value(0))
					if want := floorUnits(tm, unit); got != want {
						t.Fatalf("%q at %s: %d, want %d", s, unit, got, want)
					}
				} else {
					t.Fatalf("%q: parsed at %s out of its range", s, unit)
				}
				u.Release()
			}
		default:
			t.Fatalf("%q: %T", s, a)
		}
	})
}

func floorMilli(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()) }

// floorUnits is t in units since the epoch, rounded down, computed apart
// from values.Units.
func floorUnits(t time.Time, unit arrow.TimeUnit) int64 {
	sec, ns := t.Unix(), int64(t.Nanosecond())
	switch unit {
	case arrow.Second:
		return sec
	case arrow.Microsecond:
		return sec*1e6 + ns/1e3
	}
	return sec*1e9 + ns
}
