package window

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/prefetch"
	"github.com/volga-go/volga/internal/testhook"
	"github.com/volga-go/volga/statestore"
)

// Frame is the extent of a sliding window relative to the current row; see
// pipeline.Frame for the SQL it comes from.
type Frame struct {
	// Rows measures Preceding in rows instead of milliseconds.
	Rows bool
	// Unbounded is RANGE BETWEEN UNBOUNDED PRECEDING.
	Unbounded bool
	// Preceding is the frame start: milliseconds (RANGE) or rows (ROWS).
	Preceding int64
	// EndPreceding is the frame end in milliseconds before the current row;
	// 0 is CURRENT ROW with its peers.
	EndPreceding int64
	// ExcludeCurrent leaves the current row itself out of its frame.
	ExcludeCurrent bool
}

// Spec is one frame and the aggregates evaluated over it.
type Spec struct {
	Frame Frame
	Aggs  []agg.Func
}

// Config describes the input layout and the work of an Operator.
type Config struct {
	// TsCol is the input column holding event time as int64 milliseconds
	// (no NULLs).
	TsCol int
	// SeqCol is the input column holding the arrival sequence (int64,
	// increasing in arrival order).
	SeqCol int
	// KeyCols are the PARTITION BY columns.
	KeyCols []int
	// ArgCols are the input columns kept in window state: Rows.Cols[j] is
	// input column ArgCols[j]; the aggregates are bound to those positions.
	ArgCols []int
	// Windows are the frames and their aggregates.
	Windows []Spec
	// ResultNames name the result columns, one per aggregate, windows in
	// order and each window's aggregates in order.
	ResultNames []string
	// AllowedLateness is how far (ms) behind the watermark a late row may
	// be and still be applied. 0 drops every late row.
	AllowedLateness int64
	// BatchOrder emits rows in arrival order (batch mode) rather than in
	// (event time, arrival) order.
	BatchOrder bool
	// TileSize is the tile length (ms) lookups over RANGE frames use; 0
	// picks one from each frame's length (see TileSize). TileMinRows is the
	// frame size from which lookups use tiles (0: 256; -1: never).
	TileSize    int64
	TileMinRows int
	// Retention keeps rows for lookups at times down to Retention (ms)
	// behind the watermark: every row their frames reach stays held.
	// Without it, lookups are served from the newest released row of a
	// key on, and from the watermark for a key quiet for longer than the
	// longest frame (sweepQuiet). It does not apply to UNBOUNDED frames.
	Retention int64
	// ProbeCol, when > 0, is a boolean input column marking probe rows:
	// rows that are not stored and get the features a row at their key
	// and time would have, without that row (point-in-time backfill).
	// Probes see the events at their own time, or with StrictProbes only
	// the events before it.
	ProbeCol     int
	StrictProbes bool
	// Mem allocates output arrays; nil means the Go allocator. It is taken
	// to be the allocator of the input batches too: unless it is the Go
	// allocator (nil, memory.DefaultAllocator, a *memory.GoAllocator),
	// whose buffers the garbage collector keeps as long as strings point
	// into them, string arguments are copied out of the input batches
	// (which another allocator frees, or reuses, once they are released).
	Mem memory.Allocator
	// ResultMem allocates the arrays the aggregates write their results
	// into (nil: Mem). Those arrays are handed out as they are only by
	// AdvanceResults (Results.Cols); every other output copies the
	// results into arrays of Mem. A run that copies what AdvanceResults
	// gives too (as the pipeline's merger does) may thus give a pool of
	// buffers reused once freed (internal/mempool): results are built and
	// dropped in bulk, and that spares the heap its churn.
	ResultMem memory.Allocator
	// Store is where key state is evicted to (see MemoryBudget) and
	// written by Checkpoint; nil keeps everything in memory. The operator
	// owns the keys under "k/" in it (see statestore/FORMAT.md, "Operator
	// state"); give each operator its own view (statestore.Sub).
	Store statestore.Store
	// MemoryBudget is the approximate number of bytes of per-key state
	// (retained rows and window states) held in memory; 0 is unlimited.
	// Above it the least recently used keys are written to Store and
	// dropped from memory, then read back when a row of theirs is released
	// or a lookup needs them. It needs Store. The key index (key -> id)
	// stays in memory: about 60 bytes per key plus the encoded key.
	MemoryBudget int64
	// MayWrite, when not nil and returning false, forbids writes to Store
	// for now: evictions are postponed (memory may exceed the budget
	// meanwhile). A pipeline returns false between a checkpoint barrier
	// and the moment the store's backup for that checkpoint was taken.
	MayWrite func() bool
	// PageRows, when > 0, bounds the memory of each key whatever the
	// length of its longest RANGE ... PRECEDING AND CURRENT ROW frame:
	// the rows no frame edge needs are written to Store in pages of about
	// PageRows rows and read back when the frame's lower edge reaches
	// them (see paging.go). It needs Store, and excludes AllowedLateness,
	// Retention and probe rows; CanPage says whether a Config can page.
	PageRows int
}

// Stats counts what an Operator has done.
type Stats struct {
	// RowsIn counts input rows; RowsOut emitted rows.
	RowsIn, RowsOut int64
	// LateDropped counts late rows not applied; LateApplied late rows
	// applied within the allowed lateness.
	LateDropped, LateApplied int64
	// Keys is the number of distinct keys held: seen, less the ones
	// forgotten (ForgottenKeys).
	Keys int
	// Pending is the number of rows waiting for the watermark.
	Pending int
	// Retained is the number of rows held in window state (of the keys
	// resident in memory).
	Retained int64
	// ResidentKeys is the number of keys whose state is in memory;
	// ResidentBytes the estimate of their size that MemoryBudget bounds
	// (0 when no budget is set: it is not tracked).
	ResidentKeys  int
	ResidentBytes int64
	// Evicted counts key states written to Store and dropped from memory
	// (a clean key is dropped without a write); Loaded counts key states
	// read back from Store for ingest, LookupLoads for lookups.
	Evicted, Loaded, LookupLoads int64
	// CheckpointKeys is the number of keys the last Checkpoint wrote.
	CheckpointKeys int64
	// CheckpointCopies counts the key states copied because they were
	// about to change while a checkpoint's encoder was reading them (see
	// BeginCheckpoint).
	CheckpointCopies int64
	// QuietKeys counts the times a key's rows were let go because none of
	// them could be in a frame or a lookup any more (its newest row
	// older than the longest frame behind the watermark, the allowed
	// lateness and the lookup retention).
	QuietKeys int64
	// ForgottenKeys counts the quiet keys forgotten altogether, entry and
	// all (once many: see the package doc); a key that comes back is new
	// again. Keys counts the keys held.
	ForgottenKeys int64
	// PagesWritten and PagesRead count row pages written to and read back
	// from Store (Config.PageRows).
	PagesWritten, PagesRead int64
	// LookupPages counts pages lookups read (and did not keep).
	LookupPages int64
}

// Operator is the keyed sliding-window operator: it buffers rows until the
// watermark passes their event time, then emits each with one value per
// aggregate over its frame. One Operator serves one PARTITION BY key set;
// it is not safe for concurrent use.
type Operator struct {
	// mu guards state against Lookup from other goroutines: Push and
	// Advance hold it exclusively, Lookup shared.
	mu sync.RWMutex
	// working is set while Push or Advance runs: a checkpoint's encoder
	// rests only while the operator works (see ckptPacer).
	working atomic.Bool
	cfg     Config
	mem     memory.Allocator
	resMem  memory.Allocator // of the result builders (Config.ResultMem)
	in, out *arrow.Schema
	keys    *keyIndex
	states  []*keyState
	pend    pendChunks
	// pendCount holds, by key id, the key's rows pending, and nPendKeys
	// counts the keys with some (Backlog).
	pendCount []int32
	nPendKeys int
	// keysCreated counts the keys created (KeysCreated).
	keysCreated int64
	held        heldBatches
	nextID      int32
	wm          int64
	stats       Stats
	nAggs       int
	maxPrec     int64
	// perValue is set when a window keeps an entry per distinct value
	// (agg.PerValue).
	perValue bool
	// probeRank is the rank of probe rows (see pendRow).
	probeRank int8
	// The sweep of quiet keys (sweepQuiet): sweepable says the frames
	// allow it, sweepAt is the next key id it looks at, sweepOwed the
	// keys it owes.
	sweepable bool
	sweepAt   int
	sweepOwed float64
	// parked holds, by key id, what a quiet key let go without a store
	// keeps instead of its state (states[id] is nil; see park).
	parked []parkedKey
	// Forgetting quiet keys (maybeForgetKeys): forgetOK says the
	// configuration allows it; nParked counts the keys parked (without a
	// store), quietDrops the keys dropped from memory quiet since the
	// last time keys were forgotten (with one), and quietDropped the
	// newest dropped row of those; forgetAt is the least number of keys
	// at which they are counted next, forgotDropped the newest dropped
	// row of the keys forgotten (None: none), for lookups of keys not
	// held; forgetMin replaces keyForgetMin when > 0 (tests, through
	// SetKeyForgetMin or testhook.KeyForgetMin).
	forgetOK      bool
	nParked       int
	quietDrops    int
	quietDropped  int64
	forgetAt      int
	forgetMin     int
	forgotDropped int64
	// maxTs is the newest event time released so far.
	maxTs int64
	// tileMin is the frame size from which lookups use tiles; tilesInit
	// guards creating a key's tile holder under the shared lock.
	tileMin   int
	tilesInit sync.Mutex
	// lookupLoads counts key states read for lookups (under the shared
	// lock, hence atomic).
	lookupLoads atomic.Int64
	lookupPages atomic.Int64

	// Store-backed state (see Config.Store): encs[id] is the encoded key
	// of id and kmeta[id] its bookkeeping; a nil states[id] is a key
	// evicted to the store. resident is the estimated size of the
	// resident states, tick the LRU clock.
	encs     []string
	kmeta    []keyMeta
	resident int64
	tick     uint64
	restored bool

	// paging is the row paging plan (nil without Config.PageRows);
	// pageGarbage the store keys of pages read back, to delete.
	paging      *pagingPlan
	pageGarbage [][]byte
	// unflushed holds the pages written in the current Advance, not yet
	// in the store, for lookups let in between keys.
	unflushed  map[string][]byte
	keepOthers int64
	// ckpt is the checkpoint begun and not yet written (see
	// BeginCheckpoint); encBuf is scratch for encoding key states.
	ckpt   *ckptWrite
	encBuf []byte
	// ckptSpare holds the arrays of the last checkpoint written and the
	// record chunks its writer is done with, for the next one.
	ckptSpare ckptArrays
	// snap is the snapshot of the store through which the caller of Push
	// and Advance reads key states (storedState), taken at snapAt and
	// closed by snapTimer once snapshotAge has passed; snapStale tells
	// that a checkpoint's writes were flushed since it was taken.
	snap      statestore.Snapshot
	snapAt    time.Time
	snapTimer *time.Timer
	snapStale atomic.Bool
	// dirtyIDs lists the keys marked dirty since the last checkpoint
	// (markDirty).
	dirtyIDs []int32
	// winTile is the tile length of each window's tiled aggregates (0:
	// untiled).
	winTile []int64
	// winOff[w] is the first of window w's aggregates in a key state's
	// aggs; winOff[len(Windows)] their number.
	winOff []int

	// scratch reused across calls
	lo, hi, ex []int64
	rel        []pendRow
	bld        []array.Builder
	gts        []int64      // event times of released rows, in rel order
	gcols      []agg.Column // their argument values
	relCnt     []int32      // release's rows per key (counting sort)
	// relAlt is the other half of the release's double buffer
	// (groupByKey); keyMark[k] == markGen marks key k seen in the release
	// being grouped, keySlot[k] its group.
	relAlt  []pendRow
	keyMark []uint32
	keySlot []int32
	markGen uint32
	// arrival, when not nil, lists every place in the release once, in
	// the order the rows there arrived (groupByKey; but within a key
	// whose rows it sorted by time), for emitSorted.
	arrival    []int32
	arrivalBuf []int32
	scPos      []int64 // newScattered's row positions
	// argSpare holds the argument columns of batches let go (consume),
	// emptied, for push to fill again: each batch's copies would
	// otherwise be garbage as soon as its rows are released. argSpareRows
	// is the rows they can hold.
	argSpare     [][]agg.Column
	argSpareRows int
	// interns[j] interns the values of string argument j (see interner).
	interns []*interner

	// shapes are the shapes of the last result chunk of some size, to
	// reserve the builders of the next chunk by (see reserveShape).
	shapes []shape

	// copyStr copies string arguments the interner does not (see
	// Config.Mem).
	copyStr bool

	// chunkRows, when > 0, is the result chunk size instead of resChunk
	// (tests make chunks small).
	chunkRows int

	// Input clustered by key (FinishBefore): every pending row before
	// sequence number finBelow is released at the next advance; finDone
	// is finBelow at the last release. finished has the bit of every key
	// whose rows were all released that way (no row of it may come
	// again); forget drops those keys' states.
	finBelow, finDone int64
	finished          []uint64
	forget            bool
}

