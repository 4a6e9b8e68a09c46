package volgatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/values"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// Events is a small table of input events held as Go values with an Arrow
// schema. Build one with CSV, Maps or Table. An Events that could not be
// built carries its error, which Run reports through the test.
type Events struct {
	schema *arrow.Schema
	rows   [][]any
	err    error
}

// Schema returns the schema of the events (nil if they could not be built).
func (e Events) Schema() *arrow.Schema { return e.schema }

// Len returns the number of events.
func (e Events) Len() int { return len(e.rows) }

// Err returns the error met while building the events, if any.
func (e Events) Err() error { return e.err }

// CSV parses a CSV literal with a header line into events. The schema is
// inferred from every row as source.NewCSVReader infers it: integers are
// int64, decimals float64, true/false bool, RFC 3339 times timestamp[ms]
// in UTC, anything else string; an empty field is NULL. Leading and
// trailing blank space around the literal is ignored, so a raw string
// literal may start on the line after the backquote. A record that does
// not decode is an error.
func CSV(text string) Events {
	rows, schema, err := readCSV(text)
	if err != nil {
		return Events{err: fmt.Errorf("volgatest: CSV events: %w", err)}
	}
	return Events{schema: schema, rows: rows}
}

// readCSV decodes a CSV literal with the CSV source, returning rows as the
// Go values of sink.Value.
func readCSV(text string) ([][]any, *arrow.Schema, error) {
	text = strings.TrimSpace(text) + "\n"
	var bad []string
	src, err := source.NewCSVReader(strings.NewReader(text),
		source.WithSampleRows(math.MaxInt32),
		source.WithDeadLetter(func(d source.DeadLetter) {
			bad = append(bad, fmt.Sprintf("line %d: %s", d.Offset, d.Reason))
		}))
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	var rows [][]any
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, sink.Rows(rec)...)
		rec.Release()
	}
	if len(bad) > 0 {
		return nil, nil, errors.New(strings.Join(bad, "; "))
	}
	return rows, src.Schema(), nil
}

// Maps builds events from Go maps, one per event. Columns are the union
// of the maps' keys, in sorted order; a key missing from a map is NULL.
// Each column's type is inferred from its non-nil values: Go integers are
// int64, floats float64 (integers and floats mixed are float64), bools
// bool, time.Time values and strings that all parse as RFC 3339 are
// timestamp[ms] in UTC, other strings string. Mixing other kinds in one
// column is an error.
func Maps(rows []map[string]any) Events {
	seen := map[string]bool{}
	var names []string
	for _, r := range rows {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		t, err := inferType(n, rows)
		if err != nil {
			return Events{err: fmt.Errorf("volgatest: Maps: %w", err)}
		}
		fields[i] = arrow.Field{Name: n, Type: t, Nullable: true}
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(names))
		for j, n := range names {
			out[i][j] = r[n]
		}
	}
	return Table(arrow.NewSchema(fields, nil), out)
}

var timestampMS = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

func inferType(col string, rows []map[string]any) (arrow.DataType, error) {
	var ints, floats, bools, times, strs, tstrs int
	for _, r := range rows {
		switch v := r[col].(type) {
		case nil:
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			ints++
		case float32, float64:
			floats++
		case bool:
			bools++
		case time.Time:
			times++
		case string:
			strs++
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				tstrs++
			}
		default:
			return nil, fmt.Errorf("column %q: unsupported value %v of type %T", col, v, v)
		}
	}
	kinds := 0
	for _, n := range []int{ints + floats, bools, times + strs} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, fmt.Errorf("column %q mixes values of different kinds", col)
	case floats > 0:
		return arrow.PrimitiveTypes.Float64, nil
	case ints > 0:
		return arrow.PrimitiveTypes.Int64, nil
	case bools > 0:
		return arrow.FixedWidthTypes.Boolean, nil
	case times > 0 || (strs > 0 && tstrs == strs):
		if times > 0 && tstrs != strs {
			return nil, fmt.Errorf("column %q mixes times and strings that are not RFC 3339", col)
		}
		return timestampMS, nil
	}
	return arrow.BinaryTypes.String, nil
}

// Table builds events from rows of Go values in the order of the schema's
// fields. Supported column types are the integer, float, bool, string and
// timestamp types; a timestamp accepts a time.Time or an RFC 3339 string,
// and nil is NULL.
func Table(schema *arrow.Schema, rows [][]any) Events {
	for i, r := range rows {
		if len(r) != schema.NumFields() {
			return Events{err: fmt.Errorf("volgatest: Table: row %d has %d values, the schema %d fields", i, len(r), schema.NumFields())}
		}
	}
	e := Events{schema: schema, rows: rows}
	// Build once to report type errors at construction time.
	rec, err := e.record(nil)
	if err != nil {
		return Events{err: fmt.Errorf("volgatest: Table: %w", err)}
	}
	rec.Release()
	return e
}

// record builds one Arrow batch of the rows at the given indices (all rows
// in order when idx is nil).
func (e Events) record(idx []int) (arrow.RecordBatch, error) {
	if idx == nil {
		idx = make([]int, len(e.rows))
		for i := range idx {
			idx[i] = i
		}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, e.schema)
	defer b.Release()
	for _, i := range idx {
		for j, f := range e.schema.Fields() {
			if err := values.Append(b.Field(j), e.rows[i][j]); err != nil {
				return nil, fmt.Errorf("row %d, column %q: %w", i, f.Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// toInt, toUint and toFloat are strict on purpose (unlike package
// values): Expect compares a value as an integer or a float only when it
// is one, so that a time or a whole float is never taken for an integer.
// toInt and toUint take every Go integer type (sink.Value gives unsigned
// columns as uint64) whose value fits.
func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		return int64(x), x <= math.MaxInt64
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func toUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if n, ok := toInt(v); ok && n >= 0 {
		return uint64(n), true
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	if n, ok := toInt(v); ok {
		return float64(n), true
	}
	return 0, false
}

// toTime reads a time as package values does (time.Time, RFC 3339, or
// epoch milliseconds).
func toTime(v any) (time.Time, bool) {
	t, err := values.Time(v)
	return t, err == nil
}
