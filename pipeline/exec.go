package pipeline

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/mempool"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// Mode selects how a pipeline treats time.
type Mode int

const (
	// Batch reads a bounded source to its end and then emits one row per
	// input row, in input order.
	Batch Mode = iota
	// Streaming emits each row once the watermark passes its event time,
	// in (event time, arrival) order.
	Streaming
)

// String names the mode.
func (m Mode) String() string {
	if m == Streaming {
		return "stream"
	}
	return "batch"
}

// DefaultWatermarkMaxRows is RunOptions.WatermarkMaxRows's default. On
// stream-4 (100 000 keys, 2 tasks, a 100 ms interval, a source faster than
// the pipeline) 1<<16, 1<<17 and 1<<18 rows took 4.2-4.5, 4.1-4.4 and
// 4.1-4.3 s, with 110-130, 190-240 and 370-420 ms at most between two
// outputs; without a bound 4.6-5.4 s and 1.9-2.3 s.
const DefaultWatermarkMaxRows = 1 << 17

// RunOptions tune the execution of a compiled pipeline.
type RunOptions struct {
	// Mode is Batch or Streaming.
	Mode Mode
	// MaxOutOfOrder bounds how far behind the newest event time a row may
	// arrive and still be on time (streaming): the watermark is the newest
	// event time read (of the partition, with a source.Partitioned; rows
	// WHERE drops count too) minus it, and a row at or behind it is late,
	// so a row less than MaxOutOfOrder behind is on time and one exactly
	// that far behind is late.
	MaxOutOfOrder time.Duration
	// AllowedLateness applies late rows no more than this far behind the
	// watermark (streaming); 0 drops every late row.
	AllowedLateness time.Duration
	// IdleTimeout: with a partitioned source (source.Partitioned), a
	// partition that has delivered nothing for this long stops holding the
	// watermark back (streaming). 0 waits for every partition. Time the
	// reader spends waiting for the window tasks (a slow sink) does not
	// count: the source may hold the partition's rows meanwhile.
	IdleTimeout time.Duration
	// WatermarkInterval, when positive, advances the watermark at most
	// once per interval of wall-clock time, or once WatermarkMaxRows rows
	// were read since it last did (streaming; the end of the input always
	// passes at once): rows are released in larger steps, up to the
	// interval later, and window tasks visit each key for more rows at a
	// time, which costs much less CPU per row when keys are many
	// (window.BenchmarkBatchRelease). Results are the same; a row counts
	// as late only behind the watermark sent, which lags by up to the
	// interval. 0 advances it after every batch read.
	WatermarkInterval time.Duration
	// WatermarkMaxRows bounds the rows read between two watermarks under
	// WatermarkInterval: once that many were read since the last one, the
	// next is sent without waiting for the interval. A source faster than
	// the pipeline (a backlog, a replay) would otherwise pile up all the
	// rows it can deliver in an interval as pending rows, to be released
	// in one step: memory and the time between outputs grow with the
	// source's speed. 0 is DefaultWatermarkMaxRows; negative, no bound.
	WatermarkMaxRows int
	// Parallelism is the number of window tasks per stage (default 1).
	Parallelism int
	// Late receives late rows that were not applied, with the source's
	// columns. Nil counts them only. A sink.Committer takes part in
	// checkpoints like the output's sink.
	Late sink.Sink
	// DeadLetters receives rows the engine cannot process (a NULL event
	// time, an expression that fails on the row: a CAST of text that is
	// not a number, an integer overflow). Nil counts them only.
	DeadLetters source.DeadLetterFunc
	// ChannelDepth is the capacity, in batches, of each channel between
	// operators (default 4): with a slow sink, at most that many batches
	// wait on each edge and the source is slowed down. A batch run over
	// input clustered by key with several tasks bounds the rows waiting
	// for each first-stage task instead (see cluster.go).
	ChannelDepth int
	// Mem allocates Arrow memory; nil is the Go allocator. With nil, the
	// window tasks build their results in buffers pooled for reuse
	// (window.Config.ResultMem), which never leave the run: the output
	// gets copies, allocated by Go. A Mem given allocates everything,
	// those results too (a memory.CheckedAllocator sees them all).
	Mem memory.Allocator
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Stats, when set, is updated while the pipeline runs.
	Stats *Stats
	// Live, when set, serves lookups against the pipeline's state while
	// it runs and after it has finished (request mode).
	Live *Live
	// LookupRetention keeps window state for lookups at times down to
	// this far behind the watermark (see Live.Lookup); 0 keeps only what
	// frames need.
	LookupRetention time.Duration
	// Name names the pipeline in logs and metrics (default DefaultName).
	Name string
	// Observer, when set, is told of the run's start and end and of
	// lookups (metrics); see observe.go.
	Observer Observer
	// Checkpoints, when set, makes the run take consistent checkpoints
	// and resume from the latest one; see Checkpointing.
	Checkpoints *Checkpointing
	// MemoryBudget bounds the bytes of window state held in memory
	// (shared by all window tasks): the least recently used keys are
	// evicted to the state store on disk and read back when needed. 0
	// keeps all state in memory.
	MemoryBudget int64
	// PageRows, when > 0, bounds each key's memory whatever the length of
	// its longest RANGE frame: the rows no frame edge needs are written to
	// the state store (as with MemoryBudget) in pages of about PageRows
	// rows and read back when the frame's lower edge reaches them (see
	// window.Config.PageRows). Every OVER stage must have a RANGE ...
	// PRECEDING AND CURRENT ROW frame; allowed lateness and lookup
	// retention cannot be combined with it.
	PageRows int
	// Stop, when closed, ends the run gracefully: reading stops (a Read
	// waiting for data is cancelled). With Checkpoints a final checkpoint
	// is taken, so that a later run resumes exactly there, and rows still
	// waiting for the watermark stay in it; without, the input ends there
	// as if the source had ended, and every pending row is emitted. Run
	// then returns nil.
	Stop <-chan struct{}
	// ClusteredBy promises that the input of a batch run comes clustered
	// by these columns: every row with given values of them comes before
	// any row with other values (sorted by them, for one; the order within
	// each is free). The first OVER windows must partition by (at least)
	// them. Such input, far from time order, would be held to its end; with
	// the promise, the rows of each key are released, and the key's state
	// dropped, once the input has moved on: Live.Lookup answers such a key
	// with window.ErrKeyDropped (with a state store, as with Checkpoints or
	// MemoryBudget, states are kept). A query of GROUP BY windows only,
	// grouped by (at least) the columns, emits each key's windows once the
	// input has moved on: key by key, in the order of their first rows,
	// each key's windows by start. A row whose key came before another
	// key's rows stops the run with an error wrapping
	// window.ErrNotClustered, in a run resumed from a checkpoint too
	// (checkpoints flag the states of the keys finished).
	ClusteredBy []string
	// StateDir is the directory of the run's state store (Badger), used
	// with Checkpoints or MemoryBudget. It is emptied when the run starts
	// (the state comes from the checkpoint). Empty: a temporary
	// directory, removed when the run ends.
	StateDir string
}

// Stats counts rows through a running pipeline. Fields are updated
// atomically; read them with Snapshot.
type Stats struct {
	rowsIn, rowsOut, late, lateApplied, deadLetters, filtered atomic.Int64
	watermark                                                 atomic.Int64
	sourceDead                                                atomic.Int64
	checkpoints, checkpointFailures, lastCheckpoint           atomic.Int64
	lastCheckpointBytes, lastCheckpointNanos, lastStallNanos  atomic.Int64
	lastCheckpointUnixMilli                                   atomic.Int64
	lastWriteNanos, lastBackupNanos, lastUploadNanos          atomic.Int64
}

// StatsSnapshot is a point-in-time copy of Stats.
type StatsSnapshot struct {
	// RowsIn counts rows read from the source; RowsOut rows written to the sink.
	RowsIn, RowsOut int64
	// Filtered counts rows removed by WHERE.
	Filtered int64
	// LateDropped counts late rows not applied; LateApplied late rows
	// applied within the allowed lateness.
	LateDropped, LateApplied int64
	// DeadLetters counts rows the engine could not process.
	DeadLetters int64
	// SourceDeadLetters counts records the source could not decode, for
	// sources that count them (a DeadLetters() int64 method).
	SourceDeadLetters int64
	// Watermark is the source watermark (ms), math.MinInt64 before any.
	Watermark int64
	// Checkpoints counts the checkpoints completed by this run and
	// CheckpointFailures those that failed (the run goes on; the next is
	// a full one). LastCheckpoint is the epoch of the latest completed (0
	// for none).
	Checkpoints, CheckpointFailures, LastCheckpoint int64
	// LastCheckpointBytes, LastCheckpointDuration and LastCheckpointStall
	// describe the latest completed checkpoint (see CheckpointInfo);
	// LastCheckpointTime is when it completed (zero for none).
	LastCheckpointBytes    int64
	LastCheckpointDuration time.Duration
	LastCheckpointStall    time.Duration
	LastCheckpointTime     time.Time
	// LastCheckpointWrite, LastCheckpointBackup and LastCheckpointUpload
	// split LastCheckpointDuration into its steps (see CheckpointInfo).
	LastCheckpointWrite, LastCheckpointBackup, LastCheckpointUpload time.Duration
}

// Snapshot returns the current counts.
func (s *Stats) Snapshot() StatsSnapshot {
	snap := StatsSnapshot{
		RowsIn: s.rowsIn.Load(), RowsOut: s.rowsOut.Load(), Filtered: s.filtered.Load(),
		LateDropped: s.late.Load(), LateApplied: s.lateApplied.Load(), DeadLetters: s.deadLetters.Load(),
		Watermark: s.watermark.Load(), SourceDeadLetters: s.sourceDead.Load(),
		Checkpoints: s.checkpoints.Load(), CheckpointFailures: s.checkpointFailures.Load(),
		LastCheckpoint: s.lastCheckpoint.Load(), LastCheckpointBytes: s.lastCheckpointBytes.Load(),
		LastCheckpointDuration: time.Duration(s.lastCheckpointNanos.Load()),
		LastCheckpointStall:    time.Duration(s.lastStallNanos.Load()),
		LastCheckpointWrite:    time.Duration(s.lastWriteNanos.Load()),
		LastCheckpointBackup:   time.Duration(s.lastBackupNanos.Load()),
		LastCheckpointUpload:   time.Duration(s.lastUploadNanos.Load()),
	}
	if ms := s.lastCheckpointUnixMilli.Load(); ms != 0 {
		snap.LastCheckpointTime = time.UnixMilli(ms)
	}
	return snap
}

// msg is what flows on the channels between operators: a batch, a
// watermark, or both (batch first). Watermarks travel in-band so that they
// never overtake the rows they speak about.
type msg struct {
	rec  arrow.RecordBatch
	wm   int64 // watermark.None for none
	from int   // index of the sending task
	// barrier, when not 0, is a checkpoint barrier of that epoch; such a
	// message carries nothing else.
	barrier uint64
	final   bool // the barrier of the checkpoint ending a bounded input
	// split marks a batch the reader sent whole to every task of the
	// first stage: each keeps only the rows of its own keys.
	split bool
	// input marks a prepared batch the reader sent to the merger, and res
	// a task's results, when the run merges results onto its input
	// (resmerge.go).
	input bool
	res   *window.Results
	// dst, on a batch sent to the merger and the tasks, is where the
	// tasks write its results (resmerge.go); the merger owns it.
	dst *window.Dest
	// fin, when > 0, tells the first stage's tasks that every row before
	// that sequence number has come with all the rows of its key (input
	// clustered by key; see cluster.go). The reader sends it with the
	// batch whose rows moved it on.
	fin int64
	// ahead is the weight the reader took of the receiving task's
	// runner.ahead to send rec, which the task gives back on receipt.
	ahead int64
	// late marks rec as late rows that were not applied (the source's
	// columns), on their way to the late-row sink: they travel with the
	// output, behind the same checkpoint barriers, so that the late-row
	// sink ends each epoch where the sink does.
	late bool
	// appliedLate marks rec as rows the sending task applied late
	// (allowed lateness) while at watermark floor; a task of a later
	// stage holds them until it can apply them in order (lateHold).
	appliedLate bool
	floor       int64
}

