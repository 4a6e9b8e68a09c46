package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
)

// Checkpointing configures consistent checkpoints of a run
// (RunOptions.Checkpoints).
//
// Every Interval the reader puts a barrier into the stream after the
// batch it has just read and records the source's position. Each window
// task, once the barrier has arrived on all of its inputs (aligned),
// records which keys changed since the previous checkpoint and the rest
// of its state (watermark, rows waiting for it), passes the barrier on
// and goes on processing, while a goroutine of its operator encodes those
// keys' states as of the barrier and another writes them to the run's
// Badger store (a key about to change is encoded first by the task, or,
// if that goroutine is reading it at that moment, the task changes a
// copy: copy on write, in which the task never waits), and hands its
// part to the checkpoint once they are all in the store. The
// output merger saves the rows it holds at the barrier and asks a
// transactional sink (sink.Committer) to end the epoch. Once every window
// task has handed in its part, a backup of the store's changes is taken
// and uploaded with the parts in the background (from the barrier until
// the backup, window tasks write nothing else to the store: evictions
// and row pages wait); the manifest is written last. The output stands
// still only for a task's step at the barrier and the end of its writing
// (CheckpointInfo.Stall). Only then is the sink told to publish the
// epoch's output and a committing source (Kafka) to commit the position,
// on a goroutine of its own (a slow commit holds nothing back; only the
// newest position waiting is committed, and the last one before Run
// returns).
//
// A run started with a bucket that holds a complete checkpoint resumes
// from the latest one: the store and every operator's state are
// restored, the source is sought to the recorded position and a
// transactional sink discards output of later epochs. With a replayable
// source (source.Seeker) and a transactional sink the output equals that
// of a run without a crash: exactly-once. A sink that is not a
// sink.Committer gets at least once what came after the checkpoint.
//
// A bounded input ends with a final checkpoint, so a run restarted with
// the same bucket after it finished reads nothing again.
type Checkpointing struct {
	// Bucket holds the checkpoints (statestore/FORMAT.md). Required.
	Bucket *blob.Bucket
	// Prefix is prepended to every object name in Bucket.
	Prefix string
	// SyncDir, for a Bucket that is a local directory (a file:// bucket),
	// is that directory: every checkpoint object is then flushed to disk
	// before the manifest names it (statestore.WithSyncDir), so that
	// checkpoints survive a power loss. volga.WithCheckpoints sets it for
	// file:// URLs (statestore.SyncDir).
	SyncDir string
	// Interval is the time between checkpoints (default 10 s). A
	// checkpoint still uploading when the next is due delays it.
	Interval time.Duration
	// Retain is the number of complete checkpoints kept (default 3).
	Retain int
	// OnCheckpoint, when set, is called (from the pipeline's goroutines)
	// after each checkpoint is complete.
	OnCheckpoint func(CheckpointInfo)
}

// CheckpointInfo describes a completed checkpoint.
type CheckpointInfo struct {
	// Epoch numbers the checkpoint; epochs increase across restarts.
	Epoch uint64
	// ID is the checkpoint's unique id, that of its manifest in the
	// bucket (statestore.Manifest.ID): it tells apart checkpoints of one
	// epoch written by different runs.
	ID string
	// Kind is statestore.KindFull or statestore.KindIncremental.
	Kind string
	// Bytes is what the checkpoint uploaded.
	Bytes int64
	// Duration is the time from the barrier's injection to the manifest
	// being written.
	Duration time.Duration
	// Write, Backup and Upload split Duration into its steps: Write from
	// the barrier's injection until every window task has written the
	// states of its keys changed since the last checkpoint into the store
	// (encoded while the tasks go on, so this grows with the changed keys
	// and with how busy the CPUs are; the final checkpoint of an input
	// also waits here for the one in flight);
	// Backup the store's backup of what changed since the last
	// checkpoint, taken into a local file; Upload the upload of that
	// backup and the parts and the writing of the manifest (the fencing
	// of a Fencer source included).
	Write, Backup, Upload time.Duration
	// Stall is how long the checkpoint held the pipeline's output back:
	// the longest time a window task stood still for it, at the barrier
	// (waiting for the previous checkpoint's backup to be taken, then
	// recording its changed keys and the rest of its state) or ending its
	// writing once the key states are encoded (handing the last ones to
	// the store's writer). Encoding the key states holds nothing back: it
	// runs beside the task, which only encodes, or copies, a key still
	// owed that it is about to change. The final checkpoint of a bounded
	// input or a Stop counts only the recording: with no input left, its
	// waiting and writing hold nothing back. The store's backup and the
	// upload run in the background.
	Stall time.Duration
	// Final is set for the checkpoint that ends a bounded input.
	Final bool
}

const (
	defaultCheckpointInterval = 10 * time.Second
	defaultRetain             = 3
	checkpointFormat          = 1
)

// Part names in a checkpoint (statestore/FORMAT.md, "Pipeline parts").
const (
	partReader = "reader"
	partMerger = "merger"
	// partResults replaces partMerger in runs that merge results onto
	// their input (resmerge.go).
	partResults = "results-merger"
	partSink    = "sink"
	partLate    = "late-sink"
)

func partOperator(stage, task int) string { return fmt.Sprintf("op-%d-%d", stage, task) }

// storePrefix is the key prefix of one window task's state in the store.
func storePrefix(stage, task int) string { return fmt.Sprintf("op/%d/%d/", stage, task) }

