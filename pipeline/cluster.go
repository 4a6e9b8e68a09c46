package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/semaphore"

	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// Batch input clustered by key (RunOptions.ClusteredBy).
//
// An input that comes key by key (an export sorted by user, say) is far
// from time order: no watermark lets its OVER-window rows go before the
// end, so a batch run would hold every row. But once the reader has moved
// on to another key, the rows of the keys before are all read and their
// results final. The reader finds, in each batch, where the run of rows
// of its last key starts (keyRuns) and tells the first stage's tasks
// (msg.fin); each releases every row before it (window.Operator.
// FinishBefore) once it has enough of them, and drops those keys' states
// (kept with a state store). A key that comes back stops the run with an
// error: the promise was wrong. A query of GROUP BY windows only
// (tumble/hop) emits each key's windows once the input has moved on too
// (window.GroupConfig.Clustered): key by key, in the order of their
// first rows, each key's windows by start; the merger orders several
// tasks' windows by the sequence number of their key's first row.

// clusterCols returns the columns of the prepared batches the input is
// clustered by (opt.ClusteredBy), or nil when none are given, and the
// number of stages, from the first, that finish keys: those of OVER
// windows whose keys include the clustering columns. It returns an error
// when the run cannot use them.
func (c *Compiled) clusterCols(opt RunOptions) ([]int, int, error) {
	if len(opt.ClusteredBy) == 0 {
		return nil, 0, nil
	}
	if opt.Mode != Batch {
		return nil, 0, errors.New("volga: ClusteredBy applies to batch runs only")
	}
	if c.probeIdx > 0 {
		return nil, 0, errors.New("volga: ClusteredBy does not apply to backfills (events and spine are read in time order)")
	}
	if len(c.stages) == 0 {
		return nil, 0, errors.New("volga: ClusteredBy needs windows (OVER, or GROUP BY tumble/hop); the query has none")
	}
	st := c.stages[0]
	keyCols, what := st.cfg.KeyCols, "PARTITION BY columns of the first windows"
	if st.group != nil {
		// A GROUP BY query is that one stage.
		keyCols, what = st.group.KeyCols, "GROUP BY columns"
	}
	cols := make([]int, 0, len(opt.ClusteredBy))
	for _, name := range opt.ClusteredBy {
		// Names compare without case, as SQL's do.
		k := fieldIndexFold(c.Source, name)
		if k < 0 {
			return nil, 0, fmt.Errorf("volga: ClusteredBy: no column %q in the source", name)
		}
		if !slices.Contains(keyCols, k) {
			return nil, 0, fmt.Errorf("volga: ClusteredBy: column %q is not among the %s (%v): only keys that include the clustering columns are finished as the input moves on", name, what, st.keys)
		}
		cols = append(cols, k)
	}
	stages := 1
	for _, st := range c.stages[1:] {
		if st.group != nil || !keysInclude(st, opt.ClusteredBy) {
			break
		}
		stages++
	}
	return cols, stages, nil
}

// keysInclude reports whether the OVER-window stage st partitions by every
// column of names (and maybe more).
func keysInclude(st *stage, names []string) bool {
	for _, name := range names {
		if !slices.ContainsFunc(st.cfg.KeyCols, func(k int) bool { return strings.EqualFold(st.in.Field(k).Name, name) }) {
			return false
		}
	}
	return true
}

// keyRuns follows the runs of rows with the same clustering key in the
// prepared batches: open is the sequence number of the first row of the
// run still being read. Runs are told apart by the hash of their key
// values (a run whose key hashes like the one before it is taken for its
// continuation: the rows before it are then released a run later).
type keyRuns struct {
	cols []int
	h    keyHasher
	buf  []arrow.Array
	// cur hashes the last row's key; seen is set once a row was read
	// (since the start of the run or the checkpoint it resumed).
	cur  uint64
	seen bool
	open int64
}

// clusterState is a keyRuns in a checkpoint (the reader's part).
type clusterState struct {
	Hash uint64 `json:"hash"`
	Open int64  `json:"open"`
}

// observe follows the rows of a prepared batch (their sequence numbers in
// seqs) and returns open.
func (k *keyRuns) observe(rec arrow.RecordBatch, seqs []int64) int64 {
	n := int(rec.NumRows())
	if n == 0 {
		return k.open
	}
	cols := k.buf[:0]
	for _, c := range k.cols {
		cols = append(cols, rec.Column(c))
	}
	k.buf = cols
	last := k.h.hash(cols, n-1)
	i := n - 1
	for i > 0 && k.h.hash(cols, i-1) == last {
		i--
	}
	// Row i starts the batch's last run; at row 0 it may continue the run
	// the batch before ended with. Without a row before (a fresh run
	// starts at 0; a run resumed from a checkpoint without this state
	// cannot tell), the open run is taken to go on.
	if i > 0 || (k.seen && last != k.cur) {
		k.open = max(k.open, seqs[i])
	}
	k.cur, k.seen = last, true
	return k.open
}

// state returns k's checkpoint state.
func (k *keyRuns) state() *clusterState {
	if !k.seen {
		return nil
	}
	return &clusterState{Hash: k.cur, Open: k.open}
}