type keyState struct {
	rows agg.Rows
	// aggs are the aggregates' windows, window by window (Operator.winAggs
	// gives a window's).
	aggs []agg.Window
	// tiles pre-aggregate rows for lookups (nil until a lookup needs them).
	tiles *keyTiles
	// dropped is the event time of the newest row dropped from rows
	// (None when none was): lookups whose frames reach it are refused.
	dropped int64
	// probed is the event time of the newest probe row the key served
	// (None when none): a key with probes only is quiet once it is
	// below the quiet horizon (sweepQuiet).
	probed int64
	// Row paging (Config.PageRows): edge holds the rows at the paged
	// window's lower edge (below rows.Base; rows.Older points at it),
	// pages the rows between edge and rows, in the store; pagedLo is the
	// paged window's lower bound after the last evaluated row.
	edge    *agg.Rows
	pages   []pageRef
	pagedLo int64
	// aggBuf holds aggs in the key state itself when there are few: a
	// key visit reads them right after the rows, and as a separate object
	// they were a cache miss (ranging over a key's windows was 10 % of
	// stream-4's CPU).
	aggBuf [inlineAggs]agg.Window
}

// inlineAggs is the most aggregates a key state holds inline (see
// keyState.aggBuf).
const inlineAggs = 8

// keyMeta is the bookkeeping of a key's state in the store, kept (in
// Operator.kmeta, by key id) only when there is a store.
type keyMeta struct {
	// dirty marks state changed since it was last written to the store.
	dirty bool
	// used is the LRU clock value of the key's last use; size the
	// estimate of its bytes (both kept only with a memory budget).
	used uint64
	size int64
	// newest is the event time of the newest row of an evicted key (None
	// when it had none, or, for a key left in the store at a restore
	// whose state storedHeader cannot read, unknown) and end the number
	// its next row would get: the sweep of quiet keys reads them
	// (replaceEvicted). quiet marks a key dropped from memory with no row
	// (a quiet key's small state, see dropResident): maybeForgetKeys
	// forgets it.
	newest, end int64
	quiet       bool
}

type pendRow struct {
	ts, seq int64
	key     int32
	batch   int32
	row     int32
	// rank orders rows of equal event time before their sequence: probe
	// rows get 1 (after the events at their time) or, with StrictProbes,
	// -1 (before them); events 0.
	rank int8
}

// heldBatches maps batch ids (assigned in increasing order) to the input
// batches whose rows are still pending, in a slice rather than a map: ids
// below base have all been released.
type heldBatches struct {
	base int32
	live []*heldBatch
}

func (h *heldBatches) get(id int32) *heldBatch { return h.live[id-h.base] }

func (h *heldBatches) put(id int32, hb *heldBatch) {
	if len(h.live) == 0 {
		h.base = id
	}
	for int(id-h.base) >= len(h.live) {
		h.live = append(h.live, nil)
	}
	h.live[id-h.base] = hb
}

func (h *heldBatches) del(id int32) {
	h.live[id-h.base] = nil
	n := 0
	for n < len(h.live) && h.live[n] == nil {
		n++
	}
	if n > 0 {
		h.live = h.live[n:]
		h.base += int32(n)
		if len(h.live) == 0 {
			h.live = nil
		}
	}
}

// pendChunks holds pending rows in fixed-size chunks, so that buffering
// millions of rows (a batch run) never copies them to grow a slice.
type pendChunks struct {
	chunks [][]pendRow
	n      int
	// spare holds chunks a release emptied, for add to fill again: a
	// stream that releases every batch would otherwise allocate a chunk
	// (640 kB) each time it fills one.
	spare [][]pendRow
}

const (
	pendChunk = 1 << 14
	// pendSpare is the most emptied chunks kept for reuse. (Keeping
	// relKeep rows' worth, 16, spared a time-ordered batch run an eighth
	// of its allocations but added 15 MB to its peak RSS.)
	pendSpare = 4
)

// addPending counts a row of key pending.
func (o *Operator) addPending(key int32) {
	if key < 0 {
		return
	}
	if int(key) >= len(o.pendCount) {
		o.pendCount = append(o.pendCount, make([]int32, max(int(key)+1, 2*len(o.pendCount))-len(o.pendCount))...)
	}
	if o.pendCount[key] == 0 {
		o.nPendKeys++
	}
	o.pendCount[key]++
}

// dropPending uncounts a row of key released.
func (o *Operator) dropPending(key int32) {
	if key < 0 || int(key) >= len(o.pendCount) || o.pendCount[key] == 0 {
		return
	}
	o.pendCount[key]--
	if o.pendCount[key] == 0 {
		o.nPendKeys--
	}
}

// recountPending counts anew the rows pending by key (after the keys
// were renumbered).
func (o *Operator) recountPending() {
	clear(o.pendCount)
	o.nPendKeys = 0
	for _, ch := range o.pend.chunks {
		for _, p := range ch {
			o.addPending(p.key)
		}
	}
}

func (pc *pendChunks) add(p pendRow) {
	k := len(pc.chunks)
	if k == 0 || len(pc.chunks[k-1]) == pendChunk {
		var ch []pendRow
		if n := len(pc.spare); n > 0 {
			ch, pc.spare = pc.spare[n-1], pc.spare[:n-1]
		} else {
			ch = make([]pendRow, 0, pendChunk)
		}
		pc.chunks = append(pc.chunks, ch)
		k++
	}
	pc.chunks[k-1] = append(pc.chunks[k-1], p)
	pc.n++
}

type heldBatch struct {
	rec arrow.RecordBatch
	// sel, when not nil, lists the rows of rec pushed (PushRows): a
	// pendRow's row is then a position in sel, and args hold those rows
	// only.
	sel  []int32
	args []agg.Column // argument columns of every row pushed
	left int          // rows not yet emitted or dropped
	// dst, when not nil, receives the results of the batch's rows
	// (PushRowsTo, AdvanceResults).
	dst *Dest
	// seqOrder is 1 when rec's sequence numbers increase, -1 when not, 0
	// until checked (batchesInSeqOrder).
	seqOrder int8
}

// rows is the number of rows pushed from the batch.
func (hb *heldBatch) rows() int {
	if hb.sel != nil {
		return len(hb.sel)
	}
	return int(hb.rec.NumRows())
}

// recRow returns the row of rec of pushed row j.
func (hb *heldBatch) recRow(j int32) int32 {
	if hb.sel != nil {
		return hb.sel[j]
	}
	return j
}

// None is the watermark before any has been seen; End is the final
// watermark of a bounded input (the same values as package watermark's).
const (
	None int64 = math.MinInt64
	End  int64 = math.MaxInt64
)

