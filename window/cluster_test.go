package window_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// clustered returns tab's rows reordered key by key (by the value of
// column by, in order of first appearance), each key's rows in time order
// or, with shuffle, in no order.
func clustered(tab *testutil.Table, by string, shuffle bool, seed uint64) *testutil.Table {
	first := map[any]int{}
	idx := make([]int, len(tab.Rows))
	for i := range idx {
		idx[i] = i
		if _, ok := first[tab.Value(i, by)]; !ok {
			first[tab.Value(i, by)] = i
		}
	}
	if shuffle {
		rng := testutil.Rand(seed)
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(first[tab.Value(a, by)], first[tab.Value(b, by)])
	})
	return tab.Subset(idx)
}

// clusteredByUser returns rows generated events (seed) clustered by user,
// and the number of rows of the first user: at least 2, with more than
// after rows of other users after them.
func clusteredByUser(t *testing.T, seed uint64, rows, after int) (*testutil.Table, int) {
	t.Helper()
	events := testutil.Events(testutil.Rand(seed), testutil.DefaultEvents(rows))
	tab := clustered(events, "user_id", false, seed)
	n := 0
	for n < len(tab.Rows) && tab.Value(n, "user_id") == tab.Value(0, "user_id") {
		n++
	}
	if n < 2 || n+after >= len(tab.Rows) {
		t.Fatalf("first user has %d rows of %d", n, len(tab.Rows))
	}
	return tab, n
}

// TestFinishBeforeMatchesReference: over input clustered by the first key
// column, an operator told after each batch where the key still being read
// starts (FinishBefore) releases at once exactly the rows before it, in
// input order, whatever their times; all its output equals the
// brute-force reference, with the states of finished keys dropped or
// kept; and it holds only the rows of the keys still open.
func TestFinishBeforeMatchesReference(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		for _, keys := range keySets {
			for _, c := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				forget, shuffle := c[0], c[1]
				t.Run(fmt.Sprintf("seed=%d/keys=%v/forget=%v/shuffle=%v", seed, keys, forget, shuffle), func(t *testing.T) {
					t.Parallel()
					rng := testutil.Rand(seed)
					events := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(300)))
					tab := clustered(events, keys[0], shuffle, seed) // row i has seq i
					want := make([][][]any, len(testutil.Frames))
					for f, fr := range testutil.Frames {
						want[f] = testutil.Compute(tab, testutil.Window{Keys: keys, Time: "ts", Frame: fr}, testutil.StandardAggs)
					}
					h := newHarness(t, seed, keys, testutil.Frames, testutil.StandardAggs, 0, true)
					var out [][]any
					open := 0 // the first row of the key still being read
					for lo := 0; lo < len(tab.Rows); {
						hi := min(len(tab.Rows), lo+1+rng.IntN(40))
						h.push(tab, span(lo, hi), seqs(lo, hi))
						for i := open + 1; i < hi; i++ {
							if tab.Value(i, keys[0]) != tab.Value(i-1, keys[0]) {
								open = i
							}
						}
						lo = hi
						h.op.FinishBefore(int64(open), forget)
						rel := h.advance(watermark.None)
						if got, wantIDs := ids(rel), ids(tab.Rows[len(out):open]); !slices.Equal(got, wantIDs) {
							t.Fatalf("rows %d-%d pushed, key open from %d: released ids %v, want %v", 0, hi, open, got, wantIDs)
						}
						out = append(out, rel...)
						st := h.op.Stats()
						if st.Pending != hi-open {
							t.Fatalf("rows %d-%d pushed, key open from %d: %d rows pending, want %d", 0, hi, open, st.Pending, hi-open)
						}
						if forget {
							// Only keys with rows pending (at most one a
							// row) keep a state.
							if st.ResidentKeys > hi-open {
								t.Fatalf("rows %d-%d pushed, key open from %d: %d key states resident, want at most %d", 0, hi, open, st.ResidentKeys, hi-open)
							}
						}
					}
					out = append(out, h.advance(watermark.End)...)
					if got := ids(out); !slices.Equal(got, ids(tab.Rows)) {
						t.Fatalf("output ids %v, want %v", got, ids(tab.Rows))
					}
					h.check("finished early", out, tab, nil, func(f int) [][]any { return want[f] })
				})
			}
		}
	}
}

