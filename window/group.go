package window

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/prefetch"
)

// GroupConfig describes a tumbling or hopping window operator: GROUP BY
// key, tumble(ts, size) or hop(ts, slide, size).
type GroupConfig struct {
	// TsCol and SeqCol are the event-time (int64 ms) and arrival sequence
	// columns of the input.
	TsCol, SeqCol int
	// KeyCols are the grouping key columns.
	KeyCols []int
	// ArgCols are the aggregate argument columns (Rows.Cols positions).
	ArgCols []int
	// Aggs are the aggregates of every window.
	Aggs []agg.Func
	// ResultNames name the aggregate columns.
	ResultNames []string
	// SizeMs is the window length; SlideMs the distance between window
	// starts (== SizeMs for tumble). Windows are aligned to the Unix epoch.
	SizeMs, SlideMs int64
	// TimeType is the type of window_start and window_end: timestamp[ms]
	// (with the event-time column's zone) or int64 milliseconds.
	TimeType arrow.DataType
	// AllowedLateness applies late rows to windows that have not been
	// emitted yet when they are no more than this far (ms) behind the
	// watermark. Rows then enter their windows (all but those emitted
	// at once) only that far behind the watermark, so that a window sees
	// its rows in (event time, arrival) order whatever order they came
	// in, as first_value, last_value, ew_avg and drawdown need.
	AllowedLateness int64
	// Mem allocates output arrays; nil means the Go allocator.
	Mem memory.Allocator
	// Clustered says the input comes clustered by (some of) the keys, and
	// the caller will say where each key's rows end (FinishBefore): the
	// windows then go out key by key, keys in the order of their first
	// rows and each key's windows by start, and the sequence column of
	// the output is the sequence number of the key's first row.
	Clustered bool
}

// Group output layout: the first two columns carry the event time and
// sequence the engine orders output by (the window's last millisecond, and
// the arrival sequence of its first row), then the key columns,
// window_start, window_end and the aggregates.
const (
	GroupTsCol  = 0
	GroupSeqCol = 1
)

// GroupOperator is the tumbling/hopping window operator. It keeps one set
// of aggregate states per key and window, and emits a window once the
// watermark shows it complete (watermark >= end-1): one row per key and
// window that received at least one row. It is not safe for concurrent use.
type GroupOperator struct {
	cfg     GroupConfig
	mem     memory.Allocator
	in, out *arrow.Schema
	keys    *keyIndex
	keyVals []agg.Column // value of each key column, indexed by key id
	// wins holds the open windows by start: a start's windows are found
	// by key id in a table of their own (winTable), and emitted and
	// dropped together (one map of every key and start, churned by a
	// window created and deleted a row, was a third of a batch run's
	// CPU).
	wins map[int64]*startWins
	// hint sizes a new start's map: the number of windows of the last
	// start emitted.
	hint   int
	starts startHeap
	wm     int64
	stats  Stats
	// Rows wait for the watermark before they enter window states, so
	// that every state sees its rows in (event time, arrival) order.
	pend   []groupPend
	held   map[int32]*groupHeld
	nextID int32
	// firstSeq and lastSeq are the sequence numbers of each key's first
	// and last row pushed, by key id (Clustered only).
	firstSeq, lastSeq []int64
	// spare are emitted windows, their states reset, for new windows
	// (at most spareMax): making them, and collecting them once
	// emitted, was a fifth of a batch GROUP BY's CPU. spareStarts are
	// emptied starts, their tables and lists cleared, for new starts.
	spare       []*groupWin
	spareStarts []*startWins
	// runWin holds the states emitRuns aggregates each window in, and
	// spans is its scratch: each window's rows in rel.
	runWin *groupWin
	spans  [][2]int32
	// rel and fire are advance's scratch: the rows released and the
	// windows emitted.
	rel  []groupPend
	fire []fired
	// compactAt is the number of keys at which maybeCompactKeys next
	// counts the live ones; forgotten counts the keys it dropped.
	compactAt int
	forgotten int64
	// pub is what Stats reports, published after each change.
	pub groupStats
	// Input clustered by key (FinishBefore): every row before finBelow is
	// of a key whose rows have all come (a key whose last row is before
	// it may not come again); finDone is finBelow at the last Advance.
	finBelow, finDone int64
}

// fired is a window to emit.
type fired struct {
	start  int64
	minSeq int64
	w      *groupWin
	key    int32
}

type groupPend struct {
	ts, seq int64
	key     int32
	batch   int32
	row     int32
}

// groupHeld is the argument columns of an input batch with pending rows.
type groupHeld struct {
	rows agg.Rows
	left int
}

// groupKey identifies a window of a key (in checkpoints).
type groupKey struct {
	key   int64
	start int64
}

// winRef is a window and its key's id.
type winRef struct {
	w   *groupWin
	key int32
}