// New returns an Operator for input batches of schema in.
func New(cfg Config, in *arrow.Schema) (*Operator, error) {
	if cfg.TsCol < 0 || cfg.TsCol >= in.NumFields() || in.Field(cfg.TsCol).Type.ID() != arrow.INT64 {
		return nil, errors.New("window: event-time column must be int64 milliseconds")
	}
	if cfg.SeqCol < 0 || cfg.SeqCol >= in.NumFields() || in.Field(cfg.SeqCol).Type.ID() != arrow.INT64 {
		return nil, errors.New("window: sequence column must be int64")
	}
	fields := slices.Clone(in.Fields())
	n := 0
	for _, w := range cfg.Windows {
		if w.Frame.Unbounded && cfg.AllowedLateness > 0 {
			return nil, errors.New("window: allowed lateness cannot be combined with UNBOUNDED PRECEDING frames (it would need every row ever seen)")
		}
		for _, f := range w.Aggs {
			name := fmt.Sprintf("agg%d", n)
			if n < len(cfg.ResultNames) {
				name = cfg.ResultNames[n]
			}
			fields = append(fields, arrow.Field{Name: name, Type: f.ResultType(), Nullable: true})
			n++
		}
	}
	mem := cfg.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	resMem := cfg.ResultMem
	if resMem == nil {
		resMem = mem
	}
	o := &Operator{cfg: cfg, mem: mem, resMem: resMem, in: in, out: arrow.NewSchema(fields, nil), keys: newKeyIndex(cfg.KeyCols),
		wm: None, nAggs: n, maxTs: None, forgotDropped: None, quietDropped: None}
	if cfg.Mem != nil {
		_, goMem := cfg.Mem.(*memory.GoAllocator)
		o.copyStr = !goMem
	}
	o.sweepable = true
	for _, w := range cfg.Windows {
		for _, f := range w.Aggs {
			o.perValue = o.perValue || agg.PerValue(f)
		}
		o.maxPrec = max(o.maxPrec, w.Frame.Preceding)
		o.sweepable = o.sweepable && !w.Frame.Rows && !w.Frame.Unbounded
	}
	o.sweepable = o.sweepable && cfg.PageRows == 0
	o.forgetOK = canForget(cfg, o.sweepable)
	if n := testhook.KeyForgetMin.Load(); n > 0 {
		o.forgetMin = int(n)
	}
	o.tileMin = tileMinRows
	switch {
	case cfg.TileMinRows > 0:
		o.tileMin = cfg.TileMinRows
	case cfg.TileMinRows < 0:
		o.tileMin = math.MaxInt
	}
	o.probeRank = 1
	if cfg.StrictProbes {
		o.probeRank = -1
	}
	if cfg.ProbeCol > 0 && (cfg.ProbeCol >= in.NumFields() || in.Field(cfg.ProbeCol).Type.ID() != arrow.BOOL) {
		return nil, errors.New("window: probe column must be boolean")
	}
	if cfg.MemoryBudget < 0 || cfg.MemoryBudget > 0 && cfg.Store == nil {
		return nil, errors.New("window: a memory budget needs a store to evict key state to")
	}
	p, err := planPaging(cfg)
	if err != nil {
		return nil, err
	}
	o.paging = p
	// Merge-only aggregates of bounded RANGE frames keep their sliding
	// state by tile (agg.Tiler): one state per tile instead of one per
	// row, with the same results (their merges are exact).
	o.winOff = make([]int, len(cfg.Windows)+1)
	for w, spec := range cfg.Windows {
		o.winOff[w+1] = o.winOff[w] + len(spec.Aggs)
	}
	o.winTile = make([]int64, len(cfg.Windows))
	for w, spec := range cfg.Windows {
		if f := spec.Frame; !f.Rows && !f.Unbounded {
			o.winTile[w] = cfg.TileSize
			if o.winTile[w] <= 0 {
				o.winTile[w] = TileSize(f.Preceding)
			}
		}
	}
	return o, nil
}

// OutSchema is the schema of emitted batches: the input columns followed by
// one column per aggregate.
func (o *Operator) OutSchema() *arrow.Schema { return o.out }

// Watermark is the last watermark passed to Advance.
func (o *Operator) Watermark() int64 {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.wm
}

// Late returns the counts of late rows dropped and applied so far; unlike
// Stats it costs O(1).
func (o *Operator) Late() (dropped, applied int64) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.stats.LateDropped, o.stats.LateApplied
}

// Stats returns counters. Retained and ResidentKeys are counted over
// every key, statsLockKeys keys at a time with the operator's lock
// released in between: a metrics scrape of an operator with a million
// keys (a cache miss each, ~0.1 s in all) would otherwise hold its task
// up for as long. While the task runs, they mix moments of the walk; on
// an idle operator they are exact.
func (o *Operator) Stats() Stats {
	// The keys there are now are walked; the other counters are read
	// after the walk, so that resident keys never exceed keys nor
	// retained rows the rows in.
	o.mu.RLock()
	n := len(o.states)
	o.mu.RUnlock()
	var retained int64
	resident := 0
	for from := 0; from < n; from += statsLockKeys {
		o.mu.RLock()
		n = min(n, len(o.states))
		for _, ks := range o.states[min(from, n):min(from+statsLockKeys, n)] {
			if ks != nil {
				retained += int64(ks.rows.Len())
				if ks.edge != nil {
					retained += int64(ks.edge.Len())
				}
				resident++
			}
		}
		o.mu.RUnlock()
	}
	o.mu.RLock()
	s := o.stats
	s.Keys = len(o.states)
	s.Pending = o.pend.n
	s.ResidentBytes = o.resident
	o.mu.RUnlock()
	s.Retained, s.ResidentKeys = retained, resident
	s.LookupLoads = o.lookupLoads.Load()
	s.LookupPages = o.lookupPages.Load()
	return s
}

// statsLockKeys is how many keys Stats counts under one hold of the
// operator's lock (about 0.4 ms when every key state is a cache miss).
const statsLockKeys = 4096

func (o *Operator) newKeyState() *keyState {
	ks := &keyState{dropped: None, probed: None}
	ks.rows.Cols = make([]agg.Column, len(o.cfg.ArgCols))
	for j, c := range o.cfg.ArgCols {
		col, err := agg.NewColumn(o.in.Field(c).Type)
		if err != nil {
			col = agg.Column{Type: o.in.Field(c).Type, Kind: agg.KindString}
		}
		ks.rows.Cols[j] = col
	}
	o.resetWindows(ks)
	return ks
}

func (o *Operator) resetWindows(ks *keyState) {
	// One array holds every window's aggregates (one allocation a key,
	// not one a window, and none when they fit in the key state).
	n := o.winOff[len(o.cfg.Windows)]
	if n <= inlineAggs {
		ks.aggs = ks.aggBuf[:n:n]
	} else {
		ks.aggs = make([]agg.Window, n)
	}
	for w, spec := range o.cfg.Windows {
		for a, f := range spec.Aggs {
			win := f.NewWindow()
			if tile := o.winTile[w]; tile > 0 {
				if t, ok := win.(agg.Tiler); ok {
					t.SetTile(tile)
				}
			}
			ks.aggs[o.winOff[w]+a] = win
		}
	}
}

// winAggs returns the windows of window w's aggregates in ks.
func (o *Operator) winAggs(ks *keyState, w int) []agg.Window {
	return ks.aggs[o.winOff[w]:o.winOff[w+1]]
}

// Push takes a batch of input rows. Rows at or behind the watermark are
// late: those within the allowed lateness are applied and emitted at once
// (returned in out), the others are returned in late (nil when none) and
// leave state unchanged. The caller releases every returned batch.
func (o *Operator) Push(rec arrow.RecordBatch) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.push(rec, nil, nil)
}

// PushRows is Push of the rows rows of rec only (increasing row numbers),
// without copying them out of rec: several operators can take their own
// rows of one batch, which each holds until its rows are emitted. The
// operator keeps rows; the caller must not change it. Emitted batches
// hold the same rows as those of Push of those rows.
func (o *Operator) PushRows(rec arrow.RecordBatch, rows []int32) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	if rows == nil {
		rows = []int32{}
	}
	if len(rows) == int(rec.NumRows()) {
		rows = nil // every row: the batch as it is
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.push(rec, rows, nil)
}

// PushRowsTo is PushRows for a caller that adds the results to rec
// itself: AdvanceResults writes the results of these rows into dst, a
// Dest of rec's rows and of the operator's result types, at their rows'
// positions in rec, and reports them in Results.Done rather than in its
// result arrays. Several operators may share dst, each with its own rows.
// Rows applied late (AllowedLateness) are returned in out as by PushRows;
// AdvanceFunc and Advance ignore dst.
func (o *Operator) PushRowsTo(rec arrow.RecordBatch, rows []int32, dst *Dest) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	if dst != nil {
		if err := dst.fits(rec, o.ResultTypes()); err != nil {
			return nil, nil, err
		}
	}
	if rows == nil {
		rows = []int32{}
	}
	if len(rows) == int(rec.NumRows()) {
		rows = nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.push(rec, rows, dst)
}