// release releases what m holds.
func (m msg) release() {
	if m.rec != nil {
		m.rec.Release()
	}
	if m.res != nil {
		m.res.Release()
	}
}

// resultPool allocates the window tasks' results of runs without
// RunOptions.Mem (a variable for tests).
var resultPool memory.Allocator = mempool.Shared

// Run executes the pipeline: it reads src until it ends (or ctx is
// cancelled), and writes the output to out. It returns the first error of
// any operator; on return every goroutine it started has exited.
func (c *Compiled) Run(ctx context.Context, src source.Source, out sink.Sink, opt RunOptions) (err error) {
	if opt.Parallelism <= 0 {
		opt.Parallelism = 1
	}
	if opt.ChannelDepth <= 0 {
		opt.ChannelDepth = 4
	}
	var resMem memory.Allocator
	if opt.Mem == nil {
		opt.Mem = memory.DefaultAllocator
		resMem = resultPool
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Stats == nil {
		opt.Stats = &Stats{}
	}
	opt.Stats.watermark.Store(watermark.None)
	if !c.Source.Equal(src.Schema()) {
		err := fmt.Errorf("volga: source schema %s does not match the schema the pipeline was compiled for %s", src.Schema(), c.Source)
		return errors.Join(err, closeSinks(out, opt.Late, err, opt.Logger))
	}
	if opt.Name == "" {
		opt.Name = DefaultName
	}
	cluster, finStages, err := c.clusterCols(opt)
	if err != nil {
		return errors.Join(err, closeSinks(out, opt.Late, err, opt.Logger))
	}
	r := &runner{c: c, opt: opt, resMem: resMem, src: src, out: out, stats: opt.Stats, cluster: cluster, finStages: finStages,
		released: make([]atomic.Int64, len(c.stages))}
	for s := range r.released {
		r.released[s].Store(watermark.None)
	}
	// The merger closes the sinks; a run that ends before it starts
	// abandons them here.
	defer func() {
		if cerr := r.closeSinks(err); err == nil {
			err = cerr
		}
	}()
	switch {
	case opt.Checkpoints != nil:
		if err := r.openCheckpoints(ctx); err != nil {
			return err
		}
	case opt.MemoryBudget > 0 || opt.PageRows > 0:
		if err := r.openStore(); err != nil {
			return err
		}
	}
	err = r.runObserved(ctx)
	if r.ck != nil {
		if cerr := r.ck.close(); cerr != nil && err == nil {
			err = fmt.Errorf("volga: closing the state store: %w", cerr)
		}
	}
	return err
}

type runner struct {
	c     *Compiled
	opt   RunOptions
	src   source.Source
	out   sink.Sink
	stats *Stats
	seq   int64
	// sinksClosed: closeSinks ran (the merger's, or Run's when the run
	// ended before the merger started).
	sinksClosed bool
	// failed: the reader or a window task returned an error (noteFailed).
	failed atomic.Bool
	// ck is the run's state store and checkpoints; nil when all state
	// is in memory.
	ck *checkpointRun
	n  int // tasks per stage
	// resMerge: the tasks send only results, the reader its batches, to
	// the merger (resmerge.go).
	resMerge bool
	// resMem allocates the window tasks' results (window.Config.ResultMem):
	// the shared pool when RunOptions.Mem is nil.
	resMem memory.Allocator
	// resTypes, when results are merged and every result can be written
	// in place, are the result types: the tasks then write the results
	// into a window.Dest of each batch (resmerge.go).
	resTypes []arrow.DataType
	// prefixes maps the watermarks of a batch run to the input prefixes
	// they release, for the merger (batchTimes.seqBound).
	prefixes prefixLog
	// cluster are the columns the input is clustered by
	// (RunOptions.ClusteredBy), in the prepared batches; finStages the
	// stages, from the first, whose keys include them (cluster.go).
	cluster   []int
	finStages int
	// released holds, per stage, the newest watermark at which a task of
	// a batch run released its rows (see releasedByPeer).
	released []atomic.Int64
	// readBlocked is how long the reader has waited for room on its
	// channels (readerSend): time the engine, not the source, took, which
	// the idle timeout of partitions does not count (see read).
	readBlocked time.Duration
	// ahead bounds, by first-stage task, the rows the reader has sent it
	// that it has not received yet (input clustered by key, several
	// tasks; see clusterAhead); nil otherwise.
	ahead []*semaphore.Weighted
}

// releasedByPeer reports whether a task of stage s whose last release
// was at cur should release at wm because another task of the stage
// released at a watermark after cur and at or before wm. The tasks of a
// batch run's stage so release together. A release is a burst of work
// in one task, seconds of it at a million keys, during which the reader,
// which hands every batch to every task, waits on that task's full queue
// while the others, their queues empty, wait for it: tasks that released
// at different times took turns instead of working side by side
// (features-4 over 1 M users, once a few early releases had set the
// tasks' cycles apart: 6.1-6.4 s against 4.2).
func (r *runner) releasedByPeer(s int, cur, wm int64) bool {
	p := r.released[s].Load()
	return p > cur && wm >= p
}

// noteRelease records that a task of stage s released at wm.
func (r *runner) noteRelease(s int, wm int64) {
	for {
		p := r.released[s].Load()
		if wm <= p || r.released[s].CompareAndSwap(p, wm) {
			return
		}
	}
}

func (r *runner) run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	n := r.opt.Parallelism
	if r.c.stateless {
		n = 1
	}
	r.n = n
	r.resMerge = r.resultMerging()
	if r.resMerge {
		r.resTypes = r.destTypes()
	}
	// A batch run's merger orders its tasks' rows by sequence and frees
	// them by the prefixes the watermarks release (see merger.drain) when
	// every stage has OVER windows (sequence numbers are then the
	// reader's) and the tasks send rows rather than results.
	r.prefixes.on = r.opt.Mode == Batch && n > 1 && !r.resMerge && len(r.c.stages) > 0 &&
		!slices.ContainsFunc(r.c.stages, func(st *stage) bool { return st.group != nil })
	if err := r.recoverSink(ctx); err != nil {
		return err
	}
	if r.checkpointing() {
		if _, ok := r.src.(source.Seeker); !ok {
			return fmt.Errorf("volga: checkpoints need a replayable source (source.Seeker); %T is not", r.src)
		}
	}
	if r.opt.Live != nil {
		r.opt.Live.start(r.c, n)
	}
	depth := r.opt.ChannelDepth
	mk := func(depth int) []chan msg {
		chs := make([]chan msg, n)
		for i := range chs {
			chs[i] = make(chan msg, depth)
		}
		return chs
	}
	// inputs[s] are the input channels of stage s's tasks; the merger reads
	// final.
	inputs := make([][]chan msg, len(r.c.stages))
	for s := range inputs {
		d := depth
		if s == 0 && r.cluster != nil && n > 1 {
			// The reader runs ahead by rows (see cluster.go).
			r.ahead = clusterAhead(n)
			d = max(depth, clusterAheadMsgs)
		}
		inputs[s] = mk(d)
	}
	final := make(chan msg, depth*n)

	first := final
	var firstChans []chan msg
	if len(inputs) > 0 {
		firstChans = inputs[0]
	}
	// reading is done once the reader has returned: when the run merges
	// results onto the input, it sends its batches on final too, which
	// must stay open until then (tasks that stopped early on an error
	// would otherwise close it under a reader still sending).
	var reading sync.WaitGroup
	reading.Add(1)
	g.Go(func() (err error) {
		defer func() {
			// Marked failed before the channels close: the merger may
			// see the end of the input before the group cancels ctx.
			r.noteFailed(err)
			for _, ch := range firstChans {
				close(ch)
			}
			if firstChans == nil {
				close(first)
			}
			reading.Done()
		}()
		defer recoverAs("the reader (the source's Read)", r.opt.Logger, &err)
		return r.read(ctx, firstChans, first)
	})
	for s, st := range r.c.stages {
		var wg sync.WaitGroup
		senders := 1
		if s > 0 {
			senders = n
		}
		for i := 0; i < n; i++ {
			wg.Add(1)
			in := inputs[s][i]
			var next []chan msg
			if s+1 < len(inputs) {
				next = inputs[s+1]
			}
			g.Go(func() (err error) {
				defer wg.Done()
				defer func() { r.noteFailed(err) }()
				defer recoverAs(fmt.Sprintf("window task %d of stage %d", i, s), r.opt.Logger, &err)
				return r.task(ctx, s, st, i, senders, in, next, final)
			})
		}
		g.Go(func() error {
			wg.Wait()
			if s+1 < len(inputs) {
				for _, ch := range inputs[s+1] {
					close(ch)
				}
			} else {
				if r.resMerge {
					reading.Wait()
				}
				close(final)
			}
			return nil
		})
	}
	mergeFrom := n
	if len(r.c.stages) == 0 {
		mergeFrom = 1
	}
	g.Go(func() (err error) {
		// The sinks are closed after recoverAs, so that they learn of a
		// panic in Write as of any other error (closeSinks).
		defer func() {
			runErr := err
			if runErr == nil && r.failed.Load() {
				// The input ended because the reader or a task failed:
				// the output is not whole.
				runErr = errInputFailed
			}
			if cerr := r.closeSinks(runErr); err == nil {
				err = cerr
			}
		}()
		defer recoverAs("the merger (the sink's Write)", r.opt.Logger, &err)
		return r.merge(ctx, final, mergeFrom)
	})
	err := g.Wait()
	// Drain whatever is left on the channels so batches are released.
	for _, chs := range inputs {
		for _, ch := range chs {
			drain(ch)
		}
	}
	drain(final)
	return err
}

func drain(ch chan msg) {
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return
			}
			m.release()
		default:
			return
		}
	}
}

func send(ctx context.Context, ch chan msg, m msg) error {
	select {
	case ch <- m:
		return nil
	case <-ctx.Done():
		m.release()
		return ctx.Err()
	}
}

// readerSend is send for the reader: the time it waits for room on ch
// counts in readBlocked.
func (r *runner) readerSend(ctx context.Context, ch chan msg, m msg) error {
	select {
	case ch <- m:
		return nil
	default:
	}
	start := time.Now()
	err := send(ctx, ch, m)
	r.readBlocked += time.Since(start)
	return err
}