// TestFinishBeforeNotClustered: a row of a key whose rows were finished
// (FinishBefore) is refused with ErrNotClustered, whether it comes in a
// later batch (Push) or was pushed already, after another key's rows
// (the advance that would finish the key).
func TestFinishBeforeNotClustered(t *testing.T) {
	tab, n := clusteredByUser(t, 7, 200, 1)
	keys := []string{"user_id"}

	// The first user, the second's first row, then the first user again.
	h := newHarness(t, 7, keys, testutil.Frames, testutil.StandardAggs, 0, true)
	h.push(tab, span(0, n+1), seqs(0, n+1))
	h.op.FinishBefore(int64(n), true)
	h.advance(watermark.None)
	rec := record(tab, []int{0}, []int64{int64(n + 1)})
	defer rec.Release()
	if _, _, err := h.op.Push(rec); !errors.Is(err, window.ErrNotClustered) {
		t.Fatalf("Push of a finished key's row: %v, want ErrNotClustered", err)
	}

	// The same, all pushed before the advance.
	h = newHarness(t, 7, keys, testutil.Frames, testutil.StandardAggs, 0, true)
	h.push(tab, append(span(0, n+1), 0), seqs(0, n+2))
	h.op.FinishBefore(int64(n+1), true) // wrongly: the first user comes again at n+1
	if _, err := h.op.Advance(context.Background(), watermark.None); !errors.Is(err, window.ErrNotClustered) {
		t.Fatalf("Advance finishing a key with a row pending after another key's: %v, want ErrNotClustered", err)
	}
}

// TestFinishBeforeSurvivesRestore: the keys an operator with a state store
// finished (FinishBefore) are finished in an operator restored from its
// checkpoint, whether Restore reads every key or, with a memory budget,
// leaves them in the store: a row of one is refused with ErrNotClustered,
// while the key still being read goes on with the results of the operator
// that did not stop.
func TestFinishBeforeSurvivesRestore(t *testing.T) {
	tab, n := clusteredByUser(t, 11, 300, 2)
	perFrame := make([][]testutil.Agg, len(testutil.Frames))
	for i := range perFrame {
		perFrame[i] = testutil.StandardAggs
	}
	newOp := func(st statestore.Store, budget int64) *window.Operator {
		cfg := harnessConfig(t, []string{"user_id"}, testutil.Frames, perFrame, 0, true)
		cfg.Store, cfg.MemoryBudget = st, budget
		op, err := window.New(cfg, opSchema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(op.Close)
		return op
	}
	push := func(op *window.Operator, rows []int, seq []int64) error {
		rec := record(tab, rows, seq)
		defer rec.Release()
		out, late, err := op.Push(rec)
		releaseAll(out)
		if late != nil {
			late.Release()
		}
		return err
	}
	advance := func(op *window.Operator, wm int64) [][]any {
		t.Helper()
		out, err := op.Advance(context.Background(), wm)
		if err != nil {
			t.Fatal(err)
		}
		defer releaseAll(out)
		return testutil.Rows(out...)
	}
	again := []int{0}                         // the first user's first row
	againSeq := []int64{int64(len(tab.Rows))} // after everything

	// The first user, then the second user's first row; the first is
	// finished; checkpoint; then the rest.
	st := statestore.NewMemory()
	op := newOp(st, 0)
	if err := push(op, span(0, n+1), seqs(0, n+1)); err != nil {
		t.Fatal(err)
	}
	op.FinishBefore(int64(n), false)
	if got := advance(op, watermark.None); len(got) != n {
		t.Fatalf("released %d rows, want the first user's %d", len(got), n)
	}
	meta, err := op.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	snap := statestore.NewMemory()
	copyStore(t, snap, st)
	if err := push(op, span(n+1, len(tab.Rows)), seqs(n+1, len(tab.Rows))); err != nil {
		t.Fatal(err)
	}
	want := advance(op, watermark.End)
	if err := push(op, again, againSeq); !errors.Is(err, window.ErrNotClustered) {
		t.Fatalf("the operator that did not stop: push of a finished key's row: %v, want ErrNotClustered", err)
	}

	for _, budget := range []int64{0, 1} {
		st2 := statestore.NewMemory()
		copyStore(t, st2, snap)
		op2 := newOp(st2, budget)
		if err := op2.Restore(meta); err != nil {
			t.Fatal(err)
		}
		if err := push(op2, span(n+1, len(tab.Rows)), seqs(n+1, len(tab.Rows))); err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if d := testutil.Diff(nil, advance(op2, watermark.End), want, nil); d != "" {
			t.Fatalf("budget %d: the restored operator's rows differ:\n%s", budget, d)
		}
		err := push(op2, again, againSeq)
		if !errors.Is(err, window.ErrNotClustered) {
			t.Fatalf("budget %d: push of a row of a key finished before the checkpoint: %v, want ErrNotClustered", budget, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("came before row %d", n)) {
			t.Errorf("budget %d: %v: want the finishing row %d named", budget, err, n)
		}
	}
}
