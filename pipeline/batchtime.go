package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
// order and each task emits its rows in that order: the watermark is the
// greatest t below the bound such that the rows read so far at or below t
// are a prefix of them. batchTimes finds it from the rows' event times as
// they are read: a row earlier than one before it (its time a, the
// greatest time before it b) rules out every t in [a, b), which would
// release it and not that earlier row. Time-ordered input (the common
// layout of event logs and of training-set exports) rules out nothing,
// and input whose disorder is local (events written in arrival order,
// each at most some seconds late) rules out only times near the newest:
// both are processed in memory bounded by the windows, the row groups and
// the disorder rather than by the whole input. Input out of order
// throughout (say, sorted by key) rules out everything up to its end, and
// is processed there.
//
// Tumbling and hopping windows (GROUP BY) need only the bound: their
// output is ordered by window end, as in a stream, so a window whose end
// is at or below t is final and goes out whatever the order of the rows
// read so far.
type batchTimes struct {
	src source.LowerBounder
	col string
	// ordered is set when the run has OVER windows, which need the rows
	// released to be a prefix of the input.
	ordered bool
	// newest is the greatest event time read; math.MinInt64 before any.
	newest int64
	// gaps are the watermarks ruled out: disjoint, ascending, not
	// adjacent intervals [lo, hi); those wholly at or below wm are dropped.
	gaps []timeGap
	// bound is the last bound the source gave: no row may be below it.
	bound int64
	// wm is the last watermark returned (math.MinInt64 before any).
	wm int64
	// marks are, for OVER windows, the rows read whose event time was
	// newer than every one before (sequence number and time), from the
	// first above wm: the first row out of a watermark's prefix is the
	// first mark above it (see seqBound). Pairs are merged when there are
	// more than maxMarks (see observe).
	marks []seqMark
	// nextSeq is the sequence number after the last row read.
	nextSeq int64
	// seq is the sequence number of the first row above wm: every row
	// before it is at or below wm.
	seq int64
	// sinceWM counts the rows read since the last watermark returned;
	// bounded is set once the source gave a bound.
	sinceWM int64
	bounded bool
	// blind is set when the run resumed from a checkpoint that did not
	// record the times read before it: for OVER windows no watermark is
	// then known to release a prefix, until the end.
	blind bool
}

// batchTimesState is a batchTimes in a checkpoint (the reader's part):
// the times the rows read before it rule out hold after it, for rows
// released after the checkpoint must still be a prefix of the input.
type batchTimesState struct {
	Newest  int64      `json:"newest"`
	Gaps    [][2]int64 `json:"gaps,omitempty"`  // [lo, hi) each
	Marks   [][2]int64 `json:"marks,omitempty"` // [seq, ts] each
	Bound   int64      `json:"bound"`
	WM      int64      `json:"wm"`
	Seq     int64      `json:"seq"`
	NextSeq int64      `json:"next_seq"`
}

// state returns b's checkpoint state.
func (b *batchTimes) state() *batchTimesState {
	st := &batchTimesState{Newest: b.newest, Bound: b.bound, WM: b.wm, Seq: b.seq, NextSeq: b.nextSeq}
	for _, g := range b.gaps {
		st.Gaps = append(st.Gaps, [2]int64{g.lo, g.hi})
	}
	for _, m := range b.marks {
		st.Marks = append(st.Marks, [2]int64{m.seq, m.ts})
	}
	return st
}

// restore resumes b from a checkpoint's state, nil when the checkpoint
// has none (it was taken by an earlier version).
func (b *batchTimes) restore(st *batchTimesState) {
	if st == nil {
		b.blind = b.ordered
		return
	}
	b.newest, b.bound, b.wm, b.seq, b.nextSeq = st.Newest, st.Bound, st.WM, st.Seq, st.NextSeq
	b.gaps = b.gaps[:0]
	for _, g := range st.Gaps {
		b.gaps = append(b.gaps, timeGap{g[0], g[1]})
	}
	b.marks = b.marks[:0]
	for _, m := range st.Marks {
		b.marks = append(b.marks, seqMark{m[0], m[1]})
	}
}

