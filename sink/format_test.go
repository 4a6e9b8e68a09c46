package sink

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// buildTestRecord builds one batch with every shape the engine emits:
// primitives, NULLs, timestamps of two units, a top() list, a
// topn_frequency list<struct<value,count>> and a _cate map.
func buildTestRecord(t testing.TB, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	topn := arrow.StructOf(
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "top", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "freq", Type: arrow.ListOf(topn), Nullable: true},
		{Name: "cate", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()

	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, -7}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{0.1, math.NaN()}, nil)
	b.Field(2).(*array.BooleanBuilder).AppendValues([]bool{true, false}, nil)
	b.Field(3).(*array.StringBuilder).AppendValues([]string{`say "hi", ok`, ""}, []bool{true, false})
	t0 := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	b.Field(4).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
		arrow.Timestamp(t0.UnixMilli()), arrow.Timestamp(t0.UnixMilli() + 500)}, nil)
	b.Field(5).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
		arrow.Timestamp(t0.UnixMicro() + 1), 0}, []bool{true, false})

	lb := b.Field(6).(*array.ListBuilder)
	lv := lb.ValueBuilder().(*array.Int64Builder)
	lb.Append(true)
	lv.AppendValues([]int64{9, 7}, nil)
	lb.Append(true) // empty list

	fb := b.Field(7).(*array.ListBuilder)
	sb := fb.ValueBuilder().(*array.StructBuilder)
	fv := sb.FieldBuilder(0).(*array.StringBuilder)
	fc := sb.FieldBuilder(1).(*array.Int64Builder)
	fb.Append(true)
	for _, e := range []struct {
		v string
		c int64
	}{{"a", 3}, {"b", 1}} {
		sb.Append(true)
		fv.Append(e.v)
		fc.Append(e.c)
	}
	fb.AppendNull()

	mb := b.Field(8).(*array.MapBuilder)
	kb := mb.KeyBuilder().(*array.StringBuilder)
	ib := mb.ItemBuilder().(*array.Float64Builder)
	mb.Append(true)
	kb.AppendValues([]string{"y", "x"}, nil) // out of order on purpose
	ib.AppendValues([]float64{2.5, 1}, nil)
	mb.Append(true) // empty map
	return b.NewRecordBatch()
}

func TestFormatValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()

	want := [][]string{
		{"1", "0.1", "true", `say "hi", ok`, "2024-01-03T10:00:00Z", "2024-01-03T10:00:00.000001Z", "9,7", "a:3,b:1", "x:1,y:2.5"},
		{"-7", "NaN", "false", "", "2024-01-03T10:00:00.5Z", "", "", "", ""},
	}
	for r, row := range want {
		for c, w := range row {
			if got := FormatValue(rec.Column(c), r); got != w {
				t.Errorf("row %d column %s: got %q, want %q", r, rec.ColumnName(c), got, w)
			}
		}
	}
}

func TestFormatScalars(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	cases := []struct {
		name string
		arr  func() arrow.Array
		want []string
	}{
		{"float64", func() arrow.Array {
			b := array.NewFloat64Builder(mem)
			defer b.Release()
			b.AppendValues([]float64{1, 1e21, 1.5e-7, math.Inf(-1), 123456.789}, nil)
			return b.NewArray()
		}, []string{"1", "1e+21", "1.5e-07", "-Inf", "123456.789"}},
		{"float32", func() arrow.Array {
			b := array.NewFloat32Builder(mem)
			defer b.Release()
			b.AppendValues([]float32{0.1, 2}, nil)
			return b.NewArray()
		}, []string{"0.1", "2"}},
		{"uint8", func() arrow.Array {
			b := array.NewUint8Builder(mem)
			defer b.Release()
			b.AppendValues([]uint8{255}, nil)
			return b.NewArray()
		}, []string{"255"}},
		{"timestamp[s] with zone", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"})
			defer b.Release()
			b.Append(1704276000)
			return b.NewArray()
		}, []string{"2024-01-03T10:00:00Z"}},
		{"timestamp[ns]", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond})
			defer b.Release()
			b.Append(1704276000_123456789)
			return b.NewArray()
		}, []string{"2024-01-03T10:00:00.123456789Z"}},
		{"date32", func() arrow.Array {
			b := array.NewDate32Builder(mem)
			defer b.Release()
			b.Append(arrow.Date32FromTime(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)))
			return b.NewArray()
		}, []string{"2024-02-29"}},
		{"map int keys sorted", func() arrow.Array {
			b := array.NewMapBuilder(mem, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, false)
			defer b.Release()
			b.Append(true)
			b.KeyBuilder().(*array.Int64Builder).AppendValues([]int64{10, 2, 33}, nil)
			b.ItemBuilder().(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
			return b.NewArray()
		}, []string{"2:2,10:1,33:3"}},
		{"list with null element", func() arrow.Array {
			b := array.NewListBuilder(mem, arrow.BinaryTypes.String)
			defer b.Release()
			b.Append(true)
			b.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
			return b.NewArray()
		}, []string{"a,,c"}},
		{"dictionary", func() arrow.Array {
			b := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
			defer b.Release()
			b.AppendString("gold")
			b.AppendString("silver")
			b.AppendString("gold")
			return b.NewArray()
		}, []string{"gold", "silver", "gold"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arr := tc.arr()
			defer arr.Release()
			for i, w := range tc.want {
				if got := FormatValue(arr, i); got != w {
					t.Errorf("row %d: got %q, want %q", i, got, w)
				}
			}
		})
	}
}

