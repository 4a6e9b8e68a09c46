package values

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestCoerce(t *testing.T) {
	ts := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	tsType := &arrow.TimestampType{Unit: arrow.Microsecond}
	for _, c := range []struct {
		v    any
		dt   arrow.DataType
		want any
		bad  bool
	}{
		{42.0, arrow.PrimitiveTypes.Int64, int64(42), false},
		{json.Number("7"), arrow.PrimitiveTypes.Int32, int64(7), false},
		{42.5, arrow.PrimitiveTypes.Int64, nil, true},
		{"42", arrow.PrimitiveTypes.Int64, nil, true},
		{3, arrow.PrimitiveTypes.Float64, 3.0, false},
		{"x", arrow.BinaryTypes.String, "x", false},
		{1, arrow.BinaryTypes.String, nil, true},
		{true, arrow.FixedWidthTypes.Boolean, true, false},
		{"2024-01-03T10:00:00Z", tsType, ts, false},
		{ts.UnixMilli(), tsType, ts, false},
		{"yesterday", tsType, nil, true},
		{nil, arrow.PrimitiveTypes.Int64, nil, false},
	} {
		got, err := Coerce(c.v, c.dt)
		if (err != nil) != c.bad {
			t.Errorf("Coerce(%v, %s): error %v, want error %v", c.v, c.dt, err, c.bad)
			continue
		}
		if c.bad {
			continue
		}
		if gt, ok := got.(time.Time); ok {
			if !gt.Equal(c.want.(time.Time)) {
				t.Errorf("Coerce(%v, %s) = %v, want %v", c.v, c.dt, got, c.want)
			}
		} else if got != c.want {
			t.Errorf("Coerce(%v, %s) = %v (%T), want %v", c.v, c.dt, got, got, c.want)
		}
	}
}

func TestAppend(t *testing.T) {
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Second}},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
	}, nil))
	defer b.Release()
	for i, v := range []any{int64(-5), 65535, "2024-01-03T10:00:00Z", 1.5} {
		if err := Append(b.Field(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := Append(b.Field(0), 300); err == nil {
		t.Error("300 fits int8?")
	}
	if err := Append(b.Field(1), -1); err == nil {
		t.Error("-1 fits uint16?")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if got := rec.Column(2).(*array.Timestamp).Value(0); int64(got) != 1704276000 {
		t.Errorf("timestamp in seconds = %d", got)
	}
	if got := rec.Column(0).(*array.Int8).Value(0); got != -5 {
		t.Errorf("int8 = %d", got)
	}
}

// TestCoerceIntRange: Coerce refuses an integer its column's type cannot
// hold, at both ends of every narrow type, and takes the bounds
// themselves; Append, which relies on it, refuses the same values.
func TestCoerceIntRange(t *testing.T) {
	for _, c := range []struct {
		dt     arrow.DataType
		lo, hi int64
	}{
		{arrow.PrimitiveTypes.Int8, math.MinInt8, math.MaxInt8},
		{arrow.PrimitiveTypes.Int16, math.MinInt16, math.MaxInt16},
		{arrow.PrimitiveTypes.Int32, math.MinInt32, math.MaxInt32},
		{arrow.PrimitiveTypes.Uint8, 0, math.MaxUint8},
		{arrow.PrimitiveTypes.Uint16, 0, math.MaxUint16},
		{arrow.PrimitiveTypes.Uint32, 0, math.MaxUint32},
		{arrow.PrimitiveTypes.Uint64, 0, math.MaxInt64},
		{arrow.PrimitiveTypes.Int64, math.MinInt64, math.MaxInt64},
	} {
		for _, n := range []int64{c.lo, c.hi} {
			var want any = n
			if !arrow.IsSignedInteger(c.dt.ID()) {
				want = uint64(n) // unsigned columns take uint64
			}
			if v, err := Coerce(n, c.dt); err != nil || v != want {
				t.Errorf("%s: Coerce(%d) = %v (%T), %v", c.dt, n, v, v, err)
			}
		}
		for _, n := range []int64{c.lo - 1, c.hi + 1} {
			if n == c.lo-1 && c.lo == math.MinInt64 || n == c.hi+1 && c.hi == math.MaxInt64 {
				continue // wrapped
			}
			_, err := Coerce(n, c.dt)
			if err == nil || !strings.Contains(err.Error(), "does not fit the column's type "+c.dt.String()) {
				t.Errorf("%s: Coerce(%d): %v", c.dt, n, err)
			}
			b := array.NewBuilder(memory.DefaultAllocator, c.dt)
			if err := Append(b, n); err == nil {
				t.Errorf("%s: Append(%d) succeeded", c.dt, n)
			}
			b.Release()
		}
	}
}

// TestCoerceUint64Range: a uint64 column takes values from 2^63 to
// 2^64-1, however they are given (uint64, json.Number, a whole float),
// and Append stores them unchanged; a signed column refuses them as out
// of range, not as "not an integer"; negative values and 2^64 are
// refused by the uint64 column.
func TestCoerceUint64Range(t *testing.T) {
	u64 := arrow.PrimitiveTypes.Uint64
	for _, c := range []struct {
		in   any
		want uint64
	}{
		{uint64(math.MaxUint64), math.MaxUint64},
		{uint64(1 << 63), 1 << 63},
		{json.Number("18446744073709551615"), math.MaxUint64},
		{json.Number("9223372036854775808"), 1 << 63},
		{float64(1 << 63), 1 << 63},
		{uint(7), 7},
		{int64(42), 42},
	} {
		v, err := Coerce(c.in, u64)
		if err != nil || v != c.want {
			t.Errorf("Coerce(%v %T) = %v (%T), %v; want %d", c.in, c.in, v, v, err, c.want)
		}
		b := array.NewUint64Builder(memory.DefaultAllocator)
		if err := Append(b, c.in); err != nil {
			t.Fatal(err)
		}
		if got := b.NewUint64Array().Value(0); got != c.want {
			t.Errorf("Append(%v %T) stored %d, want %d", c.in, c.in, got, c.want)
		}
		b.Release()
	}
	for _, in := range []any{int64(-1), json.Number("-1"), json.Number("18446744073709551616"), float64(1 << 64), 1.5} {
		if v, err := Coerce(in, u64); err == nil {
			t.Errorf("Coerce(%v %T) = %v, want an error", in, in, v)
		}
	}
	_, err := Coerce(uint64(1<<63), arrow.PrimitiveTypes.Int64)
	if err == nil || !strings.Contains(err.Error(), "value 9223372036854775808 does not fit the column's type int64") {
		t.Errorf("Coerce(2^63) for int64: %v", err)
	}
	_, err = Coerce(int64(-1), arrow.PrimitiveTypes.Uint32)
	if err == nil || !strings.Contains(err.Error(), "value -1 does not fit the column's type uint32") {
		t.Errorf("Coerce(-1) for uint32: %v", err)
	}
	if f, ok := Float64(uint64(math.MaxUint64)); !ok || f != 1<<64 {
		t.Errorf("Float64(MaxUint64) = %v, %v", f, ok)
	}
}