// startWins are the open windows of one start: by key id, and in the
// order they were opened.
type startWins struct {
	byKey winTable
	list  []winRef
	// free are windows made ahead, with their states, for the start's
	// next keys: a start's windows are made a chunk at a time (one
	// allocation for the windows and one for each aggregate's states,
	// rather than one for each: a window was opened for nearly every row
	// of an hourly GROUP BY of users, and its allocations were a fifth of
	// the run's CPU) and dropped together with the start.
	free []groupWin
	// chunk is the number of windows made the last time.
	chunk int
}

// spareMax bounds GroupOperator.spare: the windows of a start or two of
// an hourly GROUP BY of some ten thousand keys an hour.
const spareMax = 1 << 15

// Windows made ahead for a start: minWinChunk first, then twice the last
// chunk, up to maxWinChunk (at most that many windows and their states
// made and unused for each open start).
const (
	minWinChunk = 16
	maxWinChunk = 64
)

// win returns key id's window at start, opening it (first row's
// sequence seq) if needed.
func (g *GroupOperator) win(id int32, start, seq int64) *groupWin {
	sw := g.wins[start]
	if sw == nil {
		if n := len(g.spareStarts); n > 0 {
			sw = g.spareStarts[n-1]
			g.spareStarts = g.spareStarts[:n-1]
		} else {
			sw = &startWins{byKey: newWinTable(g.hint), list: make([]winRef, 0, g.hint)}
		}
		g.wins[start] = sw
		heap.Push(&g.starts, start)
	}
	if w := sw.byKey.get(id); w != nil {
		return w
	}
	var w *groupWin
	if n := len(g.spare); n > 0 {
		w = g.spare[n-1]
		g.spare = g.spare[:n-1]
	} else {
		if len(sw.free) == 0 {
			g.makeWins(sw)
		}
		w = &sw.free[0]
		sw.free = sw.free[1:]
	}
	w.minSeq = seq
	sw.byKey.put(id, w)
	sw.list = append(sw.list, winRef{w: w, key: id})
	return w
}

// makeWins makes the next chunk of sw's windows.
func (g *GroupOperator) makeWins(sw *startWins) {
	n := min(max(sw.chunk*2, minWinChunk), maxWinChunk)
	sw.chunk = n
	sw.free = g.newWins(n)
}

// newWins returns n windows with fresh aggregate states, made together
// (agg.NewStates).
func (g *GroupOperator) newWins(n int) []groupWin {
	ws := make([]groupWin, n)
	na := len(g.cfg.Aggs)
	var states []agg.State
	if na > len(ws[0].inline) {
		states = make([]agg.State, n*na)
	}
	for i := range ws {
		if states == nil {
			ws[i].states = ws[i].inline[:na]
		} else {
			ws[i].states = states[i*na : (i+1)*na : (i+1)*na]
		}
	}
	made := make([]agg.State, n)
	for a, f := range g.cfg.Aggs {
		agg.NewStates(f, made)
		for i := range ws {
			ws[i].states[a] = made[i]
		}
	}
	return ws
}

// newWin returns a window with fresh aggregate states (a restored one).
func (g *GroupOperator) newWin(minSeq int64) *groupWin {
	w := &g.newWins(1)[0]
	w.minSeq = minSeq
	return w
}

type groupWin struct {
	states []agg.State
	minSeq int64
	// inline holds the states when there are few (no slice of their
	// own).
	inline [4]agg.State
}