// readerState is the reader's part of a checkpoint.
type readerState struct {
	Format      int     `json:"format"`
	Parallelism int     `json:"parallelism"`
	Stages      int     `json:"stages"`
	Schema      string  `json:"schema"`
	Position    []byte  `json:"position"`
	Seq         int64   `json:"seq"`
	Max         []int64 `json:"max"` // newest event time per source partition
	LastWM      int64   `json:"last_wm"`
	// Batch is what a batch run's batchTimes knows of the rows read (nil
	// in streaming runs and batch runs without a time bound).
	Batch *batchTimesState `json:"batch,omitempty"`
	// Cluster is where the key still being read started, in batch runs
	// over input clustered by key (RunOptions.ClusteredBy).
	Cluster *clusterState `json:"cluster,omitempty"`
}

// checkpointRun is the checkpoint state of one run, shared by its
// goroutines.
type checkpointRun struct {
	cfg  Checkpointing
	ckp  *statestore.Checkpointer
	db   *statestore.Badger
	dir  string // the store's directory
	temp bool   // dir was created by the run and is removed at its end
	log  *slog.Logger

	// restored holds the parts of the checkpoint the run resumed from
	// (nil on a fresh start); epoch is the last epoch used.
	restored map[string][]byte
	epoch    uint64

	// prepared is the last epoch whose store backup has been taken:
	// window tasks may write to the store again once it reaches the
	// epoch of the last barrier they passed.
	prepared atomic.Uint64
	// busy is set from a barrier's injection until its checkpoint is
	// complete (or failed): the reader injects no other meanwhile.
	busy atomic.Bool

	// inflight holds the parts of the checkpoints in progress by epoch
	// (two at most: the final one may start before the previous is
	// complete).
	mu       sync.Mutex
	inflight map[uint64]*inflight
	// done receives the result of each upload; the merger reads it.
	done chan uploadResult
	// ready is signalled when a window task has delivered its part of a
	// checkpoint (after writing its key states); the merger then checks
	// whether the checkpoint it waits for has all of them.
	ready chan struct{}
	// uploading is set while an upload runs; waiting is the checkpoint
	// whose barrier the merger has passed and whose window tasks are
	// still writing their state (merger goroutine only).
	uploading bool
	waiting   *waitingCheckpoint
	// uploads tracks the upload goroutine, which reads the store: close
	// waits for it (a run that fails or is cancelled may end while an
	// upload is still going).
	uploads sync.WaitGroup
	// commits hands checkpoint positions to a committing source under
	// runCtx, the context Run was given: the run's goroutines have ended,
	// and the errgroup's context with them, when the last position is
	// committed.
	commits posCommitter
	runCtx  context.Context
}

// positionCommitter is a source that stores the position of each
// completed checkpoint elsewhere, for monitoring (Kafka: the group's
// offsets).
type positionCommitter interface {
	Commit(ctx context.Context, pos []byte) error
}

// posCommitter commits checkpoint positions on a goroutine of its own,
// the newest waiting one only: a commit slow to answer (a Kafka
// coordinator timing out) would otherwise hold the merger, and with it
// the output, back. wait commits the last position and ends it, before
// the run returns.
type posCommitter struct {
	mu      sync.Mutex
	pos     []byte // newest position not yet handed to the source
	epoch   uint64 // its checkpoint
	started bool
	closed  bool
	wake    chan struct{}
	wg      sync.WaitGroup
}

// commit hands the position of checkpoint epoch to c; the first call
// starts the goroutine, which commits under ctx and logs failures.
func (pc *posCommitter) commit(ctx context.Context, c positionCommitter, log *slog.Logger, epoch uint64, pos []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return
	}
	pc.pos, pc.epoch = pos, epoch
	if !pc.started {
		pc.started = true
		pc.wake = make(chan struct{}, 1)
		pc.wg.Go(func() { pc.loop(ctx, c, log) })
	}
	select {
	case pc.wake <- struct{}{}:
	default:
	}
}

func (pc *posCommitter) loop(ctx context.Context, c positionCommitter, log *slog.Logger) {
	for range pc.wake {
		pc.mu.Lock()
		pos, epoch, closed := pc.pos, pc.epoch, pc.closed
		pc.pos = nil
		pc.mu.Unlock()
		if pos != nil && ctx.Err() == nil {
			if err := commitPosition(ctx, c, pos, log); err != nil && ctx.Err() == nil {
				log.LogAttrs(ctx, slog.LevelWarn, "volga: committing the source position failed", slog.Uint64("epoch", epoch), slog.Any("error", err))
			}
		}
		if closed {
			return
		}
	}
}

// commitPosition is c.Commit(ctx, pos), a panic of which is an error.
func commitPosition(ctx context.Context, c positionCommitter, pos []byte, log *slog.Logger) (err error) {
	defer recoverAs("the source's Commit", log, &err)
	return c.Commit(ctx, pos)
}

// wait commits the position still waiting, if any, and ends the
// goroutine.
func (pc *posCommitter) wait() {
	pc.mu.Lock()
	pc.closed = true
	if pc.started {
		select {
		case pc.wake <- struct{}{}:
		default:
		}
	}
	pc.mu.Unlock()
	pc.wg.Wait()
}

type inflight struct {
	parts   map[string][]byte
	started time.Time
	// ops counts the window tasks' parts delivered; task is the longest
	// time a window task's processing stood still for the checkpoint.
	ops  int
	task time.Duration
}

