package window

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/volga-go/volga/statestore"
)

// TestStoredStateSeesOwnWrites: the caller of Push and Advance reads key
// states through a snapshot of a Badger store (storedState), which does
// not see writes made after it was taken; the operator takes it again
// after each of its own writes: a checkpoint's flush, an eviction. It is
// closed when the call that took it ends.
func TestStoredStateSeesOwnWrites(t *testing.T) {
	db, err := statestore.OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := budgetConfig(t, false)
	cfg.Store, cfg.MemoryBudget = statestore.Sub(db, "op/0/0/"), 1<<30
	op := openOp(t, cfg)
	defer op.Close()
	recs := budgetBatches(3, 20, 2, 200)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	push(t, op, recs[0])
	advanceDiscard(t, op, 1_700_000_000_000+150)
	op.mu.Lock()
	defer op.mu.Unlock()
	key := op.storeKey(0)
	read := func() []byte {
		t.Helper()
		v, err := op.storedState(key)
		if err != nil && !errors.Is(err, statestore.ErrNotFound) {
			t.Fatal(err)
		}
		return v
	}
	if v := read(); v != nil {
		t.Fatalf("key 0 read %d bytes before any write", len(v))
	}
	if op.snap == nil {
		t.Fatal("storedState read a Badger store without a snapshot")
	}
	// A write of someone else's is not seen through the snapshot...
	if err := cfg.Store.Set(key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != nil {
		t.Fatalf("the snapshot sees a write made after it: %q", v)
	}
	if err := cfg.Store.Delete(key); err != nil {
		t.Fatal(err)
	}
	// ...but the operator's checkpoint is, once flushed.
	op.mu.Unlock()
	if _, err := op.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	op.mu.Lock()
	want, err := cfg.Store.Get(key)
	if err != nil {
		t.Fatalf("key 0 not in the store after a checkpoint: %v", err)
	}
	if v := read(); !bytes.Equal(v, want) {
		t.Fatalf("after the checkpoint's flush the operator read %d bytes of key 0, the store holds %d", len(v), len(want))
	}
	// And its evictions.
	if err := cfg.Store.Delete(key); err != nil {
		t.Fatal(err)
	}
	op.closeSnapshot() // as at the end of a call
	if v := read(); v != nil {
		t.Fatalf("key 0 read %d bytes after its deletion", len(v))
	}
	op.markDirty(0)
	op.cfg.MemoryBudget = 1
	if err := op.evict(); err != nil {
		t.Fatal(err)
	}
	if op.states[0] != nil {
		t.Fatal("key 0 was not evicted")
	}
	if v := read(); !bytes.Equal(v, want) {
		t.Fatalf("after an eviction the operator read %d bytes of key 0, want the %d it wrote", len(v), len(want))
	}
	op.closeSnapshot()
}

// TestIdleSnapshotClosed: the snapshot storedState reads through is
// closed once snapshotAge has passed, even if the operator is idle, and
// a read after that takes a new one.
func TestIdleSnapshotClosed(t *testing.T) {
	old := snapshotAge
	snapshotAge = 20 * time.Millisecond
	defer func() { snapshotAge = old }()
	db, err := statestore.OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := budgetConfig(t, false)
	cfg.Store = statestore.Sub(db, "op/0/0/")
	op := openOp(t, cfg)
	defer op.Close()
	open := func() bool {
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.snap != nil
	}
	for round := range 2 {
		op.mu.Lock()
		if _, err := op.storedState([]byte("k/x")); !errors.Is(err, statestore.ErrNotFound) {
			t.Fatalf("round %d: %v", round, err)
		}
		op.mu.Unlock()
		if !open() {
			t.Fatalf("round %d: no snapshot after a read", round)
		}
		deadline := time.Now().Add(5 * time.Second)
		for open() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the snapshot is still open 5 s after the read", round)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
