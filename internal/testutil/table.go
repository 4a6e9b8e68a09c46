// Package testutil holds what the engine's tests share: a brute-force
// reference of the window semantics (SPEC sections 3 and 4), random event
// generators, an arrival shuffler, tolerant comparison with readable diffs,
// and small sources for driving pipelines. It is a normal package so that
// several test packages can import it; nothing outside tests should.
package testutil

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Table is a small row-major table of Go values: int64, float64, string,
// bool, or nil for NULL. Timestamp columns hold int64 values in the
// column's unit. Row order is arrival order.
type Table struct {
	Schema *arrow.Schema
	Rows   [][]any
}

// Col returns the index of the named column; it panics on an unknown name
// (a bug in the test).
func (t *Table) Col(name string) int {
	idx := t.Schema.FieldIndices(name)
	if len(idx) != 1 {
		panic(fmt.Sprintf("testutil: no column %q in %s", name, t.Schema))
	}
	return idx[0]
}

// Value returns row i's value of the named column.
func (t *Table) Value(i int, name string) any { return t.Rows[i][t.Col(name)] }

// Subset returns a table of the listed rows, in the listed order.
func (t *Table) Subset(rows []int) *Table {
	out := &Table{Schema: t.Schema, Rows: make([][]any, len(rows))}
	for k, i := range rows {
		out.Rows[k] = t.Rows[i]
	}
	return out
}

// Filter returns the rows for which keep is true, in order, and their
// indices in t.
func (t *Table) Filter(keep func(row []any) bool) (*Table, []int) {
	var idx []int
	for i, r := range t.Rows {
		if keep(r) {
			idx = append(idx, i)
		}
	}
	return t.Subset(idx), idx
}

// Record builds one Arrow batch of the rows [lo, hi). The caller releases
// it.
func (t *Table) Record(mem memory.Allocator, lo, hi int) arrow.RecordBatch {
	return BuildRecord(mem, t.Schema, t.Rows[lo:hi])
}

// Batches cuts the table into batches of random sizes between 1 and
// maxRows, in row order. The caller releases them.
func (t *Table) Batches(rng *rand.Rand, maxRows int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for lo := 0; lo < len(t.Rows); {
		hi := min(len(t.Rows), lo+1+rng.IntN(maxRows))
		out = append(out, t.Record(memory.DefaultAllocator, lo, hi))
		lo = hi
	}
	return out
}

// BuildRecord builds an Arrow batch of schema from rows of Go values.
// Supported field types: int64, int32 (int64 values), uint64 (uint64
// values), float64, string, bool and timestamps (int64 values in the
// field's unit). The caller releases it.
func BuildRecord(mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			fb := b.Field(c)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(int32(v.(int64)))
			case *array.Uint64Builder:
				fb.Append(v.(uint64))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(int64)))
			default:
				panic(fmt.Sprintf("testutil: unsupported column type %s", schema.Field(c).Type))
			}
		}
	}
	return b.NewRecordBatch()
}

// EventSchema is the schema of generated events: a unique id (the row's
// position in event-time order), two key columns, the event time in epoch
// milliseconds, and one value column of each kind. Every column but id and
// ts may hold NULLs (user_id only when EventConfig.NullKeys).
var EventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// EventConfig shapes generated events.
type EventConfig struct {
	// Rows is the number of events.
	Rows int
	// Users and Merchants are the numbers of distinct key values.
	Users, Merchants int
	// Start is the first event time (ms).
	Start int64
	// StepMs is the unit of event-time gaps; each gap is 0 to MaxSteps
	// units, so frame boundaries are hit exactly.
	StepMs   int64
	MaxSteps int
	// DupRate is the probability that an event repeats the previous
	// event's time (and, half the time, its user): peers for RANGE frames.
	DupRate float64
	// NullRate is the probability of each value column being NULL.
	NullRate float64
	// NullKeys lets user_id and merchant be NULL too (NULL is a key of its
	// own).
	NullKeys bool
}

