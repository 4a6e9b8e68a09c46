package source

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// memBounds holds, for one column, the least value of every batch from
// each batch on (LowerBound).
type memBounds struct {
	col   string
	ok    bool
	after []int64 // after[i]: least value of batches i..; after[len] = MaxInt64
}

var _ LowerBounder = (*Memory)(nil)

// LowerBound implements LowerBounder: the least value of col in the
// batches not yet wholly returned (the batch being read counts whole),
// computed once from the batches themselves. col must be an int64 or
// timestamp column.
func (m *Memory) LowerBound(col string) (int64, bool) {
	if m.closed {
		return 0, false
	}
	if m.bounds == nil || m.bounds.col != col {
		m.bounds = m.loadBounds(col)
	}
	if !m.bounds.ok {
		return 0, false
	}
	return m.bounds.after[m.batch], true
}

func (m *Memory) loadBounds(col string) *memBounds {
	b := &memBounds{col: col}
	idx := m.schema.FieldIndices(col)
	if len(idx) != 1 {
		return b
	}
	b.after = make([]int64, len(m.recs)+1)
	b.after[len(m.recs)] = math.MaxInt64
	for i := len(m.recs) - 1; i >= 0; i-- {
		lo, ok := minMillis(m.recs[i].Column(idx[0]))
		if !ok {
			return b
		}
		b.after[i] = min(lo, b.after[i+1])
	}
	b.ok = true
	return b
}

// minMillis returns the least non-null value of an int64 column, or of a
// timestamp column in milliseconds rounded down (math.MaxInt64 when all
// are null); false for other types.
func minMillis(col arrow.Array) (int64, bool) {
	switch a := col.(type) {
	case *array.Int64:
		return minValid(a, a.Int64Values()), true
	case *array.Timestamp:
		lo := int64(minValid(a, a.TimestampValues()))
		if lo == math.MaxInt64 {
			return lo, true
		}
		return toMillis(lo, a.DataType().(*arrow.TimestampType).Unit), true
	}
	return 0, false
}

// toMillis converts a timestamp of unit to milliseconds, rounded down.
func toMillis(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1000
	case arrow.Microsecond:
		return floorDiv(v, 1000)
	case arrow.Nanosecond:
		return floorDiv(v, 1000000)
	}
	return v
}

// minValid returns the least of the values at the valid positions of col
// (math.MaxInt64 when none is).
func minValid[T ~int64](col arrow.Array, vals []T) T {
	lo := T(math.MaxInt64)
	for i, v := range vals {
		if v < lo && col.IsValid(i) {
			lo = v
		}
	}
	return lo
}