func (o *Operator) push(rec arrow.RecordBatch, sel []int32, dst *Dest) (out []arrow.RecordBatch, late arrow.RecordBatch, err error) {
	o.working.Store(true)
	defer o.working.Store(false)
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	if n == 0 {
		return nil, nil, nil
	}
	o.stats.RowsIn += int64(n)
	tsArr, ok := rec.Column(o.cfg.TsCol).(*array.Int64)
	if !ok || tsArr.NullN() > 0 {
		return nil, nil, errors.New("window: event-time column must be non-NULL int64")
	}
	ts := tsArr.Int64Values()
	seq := rec.Column(o.cfg.SeqCol).(*array.Int64).Int64Values()
	var probe *array.Boolean
	if o.cfg.ProbeCol > 0 {
		probe = rec.Column(o.cfg.ProbeCol).(*array.Boolean)
	}
	ids, err := o.keys.internRows(rec, sel, func(id int32, row int) {
		o.states = append(o.states, nil)
		o.keysCreated++
		ks := o.newKeyState()
		// The key may have been forgotten before (maybeForgetKeys):
		// its rows, up to forgotDropped at the latest, were let go, so
		// lookups reaching them are refused as for a key not held.
		ks.dropped = o.forgotDropped
		o.states[id] = ks
		if o.cfg.Store != nil {
			o.encs = append(o.encs, o.encodeKeyRow(rec, row))
			o.kmeta = append(o.kmeta, keyMeta{})
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if o.finished != nil {
		if err := o.checkUnfinished(ids, seq, sel); err != nil {
			return nil, nil, err
		}
	}
	if o.nextID == math.MaxInt32 {
		o.renumberBatches()
	}
	id := o.nextID
	o.nextID++
	hb := &heldBatch{rec: rec, sel: sel, dst: dst}
	var lateRows, applyRows []int32
	for j := 0; j < n; j++ {
		i := j
		if sel != nil {
			i = int(sel[j])
		}
		if ts[i] <= o.wm {
			if o.cfg.AllowedLateness > 0 && ts[i] > o.wm-o.cfg.AllowedLateness {
				applyRows = append(applyRows, int32(j))
			} else {
				lateRows = append(lateRows, int32(i))
			}
			continue
		}
		p := pendRow{ts: ts[i], seq: seq[i], key: ids[j], batch: id, row: int32(j)}
		if probe != nil && probe.Value(i) {
			p.rank = o.probeRank
		}
		o.pend.add(p)
		o.addPending(p.key)
		hb.left++
	}
	if hb.left > 0 || len(applyRows) > 0 {
		hb.args = o.spareArgs()
		for j, c := range o.cfg.ArgCols {
			col := hb.args[j]
			if col.Kind == 0 {
				if col, err = agg.NewColumn(o.in.Field(c).Type); err != nil {
					return nil, nil, fmt.Errorf("window: argument column %q: %w", o.in.Field(c).Name, err)
				}
			}
			col.AppendArrow(rec.Column(c), sel)
			if col.Kind == agg.KindString {
				o.internerOf(j).column(col.Str, col.Null, o.copyStr)
			}
			hb.args[j] = col
		}
	}
	if hb.left > 0 {
		rec.Retain()
		o.held.put(id, hb)
	}
	if len(lateRows) > 0 {
		o.stats.LateDropped += int64(len(lateRows))
		late, err = arrowutil.Take(o.mem, rec, lateRows)
		if err != nil {
			return nil, nil, err
		}
	}
	if len(applyRows) > 0 {
		o.stats.LateApplied += int64(len(applyRows))
		ob, err := o.applyLate(rec, hb, ids, ts, seq, applyRows, probe)
		if err != nil {
			if late != nil {
				late.Release()
			}
			return nil, nil, err
		}
		out = append(out, ob)
	}
	return out, late, nil
}

// renumberBatches numbers the held batches from 0 again, in their
// order, once batch ids (int32) have run out: a stream pushing a thousand
// batches a second does after 25 days, and wrapped ids made a release
// spanning the wrap index out of range. Pending rows name their batches
// by id; the ids live are those from held.base on, so they all move down
// by it.
func (o *Operator) renumberBatches() {
	shift := o.nextID
	if len(o.held.live) > 0 {
		shift = o.held.base
	}
	for _, ch := range o.pend.chunks {
		for i := range ch {
			ch[i].batch -= shift
		}
	}
	o.held.base -= shift
	o.nextID -= shift
}

// argSpareMax is the most rows the argument columns kept for reuse may
// hold: as many as a release may keep (relKeep), so that a release's
// batches are refilled without allocating.
const argSpareMax = relKeep

// spareArgs returns empty argument columns for a batch: those of a batch
// let go if any (their Kind set), else new ones (Kind 0).
func (o *Operator) spareArgs() []agg.Column {
	if n := len(o.argSpare); n > 0 {
		args := o.argSpare[n-1]
		o.argSpare[n-1] = nil
		o.argSpare = o.argSpare[:n-1]
		o.argSpareRows -= argRows(args)
		return args
	}
	return make([]agg.Column, len(o.cfg.ArgCols))
}

// keepArgs keeps the argument columns of a batch let go for spareArgs,
// emptied (values beyond a column's length are zeroed as it grows
// again).
func (o *Operator) keepArgs(args []agg.Column) {
	if args == nil || o.argSpareRows+argRows(args) > argSpareMax {
		return
	}
	o.argSpareRows += argRows(args)
	for j := range args {
		c := &args[j]
		c.Null, c.I64, c.F64, c.Str, c.Bool = c.Null[:0], c.I64[:0], c.F64[:0], c.Str[:0], c.Bool[:0]
	}
	o.argSpare = append(o.argSpare, args)
}

// argRows is the number of rows args can hold without growing.
func argRows(args []agg.Column) int {
	if len(args) == 0 {
		return 0
	}
	return cap(args[0].Null)
}

// internerOf returns the interner of argument column j.
func (o *Operator) internerOf(j int) *interner {
	if o.interns == nil {
		o.interns = make([]*interner, len(o.cfg.ArgCols))
	}
	if o.interns[j] == nil {
		o.interns[j] = &interner{}
	}
	return o.interns[j]
}

// applyLate inserts late rows (positions among the rows pushed from rec,
// see heldBatch.sel) into their keys' state and emits them with
// their frames as of now. It rebuilds the keys' windows, which then catch
// up from the rows on the next release. Probe rows (probe, when not nil,
// flags them by row of rec) are not inserted: they get the frames a row
// at their time would have, without that row, as in processKeyProbes.
func (o *Operator) applyLate(rec arrow.RecordBatch, hb *heldBatch, ids []int32, ts, seq []int64, rows []int32, probe *array.Boolean) (arrow.RecordBatch, error) {
	o.ensureBuilders()
	recRows := make([]int32, len(rows))
	for k, j := range rows {
		i := hb.recRow(j)
		recRows[k] = i
		if err := o.present(ids[j]); err != nil {
			return nil, err
		}
		ks := o.states[ids[j]]
		r := &ks.rows
		if probe != nil && probe.Value(int(i)) {
			ks.probed = max(ks.probed, ts[i])
			k := 0
			for _, spec := range o.cfg.Windows {
				lo, hi := probeFrameAt(r, spec.Frame, ts[i], o.cfg.StrictProbes)
				for _, f := range spec.Aggs {
					st := f.NewState()
					addRows(st, r, lo, hi)
					st.AppendResult(o.bld[k])
					k++
				}
			}
			continue
		}
		p := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > ts[i] })
		insertRow(r, p, ts[i], hb.args, int(j))
		abs := r.Base + int64(p)
		o.resetWindows(ks)
		ks.tiles = nil // row numbers moved
		k := 0
		for _, spec := range o.cfg.Windows {
			lo, hi := frameAt(r, spec.Frame, abs)
			for _, f := range spec.Aggs {
				st := f.NewState()
				if spec.Frame.ExcludeCurrent && lo <= abs && abs < hi {
					addRows(st, r, lo, abs)
					addRows(st, r, abs+1, hi)
				} else {
					addRows(st, r, lo, hi)
				}
				st.AppendResult(o.bld[k])
				k++
			}
		}
		if o.cfg.MemoryBudget > 0 {
			o.touch(ids[j], ks)
		}
	}
	res, err := o.ownResults(o.finishBuilders())
	if err != nil {
		return nil, err
	}
	defer arrowutil.ReleaseAll(res)
	base, err := arrowutil.Take(o.mem, rec, recRows)
	if err != nil {
		return nil, err
	}
	defer base.Release()
	o.stats.RowsOut += int64(len(rows))
	if o.cfg.MemoryBudget > 0 {
		if err := o.evict(); err != nil {
			return nil, err
		}
	}
	return o.withResults(base, res), nil
}

// insertRow inserts input row i at position p of r.
func insertRow(r *agg.Rows, p int, ts int64, args []agg.Column, i int) {
	r.Ts = slices.Insert(r.Ts, p, ts)
	for j := range r.Cols {
		c := &r.Cols[j]
		c.AppendFrom(&args[j], i)
		moveLast(c, p, c.Len()-1)
	}
}

// moveLast moves value last of c to position p, shifting the rest up.
func moveLast(c *agg.Column, p, last int) {
	n := c.Null[last]
	copy(c.Null[p+1:last+1], c.Null[p:last])
	c.Null[p] = n
	switch c.Kind {
	case agg.KindInt64:
		v := c.I64[last]
		copy(c.I64[p+1:last+1], c.I64[p:last])
		c.I64[p] = v
	case agg.KindFloat64:
		v := c.F64[last]
		copy(c.F64[p+1:last+1], c.F64[p:last])
		c.F64[p] = v
	case agg.KindString:
		v := c.Str[last]
		copy(c.Str[p+1:last+1], c.Str[p:last])
		c.Str[p] = v
	case agg.KindBool:
		v := c.Bool[last]
		copy(c.Bool[p+1:last+1], c.Bool[p:last])
		c.Bool[p] = v
	}
}

// frameAt returns the frame [lo, hi) of the row at absolute position abs
// of r (sorted by event time, then arrival).
func frameAt(r *agg.Rows, f Frame, abs int64) (lo, hi int64) {
	p := int(abs - r.Base)
	t := r.Ts[p]
	if f.Rows {
		return max(abs-f.Preceding, r.Base), abs + 1
	}
	if f.Unbounded {
		lo = r.Base
	} else {
		lo = r.Base + int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= t-f.Preceding }))
	}
	end := t - f.EndPreceding
	hi = r.Base + int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > end }))
	return lo, max(lo, hi)
}

// probeFrameAt returns the frame [lo, hi) among the rows of r (sorted by
// event time, then arrival) of a probe row at time t, which is not among
// them: it comes after the rows at or before t, or with strict after
// those before t only.
func probeFrameAt(r *agg.Rows, f Frame, t int64, strict bool) (lo, hi int64) {
	h := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > t || strict && r.Ts[k] >= t })
	if f.Rows {
		return max(r.Base+int64(h)-f.Preceding, r.Base), r.Base + int64(h)
	}
	lo = r.Base
	if !f.Unbounded {
		lo += int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= t-f.Preceding }))
	}
	if f.EndPreceding > 0 {
		h = sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > t-f.EndPreceding })
	}
	return lo, max(lo, r.Base+int64(h))
}

// Advance moves the watermark to wm and emits every pending row with event
// time <= wm, each with its aggregates. The caller releases the batches.
func (o *Operator) Advance(ctx context.Context, wm int64) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	err := o.AdvanceFunc(ctx, wm, func(rec arrow.RecordBatch) error {
		out = append(out, rec)
		return nil
	})
	if err != nil {
		arrowutil.ReleaseAll(out)
		return nil, err
	}
	return out, nil
}

// AdvanceFunc is Advance passing each emitted batch to emit as soon as it
// is built, rather than all of them at the end, so that a large release
// (the end of a batch run) need not hold all its output at once. emit
// takes ownership of the batch (releases it, also on error); an error
// from emit ends the call.
//
// Lookups are not held off for the whole release: the write lock is
// taken for each key's rows (or a few keys' rows, yieldRows in all) and
// let go in between, and emit is called without it. Each key's rows are
// processed in one go, so a lookup sees a key before or after this
// release, never half-way; until every key is done, Lookup and Watermark
// report the previous watermark, whose rows every key reflects (see
// yield).
//
// An error (ctx cancelled, emit's, a state store's) may come part-way
// through a release, after some keys took their rows: the operator is
// then not to be advanced again, but closed, or restored from a
// checkpoint (Restore) as the pipeline does when a run fails.
func (o *Operator) AdvanceFunc(ctx context.Context, wm int64, emit func(arrow.RecordBatch) error) error {
	return o.advance(ctx, wm, false, func(rel []pendRow, res *resChunks, _ *scattered) error {
		if o.cfg.BatchOrder {
			if o.batchesInSeqOrder(rel) {
				return o.emitBatchOrder(rel, res, emit)
			}
			return o.emitSorted(rel, res, true, emit)
		}
		return o.emitSorted(rel, res, false, emit)
	})
}

