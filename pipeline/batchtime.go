package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/watermark"
)

// batchTimes lets a batch run finish rows before the end of its input.
//
// A row's windows end at its own event time, so once no row still to come
// can have an event time at or below t, every row at or below t has its
// final results. A source that knows a lower bound of the event times of
// its unread rows (source.LowerBounder: Parquet row-group statistics)
// gives that t. For OVER windows the rows released at a watermark must
// also be the first rows of the input, since batch output keeps input
// order and each task emits its rows in that order: that holds while the
// input read so far is in event-time order, which batchTimes checks row by
// row. Time-ordered input (the common layout of event logs and of
// training-set exports) is then processed in memory bounded by the windows
// and the row groups rather than by the whole input; other input is
// processed as before, at its end.
//
// Tumbling and hopping windows (GROUP BY) need only the bound: their
// output is ordered by window end, as in a stream, so a window whose end
// is at or below t is final and goes out whatever the order of the rows
// read so far.
type batchTimes struct {
	src  source.LowerBounder
	col  string
	last int64 // the latest event time read; math.MinInt64 before any
	// sorted is false once a row came earlier than one before it; it
	// matters only when ordered is set (OVER windows).
	sorted, ordered bool
	// bound is the last bound the source gave: no row may be below it.
	bound int64
}

// batchTimes returns the tracker of a batch run whose source gives lower
// bounds of event time, or nil.
func (r *runner) batchTimes() *batchTimes {
	if r.opt.Mode != Batch || r.c.timeIdx < 0 || len(r.c.stages) == 0 {
		return nil
	}
	ordered := false
	for _, st := range r.c.stages {
		ordered = ordered || st.group == nil
	}
	lb, ok := r.src.(source.LowerBounder)
	if !ok {
		return nil
	}
	return &batchTimes{src: lb, col: r.c.TimeColumn, last: math.MinInt64, sorted: true, ordered: ordered, bound: math.MinInt64}
}

// observe checks the event times of a batch read (in milliseconds): they
// may not be below the source's last bound, and they end the sorted run
// when out of order.
func (b *batchTimes) observe(ts []int64) error {
	for _, t := range ts {
		if t < b.bound {
			return fmt.Errorf("volga: a row has event time %s, below %s, the least event time the source's metadata promised for the rows left (%T.LowerBound)",
				time.UnixMilli(t).UTC().Format(time.RFC3339Nano), time.UnixMilli(b.bound).UTC().Format(time.RFC3339Nano), b.src)
		}
		if b.sorted {
			if t < b.last {
				b.sorted = false
			}
			b.last = t
		}
	}
	return nil
}

// watermark returns the event time up to which rows are final, or
// watermark.None while there is none.
func (b *batchTimes) watermark() int64 {
	if b.ordered && !b.sorted {
		return watermark.None
	}
	lb, ok := b.src.LowerBound(b.col)
	if !ok {
		return watermark.None
	}
	b.bound = max(b.bound, lb)
	if lb == math.MaxInt64 {
		// Everything is read: the end of the input says it.
		return watermark.None
	}
	return lb - 1
}

// batchReleaseRows is the least number of rows a window task of a batch
// run lets wait before it releases them at a watermark before the end; it
// waits for batchReleasePerKey rows per key it has seen too. Visiting a
// key for few rows costs nearly what visiting it for many does
// (window.BenchmarkBatchRelease: 3 150 ns a row at a third of a row per
// key and release, 574 at 2.6, 505 at 10, 400 all at the end), while the
// rows waiting cost memory: a few rows per key at a time keeps most of the
// CPU of releasing everything at the end, and a bounded fraction of its
// memory.
var batchReleaseRows = 1 << 16

const batchReleasePerKey = 4

// backlogger is a window operator that tells its backlog.
type backlogger interface{ Backlog() (rows, keys int) }

// deferRelease reports whether a task of a batch run should not release
// rows yet at a watermark wm before the end (it releases them at a later
// watermark, or the end).
func (r *runner) deferRelease(op operator, wm int64) bool {
	if r.opt.Mode != Batch || wm == watermark.End {
		return false
	}
	b, ok := op.(backlogger)
	if !ok {
		return false
	}
	rows, keys := b.Backlog()
	return rows < max(batchReleaseRows, batchReleasePerKey*keys)
}