func TestAppendJSON(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()

	want := [][]string{
		{`1`, `0.1`, `true`, `"say \"hi\", ok"`, `"2024-01-03T10:00:00Z"`, `"2024-01-03T10:00:00.000001Z"`, `[9,7]`,
			`[{"value":"a","count":3},{"value":"b","count":1}]`, `{"x":1,"y":2.5}`},
		{`-7`, `null`, `false`, `null`, `"2024-01-03T10:00:00.5Z"`, `null`, `[]`, `null`, `{}`},
	}
	for r, row := range want {
		for c, w := range row {
			got := string(AppendJSON(nil, rec.Column(c), r))
			if got != w {
				t.Errorf("row %d column %s: got %s, want %s", r, rec.ColumnName(c), got, w)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("row %d column %s: invalid JSON %s", r, rec.ColumnName(c), got)
			}
		}
	}
}

func TestValueAndRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	rows := Rows(rec)
	t0 := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	want0 := []any{int64(1), 0.1, true, `say "hi", ok`, t0, t0.Add(time.Microsecond), []any{int64(9), int64(7)},
		[]any{map[string]any{"value": "a", "count": int64(3)}, map[string]any{"value": "b", "count": int64(1)}},
		[]MapEntry{{"x", 1.0}, {"y", 2.5}}}
	if !reflect.DeepEqual(rows[0], want0) {
		t.Errorf("row 0:\n got %#v\nwant %#v", rows[0], want0)
	}
	if rows[1][3] != nil || rows[1][5] != nil || rows[1][7] != nil {
		t.Errorf("NULLs not nil: %#v", rows[1])
	}
	if f := rows[1][1].(float64); !math.IsNaN(f) {
		t.Errorf("NaN lost: %v", f)
	}
}

// poisonAllocator overwrites every buffer it frees, as a pool handing the
// buffer to its next user would.
type poisonAllocator struct{ memory.Allocator }

func (p poisonAllocator) Free(b []byte) {
	for i := range b {
		b[i] = 0xAB
	}
	p.Allocator.Free(b)
}

// TestRowsOutliveTheRecord: the values Rows returns (strings, in lists,
// structs and maps too, and binaries) are the caller's: they stay as they
// were after the record is released and its buffers are overwritten, as
// when a sink keeps rows from a batch of the engine's pooled results.
func TestRowsOutliveTheRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(poisonAllocator{memory.DefaultAllocator})
	rec := buildTestRecord(t, mem)
	rows := Rows(rec)
	want := Rows(rec)
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bb.Append([]byte("bytes"))
	bin := bb.NewArray()
	bb.Release()
	bv := Value(bin, 0)
	rec.Release()
	bin.Release()
	mem.AssertSize(t, 0)
	// (Compared as text: a NaN is not equal to itself.)
	if got, want := fmt.Sprintf("%#v", rows), fmt.Sprintf("%#v", want); got != want {
		t.Fatalf("rows changed once the record was released:\n got %s\nwant %s", got, want)
	}
	if rows[0][3] != `say "hi", ok` {
		t.Fatalf("string value %q after release", rows[0][3])
	}
	if string(bv.([]byte)) != "bytes" {
		t.Fatalf("binary value %q after release", bv)
	}
}