// restore resumes k from a checkpoint's state (nil: none was saved).
func (k *keyRuns) restore(st *clusterState) {
	if st != nil {
		k.cur, k.open, k.seen = st.Hash, st.Open, true
	}
}

// The reader of a batch run over input clustered by key, with several
// tasks, may send a first-stage task up to batchReleaseRows rows ahead of
// what the task has received (runner.ahead), whatever the size of the
// batches. A task lets the rows of finished keys wait until it has
// batchReleaseRows of its own (deferFinish) and then releases them in a
// burst of work; meanwhile the reader, which hands every batch to every
// task, must not wait on that task's full queue while the others, their
// queues empty, wait for it. Bounded by ChannelDepth alone (4 messages:
// two batches of the sources' 4 096 rows and their fin, then sent apart),
// the tasks took turns: features-4 over 10 M events sorted by user,
// parallelism 2, kept each task busy half the time, 1.4 cores in all,
// 1.62-1.68 s; with 32 k rows ahead 1.38-1.40 s; with 64 k, 128 k or 256
// k, 1.11-1.18 s, for 15-20 MB more peak RSS at 64 k (2026-12-01). The
// rows waiting are slices of batches the source decoded, which it holds
// anyway.

// clusterAheadMsgs is the capacity of a first-stage task's queue when the
// rows bound it: the rows bind first unless batches are small.
const clusterAheadMsgs = 256

// clusterAhead returns the bounds of the rows the reader may send each of
// n tasks ahead (runner.ahead).
func clusterAhead(n int) []*semaphore.Weighted {
	ahead := make([]*semaphore.Weighted, n)
	for i := range ahead {
		ahead[i] = semaphore.NewWeighted(int64(batchReleaseRows))
	}
	return ahead
}

// takeAhead takes, before the reader sends m to task i, the weight of its
// rows from the task's bound, if the run has one, and notes it in m (a
// batch larger than the bound takes all of it).
func (r *runner) takeAhead(ctx context.Context, i int, m *msg) error {
	if r.ahead == nil || m.rec == nil {
		return nil
	}
	w := min(m.rec.NumRows(), int64(batchReleaseRows))
	if w == 0 {
		return nil
	}
	if err := r.ahead[i].Acquire(ctx, w); err != nil {
		return err
	}
	m.ahead = w
	return nil
}

// finisher is a window operator that can be told the input is clustered.
type finisher interface {
	FinishBefore(seq int64, forget bool)
}

var (
	_ finisher = (*window.Operator)(nil)
	_ finisher = (*window.GroupOperator)(nil)
)

// deferFinish reports whether a task of a batch run over clustered input
// should keep the rows of finished keys waiting (it releases them with
// later ones, or at the end): visiting keys for few rows costs more than
// for many (see batchReleaseRows).
func deferFinish(op operator) bool {
	b, ok := op.(backlogger)
	if !ok {
		return false
	}
	rows, _ := b.Backlog()
	return rows < batchReleaseRows
}

// windowErr is the error of window task id of stage s: err, said to break
// the promise of ClusteredBy when it does.
func (r *runner) windowErr(s, id int, err error) error {
	if errors.Is(err, window.ErrNotClustered) {
		err = fmt.Errorf("volga: the input is not clustered by %v as promised (ClusteredBy): %w", r.opt.ClusteredBy, err)
	} else {
		err = fmt.Errorf("volga: window operator: %w", err)
	}
	return &operatorError{op: "window", stage: s, task: id, err: err}
}

// finTracker is what a window task knows of the keys finished (msg.fin):
// the latest from each sender (the reader, or the previous stage's
// tasks, each of which sends one once it has released its rows before
// it), the least of which every row before has come; told, the one given
// to the operator, and sent, the one passed on to the next stage's tasks
// or to the merger once the operator has released its rows before it.
type finTracker struct {
	ctx        context.Context
	from       []int64
	told, sent int64
	id         int
	to         []chan msg // nil: passed on to no one
}

// newFinTracker returns the tracker of task id of stage s, which has
// senders inputs and sends to next (nil for the last stage: final).
func (r *runner) newFinTracker(ctx context.Context, s, id, senders int, next []chan msg, final chan msg) *finTracker {
	f := &finTracker{ctx: ctx, from: make([]int64, senders), id: id}
	switch {
	case s+1 < r.finStages:
		f.to = next
	case s+1 == len(r.c.stages) && r.finStages == len(r.c.stages) && r.n > 1 && !r.resMerge:
		// The merger orders several tasks' rows by sequence: it may
		// write those before the least fin every task has sent.
		f.to = []chan msg{final}
	}
	return f
}

// update records fin from sender from and returns the least of all.
func (f *finTracker) update(from int, fin int64) int64 {
	f.from[from] = max(f.from[from], fin)
	return slices.Min(f.from)
}

// forward passes the operator's finished rows on, once released (after
// an advance).
func (f *finTracker) forward() error {
	if f.to == nil || f.told <= f.sent {
		return nil
	}
	f.sent = f.told
	for _, ch := range f.to {
		if err := send(f.ctx, ch, msg{wm: watermark.None, fin: f.sent, from: f.id}); err != nil {
			return err
		}
	}
	return nil
}