// read pulls batches from the source, prepares them and hands them to the
// first stage's tasks (partitioned by key), with watermarks.
func (r *runner) read(ctx context.Context, tasks []chan msg, direct chan msg) error {
	streaming := r.opt.Mode == Streaming
	// One watermark generator per source partition, combined by minimum;
	// a partition idle for longer than the idle timeout stops holding the
	// minimum back. Idle is measured on a clock that stands still while
	// the reader waits for the window tasks (a slow sink, a checkpoint):
	// a partition whose rows wait in the source meanwhile is not idle,
	// and were it taken for idle, the watermark would run ahead of it
	// and its rows would be late.
	nparts := 1
	part, partitioned := r.src.(source.Partitioned)
	if partitioned && part.Partitions() > 1 {
		nparts = part.Partitions()
	} else {
		partitioned = false
	}
	gens := make([]*watermark.Bounded, nparts)
	for i := range gens {
		gens[i] = watermark.NewBounded(r.opt.MaxOutOfOrder)
	}
	comb := watermark.NewCombiner(nparts, watermark.WithIdleTimeout(r.opt.IdleTimeout),
		watermark.WithClock(func() time.Time { return time.Now().Add(-r.readBlocked) }))
	// A source of a consumer group's member tells which partitions it
	// reads: the others hold the watermark back no more than idle ones.
	var assigning source.Assigning
	if partitioned && streaming {
		assigning, _ = r.src.(source.Assigning)
	}
	lastWM := watermark.None
	bcast := func(m msg) error {
		if tasks == nil {
			return r.readerSend(ctx, direct, m)
		}
		for _, ch := range tasks {
			if err := r.readerSend(ctx, ch, m); err != nil {
				return err
			}
		}
		return nil
	}
	broadcast := func(wm int64) error { return bcast(msg{wm: wm}) }
	bt := r.batchTimes()
	var runs *keyRuns
	var fin int64 // the last msg.fin sent
	if r.cluster != nil {
		runs = &keyRuns{cols: r.cluster}
	}
	rs, err := r.restoreReader(nparts)
	if err != nil {
		return err
	}
	if rs != nil {
		if bt != nil {
			bt.restore(rs.Batch)
		}
		if runs != nil {
			runs.restore(rs.Cluster)
			fin = runs.open
		}
		r.seq = rs.Seq
		for p, mx := range rs.Max {
			if mx != watermark.None {
				gens[p].Observe(mx)
				// The combiner too: a partition with no row since the
				// restore would otherwise hold the watermark at None,
				// below where the run that took the checkpoint had it,
				// and rows late there would be on time here.
				comb.Update(p, gens[p].Current())
			}
		}
		lastWM = rs.LastWM
		r.stats.watermark.Store(lastWM)
	}
	// barrier starts a checkpoint after the batches sent so far.
	var tick <-chan time.Time
	if r.checkpointing() {
		t := time.NewTicker(r.ck.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	barrier := func(final bool) error {
		pos, err := r.src.(source.Seeker).Position()
		if err != nil {
			return &operatorError{op: "source", err: fmt.Errorf("volga: checkpoint: source position: %w", err)}
		}
		st := readerState{Format: checkpointFormat, Parallelism: r.n, Stages: len(r.c.stages),
			Schema: r.c.Source.String(), Position: pos, Seq: r.seq, LastWM: lastWM, Max: make([]int64, nparts)}
		for p, g := range gens {
			st.Max[p] = g.Max()
		}
		if bt != nil {
			st.Batch = bt.state()
		}
		if runs != nil {
			st.Cluster = runs.state()
		}
		epoch, err := r.ck.inject(st, final)
		if err != nil || epoch == 0 {
			return err
		}
		m := msg{wm: watermark.None, barrier: epoch, final: final}
		if err := bcast(m); err != nil {
			return err
		}
		if r.resMerge {
			// The merger has the batches sent before the barrier.
			m.from = r.n
			return r.readerSend(ctx, direct, m)
		}
		return nil
	}
	// checkpointDue injects a barrier when the checkpoint interval has
	// passed.
	checkpointDue := func() error {
		if tick == nil {
			return nil
		}
		select {
		case <-tick:
			return barrier(false)
		default:
			return nil
		}
	}
	counted, _ := r.src.(interface{ DeadLetters() int64 })
	warnedHeld := false // the warning of batchTimes.held was logged
	// wmDue reports whether a new watermark may be sent now (see
	// RunOptions.WatermarkInterval and WatermarkMaxRows), and if so counts
	// it as sent.
	var wmSent time.Time
	var rowsSinceWM int64
	maxRows := int64(r.opt.WatermarkMaxRows)
	if maxRows == 0 {
		maxRows = DefaultWatermarkMaxRows
	}
	wmDue := func() bool {
		if r.opt.WatermarkInterval <= 0 {
			return true
		}
		now := time.Now()
		if now.Sub(wmSent) < r.opt.WatermarkInterval && (maxRows < 0 || rowsSinceWM < maxRows) {
			return false
		}
		wmSent = now
		rowsSinceWM = 0
		return true
	}
	// Stop ends reading: a Read blocked waiting for data is cancelled.
	readCtx := ctx
	var stopped atomic.Bool
	if r.opt.Stop != nil {
		var cancelRead context.CancelFunc
		readCtx, cancelRead = context.WithCancel(ctx)
		defer cancelRead()
		go func() {
			select {
			case <-r.opt.Stop:
				stopped.Store(true)
				cancelRead()
			case <-readCtx.Done():
			}
		}()
	}
	for !stopped.Load() {
		rec, err := r.src.Read(readCtx)
		if counted != nil { // read here: a source's count may not be safe to read elsewhere
			r.stats.sourceDead.Store(counted.DeadLetters())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if stopped.Load() && ctx.Err() == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &operatorError{op: "source", err: fmt.Errorf("volga: reading source: %w", err)}
		}
		if err := checkBatchSchema(r.c.Source, rec); err != nil {
			rec.Release()
			return &operatorError{op: "source", err: err}
		}
		r.stats.rowsIn.Add(rec.NumRows())
		p := 0
		if partitioned {
			if p = part.PartitionOf(rec); p < 0 || p >= nparts {
				p = 0
			}
			if assigning != nil {
				for i := range nparts {
					comb.SetAway(i, !assigning.Reading(i))
				}
			}
		}
		read := rec.NumRows()
		prep, err := r.prepare(rec)
		if err == nil && streaming && r.c.timeIdx >= 0 && (prep == nil || prep.NumRows() < read) {
			// The rows WHERE dropped (or the dead letters took) were
			// seen too: the watermark follows every event time the
			// partition delivers (SPEC 7), so that a partition whose
			// rows the query filters out does not hold it back.
			if mx, ok := maxEventTime(rec.Column(r.c.timeIdx)); ok {
				gens[p].Observe(mx)
			}
		}
		rec.Release()
		if err != nil {
			return err
		}
		if prep == nil {
			// No row left, or an empty batch (which a source may return
			// when nothing arrived for a while): a checkpoint due is
			// still taken, so that the output of a quiet stream is
			// published, and a watermark that time alone moved on is
			// sent once it is due: held back by the interval, or held
			// by a partition that has since counted as idle.
			if streaming && r.c.timeIdx >= 0 {
				wm := comb.Current()
				if read > 0 {
					// Rows came, all filtered out: their times count.
					wm = comb.Update(p, gens[p].Current())
				}
				if wm > lastWM && wmDue() {
					lastWM = wm
					r.stats.watermark.Store(wm)
					if err := broadcast(wm); err != nil {
						return err
					}
				}
			}
			if err := checkpointDue(); err != nil {
				return err
			}
			continue
		}
		if streaming && r.c.timeIdx >= 0 {
			gens[p].ObserveMax(prep.Column(r.c.Source.NumFields()).(*array.Int64).Int64Values())
			rowsSinceWM += prep.NumRows()
		}
		if bt != nil {
			nf := r.c.Source.NumFields()
			if err := bt.observe(prep.Column(nf).(*array.Int64).Int64Values(), prep.Column(nf+1).(*array.Int64).Int64Values()); err != nil {
				prep.Release()
				return &operatorError{op: "source", err: err}
			}
		}
		var dst *window.Dest
		if r.resMerge {
			// direct is the merger's input: it writes the batch with the
			// results the tasks send (or write into dst).
			if r.resTypes != nil {
				if dst, err = window.NewDest(r.resTypes, int(prep.NumRows())); err != nil {
					prep.Release()
					return err
				}
			}
			prep.Retain()
			if err := r.readerSend(ctx, direct, msg{rec: prep, wm: watermark.None, input: true, dst: dst, from: r.n}); err != nil {
				prep.Release()
				return err
			}
		}
		if tasks == nil {
			if err := r.readerSend(ctx, direct, msg{rec: prep, wm: watermark.None}); err != nil {
				return err
			}
		} else {
			var moved int64
			if runs != nil {
				// Read before the batch goes: the tasks own it then.
				if open := runs.observe(prep, prep.Column(r.c.Source.NumFields()+1).(*array.Int64).Int64Values()); open > fin {
					fin, moved = open, open
				}
			}
			if err := r.partition(ctx, prep, tasks, dst, moved); err != nil {
				return err
			}
		}
		if bt != nil {
			if wm := bt.watermark(); wm > lastWM {
				lastWM = wm
				r.prefixes.add(wm, bt.seqBound())
				r.stats.watermark.Store(wm)
				if err := broadcast(wm); err != nil {
					return err
				}
			}
			if rows, held := bt.held(); held && runs == nil && rows >= heldWarnRows && !warnedHeld {
				warnedHeld = true
				r.opt.Logger.LogAttrs(ctx, slog.LevelWarn, "volga: batch run holds its OVER-window rows: none could go out for the rows read since the last that did; a row goes out once no row still to come can come before it in event time (the source's bound: Parquet row-group statistics) and every row read before it can go too (output keeps input order)",
					slog.String("pipeline", r.opt.Name), slog.Int64("rows_read", rows),
					slog.String("hint", "input in event-time order, or each row a little late, in row groups of bounded size, runs in bounded memory; so does input sorted or clustered by the PARTITION BY key, once promised (RunOptions.ClusteredBy, volga.WithClusteredBy, volga run --clustered-by); other input waits for its end"))
			}
		}
		if streaming && r.c.timeIdx >= 0 {
			if wm := comb.Update(p, gens[p].Current()); wm > lastWM && wmDue() {
				lastWM = wm
				r.stats.watermark.Store(wm)
				if err := broadcast(wm); err != nil {
					return err
				}
			}
		}
		if err := checkpointDue(); err != nil {
			return err
		}
	}
	if stopped.Load() && tick != nil {
		// Stopped with checkpoints: the final checkpoint holds the rows
		// still waiting for the watermark; a later run resumes there.
		return barrier(true)
	}
	r.stats.watermark.Store(watermark.End)
	if err := broadcast(watermark.End); err != nil {
		return err
	}
	if tick != nil {
		return barrier(true)
	}
	return nil
}

// checkBatchSchema checks that a batch a source returned has the columns
// its Schema declared, in the same order and of the same types: the
// engine reads columns by position, so a custom source whose batches
// disagree with its Schema would otherwise feed one column's values into
// another's features. Nullability and metadata may differ.
func checkBatchSchema(want *arrow.Schema, rec arrow.RecordBatch) error {
	got := rec.Schema()
	if got == want {
		return nil
	}
	ok := got.NumFields() == want.NumFields() && int(rec.NumCols()) == want.NumFields()
	for i := 0; ok && i < want.NumFields(); i++ {
		g, w := got.Field(i), want.Field(i)
		ok = g.Name == w.Name && arrow.TypeEqual(g.Type, w.Type) && arrow.TypeEqual(rec.Column(i).DataType(), w.Type)
	}
	if !ok {
		return fmt.Errorf("volga: the source returned a batch with columns %s, but its Schema declares %s", columnList(got), columnList(want))
	}
	return nil
}

// columnList renders a schema's columns as "(name type, ...)".
func columnList(s *arrow.Schema) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, f := range s.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name + " " + f.Type.String())
	}
	b.WriteByte(')')
	return b.String()
}

// prepare filters rec by WHERE, drops the rows without an event time and
// adds the prep columns (time, arrival sequence, computed expressions).
// Its result is nil when no row is left. An expression that fails on some
// rows (a CAST of text that is not a number, an integer overflow) sends
// those rows to the dead letters, with the error, and prepares the others:
// one bad record does not stop a pipeline.
func (r *runner) prepare(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	out, err := r.prepareBatch(rec)
	var ee *evalError
	if err == nil || !errors.As(err, &ee) {
		return out, err
	}
	keep, ok := r.rowsThatEvaluate(rec)
	if !ok || len(keep) == int(rec.NumRows()) {
		return nil, err // a spine row fails, or no row fails alone
	}
	if len(keep) == 0 {
		return nil, nil
	}
	good, terr := arrowutil.Take(r.opt.Mem, rec, keep)
	if terr != nil {
		return nil, terr
	}
	defer good.Release()
	return r.prepareBatch(good)
}

