package sink

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/jsonvalue"
)

// FormatValue renders row i of arr as text, following the rendering rules
// of SPEC section 4 used by the CSV sink and by logs:
//
//   - NULL is the empty string; booleans are true/false; integers decimal;
//   - floats use strconv.FormatFloat(f, 'g', -1, 64) (32 for float32);
//   - timestamps are RFC 3339 in UTC with only the fractional digits needed
//     (2024-01-03T10:00:00Z, 2024-01-03T10:00:00.5Z), whatever their unit
//     or time zone; dates are 2006-01-02;
//   - a list is its elements joined by "," (v1,v2);
//   - a struct is its fields joined by ":", so the list<struct<value,count>>
//     of topn_frequency renders as v1:c1,v2:c2;
//   - a map is k1:v1,k2:v2 in ascending key order;
//   - binary values are base64 (standard encoding).
//
// It never panics on a valid array; i must be in range.
func FormatValue(arr arrow.Array, i int) string {
	return string(AppendText(nil, arr, i))
}

// AppendText appends the text rendering of row i of arr (see FormatValue)
// to dst and returns the extended buffer. It allocates nothing for
// primitive values when dst has room.
func AppendText(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return dst
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float16:
		return strconv.AppendFloat(dst, float64(a.Value(i).Float32()), 'g', -1, 32)
	case *array.Float32:
		return strconv.AppendFloat(dst, float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.AppendFloat(dst, a.Value(i), 'g', -1, 64)
	case *array.String:
		return append(dst, a.Value(i)...)
	case *array.LargeString:
		return append(dst, a.Value(i)...)
	case *array.StringView:
		return append(dst, a.Value(i)...)
	case *array.Binary:
		return base64.StdEncoding.AppendEncode(dst, a.Value(i))
	case *array.LargeBinary:
		return base64.StdEncoding.AppendEncode(dst, a.Value(i))
	case *array.BinaryView:
		return base64.StdEncoding.AppendEncode(dst, a.Value(i))
	case *array.FixedSizeBinary:
		return base64.StdEncoding.AppendEncode(dst, a.Value(i))
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return jsonvalue.AppendTime(dst, a.Value(i).ToTime(unit))
	case *array.Date32:
		return a.Value(i).ToTime().AppendFormat(dst, time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().AppendFormat(dst, time.DateOnly)
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return a.Value(i).ToTime(unit).AppendFormat(dst, "15:04:05.999999999")
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return a.Value(i).ToTime(unit).AppendFormat(dst, "15:04:05.999999999")
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		return append(dst, (time.Duration(a.Value(i)) * unit.Multiplier()).String()...)
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		for n, j := range mapOrder(keys, int(start), int(end)) {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = AppendText(dst, keys, j)
			dst = append(dst, ':')
			dst = AppendText(dst, items, j)
		}
		return dst
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = AppendText(dst, vals, int(j))
		}
		return dst
	case *array.Struct:
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				dst = append(dst, ':')
			}
			dst = AppendText(dst, a.Field(f), i)
		}
		return dst
	case *array.Dictionary:
		return AppendText(dst, a.Dictionary(), a.GetValueIndex(i))
	}
	return append(dst, arr.ValueStr(i)...)
}

// mapOrder returns the indices start..end-1 of a map's entries in ascending
// key order. Maps built by the aggregates are already sorted, which is
// checked first without sorting.
func mapOrder(keys arrow.Array, start, end int) []int {
	idx := make([]int, 0, end-start)
	for j := start; j < end; j++ {
		idx = append(idx, j)
	}
	less := func(x, y int) int { return compareAt(keys, x, y) }
	if !slices.IsSortedFunc(idx, less) {
		slices.SortStableFunc(idx, less)
	}
	return idx
}

// compareAt orders two rows of a primitive array; NULLs come first. Types
// without a natural order compare by their text rendering.
func compareAt(arr arrow.Array, x, y int) int {
	nx, ny := arr.IsNull(x), arr.IsNull(y)
	switch {
	case nx && ny:
		return 0
	case nx:
		return -1
	case ny:
		return 1
	}
	switch a := arr.(type) {
	case *array.Int8:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Int16:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Int32:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Int64:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Uint8:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Uint16:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Uint32:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Uint64:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Float32:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Float64:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.String:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.LargeString:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Timestamp:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Date32:
		return cmp.Compare(a.Value(x), a.Value(y))
	case *array.Boolean:
		bx, by := a.Value(x), a.Value(y)
		switch {
		case bx == by:
			return 0
		case !bx:
			return -1
		}
		return 1
	}
	return cmp.Compare(FormatValue(arr, x), FormatValue(arr, y))
}

