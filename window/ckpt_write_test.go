package window_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/testhook"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// stepOut runs one step on op and returns what it emitted.
func stepOut(t *testing.T, op *window.Operator, tab *testutil.Table, s step) []string {
	t.Helper()
	var out []string
	if s.hi > s.lo {
		vals := make([][]any, 0, s.hi-s.lo)
		for i := s.lo; i < s.hi; i++ {
			vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(i)))
		}
		rec := testutil.BuildRecord(nil, mlSchema, vals)
		outs, late, err := op.Push(rec)
		rec.Release()
		if err != nil {
			t.Fatalf("Push: %v", err)
		}
		out = append(out, pushOut(outs, late)...)
	}
	if s.wm != watermark.None {
		out = append(out, advanceOut(t, op, s.wm)...)
	}
	return out
}

// plainSteps returns, by step, what an operator of cfg without a store
// emits: want[i] is what the uninterrupted run emits at step i.
func plainSteps(t *testing.T, cfg window.Config, tab *testutil.Table, steps []step) [][]string {
	t.Helper()
	plain, err := window.New(cfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	want := make([][]string, len(steps))
	for i, s := range steps {
		want[i] = stepOut(t, plain, tab, s)
	}
	return want
}

// pushOut renders (and releases) what a push returned: rows applied late
// and rows dropped as late.
func pushOut(outs []arrow.RecordBatch, late arrow.RecordBatch) []string {
	out := render("applied ", testutil.Rows(outs...))
	releaseAll(outs)
	if late != nil {
		out = append(out, render("late ", testutil.Rows(late))...)
		late.Release()
	}
	return out
}

// advanceOut advances op to wm and renders what it emitted.
func advanceOut(t *testing.T, op *window.Operator, wm int64) []string {
	t.Helper()
	outs, err := op.Advance(context.Background(), wm)
	if err != nil {
		t.Fatalf("Advance: %v", err)
	}
	defer releaseAll(outs)
	return render(fmt.Sprintf("wm %d ", wm), testutil.Rows(outs...))
}

// TestCheckpointWrittenWhileRunning: a checkpoint begun with
// BeginCheckpoint is written a few keys at a time (WriteCheckpoint) while
// the operator goes on taking rows and emitting results, which change
// keys still to write (copy on write). The operator's output is that of a
// run without checkpoints, rows are emitted while checkpoints are being
// written, and an operator restored from each checkpoint (meta, and a copy
// of the store taken once its writes are flushed) emits from the
// checkpoint on exactly what the uninterrupted run emits; with a memory
// budget too (no eviction while a checkpoint is written), on a memory
// store and on Badger.
func TestCheckpointWrittenWhileRunning(t *testing.T) {
	const bound = 2000
	type variant struct {
		name     string
		keys     []string
		lateness int64
		budget   int64
		badger   bool
	}
	variants := []variant{
		{name: "int-key", keys: []string{"user_id"}},
		{name: "composite-key-lateness", keys: []string{"user_id", "merchant"}, lateness: 3000},
		{name: "budget", keys: []string{"user_id", "merchant"}, budget: 20_000},
		{name: "badger-budget", keys: []string{"user_id"}, budget: 20_000, badger: true},
	}
	for _, seed := range testutil.Seeds(2) {
		for _, v := range variants {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, v.name), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				frames, tab := ckptInput(rng, v.keys, v.lateness, bound)
				cfg := ckptConfig(t, v.keys, frames, ckptAggs, v.lateness, false)
				steps := ckptSteps(rng, tab, bound, 0.1)
				want := plainSteps(t, cfg, tab, steps)

				newStore := func() statestore.Store {
					if !v.badger {
						return statestore.NewMemory()
					}
					db, err := statestore.OpenBadger(t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
					return statestore.Sub(db, "op/0/1/")
				}
				newOp := func(st statestore.Store) *window.Operator {
					c := cfg
					c.Store, c.MemoryBudget = st, v.budget
					op, err := window.New(c, mlSchema)
					if err != nil {
						t.Fatal(err)
					}
					return op
				}
				st := newStore()
				op := newOp(st)
				defer op.Close()
				// restored checks the checkpoint begun before step from:
				// an operator restored from it emits want[from:].
				restored := func(meta []byte, snap statestore.Store, from int) {
					r := newOp(snap)
					defer r.Close()
					if err := r.Restore(meta); err != nil {
						t.Fatalf("Restore: %v", err)
					}
					for i := from; i < len(steps); i++ {
						diffOutputs(t, fmt.Sprintf("restored from the checkpoint before step %d, step %d", from, i), stepOut(t, r, tab, steps[i]), want[i])
					}
				}
				var meta []byte
				var err error
				writing, from := false, 0
				checked, during, duringThis := 0, 0, 0
				for i, s := range steps {
					if s.ckpt && !writing && checked < 4 {
						if meta, err = op.BeginCheckpoint(); err != nil {
							t.Fatal(err)
						}
						writing, from, duringThis = true, i, 0
					}
					got := stepOut(t, op, tab, s)
					diffOutputs(t, fmt.Sprintf("step %d", i), got, want[i])
					if !writing {
						continue
					}
					during += len(got)
					duringThis += len(got)
					if duringThis == 0 {
						// Not a key is written before a row is emitted:
						// under a memory budget most keys are in the store
						// and the few resident ones could all be written
						// before the operator emits anything.
						continue
					}
					// A few keys at a time: the least WriteCheckpoint writes.
					flush, err := op.WriteCheckpoint(1)
					if err != nil {
						t.Fatal(err)
					}
					if flush == nil {
						continue
					}
					if err := flush(); err != nil {
						t.Fatal(err)
					}
					snap := statestore.NewMemory()
					copyStore(t, snap, st)
					restored(meta, snap, from)
					writing = false
					checked++
				}
				if writing {
					// Begun late: the input ended before it was written.
					for {
						flush, err := op.WriteCheckpoint(1)
						if err != nil {
							t.Fatal(err)
						}
						if flush != nil {
							if err := flush(); err != nil {
								t.Fatal(err)
							}
							break
						}
					}
					snap := statestore.NewMemory()
					copyStore(t, snap, st)
					restored(meta, snap, from)
					checked++
				}
				if checked == 0 {
					t.Fatal("no checkpoint was completed")
				}
				if during == 0 {
					t.Error("no row was emitted while a checkpoint was being written")
				}
				t.Logf("%d checkpoints written while running, %d rows emitted meanwhile", checked, during)
			})
		}
	}
}

