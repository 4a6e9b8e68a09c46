package source

import (
	"math"
	"strings"

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

// observeOrder notes the greatest value of the WithTimeOrder column in
// rec.
func (t *textSource) observeOrder(rec arrow.RecordBatch) {
	col := -1
	for i, f := range rec.Schema().Fields() {
		if strings.EqualFold(f.Name, t.opts.timeOrder) {
			col = i
			break
		}
	}
	if col < 0 {
		return
	}
	hi, ok := maxMillis(rec.Column(col))
	if ok && hi != math.MinInt64 && (!t.seen || hi > t.newest) {
		t.newest, t.seen = hi, true
	}
}

// maxMillis returns the greatest non-null value of an int64 column, or of
// a timestamp column in milliseconds rounded down (math.MinInt64 when all
// are null); false for other types.
func maxMillis(col arrow.Array) (int64, bool) {
	var hi int64 = math.MinInt64
	switch a := col.(type) {
	case *array.Int64:
		for i, v := range a.Int64Values() {
			if v > hi && a.IsValid(i) {
				hi = v
			}
		}
		return hi, true
	case *array.Timestamp:
		for i, v := range a.TimestampValues() {
			if int64(v) > hi && a.IsValid(i) {
				hi = int64(v)
			}
		}
		if hi == math.MinInt64 {
			return hi, true
		}
		return toMillis(hi, a.DataType().(*arrow.TimestampType).Unit), true
	}
	return 0, false
}
