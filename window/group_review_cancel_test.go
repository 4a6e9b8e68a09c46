package window_test

import (
	"context"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
)

// TestGroupReviewCancelledAdvanceKeepsWindows: an Advance whose context
// is cancelled returns its error and loses no window: the next Advance
// emits them, and the windows of the run equal the brute-force ones.
// (It used to take the first start's windows out of the open ones and
// then stop, dropping them.)
func TestGroupReviewCancelledAdvanceKeepsWindows(t *testing.T) {
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 500}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "last_value", Arg: "price"}}
	for _, seed := range testutil.Seeds(2) {
		rng := testutil.Rand(seed)
		tab := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(300)))
		g := newGroupOp(t, seed, w, aggs)
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		var out [][]any
		errs := 0
		for lo := 0; lo < len(tab.Rows); {
			hi := min(len(tab.Rows), lo+1+rng.IntN(40))
			g.push(tab, lo, hi)
			lo = hi
			wm := tab.Value(hi-1, "ts").(int64) - 1
			ctx := context.Background()
			if rng.IntN(2) == 0 {
				ctx = cancelled
			}
			outs, err := g.op.Advance(ctx, wm)
			if err != nil {
				errs++
				continue
			}
			rows := testutil.Rows(outs...)
			releaseAll(outs)
			for _, r := range rows {
				out = append(out, r[2:])
			}
		}
		out = append(out, g.advance(watermark.End)...)
		if errs == 0 {
			t.Fatalf("seed %d: no Advance was cancelled", seed)
		}
		want := sortGroups(refValues(testutil.GroupBy(tab, w, aggs)), 1)
		cols := append(slices.Clone(w.Keys), "window_start", "window_end", "count", "sum", "last_value")
		if d := testutil.Diff(cols, sortGroups(out, 1), want, groupLabel(want, 1)); d != "" {
			t.Errorf("seed %d (VOLGA_SEED=%d to replay): windows vs reference:\n%s", seed, seed, d)
		}
	}
}