// TestCheckpointEncoderNeverWaitedFor: the goroutine encoding a
// checkpoint is held in the middle of a key (as when it is descheduled)
// while the operator goes on taking rows, which change that key too. The
// operator does not wait for it: it changes a copy of the key's state
// (Stats.CheckpointCopies), encodes the other keys it changes itself,
// and emits what a run without checkpoints emits. Once the encoder goes
// on, the checkpoint holds exactly the state at BeginCheckpoint: an
// operator restored from it emits what the uninterrupted run emits.
func TestCheckpointEncoderNeverWaitedFor(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for _, keys := range [][]string{{"user_id"}, {"user_id", "merchant"}} {
			t.Run(fmt.Sprintf("seed=%d/keys=%v", seed, keys), func(t *testing.T) {
				rng := testutil.Rand(seed)
				frames, tab := ckptInput(rng, keys, 0, bound)
				cfg := ckptConfig(t, keys, frames, ckptAggs, 0, false)
				steps := ckptSteps(rng, tab, bound, 0)
				want := plainSteps(t, cfg, tab, steps)

				st := statestore.NewMemory()
				c := cfg
				c.Store = st
				op, err := window.New(c, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer op.Close()
				took, release := make(chan int32, 1), make(chan struct{})
				var held atomic.Bool
				undo := testhook.SetCheckpointEncode(func(id int32) {
					if held.CompareAndSwap(false, true) {
						took <- id
						<-release
					}
				})
				defer undo()
				released := false
				defer func() {
					if !released {
						close(release)
					}
				}()

				from := len(steps) / 3
				for i := range from {
					diffOutputs(t, fmt.Sprintf("step %d", i), stepOut(t, op, tab, steps[i]), want[i])
				}
				meta, err := op.BeginCheckpoint()
				if err != nil {
					t.Fatal(err)
				}
				id := <-took
				i := from
				for ; i < len(steps) && op.Stats().CheckpointCopies == 0; i++ {
					diffOutputs(t, fmt.Sprintf("step %d, the encoder held at key %d", i, id), stepOut(t, op, tab, steps[i]), want[i])
				}
				if op.Stats().CheckpointCopies != 1 {
					t.Fatalf("%d key states copied after %d steps, want 1: the key the encoder holds changes", op.Stats().CheckpointCopies, i-from)
				}
				select {
				case <-op.CheckpointEncoded():
					t.Fatal("the checkpoint is encoded while its encoder is held")
				default:
				}
				// More steps change the copy, not the state the encoder reads.
				for end := min(len(steps), i+5); i < end; i++ {
					diffOutputs(t, fmt.Sprintf("step %d, the encoder held at key %d", i, id), stepOut(t, op, tab, steps[i]), want[i])
				}
				close(release)
				released = true
				<-op.CheckpointEncoded()
				flush, err := op.WriteCheckpoint(0)
				if err != nil {
					t.Fatal(err)
				}
				if err := flush(); err != nil {
					t.Fatal(err)
				}
				for ; i < len(steps); i++ {
					diffOutputs(t, fmt.Sprintf("step %d", i), stepOut(t, op, tab, steps[i]), want[i])
				}

				snap := statestore.NewMemory()
				copyStore(t, snap, st)
				c.Store = snap
				r, err := window.New(c, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if err := r.Restore(meta); err != nil {
					t.Fatalf("Restore: %v", err)
				}
				for i := from; i < len(steps); i++ {
					diffOutputs(t, fmt.Sprintf("restored from the checkpoint before step %d, step %d", from, i), stepOut(t, r, tab, steps[i]), want[i])
				}
			})
		}
	}
}