// DefaultEvents is a mix that exercises peers, NULLs and frame edges.
func DefaultEvents(rows int) EventConfig {
	return EventConfig{Rows: rows, Users: 6, Merchants: 4, Start: 1_700_000_000_000, StepMs: 250, MaxSteps: 8,
		DupRate: 0.25, NullRate: 0.15, NullKeys: true}
}

// Events generates events in event-time order (column id is the row
// number). Amounts are integers in [-50, 200], prices have two decimals,
// categories come from a small set.
func Events(rng *rand.Rand, cfg EventConfig) *Table {
	t := &Table{Schema: EventSchema}
	ts := cfg.Start
	var prevUser any
	maybe := func(v any) any {
		if rng.Float64() < cfg.NullRate {
			return nil
		}
		return v
	}
	for i := range cfg.Rows {
		var user any = int64(1 + rng.IntN(max(cfg.Users, 1)))
		if i > 0 && rng.Float64() < cfg.DupRate {
			if rng.IntN(2) == 0 {
				user = prevUser
			}
		} else if i > 0 {
			ts += cfg.StepMs * int64(rng.IntN(cfg.MaxSteps+1))
		}
		var merchant any = fmt.Sprintf("m%d", rng.IntN(max(cfg.Merchants, 1)))
		if cfg.NullKeys {
			if rng.Float64() < cfg.NullRate/3 {
				user = nil
			}
			if rng.Float64() < cfg.NullRate/3 {
				merchant = nil
			}
		}
		prevUser = user
		t.Rows = append(t.Rows, []any{
			int64(i), user, merchant, ts,
			maybe(int64(rng.IntN(251) - 50)),
			maybe(float64(rng.IntN(200_001)-50_000) / 100),
			maybe([]string{"food", "fuel", "travel", "games", "Food"}[rng.IntN(5)]),
		})
	}
	return t
}

// Shuffle returns an arrival order for t (a permutation of its row
// indices) within an out-of-orderness bound: when row a arrives before row
// b, ts(a) - ts(b) < bound, so with the watermark "newest event time seen
// minus bound" no row is late. Rows with equal key (the keyCols values;
// every row when keyCols is empty) and equal event time keep their
// relative order, as the engine needs to reproduce ROWS frames and
// first/last values. bound <= 0 keeps the order.
func Shuffle(rng *rand.Rand, t *Table, tsCol string, keyCols []string, bound int64) []int {
	n := len(t.Rows)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if bound <= 0 {
		return order
	}
	tc := t.Col(tsCol)
	due := make([]int64, n)
	for i := range due {
		due[i] = t.Rows[i][tc].(int64) + rng.Int64N(bound)
	}
	sort.SliceStable(order, func(x, y int) bool { return due[order[x]] < due[order[y]] })
	// Restore the relative order of rows sharing (key, ts): hand the
	// group's arrival slots to its rows in their original order.
	kc := make([]int, len(keyCols))
	for j, k := range keyCols {
		kc[j] = t.Col(k)
	}
	slots := map[string][]int{}
	var groups []string
	for pos, i := range order {
		g := KeyString(t.Rows[i], kc) + "\x00" + fmt.Sprint(t.Rows[i][tc])
		if _, ok := slots[g]; !ok {
			groups = append(groups, g)
		}
		slots[g] = append(slots[g], pos)
	}
	out := make([]int, n)
	for _, g := range groups {
		pos := slots[g]
		rows := make([]int, len(pos))
		for k, p := range pos {
			rows[k] = order[p]
		}
		slices.Sort(rows)
		for k, p := range pos {
			out[p] = rows[k]
		}
	}
	return out
}

// KeyString encodes the values of cols of row as a map key; NULL is a
// value of its own and differs from every string.
func KeyString(row []any, cols []int) string {
	var sb strings.Builder
	for _, c := range cols {
		if row[c] == nil {
			sb.WriteString("\x01NULL")
		} else {
			fmt.Fprintf(&sb, "\x02%T:%v", row[c], row[c])
		}
		sb.WriteByte(0)
	}
	return sb.String()
}