// NewGroup returns a GroupOperator for input batches of schema in.
func NewGroup(cfg GroupConfig, in *arrow.Schema) (*GroupOperator, error) {
	if cfg.SizeMs <= 0 || cfg.SlideMs <= 0 {
		return nil, errors.New("window: tumble/hop sizes must be positive")
	}
	if cfg.SlideMs > cfg.SizeMs {
		return nil, fmt.Errorf("window: hop slide %dms is longer than its size %dms: rows between windows would be lost", cfg.SlideMs, cfg.SizeMs)
	}
	if cfg.TimeType == nil {
		cfg.TimeType = arrow.PrimitiveTypes.Int64
	}
	fields := []arrow.Field{
		{Name: "__volga_ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "__volga_seq", Type: arrow.PrimitiveTypes.Int64},
	}
	keyVals := make([]agg.Column, len(cfg.KeyCols))
	for j, c := range cfg.KeyCols {
		f := in.Field(c)
		col, err := agg.NewColumn(f.Type)
		if err != nil {
			return nil, fmt.Errorf("window: GROUP BY column %q: %w", f.Name, err)
		}
		keyVals[j] = col
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	fields = append(fields,
		arrow.Field{Name: "window_start", Type: cfg.TimeType},
		arrow.Field{Name: "window_end", Type: cfg.TimeType})
	for k, f := range cfg.Aggs {
		name := fmt.Sprintf("agg%d", k)
		if k < len(cfg.ResultNames) {
			name = cfg.ResultNames[k]
		}
		fields = append(fields, arrow.Field{Name: name, Type: f.ResultType(), Nullable: true})
	}
	mem := cfg.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &GroupOperator{cfg: cfg, mem: mem, in: in, out: arrow.NewSchema(fields, nil),
		keys: newKeyIndex(cfg.KeyCols), keyVals: keyVals, wins: map[int64]*startWins{},
		wm: None, held: map[int32]*groupHeld{}}, nil
}

// OutSchema is the schema of emitted batches.
func (g *GroupOperator) OutSchema() *arrow.Schema { return g.out }

// Late returns the counts of late rows dropped and applied so far.
func (g *GroupOperator) Late() (dropped, applied int64) {
	return g.stats.LateDropped, g.stats.LateApplied
}

// groupStats holds what Stats reports of a GroupOperator: copied by the
// goroutine that runs the operator after each call that changes it, and
// read from others (metrics scrapes).
type groupStats struct {
	rowsIn, rowsOut, lateDropped, lateApplied atomic.Int64
	keys, pending, forgotten                  atomic.Int64
}

// publish copies g's counters for Stats.
func (g *GroupOperator) publish() {
	p := &g.pub
	p.rowsIn.Store(g.stats.RowsIn)
	p.rowsOut.Store(g.stats.RowsOut)
	p.lateDropped.Store(g.stats.LateDropped)
	p.lateApplied.Store(g.stats.LateApplied)
	p.keys.Store(int64(g.keys.n))
	p.pending.Store(int64(len(g.pend)))
	p.forgotten.Store(g.forgotten)
}

// Stats returns the operator's counters: rows in and out, late rows, the
// keys held (Keys; all in memory: ResidentKeys), the rows waiting for the
// watermark (Pending) and the keys forgotten (ForgottenKeys). Unlike the
// operator's other methods it may be called from any goroutine: it reads
// what the last Push, Advance or Restore left.
func (g *GroupOperator) Stats() Stats {
	p := &g.pub
	keys := int(p.keys.Load())
	return Stats{
		RowsIn: p.rowsIn.Load(), RowsOut: p.rowsOut.Load(),
		LateDropped: p.lateDropped.Load(), LateApplied: p.lateApplied.Load(),
		Keys: keys, ResidentKeys: keys, Pending: int(p.pending.Load()),
		ForgottenKeys: p.forgotten.Load(),
	}
}

// Close releases nothing held across calls; it is here for symmetry with
// Operator.
func (g *GroupOperator) Close() {}

// groupAhead is how many rows ahead advance prefetches the slot of a
// row's window in its start's table.
const groupAhead = 8

// warmStart caches the start warmWin looked up last (rows come in time
// order, so mostly that of the row before).
type warmStart struct {
	start int64
	sw    *startWins
	ok    bool
}

// warmWin prefetches the slot where the window of p's key at its latest
// start is or would go (nearly every row of an hourly GROUP BY of users
// opens a window, and its lookup missed the cache: 0.46 of group-1's 4.4
// CPU s were the table's).
func (g *GroupOperator) warmWin(c *warmStart, p groupPend) {
	start := floorDiv(p.ts, g.cfg.SlideMs) * g.cfg.SlideMs
	if !c.ok || c.start != start || c.sw == nil {
		c.start, c.sw, c.ok = start, g.wins[start], true
	}
	if sw := c.sw; sw != nil && len(sw.byKey.slots) > 0 {
		prefetch.Of(&sw.byKey.slots[sw.byKey.home(p.key)])
	}
}

// windowsOf calls fn with the start of every window containing ts (a
// placeable time), latest first.
func (g *GroupOperator) windowsOf(ts int64, fn func(start int64)) {
	back, backLast := g.backs(ts)
	for ; ; back += g.cfg.SlideMs {
		fn(ts - back)
		if back >= backLast {
			return
		}
	}
}

// backs returns how far ts is past the start of the latest and of the
// earliest window containing it: the starts are ts-back for back from
// first to last by the slide. Counted back from ts rather than compared
// with ts-size, these never overflow: the distances are in [0, size)
// (the loop over starts down to ts-size ran forever, making windows,
// when ts-size or a start wrapped around the bottom of int64).
func (g *GroupOperator) backs(ts int64) (first, last int64) {
	slide, size := g.cfg.SlideMs, g.cfg.SizeMs
	first = ts - floorDiv(ts, slide)*slide // exact even if the product wraps
	if size == slide {
		return first, first // tumble
	}
	return first, first + (size-1-first)/slide*slide
}

// placeable reports whether every window containing ts starts and ends
// within int64 milliseconds (its start and end are output values).
func (g *GroupOperator) placeable(ts int64) bool {
	if size := g.cfg.SizeMs; ts >= math.MinInt64+size && ts <= math.MaxInt64-size {
		return true // every time the engine places (±2^62) with any window up to 2^62 ms
	}
	first, last := g.backs(ts)
	return ts >= math.MinInt64+last && ts-first <= math.MaxInt64-g.cfg.SizeMs
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Push adds a batch. Rows at or behind the watermark are late: applied to
// the windows not yet emitted when within the allowed lateness, else
// returned in late. Push emits nothing.
func (g *GroupOperator) Push(rec arrow.RecordBatch) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	return g.pushRows(rec, nil)
}

// PushRows is Push of the rows rows of rec only (increasing row numbers),
// for a caller that sends one batch to several operators, each taking
// its keys' rows: nothing else of rec is copied or kept. Late rows are
// returned as rows of rec.
func (g *GroupOperator) PushRows(rec arrow.RecordBatch, rows []int32) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	if rows == nil {
		rows = []int32{}
	}
	return g.pushRows(rec, rows)
}

// pushRows pushes the rows sel of rec, all of them when sel is nil. The
// rows held are numbered by their position in sel.
func (g *GroupOperator) pushRows(rec arrow.RecordBatch, sel []int32) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	defer g.publish()
	n := int(rec.NumRows())
	if sel != nil && len(sel) == n {
		sel = nil // increasing: every row
	}
	if sel != nil {
		n = len(sel)
	}
	if n == 0 {
		return nil, nil, nil
	}
	recRow := func(j int) int { return j }
	if sel != nil {
		recRow = func(j int) int { return int(sel[j]) }
	}
	g.stats.RowsIn += int64(n)
	tsArr, ok := rec.Column(g.cfg.TsCol).(*array.Int64)
	if !ok || tsArr.NullN() > 0 {
		return nil, nil, errors.New("window: event-time column must be non-NULL int64")
	}
	ts := tsArr.Int64Values()
	for j := range n {
		if t := ts[recRow(j)]; !g.placeable(t) {
			g.stats.RowsIn -= int64(n)
			return nil, nil, fmt.Errorf("window: event time %dms is too near the limits of int64 for windows of %dms every %dms: a window of it would start or end beyond them", t, g.cfg.SizeMs, g.cfg.SlideMs)
		}
	}
	seq := rec.Column(g.cfg.SeqCol).(*array.Int64).Int64Values()
	ids, err := g.keys.internRows(rec, sel, func(id int32, row int) {
		for j, c := range g.cfg.KeyCols {
			g.keyVals[j].AppendArrow(rec.Column(c), []int32{int32(row)})
		}
		if g.cfg.Clustered {
			g.firstSeq = append(g.firstSeq, seq[row])
			g.lastSeq = append(g.lastSeq, seq[row])
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if g.cfg.Clustered {
		for j, id := range ids {
			i := recRow(j)
			if g.lastSeq[id] < g.finBelow {
				return nil, nil, fmt.Errorf("%w: the row with sequence number %d is of a key whose rows all came before row %d", ErrNotClustered, seq[i], g.finBelow)
			}
			g.lastSeq[id] = max(g.lastSeq[id], seq[i])
		}
	}
	// The rows' times and arguments are copied: rec is the caller's once
	// Push returns.
	rows := agg.Rows{Ts: make([]int64, n), Cols: make([]agg.Column, len(g.cfg.ArgCols))}
	for j := range rows.Ts {
		rows.Ts[j] = ts[recRow(j)]
	}
	for j, c := range g.cfg.ArgCols {
		col, err := agg.NewColumn(g.in.Field(c).Type)
		if err != nil {
			return nil, nil, fmt.Errorf("window: argument column %q: %w", g.in.Field(c).Name, err)
		}
		col.AppendArrow(rec.Column(c), sel)
		rows.Cols[j] = col
	}
	var lateRows []int32
	// A number still held is passed over: the numbers wrap around after
	// 2^32 batches, and restored meta may say any next number (one of a
	// batch held, whose waiting rows would then be read from this one).
	id := g.nextID
	for g.held[id] != nil {
		id++
	}
	g.nextID = id + 1
	hb := &groupHeld{rows: rows}
	for j := 0; j < n; j++ {
		i := recRow(j)
		t := ts[i]
		if t > g.wm {
			g.pend = append(g.pend, groupPend{ts: t, seq: seq[i], key: ids[j], batch: id, row: int32(j)})
			hb.left++
			continue
		}
		// Late: applied to the windows not yet emitted when within the
		// allowed lateness. It waits with the others (the rows of the
		// windows it joins up to lateness behind the watermark do too,
		// see advance), so that those windows see it in its place in
		// time; input clustered by key has no such wait: its rows go in
		// at once.
		if d := g.cfg.AllowedLateness; d <= 0 || g.wm > None+d && t <= g.wm-d || !g.openWindowOf(t) {
			lateRows = append(lateRows, int32(i))
			continue
		}
		g.stats.LateApplied++
		if g.cfg.Clustered {
			g.add(&rows, ids[j], t, seq[i], j, g.wm, End)
			continue
		}
		g.pend = append(g.pend, groupPend{ts: t, seq: seq[i], key: ids[j], batch: id, row: int32(j)})
		hb.left++
	}
	if hb.left > 0 {
		g.held[id] = hb
	}
	if len(lateRows) > 0 {
		g.stats.LateDropped += int64(len(lateRows))
		if late, err = arrowutil.Take(g.mem, rec, lateRows); err != nil {
			return nil, nil, err
		}
	}
	return nil, late, nil
}

// openWindowOf reports whether a window containing t is not emitted yet
// (ends after the watermark).
func (g *GroupOperator) openWindowOf(t int64) bool {
	return floorDiv(t, g.cfg.SlideMs)*g.cfg.SlideMs+g.cfg.SizeMs-1 > g.wm
}

// add puts row i of rows (key id, time t, sequence seq) into every window
// containing t whose last millisecond is in (lo, hi]: lo the watermark
// its windows up to were emitted at.
func (g *GroupOperator) add(rows *agg.Rows, id int32, t, seq int64, i int, lo, hi int64) {
	g.windowsOf(t, func(start int64) {
		if last := start + g.cfg.SizeMs - 1; last <= lo || last > hi {
			return // emitted already, or not this time
		}
		w := g.win(id, start, seq)
		w.minSeq = min(w.minSeq, seq)
		for _, st := range w.states {
			st.Add(rows, int64(i))
		}
	})
}

// FinishBefore tells an operator configured Clustered that every row
// with a sequence number below seq has come, with every other row of its
// key. The next Advance (at any watermark, the current one included)
// puts those rows in their windows whatever their times and emits every
// window of their keys; a row of such a key pushed afterwards is refused
// with ErrNotClustered, as is, at that Advance, a key with rows on both
// sides of seq. seq never goes back; forget is ignored (the windows of
// finished keys always go once emitted).
func (g *GroupOperator) FinishBefore(seq int64, forget bool) {
	g.finBelow = max(g.finBelow, seq)
}

// Advance moves the watermark to wm: rows with event time <= wm enter
// their windows in (event time, arrival) order, then every window now
// complete (end-1 <= wm) is emitted, ordered by window start, then by the
// arrival of the window's first row. Configured Clustered, the rows
// before the last FinishBefore enter their windows too and every window
// of their keys is emitted (and only those, before the End watermark),
// ordered by the first row of their key, then by start.
func (g *GroupOperator) Advance(ctx context.Context, wm int64) ([]arrow.RecordBatch, error) {
	defer g.publish()
	out, err := g.advance(ctx, wm)
	if err != nil {
		return nil, err
	}
	if err := g.maybeCompactKeys(); err != nil {
		arrowutil.ReleaseAll(out)
		return nil, err
	}
	return out, nil
}

func (g *GroupOperator) advance(ctx context.Context, wm int64) ([]arrow.RecordBatch, error) {
	fin := g.cfg.Clustered && g.finBelow > g.finDone
	if wm <= g.wm && !fin {
		return nil, nil
	}
	wm = max(wm, g.wm)
	old := g.wm
	g.wm = wm
	finBelow := g.finBelow
	// Rows go into their windows once no row before them can still come:
	// at the watermark, or with allowed lateness (a late row may then
	// come up to that far behind it) at the watermark less the lateness;
	// the windows emitted now get their rows behind the watermark but
	// not that far first (see lateRows).
	horizon := wm
	if d := g.cfg.AllowedLateness; d > 0 && !g.cfg.Clustered {
		horizon = None
		if wm > None+d {
			horizon = wm - d
		}
	}
	if fin {
		g.finDone = finBelow
	}
	// rel and fire are scratch kept between calls: grown by append
	// every release, fire (of pointers, with write barriers while the
	// collector runs) was a fifth of an hourly GROUP BY's advance.
	rel := g.rel[:0]
	keep := g.pend[:0]
	for _, p := range g.pend {
		if p.ts <= horizon || fin && p.seq < finBelow {
			rel = append(rel, p)
		} else {
			keep = append(keep, p)
		}
	}
	g.pend = keep
	if fin {
		for _, p := range rel {
			if p.seq < finBelow && g.lastSeq[p.key] >= finBelow {
				return nil, fmt.Errorf("%w: the row with sequence number %d is of a key with rows before row %d too, and another key's rows between", ErrNotClustered, g.lastSeq[p.key], finBelow)
			}
		}
	}
	if g.cfg.Clustered {
		// Each window needs its rows in (event time, arrival) order, and
		// a window has one key: rows in (key, time, arrival) order will
		// do, which input clustered by key, each key's rows in time
		// order, already is (key ids follow the keys' first rows).
		cmp := func(a, b groupPend) int {
			if a.key != b.key {
				return cmpInt(int64(a.key), int64(b.key))
			}
			if a.ts != b.ts {
				return cmpInt(a.ts, b.ts)
			}
			return cmpInt(a.seq, b.seq)
		}
		if !slices.IsSortedFunc(rel, cmp) {
			slices.SortFunc(rel, cmp)
		}
	} else {
		slices.SortFunc(rel, func(a, b groupPend) int {
			if a.ts != b.ts {
				return cmpInt(a.ts, b.ts)
			}
			return cmpInt(a.seq, b.seq)
		})
	}
	if g.cfg.Clustered && len(g.wins) == 0 && !runsOff {
		if out, ok := g.emitRuns(rel, wm == End, finBelow); ok {
			g.rel = rel[:0]
			g.dropLargeScratch()
			return out, nil
		}
	}
	var ahead warmStart
	for i, p := range rel {
		if i+groupAhead < len(rel) {
			g.warmWin(&ahead, rel[i+groupAhead])
		}
		hb := g.held[p.batch]
		g.add(&hb.rows, p.key, p.ts, p.seq, int(p.row), old, End)
		if hb.left--; hb.left == 0 {
			delete(g.held, p.batch)
		}
	}
	g.rel = rel[:0]
	if horizon < wm {
		g.lateRows(old, wm)
	}
	// A cancelled run stops here, its windows kept for a later Advance
	// (stopped once the first start was taken from the open windows, it
	// lost the windows taken).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fire := g.fire[:0]
	defer func() {
		clear(fire) // the windows go to spare or away
		g.fire = fire[:0]
		g.dropLargeScratch()
	}()
	// Clustered, a key's windows wait for its last row (or the end), so
	// that they go out together: in order of their key's first row.
	for (!g.cfg.Clustered || wm == End) && g.starts.Len() > 0 && g.starts.s[0]+g.cfg.SizeMs-1 <= wm {
		start := heap.Pop(&g.starts).(int64)
		sw := g.wins[start]
		fire = slices.Grow(fire, len(sw.list))
		for _, ref := range sw.list {
			fire = append(fire, fired{start: start, key: ref.key, minSeq: ref.w.minSeq, w: ref.w})
		}
		delete(g.wins, start)
		g.hint = len(sw.list)
		if wm != End {
			// Its windows go to spare once emitted; its table and list
			// serve a new start.
			sw.byKey.reset()
			clear(sw.list)
			sw.list = sw.list[:0]
			g.spareStarts = append(g.spareStarts, sw)
		}
	}
	sorted := false
	if fin && len(fire) == 0 {
		// Every window of the keys whose rows have all come, whatever
		// its end, gathered key by key (keys in the order of their first
		// rows) from the starts in order, so that they need no sort. A
		// start left without windows stays, for the next keys' windows
		// (its made-ahead windows with it), and in the heap once: there
		// are as many starts as the input spans.
		starts := make([]int64, 0, len(g.wins))
		for start := range g.wins {
			starts = append(starts, start)
		}
		slices.Sort(starts)
		// First the finished keys and their numbers of windows, then
		// each key's place in fire, then the windows in their places.
		type finKey struct {
			key      int32
			n, at    int
			firstSeq int64
		}
		var keys []finKey
		slot := map[int32]int{}
		for _, sw := range g.wins {
			for _, ref := range sw.list {
				if g.lastSeq[ref.key] >= finBelow {
					continue
				}
				k, ok := slot[ref.key]
				if !ok {
					k = len(keys)
					slot[ref.key] = k
					keys = append(keys, finKey{key: ref.key, firstSeq: g.firstSeq[ref.key]})
				}
				keys[k].n++
			}
		}
		slices.SortFunc(keys, func(a, b finKey) int { return cmpInt(a.firstSeq, b.firstSeq) })
		total := 0
		for k := range keys {
			keys[k].at = total
			total += keys[k].n
			slot[keys[k].key] = k
		}
		fire = slices.Grow(fire, total)[:total]
		for _, start := range starts {
			sw := g.wins[start]
			kept := sw.list[:0]
			for _, ref := range sw.list {
				if g.lastSeq[ref.key] >= finBelow {
					kept = append(kept, ref)
					continue
				}
				k := &keys[slot[ref.key]]
				fire[k.at] = fired{start: start, key: ref.key, minSeq: k.firstSeq, w: ref.w}
				k.at++
				sw.byKey.del(ref.key)
			}
			clear(sw.list[len(kept):])
			sw.list = kept
		}
		sorted = true
	}
	if len(fire) == 0 {
		return nil, nil
	}
	if !sorted {
		if g.cfg.Clustered {
			for i := range fire {
				fire[i].minSeq = g.firstSeq[fire[i].key]
			}
		}
		slices.SortFunc(fire, func(a, b fired) int {
			if g.cfg.Clustered && a.minSeq != b.minSeq {
				return cmpInt(a.minSeq, b.minSeq)
			}
			if a.start != b.start {
				return cmpInt(a.start, b.start)
			}
			return cmpInt(a.minSeq, b.minSeq)
		})
	}
	rec := g.build(fire, func(res []array.Builder) {
		for _, f := range fire {
			for a, st := range f.w.states {
				st.AppendResult(res[a])
			}
		}
	})
	if wm != End {
		g.spare = slices.Grow(g.spare, min(len(fire), spareMax-len(g.spare)))
		for _, f := range fire {
			if len(g.spare) >= spareMax {
				break
			}
			for _, st := range f.w.states {
				st.Reset()
			}
			g.spare = append(g.spare, f.w)
		}
	}
	g.stats.RowsOut += int64(len(fire))
	return []arrow.RecordBatch{rec}, nil
}

// lateRows puts the rows waiting with times up to wm (behind the
// watermark, but by less than the allowed lateness) into their windows
// emitted now: those ending in (old, wm]. They stay waiting for the
// others, which a late row may still come before.
func (g *GroupOperator) lateRows(old, wm int64) {
	rel := g.rel[:0]
	for _, p := range g.pend {
		if p.ts <= wm {
			rel = append(rel, p)
		}
	}
	slices.SortFunc(rel, func(a, b groupPend) int {
		if a.ts != b.ts {
			return cmpInt(a.ts, b.ts)
		}
		return cmpInt(a.seq, b.seq)
	})
	for _, p := range rel {
		g.add(&g.held[p.batch].rows, p.key, p.ts, p.seq, int(p.row), old, wm)
	}
	g.rel = rel[:0]
}

// dropLargeScratch lets go of advance's scratch (rel, fire, spans) grown
// past relKeep by a large release, such as every window at the End.
func (g *GroupOperator) dropLargeScratch() {
	if cap(g.rel) > relKeep {
		g.rel = nil
	}
	if cap(g.fire) > relKeep {
		g.fire = nil
	}
	if cap(g.spans) > relKeep {
		g.spans = nil
	}
}

// runsOff turns emitRuns off (tests compare it with the general path).
var runsOff bool

// emitRuns emits the windows of rel's rows when they are all of keys
// whose rows have all come (every row's sequence below finBelow, or end:
// the input has ended), rel is in (key, time, arrival) order and no
// window is open: a key's rows in a window are then a range of rel, and
// two pointers walk the key's windows by start, skipping those without
// rows; each window's range is added to one reused set of states and its
// results appended at once, with no table of windows, no window made and
// none sorted. The windows go out as the general path sends them (keys in
// the order of their first rows, each key's by start). It reports false,
// having changed nothing, when a row is of a key not finished, or the
// keys of rel are not in the order of their first rows. (An hourly GROUP
// BY of users over input clustered by user spent two thirds of its CPU in
// the general path's tables, maps and sorts for windows of about one row
// each.)
func (g *GroupOperator) emitRuns(rel []groupPend, end bool, finBelow int64) ([]arrow.RecordBatch, bool) {
	size, slide := g.cfg.SizeMs, g.cfg.SlideMs
	// firstStart is the start of the first window containing t.
	firstStart := func(t int64) int64 {
		_, last := g.backs(t)
		return t - last
	}
	fire, spans := g.fire[:0], g.spans[:0]
	fail := func() ([]arrow.RecordBatch, bool) {
		g.fire, g.spans = fire[:0], spans[:0]
		return nil, false
	}
	prevFirst := int64(0)
	for a := 0; a < len(rel); {
		key := rel[a].key
		b := a + 1
		for b < len(rel) && rel[b].key == key {
			b++
		}
		if !end && rel[b-1].seq >= finBelow {
			return fail()
		}
		first := g.firstSeq[key]
		if a > 0 && first <= prevFirst {
			return fail()
		}
		prevFirst = first
		// The windows of rows a..b by start: lo is the first row not
		// before start, hi the first row at or past its end.
		start := firstStart(rel[a].ts)
		for lo, hi := a, a; lo < b; {
			for hi < b && rel[hi].ts < start+size {
				hi++
			}
			fire = append(fire, fired{start: start, key: key, minSeq: first})
			spans = append(spans, [2]int32{int32(lo), int32(hi)})
			start += slide
			for lo < b && rel[lo].ts < start {
				lo++
			}
			if lo < b && rel[lo].ts >= start+size {
				start = firstStart(rel[lo].ts) // over windows without rows
			}
		}
		a = b
	}
	g.fire, g.spans = fire[:0], spans[:0]
	if len(fire) == 0 {
		return nil, true
	}
	if g.runWin == nil {
		g.runWin = g.newWin(0)
	}
	states := g.runWin.states
	rec := g.build(fire, func(res []array.Builder) {
		var hb *groupHeld
		hid := int32(-1)
		for _, sp := range spans {
			for _, p := range rel[sp[0]:sp[1]] {
				if p.batch != hid {
					hid, hb = p.batch, g.held[p.batch]
				}
				for _, st := range states {
					st.Add(&hb.rows, int64(p.row))
				}
			}
			for a, st := range states {
				st.AppendResult(res[a])
				st.Reset()
			}
		}
	})
	// The rows are used, once each.
	var hb *groupHeld
	hid := int32(-1)
	for _, p := range rel {
		if p.batch != hid {
			hid, hb = p.batch, g.held[p.batch]
		}
		if hb.left--; hb.left == 0 {
			delete(g.held, hid)
			hid = -1
		}
	}
	g.stats.RowsOut += int64(len(fire))
	return []arrow.RecordBatch{rec}, true
}

// build returns the output batch of the windows fire: their times, keys
// and sequence numbers, and the results of their aggregates, which
// aggs appends, a window at a time, to the aggregates' builders res.
func (g *GroupOperator) build(fire []fired, aggs func(res []array.Builder)) arrow.RecordBatch {
	nk := len(g.cfg.KeyCols)
	bld := make([]array.Builder, g.out.NumFields())
	for i, f := range g.out.Fields() {
		if a := i - (4 + nk); a >= 0 && a < len(g.cfg.Aggs) {
			bld[i] = agg.NewResultBuilder(g.mem, g.cfg.Aggs[a])
		} else {
			bld[i] = array.NewBuilder(g.mem, f.Type)
		}
		// One window a row: sized once rather than grown by doubling.
		bld[i].Reserve(len(fire))
	}
	defer arrowutil.ReleaseAll(bld)
	// The columns of the windows' times and keys a column at a time
	// (each builder's type found once), then the aggregates' results a
	// window at a time (its states read together).
	tsB, seqB := bld[GroupTsCol].(*array.Int64Builder), bld[GroupSeqCol].(*array.Int64Builder)
	for _, f := range fire {
		tsB.UnsafeAppend(f.start + g.cfg.SizeMs - 1)
		seqB.UnsafeAppend(f.minSeq)
	}
	for j := range nk {
		g.appendKeys(bld[2+j], &g.keyVals[j], fire)
	}
	appendTimes(bld[2+nk], fire, 0)
	appendTimes(bld[3+nk], fire, g.cfg.SizeMs)
	aggs(bld[4+nk:])
	cols := make([]arrow.Array, len(bld))
	for i, b := range bld {
		cols[i] = b.NewArray()
	}
	defer arrowutil.ReleaseAll(cols)
	return array.NewRecordBatch(g.out, cols, int64(len(fire)))
}

// appendKeys appends the key values (of column c) of the windows fire
// to b, reserved for them.
func (g *GroupOperator) appendKeys(b array.Builder, c *agg.Column, fire []fired) {
	if ib, ok := b.(*array.Int64Builder); ok && c.Kind == agg.KindInt64 {
		for _, f := range fire {
			if c.Null[f.key] {
				ib.AppendNull()
			} else {
				ib.UnsafeAppend(c.I64[f.key])
			}
		}
		return
	}
	for _, f := range fire {
		agg.AppendValue(b, c, int(f.key))
	}
}

// appendTimes appends the windows' starts plus off (ms) to b, a timestamp
// or int64 builder reserved for them.
func appendTimes(b array.Builder, fire []fired, off int64) {
	switch b := b.(type) {
	case *array.TimestampBuilder:
		for _, f := range fire {
			b.UnsafeAppend(arrow.Timestamp(f.start + off))
		}
	case *array.Int64Builder:
		for _, f := range fire {
			b.UnsafeAppend(f.start + off)
		}
	default:
		for _, f := range fire {
			appendTime(b, f.start+off)
		}
	}
}

func appendTime(b array.Builder, ms int64) {
	switch b := b.(type) {
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(ms))
	case *array.Int64Builder:
		b.Append(ms)
	}
}

// startHeap is a min-heap of window starts.
type startHeap struct{ s []int64 }

func (h *startHeap) Len() int           { return len(h.s) }
func (h *startHeap) Less(i, j int) bool { return h.s[i] < h.s[j] }
func (h *startHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *startHeap) Push(x any)         { h.s = append(h.s, x.(int64)) }
func (h *startHeap) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}