// timeGap is an interval [lo, hi) of event times no watermark may be in.
type timeGap struct{ lo, hi int64 }

// seqMark is a row read with an event time newer than every row's before
// it.
type seqMark struct{ seq, ts int64 }

// maxMarks is the most marks a batchTimes keeps: past it, adjacent pairs
// merge into one with the first's sequence number and the second's time,
// which gives a first row out of a prefix at or before the true one (a
// lower bound, still safe for the merger).
const maxMarks = 4096

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
	return newBatchTimes(lb, r.c.TimeColumn, ordered)
}

func newBatchTimes(src source.LowerBounder, col string, ordered bool) *batchTimes {
	return &batchTimes{src: src, col: col, ordered: ordered, newest: math.MinInt64, bound: math.MinInt64, wm: math.MinInt64}
}

// held returns how many rows were read since the last watermark, and
// whether they hold OVER-window rows back: the source gives bounds, yet
// none let rows go (its row groups overlap in time, or the rows read are
// out of time order).
func (b *batchTimes) held() (rows int64, ok bool) {
	return b.sinceWM, b.ordered && b.bounded && !b.blind
}

// observe checks the event times of a batch read (in milliseconds, the
// rows' sequence numbers in seqs): they may not be below the source's last
// bound. For OVER windows it notes the watermarks a row earlier than one
// before it rules out, and the rows newer than every one before.
func (b *batchTimes) observe(ts, seqs []int64) error {
	for i, t := range ts {
		if t < b.bound {
			return fmt.Errorf("volga: a row has event time %s, below %s, the least event time the source promised for the rows left (%T.LowerBound: from its statistics, or source.WithTimeOrder)",
				time.UnixMilli(t).UTC().Format(time.RFC3339Nano), time.UnixMilli(b.bound).UTC().Format(time.RFC3339Nano), b.src)
		}
		switch {
		case !b.ordered:
			b.newest = max(b.newest, t)
		case t > b.newest:
			b.newest = t
			b.marks = append(b.marks, seqMark{seqs[i], t})
		case t < b.newest:
			b.ruleOut(t, b.newest)
		}
	}
	b.sinceWM += int64(len(ts))
	if len(seqs) > 0 {
		b.nextSeq = seqs[len(seqs)-1] + 1
	}
	if len(b.marks) > maxMarks {
		k := 0
		for i := 0; i+1 < len(b.marks); i += 2 {
			b.marks[k] = seqMark{b.marks[i].seq, b.marks[i+1].ts}
			k++
		}
		if len(b.marks)%2 == 1 {
			b.marks[k] = b.marks[len(b.marks)-1]
			k++
		}
		b.marks = b.marks[:k]
	}
	return nil
}

// seqBound returns the sequence number of the first row read above the
// last watermark watermark returned (the next row's when there is none):
// the rows before it are the prefix of the input that watermark released.
// (After marks were merged it may be earlier than that row.)
func (b *batchTimes) seqBound() int64 { return b.seq }

// ruleOut adds the gap [lo, hi), merged with those it overlaps or
// touches. hi is the newest time read, at or above every gap's end, so
// the gaps it can merge with are the last ones.
func (b *batchTimes) ruleOut(lo, hi int64) {
	for n := len(b.gaps); n > 0 && b.gaps[n-1].hi >= lo; n-- {
		lo = min(lo, b.gaps[n-1].lo)
		b.gaps = b.gaps[:n-1]
	}
	b.gaps = append(b.gaps, timeGap{lo, hi})
}