// AppendJSON appends row i of arr as a JSON value to dst: numbers, strings,
// booleans and null keep their JSON type; NaN and ±Inf become null; lists
// are arrays; structs are objects keyed by field name; maps are objects
// whose keys are the text rendering of the map keys (in ascending key
// order); timestamps and dates are RFC 3339 strings in UTC; binary values
// are base64 strings.
func AppendJSON(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean, *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64:
		return AppendText(dst, arr, i)
	case *array.Float16:
		return jsonvalue.AppendFloat(dst, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return jsonvalue.AppendFloat(dst, float64(a.Value(i)), 32)
	case *array.Float64:
		return jsonvalue.AppendFloat(dst, a.Value(i), 64)
	case *array.Decimal128, *array.Decimal256, *array.Decimal32, *array.Decimal64:
		return append(dst, arr.ValueStr(i)...)
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		dst = append(dst, '{')
		var scratch []byte
		for n, j := range mapOrder(keys, int(start), int(end)) {
			if n > 0 {
				dst = append(dst, ',')
			}
			scratch = AppendText(scratch[:0], keys, j)
			dst = jsonvalue.AppendString(dst, scratch)
			dst = append(dst, ':')
			dst = AppendJSON(dst, items, j)
		}
		return append(dst, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, vals, int(j))
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				dst = append(dst, ',')
			}
			dst = jsonvalue.AppendString(dst, st.Field(f).Name)
			dst = append(dst, ':')
			dst = AppendJSON(dst, a.Field(f), i)
		}
		return append(dst, '}')
	case *array.Dictionary:
		return AppendJSON(dst, a.Dictionary(), a.GetValueIndex(i))
	}
	// Everything else is a string in JSON: its text rendering.
	start := len(dst)
	dst = AppendText(dst, arr, i)
	text := slices.Clone(dst[start:])
	return jsonvalue.AppendString(dst[:start], text)
}

// MapEntry is one key/value pair of an Arrow map, as returned by Value.
type MapEntry struct {
	Key   any
	Value any
}

// Value returns row i of arr as a plain Go value, for tests and tools:
// nil for NULL, bool, int64 for signed integers, uint64 for unsigned ones,
// float64 for floats, string, []byte for binary, time.Time (UTC) for
// timestamps and dates, time.Duration for durations, []any for lists,
// map[string]any for structs, and []MapEntry (in ascending key order) for
// maps. Other types are returned as their text rendering. The values are
// the caller's: strings and byte slices are copies, valid after arr is
// released and its buffers reused (the engine pools the buffers of its
// results).
func Value(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float16:
		return float64(a.Value(i).Float32())
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return strings.Clone(a.Value(i))
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.StringView:
		return strings.Clone(a.Value(i))
	case *array.Binary:
		return slices.Clone(a.Value(i))
	case *array.LargeBinary:
		return slices.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return slices.Clone(a.Value(i))
	case *array.Timestamp:
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit)
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Date64:
		return a.Value(i).ToTime()
	case *array.Duration:
		return time.Duration(a.Value(i)) * a.DataType().(*arrow.DurationType).Unit.Multiplier()
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		out := make([]MapEntry, 0, end-start)
		for _, j := range mapOrder(keys, int(start), int(end)) {
			out = append(out, MapEntry{Key: Value(keys, j), Value: Value(items, j)})
		}
		return out
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, Value(vals, int(j)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := make(map[string]any, a.NumField())
		for f := 0; f < a.NumField(); f++ {
			out[st.Field(f).Name] = Value(a.Field(f), i)
		}
		return out
	case *array.Dictionary:
		return Value(a.Dictionary(), a.GetValueIndex(i))
	}
	return arr.ValueStr(i)
}

// Rows converts a record batch to rows of Go values (see Value).
func Rows(rec arrow.RecordBatch) [][]any {
	out := make([][]any, rec.NumRows())
	for r := range out {
		row := make([]any, rec.NumCols())
		for c := range row {
			row[c] = Value(rec.Column(c), r)
		}
		out[r] = row
	}
	return out
}
