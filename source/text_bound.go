package source

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var (
	_ LowerBounder = (*CSV)(nil)
	_ LowerBounder = (*JSONL)(nil)
)

// LowerBound implements LowerBounder for a column that WithTimeOrder
// promised is in order (names compare without case, as SQL's do): the greatest value read so far minus the promised
// lateness, or ok false before the first row, for other columns and
// without the promise.
func (t *textSource) LowerBound(col string) (int64, bool) {
	if t.opts.timeOrder == "" || !strings.EqualFold(col, t.opts.timeOrder) || t.closed {
		return 0, false
	}
	if t.done {
		return math.MaxInt64, true
	}
	return t.boundRead(col)
}

// boundRead is the bound the rows read give for col: the greatest value
// of the WithTimeOrder column minus the lateness, ok false for another
// column or before the first row.
func (t *textSource) boundRead(col string) (int64, bool) {
	if t.opts.timeOrder == "" || !strings.EqualFold(col, t.opts.timeOrder) || !t.seen {
		return 0, false
	}
	if t.newest < math.MinInt64+t.opts.lateMs {
		return math.MinInt64, true
	}
	return t.newest - t.opts.lateMs, true
}

// checkTimeOrder checks that col, the column WithTimeOrder names (""
// for none), is a column of schema (compared without case) of type int64
// or timestamp: a promise about another column could never be kept.
func checkTimeOrder(name string, schema *arrow.Schema, col string) error {
	if col == "" {
		return nil
	}
	for _, f := range schema.Fields() {
		if strings.EqualFold(f.Name, col) {
			if f.Type.ID() != arrow.INT64 && f.Type.ID() != arrow.TIMESTAMP {
				return fmt.Errorf("source: %s: WithTimeOrder(%q): the column is %s; it must be int64 (epoch milliseconds) or a timestamp", name, col, f.Type)
			}
			return nil
		}
	}
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return fmt.Errorf("source: %s: WithTimeOrder(%q): no such column (the input has %s)", name, col, strings.Join(names, ", "))
}

// observeOrder checks the WithTimeOrder column of rec against the
// promise, row by row (no value more than the lateness below the greatest
// value before it), and notes the greatest value. A broken promise is an
// error, with cut the index of the row that broke it.
func (t *textSource) observeOrder(rec arrow.RecordBatch) (cut int, err error) {
	col := -1
	for i, f := range rec.Schema().Fields() {
		if strings.EqualFold(f.Name, t.opts.timeOrder) {
			col = i
			break
		}
	}
	if col < 0 {
		return 0, nil
	}
	c := rec.Column(col)
	var millis func(i int) int64
	switch a := c.(type) {
	case *array.Int64:
		millis = a.Value
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		millis = func(i int) int64 { return toMillis(int64(a.Value(i)), unit) }
	default:
		return 0, nil
	}
	for i := range c.Len() {
		if c.IsNull(i) {
			continue
		}
		ms := millis(i)
		if t.seen && ms < t.newest-t.opts.lateMs {
			return i, fmt.Errorf("source: %s: %s = %s is %s below the newest value before it, %s: more than the %s of lateness promised (WithTimeOrder)",
				t.name, rec.Schema().Field(col).Name, fmtMillis(ms), time.Duration(t.newest-ms)*time.Millisecond,
				fmtMillis(t.newest), time.Duration(t.opts.lateMs)*time.Millisecond)
		}
		if !t.seen || ms > t.newest {
			t.newest, t.seen = ms, true
		}
	}
	return 0, nil
}

// fmtMillis formats milliseconds since the epoch as an RFC 3339 time.
func fmtMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