// evalError is an error evaluating WHERE or a computed expression.
type evalError struct {
	what string
	err  error
}

func (e *evalError) Error() string { return fmt.Sprintf("volga: evaluating %s: %v", e.what, e.err) }
func (e *evalError) Unwrap() error { return e.err }

// rowsThatEvaluate evaluates WHERE and the computed expressions on each
// row of rec alone, sends the rows that fail to the dead letters and
// returns the others. ok is false, and nothing is sent, when a backfill's
// spine row fails: it must have its output row, so the run fails.
func (r *runner) rowsThatEvaluate(rec arrow.RecordBatch) (keep []int32, ok bool) {
	c := r.c
	type bad struct {
		row    int
		reason string
	}
	var bads []bad
	for i := 0; i < int(rec.NumRows()); i++ {
		one := rec.NewSlice(int64(i), int64(i+1))
		spine := c.probeIdx > 0 && one.Column(c.probeIdx).(*array.Boolean).Value(0)
		reason, pass := "", true
		if c.where != nil {
			if mask, err := c.where.Eval(one); err != nil {
				reason = fmt.Sprintf("evaluating WHERE: %v", err)
			} else {
				m := mask.(*array.Boolean)
				pass = spine || m.IsValid(0) && m.Value(0)
				mask.Release()
			}
		}
		// A row WHERE drops is not evaluated further.
		for k := 0; reason == "" && pass && k < len(c.evals); k++ {
			if a, err := c.evals[k].Eval(one); err != nil {
				reason = fmt.Sprintf("evaluating %s: %v", c.evalText[k], err)
			} else {
				a.Release()
			}
		}
		one.Release()
		switch {
		case reason == "":
			keep = append(keep, int32(i))
		case spine:
			return nil, false
		default:
			bads = append(bads, bad{i, reason})
		}
	}
	for _, b := range bads {
		r.deadLetter(rec, b.row, b.reason)
	}
	return keep, true
}

// prepareBatch is prepare for a batch whose expressions all evaluate: it
// fails with an *evalError, and no effect on the run (no row counted,
// dead-lettered or numbered), when one does not.
func (r *runner) prepareBatch(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	c := r.c
	var filtered int64
	if c.where != nil && rec.NumRows() > 0 {
		mask, err := c.where.Eval(rec)
		if err != nil {
			return nil, &evalError{what: "WHERE", err: err}
		}
		keep := selected(mask.(*array.Boolean))
		mask.Release()
		if c.probeIdx > 0 {
			// WHERE filters events; backfill probes (spine rows) all stay.
			keep = withProbes(keep, rec.Column(c.probeIdx).(*array.Boolean))
		}
		if len(keep) < int(rec.NumRows()) {
			filtered = rec.NumRows() - int64(len(keep))
			if rec, err = arrowutil.Take(r.opt.Mem, rec, keep); err != nil {
				return nil, err
			}
			defer rec.Release()
		}
	}
	// Rows without an event time, or with one outside [MinEventTime,
	// MaxEventTime], cannot be placed in any window; they go to the dead
	// letters once the batch is known to evaluate.
	var noTime arrow.RecordBatch
	var noTimeRows []int
	if c.timeIdx >= 0 {
		tc := rec.Column(c.timeIdx)
		lo, hi, bounded := unitBounds(tc)
		if tc.NullN() > 0 || bounded && !timesWithin(tc, lo, hi) {
			var keep []int32
			for i := 0; i < tc.Len(); i++ {
				if tc.IsNull(i) || bounded && !timeWithin(tc, i, lo, hi) {
					noTimeRows = append(noTimeRows, i)
				} else {
					keep = append(keep, int32(i))
				}
			}
			noTime = rec
			noTime.Retain()
			defer noTime.Release()
			var err error
			if rec, err = arrowutil.Take(r.opt.Mem, rec, keep); err != nil {
				return nil, err
			}
			defer rec.Release()
		}
	}
	// done records the batch's effects on the run, once it evaluated.
	done := func() {
		if filtered > 0 {
			r.stats.filtered.Add(filtered)
		}
		for _, i := range noTimeRows {
			tc := noTime.Column(c.timeIdx)
			if tc.IsNull(i) {
				r.deadLetter(noTime, i, "NULL event time in column "+c.TimeColumn)
				continue
			}
			r.deadLetter(noTime, i, fmt.Sprintf("event time %s in column %s is out of range: the engine places times from %s to %s (about 146 million years either side of 1970)",
				tc.ValueStr(i), c.TimeColumn, time.UnixMilli(MinEventTime).UTC().Format(time.RFC3339), time.UnixMilli(MaxEventTime).UTC().Format(time.RFC3339)))
		}
	}
	n := int(rec.NumRows())
	if n == 0 {
		done()
		return nil, nil
	}
	cols := make([]arrow.Array, 0, c.prep.NumFields())
	cols = append(cols, rec.Columns()...)
	var owned []arrow.Array
	defer func() { arrowutil.ReleaseAll(owned) }()
	for i, ev := range c.evals {
		a, err := ev.Eval(rec)
		if err != nil {
			return nil, &evalError{what: c.evalText[i], err: err}
		}
		owned = append(owned, a)
	}
	evals := owned
	owned = nil
	var tsArr arrow.Array
	if c.timeIdx >= 0 {
		tsArr = millisView(rec.Column(c.timeIdx))
	}
	if tsArr == nil {
		tsb := array.NewInt64Builder(r.opt.Mem)
		tsb.Resize(n)
		if c.timeIdx >= 0 {
			appendMillis(tsb, rec.Column(c.timeIdx))
		} else {
			for i := 0; i < n; i++ {
				tsb.UnsafeAppend(0)
			}
		}
		tsArr = tsb.NewArray()
		tsb.Release()
	}
	sb := array.NewInt64Builder(r.opt.Mem)
	sb.Resize(n)
	for i := 0; i < n; i++ {
		sb.UnsafeAppend(r.seq)
		r.seq++
	}
	seqArr := sb.NewArray()
	sb.Release()
	owned = append(owned, tsArr, seqArr)
	owned = append(owned, evals...)
	cols = append(cols, tsArr, seqArr)
	cols = append(cols, evals...)
	done()
	return array.NewRecordBatch(c.prep, cols, int64(n)), nil
}

// withProbes adds the rows flagged in probe to the sorted row list keep.
func withProbes(keep []int32, probe *array.Boolean) []int32 {
	out := make([]int32, 0, probe.Len())
	k := 0
	for i := 0; i < probe.Len(); i++ {
		for k < len(keep) && keep[k] < int32(i) {
			k++
		}
		if probe.Value(i) || k < len(keep) && keep[k] == int32(i) {
			out = append(out, int32(i))
		}
	}
	return out
}

func selected(mask *array.Boolean) []int32 {
	keep := make([]int32, 0, mask.Len())
	for i := 0; i < mask.Len(); i++ {
		if mask.IsValid(i) && mask.Value(i) {
			keep = append(keep, int32(i))
		}
	}
	return keep
}

// millisView returns col as an int64 array of milliseconds sharing col's
// values, when they are that already (int64, or timestamps in
// milliseconds) and col has no NULLs; else nil. The event-time column of
// an event log usually is: the copy appendMillis makes would cost eight
// bytes a row for as long as the batch is held.
func millisView(col arrow.Array) arrow.Array {
	switch dt := col.DataType().(type) {
	case *arrow.Int64Type:
	case *arrow.TimestampType:
		if dt.Unit != arrow.Millisecond {
			return nil
		}
	default:
		return nil
	}
	d := col.Data()
	if col.NullN() > 0 || len(d.Buffers()) < 2 || d.Buffers()[1] == nil {
		return nil
	}
	v := array.NewData(arrow.PrimitiveTypes.Int64, d.Len(), []*memory.Buffer{nil, d.Buffers()[1]}, nil, 0, d.Offset())
	defer v.Release()
	return array.MakeFromData(v)
}

// MinEventTime and MaxEventTime bound the event times the engine places
// in windows, in milliseconds since the Unix epoch (±2^62, about 146
// million years either side of 1970): a row whose event time is outside
// goes to the dead letters, as one without an event time does, so that
// frame and window arithmetic near the limits of int64 cannot overflow
// (math.MinInt64 is also the watermark before any row).
const (
	MinEventTime int64 = -(1 << 62)
	MaxEventTime int64 = 1 << 62
)

// timesWithin reports whether every raw value of the event-time column
// col (int64 milliseconds or a timestamp) is within [lo, hi]: one pass
// over the values (NULL slots included: they hold whatever the builder
// left, and are set aside as NULL anyway).
func timesWithin(col arrow.Array, lo, hi int64) bool {
	switch a := col.(type) {
	case *array.Int64:
		return valuesWithin(a.Int64Values(), lo, hi)
	case *array.Timestamp:
		return valuesWithin(a.TimestampValues(), arrow.Timestamp(lo), arrow.Timestamp(hi))
	}
	return true
}

// valuesWithin reports whether every value of vs is within [lo, hi].
func valuesWithin[T int64 | arrow.Timestamp](vs []T, lo, hi T) bool {
	mn, mx := lo, hi
	if len(vs) > 0 {
		mn, mx = vs[0], vs[0]
	}
	for _, v := range vs {
		mn, mx = min(mn, v), max(mx, v)
	}
	return mn >= lo && mx <= hi
}

// timeWithin reports whether raw value i of the event-time column col is
// within [lo, hi].
func timeWithin(col arrow.Array, i int, lo, hi int64) bool {
	var v int64
	switch a := col.(type) {
	case *array.Int64:
		v = a.Value(i)
	case *array.Timestamp:
		v = int64(a.Value(i))
	}
	return v >= lo && v <= hi
}

// unitBounds gives the range of raw values of an event-time column that
// are within [MinEventTime, MaxEventTime] once in milliseconds (ok false
// for a column that needs no check: a unit finer than milliseconds
// cannot reach the limits).
func unitBounds(col arrow.Array) (lo, hi int64, ok bool) {
	switch dt := col.DataType().(type) {
	case *arrow.Int64Type:
		return MinEventTime, MaxEventTime, true
	case *arrow.TimestampType:
		switch dt.Unit {
		case arrow.Second:
			return MinEventTime / 1000, MaxEventTime / 1000, true
		case arrow.Millisecond:
			return MinEventTime, MaxEventTime, true
		}
	}
	return 0, 0, false
}

// appendMillis appends event times as epoch milliseconds (floor).
func appendMillis(b *array.Int64Builder, col arrow.Array) {
	switch a := col.(type) {
	case *array.Int64:
		b.AppendValues(a.Int64Values(), nil)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		v := a.TimestampValues()
		var div int64
		switch unit {
		case arrow.Second:
			for _, x := range v {
				b.UnsafeAppend(int64(x) * 1000)
			}
			return
		case arrow.Millisecond:
			for _, x := range v {
				b.UnsafeAppend(int64(x))
			}
			return
		case arrow.Microsecond:
			div = 1000
		case arrow.Nanosecond:
			div = 1000000
		}
		for _, x := range v {
			q := int64(x) / div
			if int64(x)%div < 0 {
				q--
			}
			b.UnsafeAppend(q)
		}
	}
}