// advance moves the watermark to wm, computes the results of the rows it
// releases and passes them to emit without the lock (see AdvanceFunc).
// rel is sorted by key; res holds their results in that order, and is
// released after emit unless emit takes its columns (sets res.cols nil).
//
// With scatter, the results of rows whose batches have a Dest are written
// into it chunk by chunk (emit gets the scattered, nil when no batch has
// a Dest), and res keeps only chunks that other rows need.
func (o *Operator) advance(ctx context.Context, wm int64, scatter bool, emit func(rel []pendRow, res *resChunks, sc *scattered) error) error {
	o.working.Store(true)
	defer o.working.Store(false)
	o.mu.Lock()
	locked := true
	defer func() {
		if locked {
			o.mu.Unlock()
		}
	}()
	fin := o.finBelow > o.finDone
	if wm <= o.wm && !fin {
		return nil
	}
	wm = max(wm, o.wm)
	prev := o.wm
	o.wm = wm
	finBelow := o.finBelow
	o.finDone = finBelow
	rel := o.release(wm)
	if err := o.sweepQuiet(prev, len(rel)); err != nil {
		return err
	}
	if err := o.maybeForgetKeys(rel); err != nil {
		return err
	}
	if len(rel) == 0 {
		return nil
	}
	if fin {
		if err := o.checkFinished(rel, finBelow); err != nil {
			return err
		}
	}
	// yield lets waiting lookups in. o.wm is wm while the lock is held
	// here (processKey's lateness edge reads it) and prev whenever it is
	// not, so lookups report prev until the release is complete. Only the
	// caller of Push and Advance changes the operator, so nothing else
	// changes meanwhile.
	yield := func() {
		o.wm = prev
		o.mu.Unlock()
		if yieldHook != nil {
			yieldHook(o)
		}
		o.mu.Lock()
		o.wm = wm
	}
	for _, p := range rel {
		o.maxTs = max(o.maxTs, p.ts)
	}
	// Gathering reads only the held batches and scratch, which lookups do
	// not touch: done without the lock.
	o.wm = prev
	o.mu.Unlock()
	locked = false
	o.ensureBuilders()
	var sc *scattered
	if scatter {
		sc = o.newScattered(rel)
	}
	chunkRows := resChunk
	if o.chunkRows > 0 {
		chunkRows = o.chunkRows
	}
	// A chunk ends at the first key boundary at or after chunkRows rows,
	// so it usually holds a few rows more: its builders are reserved for
	// 1/64 more (exactly chunkRows made the last key of nearly every chunk
	// double every result buffer).
	reserve := chunkRows + chunkRows/64
	// Nested and string results are sized from the last chunk of the
	// previous release, if any.
	o.reserveBuilders(min(len(rel), reserve))
	o.gatherArgs(rel)
	final := wm == End
	if final {
		// Every pending row is released now and no late row can come:
		// the batches' argument copies (gathered above) and the release
		// scratch are no longer needed.
		for _, hb := range o.held.live {
			if hb != nil {
				hb.args = nil
			}
		}
		o.rel, o.relAlt = nil, nil
	}
	o.mu.Lock()
	locked = true
	o.wm = wm
	// Results are finished in chunks of about resChunk rows (at key
	// boundaries): builders, and the children of nested results, never
	// grow past a chunk, and each chunk's builders are reserved from the
	// sizes of the previous one.
	var res resChunks
	defer res.release()
	addChunk := func(start int, chunk []arrow.Array) {
		o.noteShapes(chunk)
		if sc != nil {
			sc.chunk(start, chunk)
			if sc.all() {
				arrowutil.ReleaseAll(chunk)
				chunk = nil
			}
		}
		res.add(start, chunk)
	}
	var pwb statestore.WriteBatch
	start, since := 0, 0
	// Prefetching pays when keys get a row or two each (streaming's small
	// releases); over larger releases it showed no gain.
	warm := len(rel) < 2*len(o.states)
	for s := 0; s < len(rel); {
		e := s + 1
		for e < len(rel) && rel[e].key == rel[s].key {
			e++
		}
		if s&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := o.present(rel[s].key); err != nil {
			return err
		}
		if o.paging != nil {
			if err := o.pageIn(rel[s].key, o.states[rel[s].key], rel[e-1].ts); err != nil {
				return err
			}
		}
		if warm && e < len(rel) {
			o.warm(rel, e)
		}
		if o.cfg.ProbeCol > 0 {
			o.processKeyProbes(rel, s, e)
		} else {
			o.processKey(rel, s, e, final)
		}
		if fin && rel[s].seq < finBelow {
			o.finish(rel[s].key)
		}
		if o.paging != nil && !final && o.mayWrite() {
			if pwb == nil {
				var err error
				if pwb, err = statestore.NewWriteBatch(o.cfg.Store); err != nil {
					return fmt.Errorf("window: paging rows: %w", err)
				}
				defer pwb.Cancel()
			}
			if err := o.pageOut(pwb, rel[s].key, o.states[rel[s].key], o.keepOthers); err != nil {
				return err
			}
		}
		if o.cfg.MemoryBudget > 0 {
			o.touch(rel[s].key, o.states[rel[s].key])
		}
		if since += e - s; since >= yieldRows && e < len(rel) {
			yield()
			since = 0
		}
		s = e
		if s-start >= chunkRows && s < len(rel) {
			addChunk(start, o.finishBuilders())
			start = s
			o.reserveBuilders(min(len(rel)-s, reserve))
		}
	}
	addChunk(start, o.finishBuilders())
	if pwb != nil {
		if err := o.flushPageGarbage(pwb); err != nil {
			return err
		}
		err := pwb.Flush()
		o.closeSnapshot()
		if err != nil {
			return fmt.Errorf("window: paging rows: %w", err)
		}
		clear(o.unflushed)
	}
	if final {
		// Keys may now share the gathered arrays: never reuse them.
		o.gts = nil
		for j := range o.gcols {
			o.gcols[j] = agg.Column{}
		}
	}
	if o.cfg.MemoryBudget > 0 {
		if err := o.evict(); err != nil {
			return err
		}
	}
	o.stats.RowsOut += int64(len(rel))
	// Every key is done: wm is published. Emitting reads only the held
	// batches and the results, which lookups do not touch.
	o.mu.Unlock()
	locked = false
	err := emit(rel, &res, sc)
	if cap(o.rel) > relKeep {
		// A large release (a batch run's) lets its scratch go: kept, it
		// stayed live between releases and counted twice in the GC's
		// heap goal.
		o.rel = nil
	}
	if cap(o.relAlt) > relKeep {
		o.relAlt = nil
	}
	return err
}

// relKeep is the most released rows whose scratch an operator keeps for
// the next release: streaming releases are small and frequent, and a
// time-ordered batch run releases some 164 000 rows a task at a time, a
// Parquet row group's (5 MB of rows; letting them go, and the scratch
// that goes with them, made a third of features-4's allocations).
const relKeep = 1 << 18

// resChunk is the number of released rows whose results are built in one
// set of builders.
const resChunk = 1 << 16

// yieldRows is about how many released rows AdvanceFunc processes under
// the write lock before it lets waiting lookups in (at a key boundary).
const yieldRows = 16

// yieldHook, when set (by tests, before any operator runs), is called by
// AdvanceFunc each time it has let the write lock go between keys.
var yieldHook func(*Operator)

// resChunks holds the result columns of released rows in chunks: chunk c
// holds the results of rows start[c] to start[c+1] (in release order).
type resChunks struct {
	start []int
	cols  [][]arrow.Array // [chunk][aggregate]
	srcs  []arrow.Array   // scratch
}

func (r *resChunks) add(start int, cols []arrow.Array) {
	r.start = append(r.start, start)
	r.cols = append(r.cols, cols)
}

func (r *resChunks) release() {
	for _, c := range r.cols {
		arrowutil.ReleaseAll(c)
	}
	r.cols = nil
}

// at returns the chunk holding released row k and k's row in it.
func (r *resChunks) at(k int) (int32, int32) {
	c := sort.Search(len(r.start), func(i int) bool { return r.start[i] > k }) - 1
	return int32(c), int32(k - r.start[c])
}

// gather returns the result columns of the rows segs (chunk, row).
func (r *resChunks) gather(mem memory.Allocator, segs []arrowutil.Seg) ([]arrow.Array, error) {
	if len(r.cols) == 0 {
		return nil, nil
	}
	out := make([]arrow.Array, len(r.cols[0]))
	for a := range out {
		r.srcs = r.srcs[:0]
		for _, c := range r.cols {
			r.srcs = append(r.srcs, c[a])
		}
		col, err := arrowutil.Gather(mem, r.cols[0][a].DataType(), r.srcs, segs)
		if err != nil {
			arrowutil.ReleaseAll(out[:a])
			return nil, err
		}
		out[a] = col
	}
	return out, nil
}

// shape is the size of a result array: its rows, its value bytes
// (strings, binary) and the shapes of its children (nested results).
type shape struct {
	rows, data int
	kids       []shape
}

func shapeOf(a arrow.Array) shape {
	s := shape{rows: a.Len()}
	switch a := a.(type) {
	case *array.Map:
		s.kids = []shape{shapeOf(a.Keys()), shapeOf(a.Items())}
	case *array.List:
		s.kids = []shape{shapeOf(a.ListValues())}
	case *array.Struct:
		for f := 0; f < a.NumField(); f++ {
			s.kids = append(s.kids, shapeOf(a.Field(f)))
		}
	case *array.String:
		s.data = len(a.ValueBytes())
	case *array.Binary:
		s.data = len(a.ValueBytes())
	}
	return s
}

// reserveBuilders reserves the result builders for rows rows, shaped
// like the last chunk noted (noteShapes), or for top-level rows only
// before any.
func (o *Operator) reserveBuilders(rows int) {
	for k, b := range o.bld {
		if k < len(o.shapes) {
			reserveShape(b, o.shapes[k], rows)
		} else {
			reserveRows(b, rows)
		}
	}
}

// noteShapes keeps the shapes of a chunk of results for reserveShape,
// unless the chunk is too small to tell.
func (o *Operator) noteShapes(chunk []arrow.Array) {
	if len(chunk) == 0 || chunk[0].Len() < 256 {
		return
	}
	o.shapes = o.shapes[:0]
	for _, a := range chunk {
		o.shapes = append(o.shapes, shapeOf(a))
	}
}

// reserveShape reserves b for rows rows, its children (nested results)
// and string data in proportion to what an array of shape prev held, with
// 1/16 to spare. Every buffer is sized to what it is expected to hold (see
// reserveRows): a chunk's arrays keep their capacity until the whole
// release is emitted, and Arrow zero-fills all of it.
func reserveShape(b array.Builder, prev shape, rows int) {
	scale := func(n int) int {
		if prev.rows == 0 {
			return 0
		}
		return int(int64(n) * int64(rows) / int64(prev.rows) * 17 / 16)
	}
	reserveRows(b, rows)
	switch b := b.(type) {
	case *array.MapBuilder:
		if len(prev.kids) == 2 {
			reserveShape(b.KeyBuilder(), prev.kids[0], scale(prev.kids[0].rows))
			reserveShape(b.ItemBuilder(), prev.kids[1], scale(prev.kids[1].rows))
		}
	case *array.ListBuilder:
		if len(prev.kids) == 1 {
			reserveShape(b.ValueBuilder(), prev.kids[0], scale(prev.kids[0].rows))
		}
	case *array.StructBuilder:
		if len(prev.kids) == b.NumField() {
			for f := range prev.kids {
				reserveShape(b.FieldBuilder(f), prev.kids[f], rows)
			}
		}
	case *array.StringBuilder:
		b.ReserveData(scale(prev.data))
	case *array.BinaryBuilder:
		b.ReserveData(scale(prev.data))
	}
}