// waitingCheckpoint is a checkpoint the merger has saved its part of and
// whose backup waits for the window tasks' parts.
type waitingCheckpoint struct {
	epoch uint64
	final bool
}

type uploadResult struct {
	epoch    uint64
	manifest *statestore.Manifest
	err      error
	pos      []byte
	stall    time.Duration
	started  time.Time
	partsIn  time.Time // when every task had written its keys
	prepared time.Time // when the store's backup was taken
	written  time.Time // when the manifest was written
	final    bool
}

// openCheckpoints opens the run's state store, restoring it from the
// latest complete checkpoint of the bucket when there is one.
func (r *runner) openCheckpoints(ctx context.Context) error {
	cfg := *r.opt.Checkpoints
	if cfg.Bucket == nil {
		return errors.New("volga: checkpoints: no bucket")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = defaultCheckpointInterval
	}
	if cfg.Retain <= 0 {
		cfg.Retain = defaultRetain
	}
	log := r.opt.Logger.With(slog.String("pipeline", r.opt.Name))
	cr := &checkpointRun{cfg: cfg, log: log, done: make(chan uploadResult, 1), ready: make(chan struct{}, 1), runCtx: ctx}
	opts := []statestore.CheckpointOption{statestore.WithRetain(cfg.Retain), statestore.WithLogger(log)}
	if cfg.Prefix != "" {
		opts = append(opts, statestore.WithPrefix(cfg.Prefix))
	}
	if cfg.SyncDir != "" {
		opts = append(opts, statestore.WithSyncDir(cfg.SyncDir))
	}
	cr.ckp = statestore.NewCheckpointer(cfg.Bucket, opts...)
	if err := cr.openDir(r.opt.StateDir); err != nil {
		return err
	}
	var bopts []statestore.BadgerOption
	bopts = append(bopts, statestore.WithLogger(log))
	db, parts, m, err := cr.ckp.RestoreLatest(ctx, cr.dir, bopts...)
	switch {
	case err == nil:
		cr.db, cr.restored, cr.epoch = db, parts, m.Epoch
		r.ck = cr
		if _, err := r.checkRestored(); err != nil {
			cr.close()
			r.ck = nil
			return err
		}
		log.LogAttrs(ctx, slog.LevelInfo, "volga: resuming from checkpoint",
			slog.Uint64("epoch", m.Epoch), slog.Time("created", m.Created))
	case errors.Is(err, statestore.ErrNoCheckpoint):
		db, err := statestore.OpenBadger(cr.dir, bopts...)
		if err != nil {
			cr.close()
			return fmt.Errorf("volga: state store: %w", err)
		}
		cr.db = db
	default:
		cr.close()
		return fmt.Errorf("volga: %w", err)
	}
	r.ck = cr
	return nil
}

// openStore opens a state store without checkpoints (a memory budget
// needs one to evict to).
func (r *runner) openStore() error {
	cr := &checkpointRun{log: r.opt.Logger}
	if err := cr.openDir(r.opt.StateDir); err != nil {
		return err
	}
	db, err := statestore.OpenBadger(cr.dir, statestore.WithLogger(r.opt.Logger))
	if err != nil {
		cr.close()
		return fmt.Errorf("volga: state store: %w", err)
	}
	cr.db = db
	r.ck = cr
	return nil
}

// openDir prepares the store's directory: dir emptied (refused while
// another run's open store holds it), or a new temporary one. The store's
// content comes from the checkpoint (or nothing): whatever a crashed run
// left there is stale.
func (cr *checkpointRun) openDir(dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "volga-state-*")
		if err != nil {
			return fmt.Errorf("volga: state directory: %w", err)
		}
		cr.dir, cr.temp = d, true
		return nil
	}
	if err := statestore.ClearDir(dir); err != nil {
		return fmt.Errorf("volga: clearing state directory: %w", err)
	}
	cr.dir = dir
	return nil
}

// close waits for an upload and a position commit still running, closes
// the store and removes a temporary directory.
func (cr *checkpointRun) close() error {
	cr.uploads.Wait()
	cr.commits.wait()
	var err error
	if cr.db != nil {
		err = cr.db.Close()
		cr.db = nil
	}
	if cr.temp {
		_ = os.RemoveAll(cr.dir)
	}
	return err
}

// checkpointing reports whether the run takes checkpoints.
func (r *runner) checkpointing() bool { return r.ck != nil && r.ck.ckp != nil }

// checkRestored checks the reader's part of the checkpoint the run
// resumes from against this run (parallelism, query, source schema), so
// that a mismatch is reported as such before any operator restores.
func (r *runner) checkRestored() (*readerState, error) {
	parallelism := r.opt.Parallelism
	if r.c.stateless {
		parallelism = 1
	}
	var st readerState
	if err := json.Unmarshal(r.ck.restored[partReader], &st); err != nil {
		return nil, fmt.Errorf("volga: checkpoint %d: reader part: %w", r.ck.epoch, err)
	}
	if st.Format != checkpointFormat {
		return nil, fmt.Errorf("volga: checkpoint %d: format %d, want %d", r.ck.epoch, st.Format, checkpointFormat)
	}
	if st.Parallelism != parallelism || st.Stages != len(r.c.stages) {
		return nil, fmt.Errorf("volga: checkpoint %d was written by a run with parallelism %d and %d stages; this one has %d and %d: start it with the same parallelism and query, or with another checkpoint location",
			r.ck.epoch, st.Parallelism, st.Stages, parallelism, len(r.c.stages))
	}
	if st.Schema != r.c.Source.String() {
		return nil, fmt.Errorf("volga: checkpoint %d was written for another source schema (%s)", r.ck.epoch, st.Schema)
	}
	return &st, nil
}

