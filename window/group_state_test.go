package window_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

func newGroupCkpt(t *testing.T, w testutil.GroupWindow, aggs []testutil.Agg, lateness int64) *window.GroupOperator {
	t.Helper()
	cfg := window.GroupConfig{TsCol: mlTsCol, SeqCol: mlSeqCol, SizeMs: w.Size, SlideMs: w.Slide, AllowedLateness: lateness}
	for _, k := range w.Keys {
		cfg.KeyCols = append(cfg.KeyCols, mlSchema.FieldIndices(k)[0])
	}
	for _, c := range mlArgCols {
		cfg.ArgCols = append(cfg.ArgCols, mlSchema.FieldIndices(c)[0])
	}
	for _, a := range aggs {
		cfg.Aggs = append(cfg.Aggs, bindML(t, a))
		cfg.ResultNames = append(cfg.ResultNames, a.Name())
	}
	op, err := window.NewGroup(cfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// runGroup drives a GroupOperator through steps; with restore, every ckpt
// step moves to a new operator restored from Checkpoint's meta.
func runGroup(t *testing.T, mk func() *window.GroupOperator, tab *testutil.Table, steps []step, restore bool) (out []string, restores int) {
	t.Helper()
	op := mk()
	for _, s := range steps {
		if s.ckpt && restore {
			meta, err := op.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			op = mk()
			if err := op.Restore(meta); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			restores++
		}
		if s.hi > s.lo {
			vals := make([][]any, 0, s.hi-s.lo)
			for i := s.lo; i < s.hi; i++ {
				vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(i)))
			}
			rec := testutil.BuildRecord(nil, mlSchema, vals)
			_, late, err := op.Push(rec)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			if late != nil {
				out = append(out, render("late ", testutil.Rows(late))...)
				late.Release()
			}
		}
		if s.wm != watermark.None {
			outs, err := op.Advance(context.Background(), s.wm)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, render(fmt.Sprintf("wm %d ", s.wm), testutil.Rows(outs...))...)
			releaseAll(outs)
		}
	}
	d, a := op.Late()
	out = append(out, fmt.Sprintf("late dropped %d applied %d", d, a))
	return out, restores
}

// groupCkptWindows are the windows of the checkpoint tests: a tumble over
// an integer key, a hop over two keys, a hop over a string key.
var groupCkptWindows = []testutil.GroupWindow{
	{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 1000},
	{Keys: []string{"merchant", "user_id"}, Time: "ts", Size: 3000, Slide: 1000},
	{Keys: []string{"merchant"}, Time: "ts", Size: 2500, Slide: 500},
}

// TestGroupCheckpointRestoreExact: a tumble/hop run restored from
// checkpoints at random points emits exactly what an uninterrupted run
// emits, late rows and allowed lateness included.
func TestGroupCheckpointRestoreExact(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for wi, w := range groupCkptWindows {
			t.Run(fmt.Sprintf("seed=%d/w=%d", seed, wi), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400)))
				tab := lateArrival(rng, events, bound)
				steps := ckptSteps(rng, tab, bound, 0.2)
				lateness := int64(wi) * 1500
				mk := func() *window.GroupOperator { return newGroupCkpt(t, w, groupTestAggs, lateness) }
				want, _ := runGroup(t, mk, tab, steps, false)
				got, n := runGroup(t, mk, tab, steps, true)
				if n == 0 {
					t.Fatal("no checkpoint taken")
				}
				diffOutputs(t, "restored vs uninterrupted", got, want)
			})
		}
	}
}

// TestGroupRestoreRefusesOtherOperator checks the fingerprint.
func TestGroupRestoreRefusesOtherOperator(t *testing.T) {
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 1000}
	meta, err := newGroupCkpt(t, w, groupTestAggs[:3], 0).Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	w2 := w
	w2.Size = 2000
	for name, op := range map[string]*window.GroupOperator{
		"aggregates": newGroupCkpt(t, w, groupTestAggs[1:4], 0),
		"size":       newGroupCkpt(t, w2, groupTestAggs[:3], 0),
	} {
		if err := op.Restore(meta); !errors.Is(err, window.ErrIncompatibleCheckpoint) {
			t.Errorf("%s: Restore = %v", name, err)
		}
	}
	if err := newGroupCkpt(t, w, groupTestAggs[:3], 0).Restore(meta); err != nil {
		t.Error(err)
	}
	for cut := len(meta) - 1; cut > len(meta)-8; cut-- {
		if err := newGroupCkpt(t, w, groupTestAggs[:3], 0).Restore(meta[:cut]); err == nil {
			t.Errorf("meta cut to %d bytes accepted", cut)
		}
	}
}