// reserveRows makes room in b for n more rows, exactly: Reserve rounds
// the capacity up to a power of two (up to twice what is needed, all of
// it zero-filled and held).
func reserveRows(b array.Builder, n int) {
	if need := b.Len() + n; b.Cap() < need {
		b.Resize(need)
	}
}

// release removes the pending rows with ts <= wm and returns them with
// each key's rows together, in (ts, seq) order. Many rows (a batch run)
// are placed by a counting sort on the dense key id straight out of the
// pending chunks, keys in id order; a few (a stream's release) are
// grouped by groupByKey, keys in the order of their first rows. Each
// key's rows, in arrival order after that, are then put in event-time
// order (usually they already are).
func (o *Operator) release(wm int64) []pendRow {
	o.arrival = nil
	nk := len(o.states)
	counting := o.pend.n > 64 && nk <= 4*o.pend.n
	var cnt []int32
	if counting {
		if cap(o.relCnt) < nk+1 {
			o.relCnt = make([]int32, nk+1, max(nk+1, 2*cap(o.relCnt)))
		}
		cnt = o.relCnt[:nk+1]
		clear(cnt)
	}
	released := 0
	fin := o.finBelow
	for _, ch := range o.pend.chunks {
		for _, p := range ch {
			if p.ts <= wm || p.seq < fin {
				released++
				if counting {
					cnt[p.key+1]++
				}
			}
		}
	}
	if released == 0 {
		return nil
	}
	rel := o.rel
	if cap(rel) < released || cap(rel) > 4*released && cap(rel) > 1<<16 {
		rel = make([]pendRow, released)
	}
	rel = rel[:released]
	o.rel = rel
	if counting {
		for k := 1; k <= nk; k++ {
			cnt[k] += cnt[k-1]
		}
	}
	// Scatter released rows, compact kept ones to the front of their chunk
	// (writes never pass reads, so this is safe in place), uncounting the
	// released rows by key.
	j := 0
	var chunks [][]pendRow
	for _, ch := range o.pend.chunks {
		keep := ch[:0]
		for _, p := range ch {
			switch {
			case p.ts > wm && p.seq >= fin:
				keep = append(keep, p)
				continue
			case counting:
				rel[cnt[p.key]] = p
				cnt[p.key]++
			default:
				rel[j] = p
				j++
			}
			o.dropPending(p.key)
		}
		if len(keep) > 0 {
			chunks = append(chunks, keep)
		} else if cap(keep) == pendChunk && len(o.pend.spare) < pendSpare {
			o.pend.spare = append(o.pend.spare, keep)
		}
	}
	o.pend.chunks = chunks
	o.pend.n -= released
	if !counting {
		// Few rows over many keys (a stream releasing a batch at a
		// time): grouped by key in the order of each key's first row.
		return o.groupByKey(rel)
	}
	for s := 0; s < len(rel); {
		e := s + 1
		for e < len(rel) && rel[e].key == rel[s].key {
			e++
		}
		if seg := rel[s:e]; !slices.IsSortedFunc(seg, cmpTsSeq) {
			slices.SortFunc(seg, cmpTsSeq)
		}
		s = e
	}
	return rel
}

// sortNearly sorts s by cmp: by insertion while that moves fewer than 8
// elements a row in all (input nearly in order), else by slices.SortFunc.
func sortNearly[T any](s []T, cmp func(a, b T) int) {
	moves, limit := 0, 8*len(s)
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for j > 0 && cmp(x, s[j-1]) < 0 {
			s[j] = s[j-1]
			j--
		}
		s[j] = x
		if moves += i - j; moves > limit {
			slices.SortFunc(s, cmp)
			return
		}
	}
}

// groupByKey puts the rows of rel (in arrival order) together by key,
// keys in the order of their first row and each key's rows in (time,
// sequence) order, and returns them: in the other half of the release's
// double buffer (o.relAlt, which becomes o.rel, and rel o.relAlt). Streaming releases few rows over many keys, too
// few to count by key id through an array as large as the keys; a sort
// on (key, time, sequence) compared each row some 13 times (pdqsort over
// a batch of 8 192: 0.9 of stream-4's 7 CPU s with the sort of emission).
// Here each row costs two passes and a look at its key's mark, and only
// keys with rows out of time order are sorted.
func (o *Operator) groupByKey(rel []pendRow) []pendRow {
	nk := len(o.states)
	if len(o.keyMark) < nk {
		o.keyMark = append(o.keyMark, make([]uint32, nk-len(o.keyMark))...)
		o.keySlot = append(o.keySlot, make([]int32, nk-len(o.keySlot))...)
	}
	o.markGen++
	if o.markGen == 0 { // wrapped: marks of 2^32 releases ago would match
		clear(o.keyMark)
		o.markGen = 1
	}
	gen := o.markGen
	cnt := o.relCnt[:0]
	for _, p := range rel {
		if p.key < 0 {
			continue
		}
		if o.keyMark[p.key] != gen {
			o.keyMark[p.key] = gen
			o.keySlot[p.key] = int32(len(cnt))
			cnt = append(cnt, 0)
		}
		cnt[o.keySlot[p.key]]++
	}
	// Rows without a key (none in practice: every pushed row is
	// interned) go first, in arrival order.
	start := int32(0)
	for _, p := range rel {
		if p.key < 0 {
			start++
		}
	}
	for g, c := range cnt {
		cnt[g] = start
		start += c
	}
	out := resize(o.relAlt, len(rel))
	arrival := resize(o.arrivalBuf, len(rel))
	j := int32(0)
	for i, p := range rel {
		if p.key < 0 {
			arrival[i] = j
			out[j] = p
			j++
			continue
		}
		g := o.keySlot[p.key]
		arrival[i] = cnt[g]
		out[cnt[g]] = p
		cnt[g]++
	}
	o.arrivalBuf = arrival
	o.relCnt = cnt
	for s := int(j); s < len(out); {
		e := s + 1
		for e < len(out) && out[e].key == out[s].key {
			e++
		}
		if e-s > 1 {
			if seg := out[s:e]; !slices.IsSortedFunc(seg, cmpTsSeq) {
				slices.SortFunc(seg, cmpTsSeq)
			}
		}
		s = e
	}
	o.arrival = arrival
	o.relAlt, o.rel = rel, out
	return out
}

func cmpTsSeq(a, b pendRow) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	case a.rank != b.rank:
		return int(a.rank) - int(b.rank)
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// warm prefetches, while the current key is processed, what the visits
// of the next keys will read first, in three stages so that each stage
// reads only what the previous call brought into the cache (rel[i] starts
// the next key's rows): the state of the third key from here; the column
// array, row times and aggregate windows of the second, named in its
// state; and the last values of the next one's row arrays and what its
// windows point to (agg.Warm). A release of few rows over many keys
// visits each key's state once, a cache miss per object and nothing to
// overlap it with: the first reads of each visit were 17 % of stream-4's
// CPU. advance calls it only for releases with fewer rows than twice the
// keys: over batch releases (about 4 rows a key in features-4) it showed
// no gain.
func (o *Operator) warm(rel []pendRow, i int) {
	next := func(i int) int {
		k := rel[i].key
		for i++; i < len(rel) && rel[i].key == k; i++ {
		}
		return i
	}
	if ks := o.states[rel[i].key]; ks != nil {
		for c := range ks.rows.Cols {
			warmColumnTail(&ks.rows.Cols[c])
		}
		for _, w := range ks.aggs {
			agg.Warm(w, 1)
		}
	}
	if i = next(i); i >= len(rel) {
		return
	}
	if ks := o.states[rel[i].key]; ks != nil {
		r := &ks.rows
		if n := len(r.Ts); n > 0 {
			prefetch.Of(&r.Ts[n-1])
		}
		if len(r.Cols) > 0 {
			prefetch.Lines(unsafe.Pointer(&r.Cols[0]), uintptr(len(r.Cols))*unsafe.Sizeof(r.Cols[0]))
		}
		for _, w := range ks.aggs {
			agg.Warm(w, 0)
		}
	}
	if i = next(i); i < len(rel) {
		if ks := o.states[rel[i].key]; ks != nil {
			prefetch.Object(ks)
		}
	}
}

// warmColumnTail prefetches the last value of c and its NULL flag.
func warmColumnTail(c *agg.Column) {
	n := len(c.Null)
	if n == 0 {
		return
	}
	prefetch.Of(&c.Null[n-1])
	switch {
	case len(c.F64) == n:
		prefetch.Of(&c.F64[n-1])
	case len(c.I64) == n:
		prefetch.Of(&c.I64[n-1])
	case len(c.Str) == n:
		prefetch.Of(&c.Str[n-1])
	case len(c.Bool) == n:
		prefetch.Of(&c.Bool[n-1])
	}
}

// processKey appends the released rows of one key (sorted) to its state
// and evaluates every aggregate for them.
//
// The rows are rel[s:e]; their event times and arguments were gathered
// into o.gts and o.gcols at the same positions. On the final release (End)
// a key with no retained rows takes sub-slices of the gathered arrays
// rather than copies: nothing will be appended to them any more.
func (o *Operator) processKey(rel []pendRow, s, e int, final bool) {
	ks := o.states[rel[s].key]
	r := &ks.rows
	first := r.End()
	if final && r.Len() == 0 {
		r.Ts = o.gts[s:e:e]
		for j := range r.Cols {
			r.Cols[j] = o.gcols[j].Slice(s, e)
		}
	} else {
		reserveRowArrays(r, e-s)
		r.Ts = append(r.Ts, o.gts[s:e]...)
		for j := range r.Cols {
			r.Cols[j].AppendRange(&o.gcols[j], s, e)
		}
	}
	n := e - s
	lo, hi := growI64(o.lo, n), growI64(o.hi, n)
	o.lo, o.hi = lo, hi
	trim := r.End()
	others := r.End()
	k := 0
	for w, spec := range o.cfg.Windows {
		var ex []int64
		if spec.Frame.ExcludeCurrent {
			ex = growI64(o.ex, n)
			o.ex = ex
			for j := range ex {
				ex[j] = first + int64(j)
			}
		}
		if len(r.Older) > 0 && o.paging != nil && w == o.paging.w {
			boundsPaged(r, spec.Frame, first, lo, hi)
		} else {
			bounds(r, spec.Frame, first, lo, hi)
		}
		for a, win := range o.winAggs(ks, w) {
			win.Eval(r, lo, hi, ex, o.bld[k+a])
		}
		k += len(spec.Aggs)
		keep := o.keepFrom(r, spec.Frame, first+int64(n-1), lo[n-1], hi[n-1])
		trim = min(trim, keep)
		if o.paging != nil {
			if w == o.paging.w {
				ks.pagedLo = lo[n-1]
			} else {
				others = min(others, keep)
			}
		}
	}
	o.keepOthers = others
	o.trim(ks, trim)
}