// watermark returns the event time up to which rows are final, or
// watermark.None while there is none.
func (b *batchTimes) watermark() int64 {
	lb, ok := b.src.LowerBound(b.col)
	if !ok {
		return watermark.None
	}
	b.bound = max(b.bound, lb)
	b.bounded = true
	if b.bound == math.MinInt64 {
		return watermark.None // nothing is below it
	}
	if b.bound == math.MaxInt64 || b.blind {
		// Everything is read (or, blind, the rows before a checkpoint
		// are unknown): the end of the input says it.
		return watermark.None
	}
	wm := b.bound - 1
	// The gaps are disjoint and not adjacent: below the one wm falls in
	// (the last that starts at or below it) is a time no gap holds.
	i, _ := slices.BinarySearchFunc(b.gaps, wm, func(g timeGap, t int64) int { return cmp.Compare(g.lo, t+1) })
	if i > 0 && b.gaps[i-1].hi > wm {
		wm = b.gaps[i-1].lo - 1
	}
	if wm <= b.wm {
		return watermark.None
	}
	b.wm = wm
	b.sinceWM = 0
	// Gaps wholly at or below wm rule out nothing to come: every row
	// still to come is above it.
	k := 0
	for k < len(b.gaps) && b.gaps[k].hi <= wm+1 {
		k++
	}
	if k > 0 {
		b.gaps = append(b.gaps[:0], b.gaps[k:]...)
	}
	k = 0
	for k < len(b.marks) && b.marks[k].ts <= wm {
		k++
	}
	b.marks = append(b.marks[:0], b.marks[k:]...)
	b.seq = b.nextSeq
	if len(b.marks) > 0 {
		b.seq = b.marks[0].seq
	}
	return wm
}

// heldWarnRows is how many rows a batch run with OVER windows reads
// without releasing any before it says so (once).
var heldWarnRows int64 = 1 << 20

// batchReleaseRows is the least number of rows a window task of a batch
// run lets wait before it releases them at a watermark before the end; it
// waits for a few rows per key it has seen too (releasePerKey). Visiting
// a key for few rows costs nearly what visiting it for many does
// (window.BenchmarkBatchRelease: 3 150 ns a row at a third of a row per
// key and release, 574 at 2.6, 505 at 10, 400 all at the end), while the
// rows waiting cost memory: a few rows per key at a time keeps most of the
// CPU of releasing everything at the end, and a bounded fraction of its
// memory.
var batchReleaseRows = 1 << 16

// The rows per key a window task of a batch run lets wait: releaseSmall
// while its keys' windows hold fewer than largeState rows on average,
// releaseLarge from then on, and releasePerValue from the start when a
// window keeps an entry per distinct value (window.Operator.PerValueState:
// topn_frequency, top1_ratio, the *_cate family ...). The rows waiting and
// their results (built all at once at the release) cost the same whatever
// the state; a visit costs more the more the state holds, and far more
// when it holds hash tables and orders of their own. features-4 (7-day
// frames of sums, counts, an average and a maximum, about 23 rows a key
// at 10 M events): peak RSS 507-523 MB waiting for 3 rows a key against
// 524-587 MB for 4 (six pairs; DuckDB 545-554), for 6 % more time. ml-3
// (topn_frequency, sum_cate, top1_ratio; 30-day frames, 100 rows a key at
// the end): waiting for 12 rows a key from the start takes 15.4 s against
// 18.2-19.0 (user CPU 24.4 against 30.3 s) for 3.5-3.8 GB of peak RSS
// against 3.1-3.2; 8 rows a key 15.7-16.2 s; 12 rows a key only once the
// keys held 32 rows (a third of the run) 16.2-17.9 s (2026-11-30).
//
// The keys counted are those the operator holds (window.Operator.KeysHeld),
// as when the figures above were measured. A release visits only the keys
// with rows waiting, but counting those alone lets a few hot keys make
// the others look ready: with one key in 40 % of the rows (8 M events,
// two tasks) releases came a third more often, for 4-5 % more CPU.
// Waiting pays only while the keys gather rows. When keys come and go
// (sessions, devices, requests: a key's few rows, then never again) they
// never do: the rows waiting would grow with the input while each key
// keeps its few (and, counted among the keys held until forgotten, they
// would never seem to have enough), and quiet keys are let go only by
// releases. So once the rows waiting have doubled since the wait began
// (or since the last such doubling), if the keys with rows waiting
// (window.Operator.Backlog) have grown keyGrowthStop times and four
// fifths of that growth at least is keys the operator created meanwhile
// (window.Operator.KeysCreated), the task releases. Keys spread evenly
// do not look so once each key has been seen: their rows go to keys that
// exist already (and at batchReleaseRows the keys grow less than that
// anyway as the rows double: 1.3 times at features-4's 65 536 rows over
// 50 000 keys a task). A run over 10 times as many keys releases early
// only at the start of its first pass over them (features-4 over 1 M
// users: one early release, 4.15-4.31 s against 4.11-4.28 without the
// rule and the release together below; asking that only half the growth
// be new keys, five early releases a task, 4.30-4.55 s). A batch run over
// 8 M events in sessions of about 2.5 (3 M keys, 1-minute frames) held
// every row and key to the end: peak RSS 3.0 GB in 3.8-6.2 s; now 0.33
// GB in 3.3-3.5 s, 2.8 M keys forgotten on the way (2026-12-01).
// Whatever the keys,
// the wait stops at releaseMaxRows rows a task, and at perValueRows for
// per-value windows (about 250 MB of rows and results waiting, at ml-3's
// 250 bytes a row): with a million keys a task, 12 rows a key would be
// gigabytes.
const (
	releaseSmall    = 3
	releaseLarge    = 4
	releasePerValue = 12
	largeState      = 32
)

