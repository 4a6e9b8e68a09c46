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
	if !t.seen {
		return 0, false
	}
	if t.newest < math.MinInt64+t.opts.lateMs {
		return math.MinInt64, true
	}
	return t.newest - t.opts.lateMs, true
}

// observeOrder checks the WithTimeOrder column of rec against the
// promise, row by row (no value more than the lateness below the greatest
// value before it), and notes the greatest value.
func (t *textSource) observeOrder(rec arrow.RecordBatch) error {
	col := -1
	for i, f := range rec.Schema().Fields() {
		if strings.EqualFold(f.Name, t.opts.timeOrder) {
			col = i
			break
		}
	}
	if col < 0 {
		return nil
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
		return nil
	}
	for i := range c.Len() {
		if c.IsNull(i) {
			continue
		}
		ms := millis(i)
		if t.seen && ms < t.newest-t.opts.lateMs {
			return fmt.Errorf("source: %s: %s = %s is %s below the newest value before it, %s: more than the %s of lateness promised (WithTimeOrder)",
				t.name, rec.Schema().Field(col).Name, fmtMillis(ms), time.Duration(t.newest-ms)*time.Millisecond,
				fmtMillis(t.newest), time.Duration(t.opts.lateMs)*time.Millisecond)
		}
		if !t.seen || ms > t.newest {
			t.newest, t.seen = ms, true
		}
	}
	return nil
}

// fmtMillis formats milliseconds since the epoch as an RFC 3339 time.
func fmtMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