// processKeyProbes is processKey for input that mixes events and probe
// rows (rel[s:e], sorted by time, rank, sequence): events are stored and
// get their frames by position; probes are not stored and get the frame a
// row at their time would have without itself: the events at or before
// their time (strictly before with StrictProbes, which sorts them ahead of
// the events at their time), by the same two pointers, so frames stay
// monotone for the windows.
func (o *Operator) processKeyProbes(rel []pendRow, s, e int) {
	ks := o.states[rel[s].key]
	r := &ks.rows
	first := r.End()
	for i := s; i < e; i++ {
		if rel[i].rank == 0 {
			r.Ts = append(r.Ts, o.gts[i])
			for j := range r.Cols {
				r.Cols[j].AppendRange(&o.gcols[j], i, i+1)
			}
		} else {
			ks.probed = max(ks.probed, rel[i].ts)
		}
	}
	n := e - s
	lo, hi := growI64(o.lo, n), growI64(o.hi, n)
	o.lo, o.hi = lo, hi
	ex := growI64(o.ex, n)
	o.ex = ex
	trim := r.End()
	k := 0
	for w, spec := range o.cfg.Windows {
		f := spec.Frame
		// Events' positions, in order.
		pos := first
		var l, h int // pointers: first row with ts >= t-Preceding, first with ts > t-EndPreceding
		if r.Len() > 0 {
			t0 := rel[s].ts
			l = sort.Search(r.Len(), func(i int) bool { return r.Ts[i] >= t0-f.Preceding })
			h = sort.Search(r.Len(), func(i int) bool { return r.Ts[i] > t0-f.EndPreceding })
		}
		for j := 0; j < n; j++ {
			p := rel[s+j]
			t := p.ts
			for l < r.Len() && r.Ts[l] < t-f.Preceding {
				l++
			}
			for h < r.Len() && r.Ts[h] <= t-f.EndPreceding {
				h++
			}
			ex[j] = -1
			hh := h
			if p.rank < 0 && f.EndPreceding == 0 {
				// Strict probe: only events before t.
				hh = sort.Search(r.Len(), func(i int) bool { return r.Ts[i] >= t })
			}
			switch {
			case f.Rows && p.rank == 0:
				lo[j], hi[j] = max(pos-f.Preceding, 0), pos+1
			case f.Rows:
				// A probe sorts after the events at or before its time
				// (strict: before its time): its n preceding rows end at
				// the next event's position.
				lo[j], hi[j] = max(pos-f.Preceding, 0), pos
			default:
				lo[j] = r.Base + int64(l)
				if f.Unbounded {
					lo[j] = 0
				}
				hi[j] = max(r.Base+int64(hh), lo[j])
			}
			if p.rank == 0 {
				if f.ExcludeCurrent {
					ex[j] = pos
				}
				pos++
			}
		}
		var exw []int64
		if f.ExcludeCurrent {
			exw = ex
		}
		for a, win := range o.winAggs(ks, w) {
			win.Eval(r, lo, hi, exw, o.bld[k+a])
		}
		k += len(spec.Aggs)
		trim = min(trim, o.keepFrom(r, f, max(pos-1, r.Base), lo[n-1], hi[n-1]))
	}
	o.trim(ks, trim)
}

// gatherArgs copies the event time and argument values of the released
// rows, in their (key, ts, seq) order, into o.gts and o.gcols: one typed
// pass per column.
func (o *Operator) gatherArgs(rel []pendRow) {
	n := len(rel)
	o.gts = growI64(o.gts, n)
	for i, p := range rel {
		o.gts[i] = p.ts
	}
	if len(o.gcols) != len(o.cfg.ArgCols) {
		o.gcols = make([]agg.Column, len(o.cfg.ArgCols))
	}
	for j, c := range o.cfg.ArgCols {
		// The arrays of the previous release are reused: every value is
		// overwritten.
		col := o.gcols[j]
		if col.Kind == 0 {
			col, _ = agg.NewColumn(o.in.Field(c).Type)
		}
		col.Null = resize(col.Null, n)
		for i, p := range rel {
			col.Null[i] = o.held.get(p.batch).args[j].Null[p.row]
		}
		switch col.Kind {
		case agg.KindInt64:
			col.I64 = resize(col.I64, n)
			for i, p := range rel {
				col.I64[i] = o.held.get(p.batch).args[j].I64[p.row]
			}
		case agg.KindFloat64:
			col.F64 = resize(col.F64, n)
			for i, p := range rel {
				col.F64[i] = o.held.get(p.batch).args[j].F64[p.row]
			}
		case agg.KindString:
			col.Str = resize(col.Str, n)
			for i, p := range rel {
				col.Str[i] = o.held.get(p.batch).args[j].Str[p.row]
			}
		case agg.KindBool:
			col.Bool = resize(col.Bool, n)
			for i, p := range rel {
				col.Bool[i] = o.held.get(p.batch).args[j].Bool[p.row]
			}
		}
		o.gcols[j] = col
	}
}

// bounds fills lo and hi with the frames of rows first, first+1, ... of r.
func bounds(r *agg.Rows, f Frame, first int64, lo, hi []int64) {
	n := len(lo)
	if f.Rows {
		for j := range n {
			a := first + int64(j)
			lo[j], hi[j] = max(a-f.Preceding, 0), a+1
		}
		return
	}
	// Two pointers over the sorted rows; the first row finds its bounds by
	// searching from itself, as a frame's edges are usually near the
	// current row.
	c := int(first - r.Base)
	t0 := r.Ts[c]
	var l int
	if !f.Unbounded {
		l = firstAtLeast(r.Ts, c, t0-f.Preceding)
	}
	var h int
	if f.EndPreceding == 0 {
		h = firstAbove(r.Ts, c+1, t0)
	} else {
		h = firstAtLeast(r.Ts, c, t0-f.EndPreceding+1)
	}
	for j := range n {
		t := r.Ts[int(first-r.Base)+j]
		if !f.Unbounded {
			for l < r.Len() && r.Ts[l] < t-f.Preceding {
				l++
			}
		}
		for h < r.Len() && r.Ts[h] <= t-f.EndPreceding {
			h++
		}
		if f.Unbounded {
			lo[j] = 0
		} else {
			lo[j] = r.Base + int64(l)
		}
		hi[j] = max(r.Base+int64(h), lo[j])
	}
}

// firstAtLeast returns the first k of ts[:end+1] (sorted) with
// ts[k] >= v, given that ts[end] >= v: it gallops back from end, then
// bisects.
func firstAtLeast(ts []int64, end int, v int64) int {
	hi, step := end, 1
	lo := hi - step
	for lo >= 0 && ts[lo] >= v {
		hi = lo
		step *= 2
		lo = hi - step
	}
	l := max(lo+1, 0)
	for l < hi {
		m := int(uint(l+hi) >> 1)
		if ts[m] >= v {
			hi = m
		} else {
			l = m + 1
		}
	}
	return l
}

// firstAbove returns the first k >= from of ts (sorted) with ts[k] > v,
// len(ts) when there is none: it gallops forward from from, then bisects.
func firstAbove(ts []int64, from int, v int64) int {
	lo, step := from, 1 // every k < lo has ts[k] <= v
	hi := lo
	for hi < len(ts) && ts[hi] <= v {
		lo = hi + 1
		hi = lo + step
		step *= 2
	}
	hi = min(hi, len(ts))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ts[m] > v {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// boundsPaged is bounds for a RANGE frame over rows with Older segments
// (row paging): the lower bound walks the held rows through TsAt; the
// rows it crosses are all held (pageIn read them back).
func boundsPaged(r *agg.Rows, f Frame, first int64, lo, hi []int64) {
	t0 := r.Ts[first-r.Base]
	l := firstAtOrAfter(r, t0-f.Preceding)
	h := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > t0-f.EndPreceding })
	for j := range lo {
		t := r.Ts[int(first-r.Base)+j]
		for l < r.End() && r.TsAt(l) < t-f.Preceding {
			l++
			if l < r.Base && l == r.At(l-1).End() {
				l = nextHeld(r, l)
			}
		}
		for h < r.Len() && r.Ts[h] <= t-f.EndPreceding {
			h++
		}
		lo[j] = l
		hi[j] = max(r.Base+int64(h), lo[j])
	}
}

// nextHeld returns the first held row at or after a (a is not held).
func nextHeld(r *agg.Rows, a int64) int64 {
	for i := range r.Older {
		if r.Older[i].Base >= a && r.Older[i].Len() > 0 {
			return r.Older[i].Base
		}
	}
	return max(a, r.Base)
}

// keepFrom returns the lowest row the windows of frame f still need after
// row last (whose frame is [lo, hi)) was evaluated: rows inside a bounded
// frame are read again to retract them, rows not yet in the frame to add
// them, and rows within the allowed lateness serve late rows. An unbounded
// frame never evicts, so it needs only what it has not absorbed yet and the
// last row (which a later row's EXCLUDE CURRENT ROW split may re-read).
func (o *Operator) keepFrom(r *agg.Rows, f Frame, last, lo, hi int64) int64 {
	keep := lo
	if f.Unbounded {
		keep = min(last, hi)
	}
	if edge, ok := o.heldEdge(o.wm); ok {
		p := sort.Search(r.Len(), func(k int) bool { return r.Ts[k] > edge })
		var need int64
		if f.Rows {
			need = r.Base + int64(p) - f.Preceding
		} else {
			need = r.Base + int64(sort.Search(r.Len(), func(k int) bool { return r.Ts[k] >= edge-f.Preceding }))
		}
		keep = min(keep, need)
	}
	return keep
}

// heldEdge returns the event time from which rows' frames must stay
// whole, given the watermark wm: late rows within the allowed lateness
// come after wm minus it, and lookups are served down to the newest row
// released minus the lookup retention. ok is false when neither applies.
func (o *Operator) heldEdge(wm int64) (edge int64, ok bool) {
	edge = math.MaxInt64
	if L := o.cfg.AllowedLateness; L > 0 && wm != End {
		edge, ok = wm-L, true
	}
	if R := o.cfg.Retention; R > 0 {
		edge, ok = min(edge, o.maxTs-R), true
	}
	return edge, ok
}