// maxEventTime returns the greatest event time, in milliseconds (floor),
// of the rows of the event-time column col (int64 milliseconds or a
// timestamp) that have one within [MinEventTime, MaxEventTime]; ok is
// false when none has.
func maxEventTime(col arrow.Array) (mx int64, ok bool) {
	lo, hi, bounded := unitBounds(col)
	if !bounded {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	unit := arrow.Millisecond
	switch a := col.(type) {
	case *array.Int64:
		mx, ok = maxValid(a.Int64Values(), col, lo, hi)
	case *array.Timestamp:
		unit = a.DataType().(*arrow.TimestampType).Unit
		var t arrow.Timestamp
		t, ok = maxValid(a.TimestampValues(), col, arrow.Timestamp(lo), arrow.Timestamp(hi))
		mx = int64(t)
	}
	if !ok {
		return 0, false
	}
	div := int64(1)
	switch unit {
	case arrow.Second:
		return mx * 1000, true
	case arrow.Microsecond:
		div = 1000
	case arrow.Nanosecond:
		div = 1000000
	}
	q := mx / div
	if mx%div < 0 {
		q--
	}
	return q, true
}

// maxValid returns the greatest of the values vs of the rows of col that
// are not NULL and are within [lo, hi].
func maxValid[T int64 | arrow.Timestamp](vs []T, col arrow.Array, lo, hi T) (mx T, ok bool) {
	nulls := col.NullN() > 0
	for i, v := range vs {
		if v < lo || v > hi || nulls && col.IsNull(i) {
			continue
		}
		if !ok || v > mx {
			mx, ok = v, true
		}
	}
	return mx, ok
}

func (r *runner) deadLetter(rec arrow.RecordBatch, row int, reason string) {
	r.stats.deadLetters.Add(1)
	if r.opt.DeadLetters == nil {
		return
	}
	var sb strings.Builder
	for c := 0; c < int(r.c.Source.NumFields()); c++ {
		if c > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(sink.FormatValue(rec.Column(c), row))
	}
	r.opt.DeadLetters(source.DeadLetter{Source: r.c.Plan.Table, Offset: -1, Raw: []byte(sb.String()), Reason: reason})
}

// partition hands rec to the first stage's tasks. With several tasks
// every task gets the whole batch, marked split, and keeps the rows of
// its own keys itself: the hashing and copying of the split runs in the
// tasks, in parallel, not on the reader's goroutine. dst, when not nil,
// is where the tasks write the results of rec's rows; fin, when > 0, goes
// with rec (msg.fin).
func (r *runner) partition(ctx context.Context, rec arrow.RecordBatch, tasks []chan msg, dst *window.Dest, fin int64) error {
	if len(tasks) == 1 {
		// The only task takes every row; marked split when the run
		// merges results onto the input, so that it sends only results.
		return r.readerSend(ctx, tasks[0], msg{rec: rec, wm: watermark.None, split: r.resMerge, dst: dst, fin: fin})
	}
	// Every task reads rec: settle what Arrow would compute lazily.
	arrowutil.CountNulls(rec)
	for range len(tasks) - 1 {
		rec.Retain()
	}
	for i, ch := range tasks {
		m := msg{rec: rec, wm: watermark.None, split: true, dst: dst, fin: fin}
		err := r.takeAhead(ctx, i, &m)
		if err == nil {
			err = r.readerSend(ctx, ch, m)
		} else {
			rec.Release()
		}
		if err != nil {
			for range len(tasks) - 1 - i {
				rec.Release()
			}
			return err
		}
	}
	return nil
}

// taskRows returns the rows of rec (a batch sent split) that task id of
// stage st takes: all of them, without hashing, when it is the only task
// (window.Operator.PushRows keeps no list of every row).
func (r *runner) taskRows(h *keyHasher, rec arrow.RecordBatch, st *stage, id int) []int32 {
	if r.n > 1 {
		return ownRowsOf(h, rec, st.keyCols(), id, r.n)
	}
	n := int(rec.NumRows())
	for len(h.all) < n {
		h.all = append(h.all, int32(len(h.all)))
	}
	return h.all[:n]
}

// ownRowsOf returns the rows of rec whose key (keyCols) goes to task id
// of n, in order.
func ownRowsOf(h *keyHasher, rec arrow.RecordBatch, keyCols []int, id, n int) []int32 {
	rows := int(rec.NumRows())
	cols := make([]arrow.Array, len(keyCols))
	for j, c := range keyCols {
		cols[j] = rec.Column(c)
	}
	return h.rowsOf(make([]int32, 0, rows/n+rows/8+16), cols, rows, id, n)
}

// ownRows returns the rows of rec whose key (keyCols) goes to task id of
// n, or nil when there are none. rec stays the caller's.
func ownRows(mem memory.Allocator, h *keyHasher, rec arrow.RecordBatch, keyCols []int, id, n int) (arrow.RecordBatch, error) {
	rows := int(rec.NumRows())
	idx := ownRowsOf(h, rec, keyCols, id, n)
	switch len(idx) {
	case 0:
		return nil, nil
	case rows:
		rec.Retain()
		return rec, nil
	}
	return arrowutil.Take(mem, rec, idx)
}

// split partitions the rows of rec over n parts by the hash of keyCols.
// Parts with no rows are nil.
func (r *runner) split(rec arrow.RecordBatch, keyCols []int, n int) ([]arrow.RecordBatch, error) {
	rows := int(rec.NumRows())
	h := keyHasher{}
	cols := make([]arrow.Array, len(keyCols))
	for j, c := range keyCols {
		cols[j] = rec.Column(c)
	}
	idx := h.partRows(cols, rows, n)
	parts := make([]arrow.RecordBatch, n)
	for p, ix := range idx {
		if len(ix) == 0 {
			continue
		}
		if len(ix) == rows {
			rec.Retain()
			parts[p] = rec
			continue
		}
		t, err := arrowutil.Take(r.opt.Mem, rec, ix)
		if err != nil {
			arrowutil.ReleaseAll(slices.DeleteFunc(parts, func(x arrow.RecordBatch) bool { return x == nil }))
			return nil, err
		}
		parts[p] = t
	}
	return parts, nil
}

// allowedLateness returns RunOptions.AllowedLateness in whole
// milliseconds behind the watermark the reader sends (the newest event
// time less MaxOutOfOrder rounded up, watermark.NewBounded): a late row
// is applied when its time is above the newest less MaxOutOfOrder less
// AllowedLateness, durations finer than a millisecond included.
func (r *runner) allowedLateness() int64 {
	if r.opt.AllowedLateness <= 0 {
		return 0
	}
	b := max(r.opt.MaxOutOfOrder, 0)
	return watermark.CeilMillis(b+r.opt.AllowedLateness) - watermark.CeilMillis(b)
}

// operator is what a task drives: the sliding-window Operator or the
// tumble/hop GroupOperator.
type operator interface {
	Push(rec arrow.RecordBatch) ([]arrow.RecordBatch, arrow.RecordBatch, error)
	Advance(ctx context.Context, wm int64) ([]arrow.RecordBatch, error)
	Late() (dropped, applied int64)
	Checkpoint() ([]byte, error)
	Restore(meta []byte) error
	Close()
}

// newOperator makes the operator of task id of stage s; frozen is the
// epoch of the last barrier the task passed (see checkpointRun.mayWrite).
func (r *runner) newOperator(st *stage, s, id int, frozen *uint64) (operator, error) {
	if st.group != nil {
		cfg := *st.group
		cfg.AllowedLateness = r.allowedLateness()
		cfg.Mem = r.opt.Mem
		if r.resMem != nil {
			// A window a row of output, its buffers let go by the merger
			// or the sink soon after: pooled rather than Go's.
			cfg.Mem = r.resMem
		}
		cfg.Clustered = r.cluster != nil
		return window.NewGroup(cfg, st.in)
	}
	cfg := st.cfg
	cfg.AllowedLateness = r.allowedLateness()
	cfg.Retention = r.opt.LookupRetention.Milliseconds()
	cfg.BatchOrder = r.opt.Mode == Batch
	cfg.Mem = r.opt.Mem
	cfg.ResultMem = r.resMem
	if r.ck != nil {
		cfg.Store = statestore.Sub(r.ck.db, storePrefix(s, id))
		if r.opt.MemoryBudget > 0 {
			cfg.MemoryBudget = max(1, r.opt.MemoryBudget/int64(r.n*len(r.c.stages)))
		}
		cfg.MayWrite = r.ck.mayWrite(frozen)
		cfg.PageRows = r.opt.PageRows
	}
	op, err := window.New(cfg, st.in)
	if err != nil && cfg.PageRows > 0 && window.CanPage(cfg) != nil {
		return nil, fmt.Errorf("volga: stage %d cannot page rows: %w", s, err)
	}
	return op, err
}

// task runs one window operator.
func (r *runner) task(ctx context.Context, s int, st *stage, id, senders int, in chan msg, next []chan msg, final chan msg) error {
	var frozen uint64
	op, err := r.newOperator(st, s, id, &frozen)
	if err != nil {
		return err
	}
	defer op.Close()
	if r.ck != nil && r.ck.restored != nil {
		meta, ok := r.ck.restored[partOperator(s, id)]
		if !ok {
			return fmt.Errorf("volga: checkpoint %d has no state for stage %d task %d", r.ck.epoch, s, id)
		}
		if err := op.Restore(meta); err != nil {
			return &operatorError{op: "window", stage: s, task: id, err: fmt.Errorf("volga: restoring checkpoint %d: %w", r.ck.epoch, err)}
		}
	}
	if r.opt.Live != nil {
		switch wop := op.(type) {
		case *window.Operator:
			r.opt.Live.register(s, id, wop)
		case *window.GroupOperator:
			r.opt.Live.registerGroup(s, id, wop)
		}
	}
	comb := watermark.NewCombiner(senders)
	cur := watermark.None
	var wait releaseWait
	// A later stage of a streaming run with allowed lateness holds the
	// rows an earlier stage applied late (lateHold).
	holding := s > 0 && r.opt.Mode != Batch && r.opt.AllowedLateness > 0
	var hold lateHold
	defer hold.discard()
	if holding && r.ck != nil && r.ck.restored != nil {
		if b, ok := r.ck.restored[partHeld(s, id)]; ok {
			if err := hold.restore(r.opt.Mem, st.in, b); err != nil {
				return &operatorError{op: "window", stage: s, task: id, err: fmt.Errorf("volga: restoring checkpoint %d: %w", r.ck.epoch, err)}
			}
		}
	}
	// forward passes output rows on; lateAt, when not watermark.None,
	// marks them as rows applied late while the operator was at lateAt.
	forward := func(recs []arrow.RecordBatch, lateAt int64) error {
		for k, rec := range recs {
			var err error
			if next == nil {
				err = send(ctx, final, msg{rec: rec, wm: watermark.None, from: id})
			} else if len(next) == 1 {
				err = send(ctx, next[0], msg{rec: rec, wm: watermark.None, from: id, appliedLate: lateAt != watermark.None, floor: lateAt})
			} else {
				var parts []arrow.RecordBatch
				parts, err = r.split(rec, r.c.stages[s+1].keyCols(), len(next))
				rec.Release()
				for i, p := range parts {
					if p == nil || err != nil {
						if p != nil {
							p.Release()
						}
						continue
					}
					err = send(ctx, next[i], msg{rec: p, wm: watermark.None, from: id, appliedLate: lateAt != watermark.None, floor: lateAt})
				}
			}
			if err != nil {
				arrowutil.ReleaseAll(recs[k+1:])
				return err
			}
		}
		return nil
	}
	// sendLate passes late rows on towards the merger, through one task
	// of each later stage.
	sendLate := func(rec arrow.RecordBatch) error {
		m := msg{rec: rec, wm: watermark.None, from: id, late: true}
		if next == nil {
			return send(ctx, final, m)
		}
		return send(ctx, next[id%len(next)], m)
	}
	var dropped, applied int64
	var hasher keyHasher
	rowsOp, _ := op.(interface {
		PushRows(rec arrow.RecordBatch, rows []int32) ([]arrow.RecordBatch, arrow.RecordBatch, error)
	})
	destOp, _ := op.(interface {
		PushRowsTo(rec arrow.RecordBatch, rows []int32, dst *window.Dest) ([]arrow.RecordBatch, arrow.RecordBatch, error)
	})
	al := newAligner(senders)
	defer al.discard()
	tc := &taskCheckpoint{r: r, s: s, id: id, op: op, frozen: &frozen}
	var dispatch func(m msg) error
	barrier := func(m msg) error {
		if !al.arrive(m.from) {
			return nil
		}
		if len(hold.floors) > 0 {
			b, err := hold.checkpoint(st.in)
			if err != nil {
				return &operatorError{op: "window", stage: s, task: id, err: fmt.Errorf("volga: checkpoint %d: %w", m.barrier, err)}
			}
			r.ck.addPart(m.barrier, partHeld(s, id), b)
			heldPartEpoch.Store(m.barrier)
		}
		err := tc.begin(ctx, m.barrier, m.final)
		if err != nil {
			return err
		}
		fwd := msg{wm: watermark.None, barrier: m.barrier, final: m.final, from: id}
		if next == nil {
			err = send(ctx, final, fwd)
		} else {
			for _, ch := range next {
				if err = send(ctx, ch, fwd); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
		return replay(al.release(), dispatch)
	}
	// advance moves the operator to wm and forwards its output, batch by
	// batch as it is built when the operator can (a window operator at the
	// end of a batch run emits everything at once).
	advanceFunc, _ := op.(interface {
		AdvanceFunc(ctx context.Context, wm int64, emit func(arrow.RecordBatch) error) error
	})
	resultsOp, _ := op.(interface {
		AdvanceResults(ctx context.Context, wm int64, emit func(*window.Results) error) error
	})
	if r.resMerge && (resultsOp == nil || rowsOp == nil || (r.resTypes != nil && destOp == nil)) {
		return fmt.Errorf("volga: internal error: stage %d's operator %T cannot send results alone", s, op)
	}
	fins := r.newFinTracker(ctx, s, id, senders, next, final)
	advance := func(wm int64) error {
		if r.resMerge {
			err := resultsOp.AdvanceResults(ctx, wm, func(res *window.Results) error {
				return send(ctx, final, msg{res: res, wm: watermark.None, from: id})
			})
			if err != nil && ctx.Err() == nil {
				return r.windowErr(s, id, err)
			}
			return err
		}
		if advanceFunc != nil {
			var ferr error
			err := advanceFunc.AdvanceFunc(ctx, wm, func(rec arrow.RecordBatch) error {
				ferr = forward([]arrow.RecordBatch{rec}, watermark.None)
				return ferr
			})
			if ferr != nil {
				return ferr
			}
			if err != nil {
				return r.windowErr(s, id, err)
			}
			return nil
		}
		outs, err := op.Advance(ctx, wm)
		if err != nil {
			return r.windowErr(s, id, err)
		}
		return forward(outs, watermark.None)
	}
	// step moves the task to watermark wm and passes wm on.
	step := func(wm int64) error {
		cur = wm
		wait = releaseWait{}
		r.noteRelease(s, wm)
		if err := advance(wm); err != nil {
			return err
		}
		if err := fins.forward(); err != nil {
			return err
		}
		var err error
		if next == nil {
			err = send(ctx, final, msg{wm: wm, from: id})
		} else {
			for _, ch := range next {
				if err = send(ctx, ch, msg{wm: wm, from: id}); err != nil {
					break
				}
			}
		}
		return err
	}
	// pushed passes on what a push returned: rows applied late, at the
	// operator's watermark, and rows too late to apply.
	wmOp, _ := op.(interface{ Watermark() int64 })
	pushed := func(outs []arrow.RecordBatch, lateRec arrow.RecordBatch) error {
		if r.resMerge && (len(outs) > 0 || lateRec != nil) {
			// Batch runs have no late rows (see batchTimes).
			arrowutil.ReleaseAll(outs)
			if lateRec != nil {
				lateRec.Release()
			}
			return fmt.Errorf("volga: internal error: window task %d of a batch run emitted rows as they came", id)
		}
		if lateRec != nil {
			if err := sendLate(lateRec); err != nil {
				arrowutil.ReleaseAll(outs)
				return err
			}
		}
		if len(outs) == 0 {
			return nil
		}
		at := cur
		if wmOp != nil {
			at = wmOp.Watermark() // cur is None after a restore
		}
		return forward(outs, at)
	}
	// applyHeld applies the held late rows of the floors below limit,
	// which every sender has passed, each floor's at that watermark.
	applyHeld := func(limit int64) error {
		for {
			f, ok := hold.next()
			if !ok || f >= limit {
				return nil
			}
			if f > cur {
				if err := step(f); err != nil {
					return err
				}
			}
			rec, err := hold.take(r.opt.Mem, st.in, st.cfg.SeqCol)
			if err != nil {
				return err
			}
			outs, lateRec, err := op.Push(rec)
			rec.Release()
			if err != nil {
				return r.windowErr(s, id, err)
			}
			if err := pushed(outs, lateRec); err != nil {
				return err
			}
		}
	}
	handle := func(m msg) error {
		if m.barrier != 0 {
			return barrier(m)
		}
		if m.late {
			return sendLate(m.rec)
		}
		if m.rec != nil && m.appliedLate && holding {
			hold.add(m.floor, m.rec)
			m.rec = nil
		}
		if m.rec != nil && m.split && rowsOp == nil {
			own, err := ownRows(r.opt.Mem, &hasher, m.rec, st.keyCols(), id, r.n)
			m.rec.Release()
			if err != nil {
				return err
			}
			m.rec = own
		}
		if m.rec != nil {
			var outs []arrow.RecordBatch
			var lateRec arrow.RecordBatch
			var err error
			if m.split && m.dst != nil {
				// ... and writes their results into the batch's Dest.
				outs, lateRec, err = destOp.PushRowsTo(m.rec, r.taskRows(&hasher, m.rec, st, id), m.dst)
			} else if m.split && rowsOp != nil {
				// The operator takes its rows of the shared batch as they
				// are (no copy).
				outs, lateRec, err = rowsOp.PushRows(m.rec, r.taskRows(&hasher, m.rec, st, id))
			} else {
				outs, lateRec, err = op.Push(m.rec)
			}
			m.rec.Release()
			if err != nil {
				return r.windowErr(s, id, err)
			}
			if err := pushed(outs, lateRec); err != nil {
				return err
			}
		}
		if m.fin > 0 {
			if fin := fins.update(m.from, m.fin); fin > fins.told {
				f, ok := op.(finisher)
				if !ok {
					return fmt.Errorf("volga: internal error: stage %d's operator %T cannot finish keys", s, op)
				}
				fins.told = fin
				f.FinishBefore(fin, true)
				if !deferFinish(op) {
					if err := advance(cur); err != nil {
						return err
					}
					if err := fins.forward(); err != nil {
						return err
					}
				}
			}
		}
		if m.wm != watermark.None {
			wm := comb.Update(m.from, m.wm)
			if wm > cur && (r.releasedByPeer(s, cur, wm) || !r.deferRelease(op, wm, &wait)) {
				if err := applyHeld(wm); err != nil {
					return err
				}
				if wm > cur {
					if err := step(wm); err != nil {
						return err
					}
				}
			}
		}
		if s == 0 {
			// Later stages apply the first stage's late rows again
			// (lateHold); no row is late there otherwise.
			d, a := op.Late()
			r.stats.late.Add(d - dropped)
			r.stats.lateApplied.Add(a - applied)
			dropped, applied = d, a
		}
		return nil
	}
	dispatch = func(m msg) error {
		if al.hold(m) {
			return nil
		}
		return handle(m)
	}
	for {
		// Between messages the task writes the state of a checkpoint it
		// has begun (taskCheckpoint).
		m, ok, err := tc.next(ctx, in)
		if m.ahead > 0 {
			r.ahead[id].Release(m.ahead)
		}
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := dispatch(m); err != nil {
			return err
		}
	}
	if err := tc.finish(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// merge writes the output of the last stage to the sink in order: with
// one task its output is already ordered; with several, rows are merged by
// arrival sequence (batch) or by (event time, sequence) (streaming) up to
// the watermark all tasks have passed.
func (r *runner) merge(ctx context.Context, in chan msg, n int) (err error) {
	c := r.c
	last := c.prep
	tsCol, seqCol := c.Source.NumFields(), c.Source.NumFields()+1
	bySeq := r.opt.Mode == Batch
	if len(c.stages) > 0 {
		st := c.stages[len(c.stages)-1]
		last, tsCol, seqCol = st.out, st.tsCol, st.seqCol
		// Tumble/hop output is ordered by window, not by input row;
		// over input clustered by key, by the first row of its key.
		bySeq = bySeq && (st.group == nil || r.cluster != nil)
	}
	// writeCols writes rec, whose output columns are outIdx (and probe
	// flags probeIdx in a backfill), to the sink.
	writeCols := func(rec arrow.RecordBatch, outIdx []int, probeIdx int) error {
		defer rec.Release()
		if probeIdx > 0 {
			kept, err := probeRows(r.opt.Mem, rec, probeIdx)
			if err != nil {
				return err
			}
			defer kept.Release()
			rec = kept
		}
		if rec.NumRows() == 0 {
			return nil
		}
		out := arrowutil.Select(c.Output, rec, outIdx)
		defer out.Release()
		if err := r.out.Write(ctx, out); err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: writing output: %w", err)}
		}
		r.stats.rowsOut.Add(out.NumRows())
		return nil
	}
	// write writes a batch of the last stage's layout.
	write := func(rec arrow.RecordBatch) error { return writeCols(rec, c.outIdx, c.probeIdx) }
	// The merger gathers only the columns the output needs (proj) into
	// batches of layout pschema; writeMerged writes those.
	proj, pOut, pProbe := projectOutput(c.outIdx, c.probeIdx)
	pfields := make([]arrow.Field, len(proj))
	for k, col := range proj {
		pfields[k] = last.Field(col)
	}
	pschema := arrow.NewSchema(pfields, nil)
	writeMerged := func(rec arrow.RecordBatch) error { return writeCols(rec, pOut, pProbe) }
	writeLate := func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if r.opt.Late == nil {
			return nil
		}
		idx := make([]int, c.Source.NumFields())
		for i := range idx {
			idx[i] = i
		}
		out := arrowutil.Select(c.Source, rec, idx)
		defer out.Release()
		if err := r.opt.Late.Write(ctx, out); err != nil {
			return fmt.Errorf("volga: writing late rows: %w", err)
		}
		return nil
	}
	m := &merger{n: n, tsCol: tsCol, seqCol: seqCol, batch: bySeq, comb: watermark.NewCombiner(n), mem: r.opt.Mem, schema: last,
		proj: proj, out: pschema}
	defer m.release()
	if r.prefixes.on {
		m.prefixes = &r.prefixes
	}
	var rm *resMerger
	var part mergerPart = m
	senders := n
	if r.resMerge {
		rm = newResMerger(r, c.stages[0], proj, pschema)
		defer rm.release()
		part = rm
		// The reader's batches come with the tasks' results, behind the
		// same barriers (sender n).
		senders = n + 1
	}
	if r.ck != nil && r.ck.restored != nil {
		var err error
		_, results := r.ck.restored[partResults]
		switch {
		case rm != nil:
			err = rm.restore(r.ck.restored[partResults])
		case results:
			// Its input rows not written yet are in that part only.
			err = errors.New("volga: checkpoint: taken by a run that merged results onto its input (a batch run of one OVER-window stage); this run does not, so it cannot resume it")
		case n > 1:
			err = m.restore(r.ck.restored[partMerger])
		}
		if err != nil {
			return err
		}
	}
	al := newAligner(senders)
	defer al.discard()
	var done chan uploadResult
	var ready chan struct{}
	if r.checkpointing() {
		done, ready = r.ck.done, r.ck.ready
	}
	var dispatch func(mm msg) error
	handle := func(mm msg) error {
		if mm.late {
			return writeLate(mm.rec)
		}
		if rm != nil && mm.barrier == 0 {
			switch {
			case mm.input:
				rm.input(mm.rec, mm.dst)
				if mm.dst != nil {
					// Its rows may be done already, should the tasks'
					// results have come first.
					return rm.maybeMerge(writeMerged)
				}
			case mm.res != nil:
				rm.results(mm.from, mm.res)
				return rm.maybeMerge(writeMerged)
			case mm.wm == watermark.End:
				rm.end(mm.from)
				return rm.maybeMerge(writeMerged)
			}
			return nil
		}
		if mm.barrier != 0 {
			if !al.arrive(mm.from) {
				return nil
			}
			if mm.final && r.ck.uploading {
				// The final checkpoint waits for the one in flight.
				select {
				case res := <-done:
					if err := r.finishCheckpoint(ctx, res); err != nil {
						return err
					}
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err := r.completeCheckpoint(ctx, mm.barrier, part, mm.final); err != nil {
				return err
			}
			return replay(al.release(), dispatch)
		}
		if n == 1 {
			if mm.rec != nil {
				return write(mm.rec)
			}
			return nil
		}
		if mm.rec != nil {
			m.add(mm.from, mm.rec)
			if err := m.drain(writeMerged); err != nil {
				return err
			}
		}
		if mm.fin > 0 {
			if m.fins == nil {
				m.fins = make([]int64, n)
			}
			m.fins[mm.from] = max(m.fins[mm.from], mm.fin)
			if err := m.drain(writeMerged); err != nil {
				return err
			}
		}
		if mm.wm != watermark.None {
			return m.advance(mm.from, mm.wm, writeMerged)
		}
		return nil
	}
	dispatch = func(mm msg) error {
		if al.hold(mm) {
			return nil
		}
		return handle(mm)
	}
	for in != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case res := <-done:
			if err := r.finishCheckpoint(ctx, res); err != nil {
				return err
			}
		case <-ready:
			if err := r.checkpointReady(ctx); err != nil {
				return err
			}
		case mm, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			if err := dispatch(mm); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// errInputFailed is what the sinks are told when the merger saw the end
// of its input because the reader or a window task failed.
var errInputFailed = errors.New("volga: the run failed before its input ended")

// noteFailed marks the run failed when err is not nil.
func (r *runner) noteFailed(err error) {
	if err != nil {
		r.failed.Store(true)
	}
}

// closeSinks closes the sinks at the end of a run, once. A run that
// failed (runErr is not nil), or lost its checkpoints to another run
// (ErrFenced), abandons the sinks that can be (an Abandoner), rather than
// publish output that is incomplete or now the other run's to write.
func (r *runner) closeSinks(runErr error) error {
	if r.sinksClosed {
		return nil
	}
	r.sinksClosed = true
	return closeSinks(r.out, r.opt.Late, runErr, r.opt.Logger)
}

// closeSinks closes out and late (if not nil), or abandons them when
// runErr is not nil (see runner.closeSinks).
func closeSinks(out, late sink.Sink, runErr error, log *slog.Logger) error {
	closeSink := func(s sink.Sink) (err error) {
		defer recoverAs("the sink's Close", log, &err)
		if a, ok := s.(Abandoner); ok && runErr != nil {
			return a.Abandon()
		}
		return s.Close()
	}
	err := closeSink(out)
	if err != nil {
		err = fmt.Errorf("volga: closing sink: %w", err)
	}
	if late != nil {
		if lerr := closeSink(late); lerr != nil && err == nil {
			err = fmt.Errorf("volga: closing late-row sink: %w", lerr)
		}
	}
	return err
}

// Abandoner is a sink that Close would make publish its output (move a
// file into place, write a whole Parquet file): a run that fails, or that
// lost its checkpoints to another run (ErrFenced), ends it with Abandon
// instead, so that a failed run leaves no partial file and a fenced one
// leaves the output to the run that owns the checkpoints now. See
// sink.Abandoner.
type Abandoner = sink.Abandoner

// projectOutput returns the sorted distinct columns of the last stage's
// layout the output needs (outIdx and, when > 0, the probe flags
// probeIdx), and outIdx and probeIdx as positions in that list.
func projectOutput(outIdx []int, probeIdx int) (proj, pOut []int, pProbe int) {
	proj = slices.Clone(outIdx)
	if probeIdx > 0 {
		proj = append(proj, probeIdx)
	}
	slices.Sort(proj)
	proj = slices.Compact(proj)
	pOut = make([]int, len(outIdx))
	for k, col := range outIdx {
		pOut[k], _ = slices.BinarySearch(proj, col)
	}
	if probeIdx > 0 {
		pProbe, _ = slices.BinarySearch(proj, probeIdx)
	}
	return proj, pOut, pProbe
}

// merger orders the output of several tasks. It holds the tasks' batches
// whole (schema; they are what a checkpoint saves) and emits the columns
// proj of them only, as batches of layout out.
type merger struct {
	n             int
	tsCol, seqCol int
	batch         bool
	comb          *watermark.Combiner
	cur           int64
	mem           memory.Allocator
	schema        *arrow.Schema
	proj          []int
	out           *arrow.Schema
	bufs          [][]arrow.RecordBatch // per task, unreleased output
	// floors (streaming) are, per buffered batch, its task's watermark
	// when it arrived: rows at or behind it are late rows the task applied
	// (allowed lateness), which go out with the next watermark after it,
	// as with a single task, not with whichever came first, so that the
	// output does not depend on the tasks' timing.
	floors  [][]int64
	pending int64 // rows in bufs
	left    int64 // rows in bufs after the last drain
	// last is, per task, the sequence number of the last row received
	// (math.MinInt64: none yet; batch mode).
	last []int64
	// prefixes gives the input prefix every task has emitted once all
	// have passed a watermark (batch mode).
	prefixes *prefixLog
	// fins are, per task, the latest msg.fin it sent: it has emitted its
	// rows before it (batch runs over input clustered by key).
	fins []int64
	// streamBuf (per task) and refBuf are collect's row references, kept
	// for the next call up to refKeep rows each (group-1 allocated 0.41
	// of its 2.4 GB in them).
	streamBuf [][]rowRef
	refBuf    []rowRef
}

// refKeep is the most row references of a merge that a merger keeps for
// the next one.
const refKeep = 1 << 18

func (m *merger) add(from int, rec arrow.RecordBatch) {
	if m.bufs == nil {
		m.bufs = make([][]arrow.RecordBatch, m.n)
		m.cur = watermark.None
	}
	m.bufs[from] = append(m.bufs[from], rec)
	m.pending += rec.NumRows()
	if !m.batch {
		if m.floors == nil {
			m.floors = make([][]int64, m.n)
		}
		m.floors[from] = append(m.floors[from], m.comb.Input(from))
	}
}

// floor returns the floor of batch k of task t (see merger.floors).
func (m *merger) floor(t, k int) int64 {
	if t < len(m.floors) && k < len(m.floors[t]) {
		return m.floors[t][k]
	}
	return watermark.None
}

// drain emits, in batch mode, the buffered rows no task can still send a
// row before: every task's output is in sequence order, so rows up to the
// smallest last sequence number received from a task that has not ended
// are final; and so are the rows of the input prefix that the watermark
// every task has passed released (prefixLog), which frees the others'
// rows when a task has had none for a while, or none at all. Merging as
// the tasks' output arrives, rather than all of it once every task has
// ended, overlaps the merge with the tasks' emission and lets their
// batches go early. It merges once mergeChunk rows have arrived since it
// last did, so that the batches it emits stay large.
func (m *merger) drain(emit func(arrow.RecordBatch) error) error {
	if !m.batch || m.pending < m.left+int64(mergeChunk) {
		return nil
	}
	if m.last == nil {
		m.last = make([]int64, m.n)
		for t := range m.last {
			m.last[t] = math.MinInt64
		}
	}
	limit := int64(math.MaxInt64)
	for t := range m.n {
		if m.comb.Input(t) == watermark.End {
			continue
		}
		b := m.bufs[t]
		last := m.last[t]
		if len(b) > 0 {
			rec := b[len(b)-1]
			if rec.NumRows() > 0 {
				seq := rec.Column(m.seqCol).(*array.Int64).Int64Values()
				last = seq[len(seq)-1]
			}
		}
		m.last[t] = last
		limit = min(limit, last)
	}
	if m.prefixes != nil {
		if seq, ok := m.prefixes.at(m.comb.Current()); ok {
			limit = max(limit, seq-1)
		}
	}
	if m.fins != nil {
		limit = max(limit, slices.Min(m.fins)-1)
	}
	if limit == math.MinInt64 {
		return nil // nothing known of some task yet
	}
	err := m.mergeUpTo(limit, emit)
	m.left = m.pending
	return err
}

// prefixLog records, for each watermark a batch run's reader sends, the
// sequence number of the first row it did not release: once every task
// of the last stage has passed the watermark, each has emitted its rows
// of the prefix before it (a task forwards a watermark after the rows it
// released). Safe for the reader and the merger at once.
type prefixLog struct {
	on   bool // set before the run starts when the merger reads it
	mu   sync.Mutex
	wms  []int64 // ascending
	seqs []int64
}

// add records that watermark wm releases the rows before sequence seq.
func (l *prefixLog) add(wm, seq int64) {
	if !l.on {
		return
	}
	l.mu.Lock()
	l.wms = append(l.wms, wm)
	l.seqs = append(l.seqs, seq)
	l.mu.Unlock()
}

// at returns the sequence number before which the latest watermark at or
// below wm released every row, and drops the records before it (wm only
// grows).
func (l *prefixLog) at(wm int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, found := slices.BinarySearch(l.wms, wm)
	if !found {
		i--
	}
	if i < 0 {
		return 0, false
	}
	seq := l.seqs[i]
	l.wms = append(l.wms[:0], l.wms[i:]...)
	l.seqs = append(l.seqs[:0], l.seqs[i:]...)
	return seq, true
}

func (m *merger) release() {
	for _, b := range m.bufs {
		arrowutil.ReleaseAll(b)
	}
	m.bufs, m.floors = nil, nil
}

type rowRef struct {
	ts, seq int64
	rec     int32
	row     int32
	// floor orders a streaming merge (see merger.floors): a row at or
	// behind its batch's floor is a late row its task applied.
	floor int64
}

// late reports whether the row is a late row its task applied.
func (r rowRef) late() bool { return r.ts <= r.floor }

// advance records task from's watermark and passes the rows every task
// has now released to emit, in order, in batches of at most mergeChunk
// rows. emit releases the batches.
func (m *merger) advance(from int, wm int64, emit func(arrow.RecordBatch) error) error {
	if m.bufs == nil {
		m.bufs = make([][]arrow.RecordBatch, m.n)
		m.cur = watermark.None
	}
	w := m.comb.Update(from, wm)
	if w <= m.cur {
		return nil
	}
	m.cur = w
	if m.batch {
		// Batch output is in sequence order: a watermark before the end
		// (input in or near time order, see batchTimes) says that rows
		// were released, which drain merges as they arrive.
		if w == watermark.End {
			return m.mergeAll(emit)
		}
		return m.drain(emit)
	}
	outs, err := m.collect(w)
	if err != nil {
		return err
	}
	for k, o := range outs {
		if err := emit(o); err != nil {
			arrowutil.ReleaseAll(outs[k+1:])
			return err
		}
	}
	return nil
}

// mergeAll emits every buffered row (batch mode, at the end of the input:
// every task's output is in sequence order) by a merge on sequence that
// gathers runs of rows straight from the tasks' batches, chunk by chunk,
// and lets each batch go once its rows are out.
func (m *merger) mergeAll(emit func(arrow.RecordBatch) error) error {
	return m.mergeUpTo(math.MaxInt64, emit)
}

// mergeUpTo emits the buffered rows of sequence number <= limit in
// sequence order (see mergeAll); the others stay buffered.
func (m *merger) mergeUpTo(limit int64, emit func(arrow.RecordBatch) error) error {
	type cursor struct {
		recs []arrow.RecordBatch
		seq  []int64 // of recs[0]
		row  int
	}
	cur := make([]cursor, len(m.bufs))
	load := func(c *cursor) {
		for len(c.recs) > 0 && c.recs[0].NumRows() == 0 {
			c.recs[0].Release()
			c.recs = c.recs[1:]
		}
		c.seq, c.row = nil, 0
		if len(c.recs) > 0 {
			c.seq = c.recs[0].Column(m.seqCol).(*array.Int64).Int64Values()
		}
	}
	for t := range m.bufs {
		cur[t].recs = m.bufs[t]
		load(&cur[t])
	}
	m.bufs = make([][]arrow.RecordBatch, m.n)
	defer func() {
		// What is left stays buffered; a batch partly emitted as the
		// slice of its remaining rows.
		m.pending = 0
		for t := range cur {
			c := &cur[t]
			if len(c.recs) > 0 && c.row > 0 {
				rest := c.recs[0].NewSlice(int64(c.row), c.recs[0].NumRows())
				c.recs[0].Release()
				c.recs[0] = rest
			}
			m.bufs[t] = c.recs
			for _, rec := range c.recs {
				m.pending += rec.NumRows()
			}
		}
	}()
	// The batches rows are gathered from (srcs) and those to release
	// once the chunk is out (done).
	var srcs, done []arrow.RecordBatch
	srcIdx := map[arrow.RecordBatch]int32{}
	var segs []arrowutil.Seg
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		rec, err := arrowutil.GatherColumns(m.mem, m.out, srcs, m.proj, segs)
		arrowutil.ReleaseAll(done)
		srcs, done, segs, rows = srcs[:0], done[:0], segs[:0], 0
		clear(srcIdx)
		if err != nil {
			return err
		}
		return emit(rec)
	}
	for {
		// The task whose next row has the lowest sequence, and the
		// lowest next sequence of the others.
		best, other := -1, int64(math.MaxInt64)
		for t := range cur {
			if cur[t].seq == nil {
				continue
			}
			q := cur[t].seq[cur[t].row]
			if best < 0 || q < cur[best].seq[cur[best].row] {
				if best >= 0 {
					other = min(other, cur[best].seq[cur[best].row])
				}
				best = t
			} else {
				other = min(other, q)
			}
		}
		if best < 0 || cur[best].seq[cur[best].row] > limit {
			break
		}
		c := &cur[best]
		rec := c.recs[0]
		si, ok := srcIdx[rec]
		if !ok {
			si = int32(len(srcs))
			srcIdx[rec] = si
			srcs = append(srcs, rec)
		}
		// The run of this batch's rows before the others' next row.
		e := c.row + 1
		lim := min(len(c.seq), c.row+mergeChunk-rows)
		for e < lim && c.seq[e] < other && c.seq[e] <= limit {
			e++
		}
		segs = arrowutil.AppendSegRun(segs, si, int32(c.row), int32(e))
		rows += e - c.row
		c.row = e
		if c.row == len(c.seq) {
			done = append(done, rec)
			c.recs = c.recs[1:]
			load(c)
		}
		if rows >= mergeChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// collect removes the rows with ts <= w from the buffers and returns them
// in order, in batches of at most mergeChunk rows.
func (m *merger) collect(w int64) ([]arrow.RecordBatch, error) {
	// Collect the rows with ts <= w from every task's buffer; each task's
	// buffer is in order except late rows, so a sort is needed in
	// streaming; in batch mode every task's output is in sequence order
	// and a k-way merge suffices.
	var recs []arrow.RecordBatch
	var streams [][]rowRef
	if len(m.streamBuf) < len(m.bufs) {
		m.streamBuf = make([][]rowRef, len(m.bufs))
	}
	defer func() {
		for t, s := range streams {
			if cap(s) <= refKeep {
				m.streamBuf[t] = s[:0]
			}
		}
	}()
	floors := make([][]int64, len(m.bufs))
	for t := range m.bufs {
		var keepRecs []arrow.RecordBatch
		n := int64(0)
		for _, rec := range m.bufs[t] {
			n += rec.NumRows()
		}
		s := slices.Grow(m.streamBuf[t][:0], int(n))
		m.streamBuf[t] = nil
		for k, rec := range m.bufs[t] {
			ts := rec.Column(m.tsCol).(*array.Int64).Int64Values()
			seq := rec.Column(m.seqCol).(*array.Int64).Int64Values()
			ri := int32(len(recs))
			used := false
			kept := false
			// A row is out at w once w has passed it and the floor of its
			// batch (late rows wait for the watermark after their arrival).
			upTo := w
			f := m.floor(t, k)
			if f >= w {
				upTo = watermark.None
			}
			for i := range ts {
				if ts[i] <= upTo {
					s = append(s, rowRef{ts: ts[i], seq: seq[i], rec: ri, row: int32(i), floor: f})
					used = true
				} else {
					kept = true
				}
			}
			if used {
				recs = append(recs, rec)
			}
			if kept {
				if used {
					rec.Retain()
				}
				keepRecs = append(keepRecs, rec)
				floors[t] = append(floors[t], f)
			}
			// Rows of a kept batch that were released now must not be
			// released again: filter them out of the kept batch.
			if used && kept {
				var idx []int32
				for i := range ts {
					if ts[i] > upTo {
						idx = append(idx, int32(i))
					}
				}
				rest, err := arrowutil.Take(m.mem, rec, idx)
				if err != nil {
					return nil, err
				}
				rec.Release()
				keepRecs[len(keepRecs)-1] = rest
			}
		}
		m.bufs[t] = keepRecs
		streams = append(streams, s)
	}
	m.floors = floors
	defer arrowutil.ReleaseAll(recs)
	// Streaming output goes as a single task's would: the rows of each
	// watermark step (by the floor they came after), late rows first in
	// arrival order (applied as their batches came), then the rows the
	// step released, by (event time, sequence).
	byTime := func(a, b rowRef) int {
		if a.floor != b.floor {
			return cmp64(a.floor, b.floor)
		}
		al, bl := a.late(), b.late()
		if al != bl {
			if al {
				return -1
			}
			return 1
		}
		if !al && a.ts != b.ts {
			return cmp64(a.ts, b.ts)
		}
		return cmp64(a.seq, b.seq)
	}
	ordered := func() bool {
		for _, s := range streams {
			if !slices.IsSortedFunc(s, byTime) {
				return false
			}
		}
		return true
	}
	refs := m.refBuf[:0]
	m.refBuf = nil
	switch {
	case m.batch:
		refs = kmerge(refs, streams, func(a, b rowRef) bool { return a.seq < b.seq })
	case ordered():
		// Each task's output is in time order unless it applied late
		// rows: merged, not sorted.
		refs = kmerge(refs, streams, func(a, b rowRef) bool { return byTime(a, b) < 0 })
	default:
		for _, s := range streams {
			refs = append(refs, s...)
		}
		slices.SortFunc(refs, byTime)
	}
	defer func() {
		if cap(refs) <= refKeep {
			m.refBuf = refs[:0]
		}
	}()
	if len(refs) == 0 {
		return nil, nil
	}
	return gatherRefs(m.mem, m.out, m.proj, recs, refs)
}

// mergeChunk is the most rows a merger writes in one batch, and how many
// rows it lets come between merges in batch mode (a variable for tests).
var mergeChunk = 1 << 16

// gatherRefs builds batches of schema holding columns cols of the
// referenced rows, in order.
func gatherRefs(mem memory.Allocator, schema *arrow.Schema, cols []int, recs []arrow.RecordBatch, refs []rowRef) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	src := make([]int32, len(recs)) // source index + 1 in this chunk
	for s := 0; s < len(refs); s += mergeChunk {
		chunk := refs[s:min(s+mergeChunk, len(refs))]
		clear(src)
		var used []arrow.RecordBatch
		segs := make([]arrowutil.Seg, 0, len(chunk))
		for _, ref := range chunk {
			si := src[ref.rec] - 1
			if si < 0 {
				si = int32(len(used))
				src[ref.rec] = si + 1
				used = append(used, recs[ref.rec])
			}
			segs = arrowutil.AppendSeg(segs, si, ref.row)
		}
		rec, err := arrowutil.GatherColumns(mem, schema, used, cols, segs)
		if err != nil {
			arrowutil.ReleaseAll(out)
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

func cmp64(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// kmerge appends to dst the rows of streams, each sorted by less, merged.
func kmerge(dst []rowRef, streams [][]rowRef, less func(a, b rowRef) bool) []rowRef {
	var two [2][]rowRef
	n := 0
	for _, s := range streams {
		if len(s) > 0 {
			if n == 2 {
				n++
				break
			}
			two[n] = s
			n++
		}
	}
	if n <= 2 {
		return merge2(dst, two[0], two[1], less)
	}
	return kmergeHeap(dst, streams, less)
}

// kmergeHeap is kmerge through a heap of the streams.
func kmergeHeap(dst []rowRef, streams [][]rowRef, less func(a, b rowRef) bool) []rowRef {
	h := &refHeap{less: less}
	total := 0
	for i, s := range streams {
		total += len(s)
		if len(s) > 0 {
			h.items = append(h.items, heapItem{stream: i})
		}
	}
	h.streams = streams
	heap.Init(h)
	out := slices.Grow(dst, total)
	for h.Len() > 0 {
		it := &h.items[0]
		out = append(out, streams[it.stream][it.pos])
		it.pos++
		if it.pos == len(streams[it.stream]) {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return out
}

// merge2 is kmerge of two streams (either may be empty) without a heap
// (two tasks, the common case, merged 9 M windows of group-1 through
// heap.Fix): the same order, ties included, for the heap's top stays
// the current stream unless the other's row is less.
func merge2(dst, a, b []rowRef, less func(a, b rowRef) bool) []rowRef {
	out := slices.Grow(dst, len(a)+len(b))
	if len(a) == 0 || len(b) > 0 && less(b[0], a[0]) {
		a, b = b, a
	}
	// a is the current stream.
	for len(a) > 0 {
		out = append(out, a[0])
		a = a[1:]
		if len(b) > 0 && (len(a) == 0 || less(b[0], a[0])) {
			a, b = b, a
		}
	}
	return out
}

type heapItem struct{ stream, pos int }

type refHeap struct {
	items   []heapItem
	streams [][]rowRef
	less    func(a, b rowRef) bool
}

func (h *refHeap) Len() int { return len(h.items) }
func (h *refHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return h.less(h.streams[a.stream][a.pos], h.streams[b.stream][b.pos])
}
func (h *refHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *refHeap) Push(x any)    { h.items = append(h.items, x.(heapItem)) }
func (h *refHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