// restoreReader returns the reader's part of the checkpoint the run
// resumes from (nil on a fresh start) and seeks the source to its
// position.
func (r *runner) restoreReader(nparts int) (*readerState, error) {
	if r.ck == nil || r.ck.restored == nil {
		return nil, nil
	}
	st, err := r.checkRestored()
	if err != nil {
		return nil, err
	}
	if len(st.Max) != nparts {
		return nil, fmt.Errorf("volga: checkpoint %d: the source had %d partitions, now %d", r.ck.epoch, len(st.Max), nparts)
	}
	seeker, ok := r.src.(source.Seeker)
	if !ok {
		return nil, fmt.Errorf("volga: resuming from checkpoint %d needs a replayable source (source.Seeker); %T is not", r.ck.epoch, r.src)
	}
	if err := seeker.Seek(st.Position); err != nil {
		return nil, fmt.Errorf("volga: checkpoint %d: seeking the source: %w", r.ck.epoch, err)
	}
	return st, nil
}

// recoverSink prepares the sink and the late-row sink of a resumed run.
func (r *runner) recoverSink(ctx context.Context) error {
	if !r.checkpointing() || r.ck.restored == nil {
		return nil
	}
	for _, s := range []struct {
		out        sink.Sink
		part, name string
	}{{r.out, partSink, "sink"}, {r.opt.Late, partLate, "late-row sink"}} {
		if s.out == nil {
			continue
		}
		c, ok := s.out.(sink.Committer)
		if !ok {
			r.ck.log.LogAttrs(ctx, slog.LevelWarn, "volga: the "+s.name+" is not transactional: output after the checkpoint is written again (at least once)",
				slog.Uint64("epoch", r.ck.epoch))
			continue
		}
		state, ok := r.ck.restored[s.part]
		if !ok && s.part == partLate {
			// The checkpoint was taken without a late-row sink: this one
			// starts afresh, as in a run's first epoch.
			r.ck.log.LogAttrs(ctx, slog.LevelInfo, "volga: the checkpoint has no late-row sink state: the late-row sink starts afresh",
				slog.Uint64("epoch", r.ck.epoch))
			continue
		}
		if err := c.Recover(ctx, r.ck.epoch, state); err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: recovering the %s at checkpoint %d: %w", s.name, r.ck.epoch, err)}
		}
	}
	return nil
}

// inject starts checkpoint epoch at the reader: it records the reader's
// state. It returns false when a checkpoint is still in progress and
// final is not set.
func (cr *checkpointRun) inject(st readerState, final bool) (uint64, error) {
	if !final && cr.busy.Load() {
		return 0, nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.busy.Store(true)
	cr.epoch++
	if cr.inflight == nil {
		cr.inflight = map[uint64]*inflight{}
	}
	cr.inflight[cr.epoch] = &inflight{parts: map[string][]byte{partReader: b}, started: time.Now()}
	return cr.epoch, nil
}

// addPart records a part of checkpoint epoch.
func (cr *checkpointRun) addPart(epoch uint64, name string, b []byte) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if fl := cr.inflight[epoch]; fl != nil {
		fl.parts[name] = b
	}
}

// taskDone records the part of a window task for checkpoint epoch, once
// its key states are in the store, with the longest time the checkpoint
// held the task's processing up, and signals the merger.
func (cr *checkpointRun) taskDone(epoch uint64, name string, meta []byte, stall time.Duration) {
	cr.mu.Lock()
	if fl := cr.inflight[epoch]; fl != nil {
		fl.parts[name] = meta
		fl.ops++
		fl.task = max(fl.task, stall)
	}
	cr.mu.Unlock()
	select {
	case cr.ready <- struct{}{}:
	default: // a signal is already pending
	}
}

// partsIn reports whether every window task (ops of them) has delivered
// its part of checkpoint epoch.
func (cr *checkpointRun) partsIn(epoch uint64, ops int) bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	fl := cr.inflight[epoch]
	return fl != nil && fl.ops >= ops
}

// mayWrite returns the MayWrite function of a window task: false between
// the task's barrier of an epoch and that epoch's backup.
func (cr *checkpointRun) mayWrite(frozen *uint64) func() bool {
	return func() bool { return cr.prepared.Load() >= *frozen }
}