// keyGrowthStop is how many times the keys with rows waiting must grow
// as the rows waiting double for a task to stop waiting: keys spread
// evenly grow 1 + e^-x times (x rows a key), sessions of a few rows 2
// times.
const keyGrowthStop = 1.8

// releaseMaxRows and perValueRows are variables for tests.
var (
	releaseMaxRows = 1 << 22
	perValueRows   = 1 << 20
)

// releaseWait is what a window task of a batch run noted of the rows
// waiting since its last release: the rows and keys waiting, and the keys
// created, at the start of the current doubling (rows 0: none noted).
type releaseWait struct {
	rows, keys int
	created    int64
}

// keysKeepComing reports whether, as the rows waiting doubled since w's
// note, the keys with rows waiting grew keyGrowthStop times, four fifths
// of it at least by keys created meanwhile; it notes rows and keys at
// each doubling.
func (w *releaseWait) keysKeepComing(rows, keys int, created int64) bool {
	if w.rows == 0 || rows < w.rows {
		w.rows, w.keys, w.created = max(rows, 1), keys, created
		return false
	}
	if rows < 2*w.rows {
		return false
	}
	grown := keys - w.keys
	if float64(keys) >= keyGrowthStop*float64(w.keys) && 5*(created-w.created) >= 4*int64(grown) {
		return true
	}
	w.rows, w.keys, w.created = rows, keys, created
	return false
}

// releasePerKey returns the rows per key a task without per-value
// windows lets wait, given the mean number of rows its keys' windows
// hold.
func releasePerKey(retained float64) int {
	if retained < largeState {
		return releaseSmall
	}
	return releaseLarge
}

// backlogger is a window operator that tells its backlog.
type backlogger interface {
	Backlog() (rows, keys int)
	KeysHeld() int
	KeysCreated() int64
	RetainedPerKey() float64
	PerValueState() bool
}

// deferRelease reports whether a task of a batch run should not release
// rows yet at a watermark wm before the end (it releases them at a later
// watermark, or the end). w is what the task noted of its wait since it
// last released (which the caller resets).
func (r *runner) deferRelease(op operator, wm int64, w *releaseWait) bool {
	if r.opt.Mode != Batch || wm == watermark.End {
		return false
	}
	b, ok := op.(backlogger)
	if !ok {
		return false
	}
	rows, pending := b.Backlog()
	perValue := b.PerValueState()
	if rows >= releaseMaxRows || perValue && rows >= perValueRows {
		return false
	}
	if rows < batchReleaseRows {
		return true
	}
	if w.keysKeepComing(rows, pending, b.KeysCreated()) {
		return false
	}
	keys := b.KeysHeld()
	if rows < releaseSmall*keys {
		return true
	}
	if perValue {
		return rows < releasePerValue*keys
	}
	// Only now the sample: most watermarks find too few rows waiting.
	return rows < releasePerKey(b.RetainedPerKey())*keys
}
