package window_test

import (
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
)

// TestGroupReviewNoKeys: GROUP BY tumble/hop without key columns makes
// one group of every row: the windows equal the brute-force ones over
// all rows.
func TestGroupReviewNoKeys(t *testing.T) {
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "first_value", Arg: "price"}}
	for _, seed := range testutil.Seeds(2) {
		for _, w := range []testutil.GroupWindow{{Time: "ts", Size: 1000, Slide: 1000}, {Time: "ts", Size: 1750, Slide: 500}} {
			rng := testutil.Rand(seed)
			events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(300)))
			tab := events.Subset(testutil.Shuffle(rng, events, "ts", nil, 1000))
			g := newGroupOp(t, seed, w, aggs)
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(40))
				g.push(tab, lo, hi)
				lo = hi
			}
			got := g.advance(watermark.End)
			want := refValues(testutil.GroupBy(tab, w, aggs))
			if d := testutil.Diff([]string{"window_start", "window_end", "count", "sum", "first_value"}, got, want, groupLabel(want, 0)); d != "" {
				t.Errorf("seed %d (VOLGA_SEED=%d to replay), size %d slide %d:\n%s", seed, seed, w.Size, w.Slide, d)
			}
		}
	}
}