// encodeBatches encodes record batches of one schema as an Arrow IPC
// stream preceded by the number of batches per group.
func encodeBatches(schema *arrow.Schema, groups [][]arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	var hdr [binary.MaxVarintLen64]byte
	buf.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(groups)))])
	for _, g := range groups {
		buf.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(g)))])
	}
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, g := range groups {
		for _, rec := range g {
			if err := w.Write(rec); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeBatches reverses encodeBatches.
func decodeBatches(mem memory.Allocator, schema *arrow.Schema, data []byte) (_ [][]arrow.RecordBatch, err error) {
	rd := bytes.NewReader(data)
	ng, err := binary.ReadUvarint(rd)
	if err != nil || ng > 1<<20 {
		return nil, errors.New("bad batch header")
	}
	counts := make([]uint64, ng)
	for i := range counts {
		if counts[i], err = binary.ReadUvarint(rd); err != nil {
			return nil, errors.New("bad batch header")
		}
	}
	r, err := ipc.NewReader(rd, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	groups := make([][]arrow.RecordBatch, ng)
	defer func() {
		if err != nil {
			for _, g := range groups {
				for _, rec := range g {
					rec.Release()
				}
			}
		}
	}()
	for i, n := range counts {
		for range n {
			if !r.Next() {
				if r.Err() != nil {
					return nil, r.Err()
				}
				return nil, errors.New("fewer batches than announced")
			}
			rec := r.RecordBatch()
			rec.Retain()
			groups[i] = append(groups[i], rec)
		}
	}
	return groups, nil
}

// encodeStatePart encodes a part of a checkpoint that holds rows: a
// uvarint length and the JSON of header, then groups as encodeBatches
// writes them (the merger's and a task's held rows).
func encodeStatePart(header any, schema *arrow.Schema, groups [][]arrow.RecordBatch) ([]byte, error) {
	js, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	body, err := encodeBatches(schema, groups)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(js)+len(body)), uint64(len(js)))
	out = append(out, js...)
	return append(out, body...), nil
}

// decodeStatePart reverses encodeStatePart, decoding the JSON into header.
func decodeStatePart(mem memory.Allocator, schema *arrow.Schema, data []byte, header any) ([][]arrow.RecordBatch, error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || uint64(len(data)-k) < n {
		return nil, errors.New("damaged header")
	}
	if err := json.Unmarshal(data[k:k+int(n)], header); err != nil {
		return nil, err
	}
	return decodeBatches(mem, schema, data[k+int(n):])
}

// mergerState is the merger's part: its watermark per input and the rows
// it holds (in the IPC payload).
type mergerState struct {
	WMs []int64 `json:"wms"`
	Cur int64   `json:"cur"`
	// Floors are merger.floors (streaming; absent in older checkpoints,
	// whose batches then count as on time).
	Floors [][]int64 `json:"floors,omitempty"`
}

func (m *merger) checkpoint() ([]byte, error) {
	if m.bufs == nil {
		m.bufs = make([][]arrow.RecordBatch, m.n)
		m.cur = watermark.None
	}
	st := mergerState{Cur: m.cur, WMs: make([]int64, m.n)}
	for i := range st.WMs {
		st.WMs[i] = m.comb.Input(i)
	}
	if !m.batch {
		st.Floors = make([][]int64, m.n)
		for t, b := range m.bufs {
			st.Floors[t] = make([]int64, len(b))
			for k := range b {
				st.Floors[t][k] = m.floor(t, k)
			}
		}
	}
	return encodeStatePart(st, m.schema, m.bufs)
}

func (m *merger) restore(data []byte) error {
	var st mergerState
	groups, err := decodeStatePart(m.mem, m.schema, data, &st)
	if err != nil {
		return fmt.Errorf("volga: checkpoint: merger part: %w", err)
	}
	if len(st.WMs) != m.n || len(groups) != m.n {
		for _, g := range groups {
			arrowutil.ReleaseAll(g)
		}
		return fmt.Errorf("volga: checkpoint: merger part has %d inputs (%d watermarks), want %d", len(groups), len(st.WMs), m.n)
	}
	m.bufs = groups
	m.floors = nil
	if len(st.Floors) == m.n {
		m.floors = st.Floors
	}
	m.cur = st.Cur
	for i, wm := range st.WMs {
		if wm != watermark.None {
			m.comb.Update(i, wm)
		}
	}
	return nil
}

// mergerPart is the merger of a run's output (merger, or resMerger when
// results are merged onto the input), which saves its state in a
// checkpoint.
type mergerPart interface {
	checkpoint() ([]byte, error)
}

// completeCheckpoint runs on the merger's goroutine once the barrier of
// epoch has arrived from every task: it saves the merger's state and ends
// the sink's epoch. The store backup and the upload follow once every
// window task has delivered its part, that is, has written its key states
// for the epoch (checkpointReady). The upload's result arrives on cr.done.
// A final checkpoint is completed here, after the one in progress.
func (r *runner) completeCheckpoint(ctx context.Context, epoch uint64, m mergerPart, final bool) error {
	cr := r.ck
	if w := cr.waiting; final && w != nil {
		// Every task has delivered its part of the checkpoint in progress
		// before it passed the final barrier.
		if err := r.awaitParts(ctx, w.epoch); err != nil {
			return err
		}
		if err := r.checkpointReady(ctx); err != nil {
			return err
		}
	}
	if final && cr.uploading {
		select {
		case res := <-cr.done:
			if err := r.finishCheckpoint(ctx, res); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	mb, err := m.checkpoint()
	if err != nil {
		return fmt.Errorf("volga: checkpoint %d: merger: %w", epoch, err)
	}
	part := partMerger
	if r.resMerge {
		part = partResults
	}
	cr.addPart(epoch, part, mb)
	if c, ok := r.out.(sink.Committer); ok {
		sb, err := c.PrepareCommit(ctx, epoch)
		if err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: checkpoint %d: sink: %w", epoch, err)}
		}
		cr.addPart(epoch, partSink, sb)
	}
	// Late rows reach the merger with the output, behind the same
	// barriers: the late-row sink ends the epoch at the same point.
	if c, ok := r.opt.Late.(sink.Committer); ok {
		sb, err := c.PrepareCommit(ctx, epoch)
		if err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: checkpoint %d: late-row sink: %w", epoch, err)}
		}
		cr.addPart(epoch, partLate, sb)
	}
	cr.waiting = &waitingCheckpoint{epoch: epoch, final: final}
	if final {
		if err := r.awaitParts(ctx, epoch); err != nil {
			return err
		}
	}
	return r.checkpointReady(ctx)
}

// opTasks is the number of window tasks, each of which delivers a part of
// every checkpoint.
func (r *runner) opTasks() int { return r.n * len(r.c.stages) }

// awaitParts waits, on the merger's goroutine, until every window task
// has delivered its part of checkpoint epoch.
func (r *runner) awaitParts(ctx context.Context, epoch uint64) error {
	for !r.ck.partsIn(epoch, r.opTasks()) {
		select {
		case <-r.ck.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// checkpointReady runs on the merger's goroutine: when every window task
// has delivered its part of the checkpoint the merger waits for, it takes
// the store's backup and uploads it with the parts, on another goroutine
// (a final checkpoint on this one): the output goes on meanwhile. Until the
// backup is taken the window tasks make no other writes to the store
// (mayWrite).
func (r *runner) checkpointReady(ctx context.Context) error {
	cr := r.ck
	w := cr.waiting
	if w == nil || !cr.partsIn(w.epoch, r.opTasks()) {
		return nil
	}
	cr.waiting = nil
	epoch, final := w.epoch, w.final
	cr.mu.Lock()
	fl := cr.inflight[epoch]
	delete(cr.inflight, epoch)
	cr.mu.Unlock()
	parts, started, stall := fl.parts, fl.started, fl.task
	partsIn := time.Now()
	var pos []byte
	if rs := parts[partReader]; rs != nil {
		var st readerState
		if json.Unmarshal(rs, &st) == nil {
			pos = st.Position
		}
	}
	var fence func(context.Context) error
	if f, ok := r.src.(Fencer); ok {
		fence = func(ctx context.Context) error { return f.Fence(ctx, pos) }
	}
	run := func() (res uploadResult) {
		res = uploadResult{epoch: epoch, pos: pos, stall: stall, started: started, partsIn: partsIn, final: final}
		defer recoverAs(fmt.Sprintf("checkpoint %d's upload", epoch), r.opt.Logger, &res.err)
		p, err := cr.ckp.Prepare(cr.db, epoch)
		cr.prepared.Store(epoch)
		res.prepared = time.Now()
		if err != nil {
			res.err = err
			return res
		}
		defer p.Abort()
		res.manifest, res.err = p.CommitFenced(ctx, parts, fence)
		res.written = time.Now()
		return res
	}
	if final {
		return r.finishCheckpoint(ctx, run())
	}
	cr.uploading = true
	cr.uploads.Go(func() { cr.done <- run() })
	return nil
}

// Fencer is a source whose run may lose the right to write its
// checkpoints while it runs, such as the source of a consumer group
// member's partition, which the group may hand to another member while
// this one is paused (and then still runs for a while, a zombie). Fence
// says whether the run still owns the checkpoints: it is called with
// the source position a checkpoint records, before the checkpoint
// changes anything in the bucket and again just before its manifest is
// written (statestore.Pending.CommitFenced), from a goroutine other than
// the reader's, and, when the run has a transactional sink, once more
// before the sink publishes the checkpoint's output. An error wrapping
// ErrFenced says that another run owns the checkpoints: the checkpoint
// is refused and the run ends with that error (going on would only stage
// output that nobody publishes; a refusal before the publication leaves
// it to the new owner, which restores that checkpoint). Any other error
// says that ownership could not be confirmed (the coordinator did not
// answer): the checkpoint is refused, counted as failed, and the run
// goes on (a publication refused so is made by the next checkpoint's;
// at the end of the input the run fails, its output staged until a
// restart).
type Fencer interface {
	Fence(ctx context.Context, pos []byte) error
}

// ErrFenced marks a checkpoint refused by its source's Fence because
// another run owns the checkpoints now (see Fencer).
var ErrFenced = errors.New("volga: checkpoint refused: the source no longer owns the checkpoints")

// fenceOutput asks a Fencer source once more before transactional sinks
// publish checkpoint res's output: a run that lost the checkpoints since
// the manifest was written (paused in between) leaves the publication to
// the new owner, which restored that checkpoint and publishes what it
// lists as staged. It reports whether to publish now: not when ownership
// could not be confirmed (the next checkpoint's publication includes
// this one's); an error ends the run.
func (r *runner) fenceOutput(ctx context.Context, res uploadResult) (bool, error) {
	f, ok := r.src.(Fencer)
	if !ok {
		return true, nil
	}
	_, out := r.out.(sink.Committer)
	_, late := r.opt.Late.(sink.Committer)
	if !out && !late {
		return true, nil
	}
	err := f.Fence(ctx, res.pos)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrFenced) || res.final:
		return false, fmt.Errorf("volga: checkpoint %d: publishing the sinks' output: fence: %w", res.epoch, err)
	}
	r.ck.log.LogAttrs(ctx, slog.LevelWarn, "volga: ownership of the checkpoints not confirmed: the sinks publish this checkpoint's output with the next one's",
		slog.Uint64("epoch", res.epoch), slog.Any("error", err))
	return false, nil
}

// finishCheckpoint runs on the merger's goroutine with the result of an
// upload: on success the sink publishes the epoch and a committing source
// commits its position.
func (r *runner) finishCheckpoint(ctx context.Context, res uploadResult) error {
	cr := r.ck
	cr.uploading = false
	defer cr.busy.Store(false)
	if res.err != nil {
		if res.final {
			return fmt.Errorf("volga: final checkpoint %d: %w", res.epoch, res.err)
		}
		if errors.Is(res.err, ErrFenced) {
			// Another run owns the checkpoints: going on would only
			// stage output nobody publishes.
			return fmt.Errorf("volga: checkpoint %d: %w", res.epoch, res.err)
		}
		r.stats.checkpointFailures.Add(1)
		cr.log.LogAttrs(ctx, slog.LevelError, "volga: checkpoint failed", slog.Uint64("epoch", res.epoch), slog.Any("error", res.err))
		return nil
	}
	publish, err := r.fenceOutput(ctx, res)
	if err != nil {
		return err
	}
	if c, ok := r.out.(sink.Committer); ok && publish {
		if err := c.Commit(ctx, res.epoch); err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: checkpoint %d: publishing the sink's output: %w", res.epoch, err)}
		}
	}
	if c, ok := r.opt.Late.(sink.Committer); ok && publish {
		if err := c.Commit(ctx, res.epoch); err != nil {
			return &operatorError{op: "sink", err: fmt.Errorf("volga: checkpoint %d: publishing the late-row sink's output: %w", res.epoch, err)}
		}
	}
	if c, ok := r.src.(positionCommitter); ok && res.pos != nil {
		cr.commits.commit(cr.runCtx, c, cr.log, res.epoch, res.pos)
	}
	info := CheckpointInfo{Epoch: res.epoch, ID: res.manifest.ID, Kind: res.manifest.Kind, Bytes: res.manifest.Bytes(),
		Duration: res.written.Sub(res.started), Stall: res.stall, Final: res.final,
		Write: res.partsIn.Sub(res.started), Backup: res.prepared.Sub(res.partsIn), Upload: res.written.Sub(res.prepared)}
	r.stats.checkpoints.Add(1)
	r.stats.lastCheckpoint.Store(int64(res.epoch))
	r.stats.lastCheckpointBytes.Store(info.Bytes)
	r.stats.lastCheckpointNanos.Store(int64(info.Duration))
	r.stats.lastStallNanos.Store(int64(info.Stall))
	r.stats.lastWriteNanos.Store(int64(info.Write))
	r.stats.lastBackupNanos.Store(int64(info.Backup))
	r.stats.lastUploadNanos.Store(int64(info.Upload))
	r.stats.lastCheckpointUnixMilli.Store(time.Now().UnixMilli())
	cr.log.LogAttrs(ctx, slog.LevelDebug, "volga: checkpoint complete", slog.Uint64("epoch", info.Epoch), slog.String("id", info.ID),
		slog.String("kind", info.Kind), slog.Int64("bytes", info.Bytes), slog.Duration("duration", info.Duration), slog.Duration("stall", info.Stall),
		slog.Duration("write", info.Write), slog.Duration("backup", info.Backup), slog.Duration("upload", info.Upload))
	if cr.cfg.OnCheckpoint != nil {
		cr.cfg.OnCheckpoint(info)
	}
	return nil
}

// aligner aligns checkpoint barriers at an operator with several
// senders: once the barrier of an epoch has come from a sender, that
// sender's later messages are held back until it has come from every
// sender, so that the operator's state at the barrier reflects exactly
// the messages sent before it.
type aligner struct {
	got  []bool
	n    int // senders whose barrier has come
	held []msg
}

func newAligner(senders int) *aligner { return &aligner{got: make([]bool, senders)} }

// hold keeps m back, and reports true, when its sender's barrier has come
// and the alignment is not complete.
func (a *aligner) hold(m msg) bool {
	if a.n > 0 && a.got[m.from] {
		a.held = append(a.held, m)
		return true
	}
	return false
}

// arrive records the barrier of sender from and reports whether it has
// now come from every sender.
func (a *aligner) arrive(from int) bool {
	if !a.got[from] {
		a.got[from] = true
		a.n++
	}
	return a.n == len(a.got)
}

// release ends an alignment and returns the messages held back, in
// arrival order.
func (a *aligner) release() []msg {
	clear(a.got)
	a.n = 0
	h := a.held
	a.held = nil
	return h
}

// discard releases the batches still held (a run that ends early).
func (a *aligner) discard() {
	for _, m := range a.held {
		m.release()
	}
	a.held = nil
}

// replay dispatches held messages in order; on an error the batches not
// dispatched are released.
func replay(h []msg, dispatch func(msg) error) error {
	for k, m := range h {
		if err := dispatch(m); err != nil {
			for _, x := range h[k+1:] {
				x.release()
			}
			return err
		}
	}
	return nil
}

// taskDoneHook, when set (by tests, before any run), is called by a
// window task right before it delivers its part of checkpoint epoch.
var taskDoneHook func(epoch uint64)

// asyncCheckpointer is an operator whose checkpoint is taken at the
// barrier and encoded afterwards by a goroutine of its own while it goes
// on processing (window.Operator).
type asyncCheckpointer interface {
	BeginCheckpoint() ([]byte, error)
	CheckpointEncoded() <-chan struct{}
	WriteCheckpoint(d time.Duration) (flush func() error, err error)
}

// taskCheckpoint is a window task's side of checkpoints; only the task's
// goroutine uses it.
//
// At an aligned barrier (begin) the operator records which keys changed
// and returns its meta, and the task passes the barrier on at once. The
// key states as of the barrier are then encoded by a goroutine of the
// operator's own while the task goes on (a key about to change is
// encoded first by the operator, or copied when that goroutine is reading
// it: copy on write), and written to the store by another. Once they are
// all encoded (encoded) the task ends the checkpoint on the operator's
// side, the write batch is flushed on another goroutine (it touches no
// operator state) and, once it has succeeded, the task delivers its part:
// only then may the merger take the store's backup. The task writes a
// checkpoint's state only once the previous checkpoint's backup is taken
// (mayWrite), so no backup ever holds a later state.
type taskCheckpoint struct {
	r      *runner
	s, id  int
	op     operator
	frozen *uint64 // epoch of the last barrier passed (checkpointRun.mayWrite)

	// The checkpoint being written: its epoch and meta, the longest time
	// it held the task up, whether key states remain to encode (and the
	// channel closed once they are encoded), and the result of the flush
	// while it runs.
	epoch   uint64
	meta    []byte
	stall   time.Duration
	writing bool
	encoded <-chan struct{}
	// final marks the final checkpoint of an input: nothing waits on its
	// writing, which is therefore no stall.
	final   bool
	flushed chan error
}

func (tc *taskCheckpoint) fail(err error) error {
	return &operatorError{op: "window", stage: tc.s, task: tc.id, err: fmt.Errorf("volga: checkpoint %d: %w", tc.epoch, err)}
}

// begin starts checkpoint epoch at the task's aligned barrier.
func (tc *taskCheckpoint) begin(ctx context.Context, epoch uint64, final bool) error {
	// The final checkpoint may come while the previous one is written.
	if err := tc.finish(ctx); err != nil {
		return err
	}
	cr := tc.r.ck
	// The task stands still from here: waiting for the previous backup
	// counts in the stall, except at the final checkpoint of an input,
	// after which there is no output left to hold back.
	defer trace.StartRegion(ctx, "volga.checkpoint.barrier").End()
	start := time.Now()
	for cr.prepared.Load() < *tc.frozen {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	if final {
		start = time.Now()
	}
	tc.epoch, tc.final = epoch, final
	*tc.frozen = epoch
	aop, ok := tc.op.(asyncCheckpointer)
	var err error
	if ok {
		tc.meta, err = aop.BeginCheckpoint()
	} else {
		tc.meta, err = tc.op.Checkpoint()
	}
	tc.stall = time.Since(start)
	if err != nil {
		return tc.fail(err)
	}
	if !ok {
		cr.taskDone(epoch, partOperator(tc.s, tc.id), tc.meta, tc.stall)
		return nil
	}
	tc.writing = true
	tc.encoded = aop.CheckpointEncoded()
	return nil
}

// write ends the checkpoint's writing on the operator's side once its
// key states are encoded (encoding what remains itself and waiting for
// the operator's encoder, when it is called earlier) and starts the
// flush. With stall, the time counts in the checkpoint's stall: not when
// a new barrier finds the checkpoint still being written (finish), which
// only the final barrier of an input does, with no input left to hold up.
func (tc *taskCheckpoint) write(stall bool) error {
	defer trace.StartRegion(context.Background(), "volga.checkpoint.write").End()
	start := time.Now()
	flush, err := tc.op.(asyncCheckpointer).WriteCheckpoint(0)
	if stall && !tc.final {
		tc.stall = max(tc.stall, time.Since(start))
	}
	tc.writing = false
	if err != nil {
		return tc.fail(err)
	}
	done := make(chan error, 1)
	tc.flushed = done
	go func() {
		var err error
		defer func() { done <- err }()
		defer recoverAs(fmt.Sprintf("the checkpoint flush of window task %d of stage %d", tc.id, tc.s), nil, &err)
		err = flush()
	}()
	return nil
}

// done delivers the task's part once the flush has succeeded.
func (tc *taskCheckpoint) done(err error) error {
	tc.flushed = nil
	if err != nil {
		return tc.fail(err)
	}
	if taskDoneHook != nil {
		taskDoneHook(tc.epoch)
	}
	tc.r.ck.taskDone(tc.epoch, partOperator(tc.s, tc.id), tc.meta, tc.stall)
	return nil
}

// next returns the task's next input message (ok false once in is
// closed). While a checkpoint is written it ends the writing once the key
// states are encoded, and delivers the task's part once they are flushed.
func (tc *taskCheckpoint) next(ctx context.Context, in chan msg) (msg, bool, error) {
	for {
		switch {
		case tc.writing:
			select {
			case <-tc.encoded:
				if err := tc.write(true); err != nil {
					return msg{}, false, err
				}
				continue
			default:
			}
			select {
			case m, ok := <-in:
				return m, ok, nil
			case <-tc.encoded:
			}
		case tc.flushed != nil:
			select {
			case m, ok := <-in:
				return m, ok, nil
			case err := <-tc.flushed:
				if err := tc.done(err); err != nil {
					return msg{}, false, err
				}
			}
		default:
			m, ok := <-in
			return m, ok, nil
		}
	}
}

// finish writes what remains of the checkpoint in progress, if any, and
// waits for its flush.
func (tc *taskCheckpoint) finish(ctx context.Context) error {
	if tc.writing {
		if err := tc.write(false); err != nil {
			return err
		}
	}
	if tc.flushed == nil {
		return nil
	}
	select {
	case err := <-tc.flushed:
		return tc.done(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}