// trim drops the key's rows below absolute row a.
func (o *Operator) trim(ks *keyState, a int64) {
	if ks.edge != nil {
		o.trimEdge(ks, a)
	}
	r := &ks.rows
	n := int(a - r.Base)
	if n <= 0 {
		return
	}
	n = min(n, r.Len())
	if n == 0 {
		return
	}
	ks.dropped = max(ks.dropped, r.Ts[n-1])
	r.Ts = agg.DropFront(r.Ts, n)
	for j := range r.Cols {
		r.Cols[j].DropFront(n)
	}
	r.Base += int64(n)
}

// reserveRowArrays makes room for n more rows in r's arrays. Once a key
// has dropped rows (its window is full: as many rows leave as come), each
// array grows to a quarter more than it must hold rather than by append's
// doubling, which left up to half of every such key's arrays unused
// (features-4: 96 MB of row arrays for about 2.5 M rows held). Arrays
// still filling up (no row dropped yet) grow as append grows them, so
// that growing copies each row about once.
func reserveRowArrays(r *agg.Rows, n int) {
	full := r.Base > 0
	r.Ts = reserveTail(r.Ts, n, full)
	for j := range r.Cols {
		c := &r.Cols[j]
		c.Null = reserveTail(c.Null, n, full)
		switch c.Kind {
		case agg.KindInt64:
			c.I64 = reserveTail(c.I64, n, full)
		case agg.KindFloat64:
			c.F64 = reserveTail(c.F64, n, full)
		case agg.KindString:
			c.Str = reserveTail(c.Str, n, full)
		case agg.KindBool:
			c.Bool = reserveTail(c.Bool, n, full)
		}
	}
}

// reserveTail returns s with room for n more values, a quarter more
// than needed when sliding, as append grows otherwise (see
// reserveRowArrays).
func reserveTail[T any](s []T, n int, sliding bool) []T {
	need := len(s) + n
	if need <= cap(s) {
		return s
	}
	if !sliding {
		return slices.Grow(s, n)
	}
	ns := make([]T, len(s), need+need/4+4)
	copy(ns, s)
	return ns
}

// resize returns s with length n, its values unspecified: s itself if
// it can hold n values, else a new array.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, max(n, 2*cap(s)))
	}
	return s[:n]
}

func growI64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n, max(n, 2*cap(s)))
	}
	return s[:n]
}

func (o *Operator) ensureBuilders() {
	if o.bld != nil {
		return
	}
	for _, spec := range o.cfg.Windows {
		for _, f := range spec.Aggs {
			o.bld = append(o.bld, agg.NewResultBuilder(o.resMem, f))
		}
	}
}

// ownResults returns res, arrays of the result builders, as arrays of
// Mem: copies when Config.ResultMem is set (res is released then).
func (o *Operator) ownResults(res []arrow.Array) ([]arrow.Array, error) {
	if o.cfg.ResultMem == nil {
		return res, nil
	}
	defer arrowutil.ReleaseAll(res)
	out := make([]arrow.Array, len(res))
	for k, a := range res {
		c, err := arrowutil.Gather(o.mem, a.DataType(), res[k:k+1], []arrowutil.Seg{{Src: 0, Start: 0, End: int32(a.Len())}})
		if err != nil {
			arrowutil.ReleaseAll(out[:k])
			return nil, err
		}
		out[k] = c
	}
	return out, nil
}

func (o *Operator) finishBuilders() []arrow.Array {
	out := make([]arrow.Array, len(o.bld))
	for k, b := range o.bld {
		out[k] = b.NewArray()
	}
	return out
}

// withResults returns base with the result columns appended.
func (o *Operator) withResults(base arrow.RecordBatch, res []arrow.Array) arrow.RecordBatch {
	cols := make([]arrow.Array, 0, len(base.Columns())+len(res))
	cols = append(cols, base.Columns()...)
	cols = append(cols, res...)
	return array.NewRecordBatch(o.out, cols, base.NumRows())
}

// emitBatchOrder emits released rows batch by batch in arrival order. A
// batch whose rows were all released now is emitted with its own columns;
// the results are gathered from the result chunks in the batch's row
// order.
func (o *Operator) emitBatchOrder(proc []pendRow, res *resChunks, emit func(arrow.RecordBatch) error) error {
	// idx[batch][row] is the row's result (chunk<<32 | row in chunk), -1
	// for rows not released now.
	idx := map[int32][]int64{}
	c := 0
	for k, p := range proc {
		for c+1 < len(res.start) && res.start[c+1] <= k {
			c++
		}
		s := idx[p.batch]
		if s == nil {
			s = make([]int64, o.held.get(p.batch).rows())
			for i := range s {
				s[i] = -1
			}
			idx[p.batch] = s
		}
		s[p.row] = int64(c)<<32 | int64(k-res.start[c])
	}
	ids := make([]int32, 0, len(idx))
	for id := range idx {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var rows []int32
	var segs []arrowutil.Seg
	for _, id := range ids {
		hb := o.held.get(id)
		pos := idx[id]
		delete(idx, id)
		rows, segs = rows[:0], segs[:0]
		for i, v := range pos {
			if v >= 0 {
				rows = append(rows, hb.recRow(int32(i)))
				segs = arrowutil.AppendSeg(segs, int32(v>>32), int32(v))
			}
		}
		var base arrow.RecordBatch
		if len(rows) == int(hb.rec.NumRows()) {
			hb.rec.Retain()
			base = hb.rec
		} else {
			var err error
			if base, err = arrowutil.Take(o.mem, hb.rec, rows); err != nil {
				return err
			}
		}
		cols, err := res.gather(o.mem, segs)
		if err != nil {
			base.Release()
			return err
		}
		rec := o.withResults(base, cols)
		base.Release()
		arrowutil.ReleaseAll(cols)
		o.consume(id, len(rows))
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// batchesInSeqOrder reports whether emitting the released rows batch by
// batch, in batch arrival order and row order, puts them in sequence
// order. It does when the input comes from one upstream task; a task of a
// second stage receives the batches of several upstream tasks
// interleaved.
func (o *Operator) batchesInSeqOrder(rel []pendRow) bool {
	if len(rel) == 0 {
		return true
	}
	lo, hi := batchRange(rel)
	type span struct {
		lo, hi int64
		seen   bool
	}
	spans := make([]span, hi-lo+1)
	for _, p := range rel {
		sp := &spans[p.batch-lo]
		if !sp.seen {
			*sp = span{p.seq, p.seq, true}
			continue
		}
		sp.lo, sp.hi = min(sp.lo, p.seq), max(sp.hi, p.seq)
	}
	prev := int64(math.MinInt64)
	for _, sp := range spans {
		if !sp.seen {
			continue
		}
		if sp.lo <= prev {
			return false
		}
		prev = sp.hi
	}
	// Rows within a batch must be in sequence order too.
	for b, sp := range spans {
		if !sp.seen {
			continue
		}
		hb := o.held.get(lo + int32(b))
		if hb.seqOrder == 0 {
			hb.seqOrder = 1
			seq := hb.rec.Column(o.cfg.SeqCol).(*array.Int64).Int64Values()
			for i := 1; i < len(seq); i++ {
				if seq[i] <= seq[i-1] {
					hb.seqOrder = -1
					break
				}
			}
		}
		if hb.seqOrder < 0 {
			return false
		}
	}
	return true
}

// batchRange returns the least and greatest batch id of rel (not empty).
func batchRange(rel []pendRow) (lo, hi int32) {
	lo, hi = rel[0].batch, rel[0].batch
	for _, p := range rel {
		lo, hi = min(lo, p.batch), max(hi, p.batch)
	}
	return lo, hi
}

// emitSorted emits released rows as one batch, in sequence order (bySeq)
// or in (event time, sequence) order.
func (o *Operator) emitSorted(proc []pendRow, res *resChunks, bySeq bool, emit func(arrow.RecordBatch) error) error {
	// Sort the rows' (time, sequence) by value: sorting row numbers
	// through proc read two rows per comparison, out of cache.
	type ord struct {
		ts, seq int64
		k       int32
	}
	keys := make([]ord, len(proc))
	cmpOrd := func(x, y ord) int {
		if x.ts != y.ts {
			return cmpInt(x.ts, y.ts)
		}
		return cmpInt(x.seq, y.seq)
	}
	if arr := o.arrival; !bySeq && len(arr) == len(proc) {
		// Taken in arrival order, a stream's rows are nearly in time
		// order already (out of it by the source's disorder).
		for i, k := range arr {
			p := &proc[k]
			keys[i] = ord{p.ts, p.seq, k}
		}
		sortNearly(keys, cmpOrd)
	} else {
		for k, p := range proc {
			keys[k] = ord{p.ts, p.seq, int32(k)}
			if bySeq {
				keys[k].ts = 0
			}
		}
		slices.SortFunc(keys, cmpOrd)
	}
	// Gather the rows in order from the batches involved and the results
	// from their chunks; batch ids span a small range (src and counts by
	// id - lo).
	lo, hi := batchRange(proc)
	src := make([]int32, hi-lo+1)
	counts := make([]int, hi-lo+1)
	var recs []arrow.RecordBatch
	segs := make([]arrowutil.Seg, 0, len(keys))
	rsegs := make([]arrowutil.Seg, 0, len(keys))
	for _, key := range keys {
		p := proc[key.k]
		hb := o.held.get(p.batch)
		si := src[p.batch-lo] - 1
		if si < 0 {
			si = int32(len(recs))
			src[p.batch-lo] = si + 1
			recs = append(recs, hb.rec)
		}
		segs = arrowutil.AppendSeg(segs, si, hb.recRow(p.row))
		c, r := res.at(int(key.k))
		rsegs = arrowutil.AppendSeg(rsegs, c, r)
		counts[p.batch-lo]++
	}
	base, err := arrowutil.GatherRecord(o.mem, o.in, recs, segs)
	if err != nil {
		return err
	}
	defer base.Release()
	cols, err := res.gather(o.mem, rsegs)
	if err != nil {
		return err
	}
	defer arrowutil.ReleaseAll(cols)
	for b, c := range counts {
		if c > 0 {
			o.consume(lo+int32(b), c)
		}
	}
	return emit(o.withResults(base, cols))
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// consume notes that n rows of batch id were emitted and lets the batch go
// when none is left.
func (o *Operator) consume(id int32, n int) {
	hb := o.held.get(id)
	hb.left -= n
	if hb.left <= 0 {
		hb.rec.Release()
		o.held.del(id)
		o.keepArgs(hb.args)
		hb.args = nil
	}
}

// Close releases the batches the operator holds. Its window state stays,
// so Lookup keeps working.
func (o *Operator) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.abandonCheckpoint()
	o.closeSnapshot()
	for _, hb := range o.held.live {
		if hb != nil {
			hb.rec.Release()
		}
	}
	o.held = heldBatches{}
	for _, b := range o.bld {
		b.Release()
	}
	o.bld = nil
}
