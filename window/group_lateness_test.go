package window_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// TestGroupAllowedLatenessMatchesReference: with AllowedLateness, a late
// row within it enters the windows of its key not yet emitted (those
// ending after the watermark) and no other; each window's aggregates equal
// the brute-force ones over the rows it accepted, taken in (event time,
// arrival) order, whatever the order they came in. first_value,
// last_value, ew_avg and drawdown depend on that order: a late row added
// after the window's newer rows made it the window's last value.
func TestGroupAllowedLatenessMatchesReference(t *testing.T) {
	const bound = 500
	windows := []testutil.GroupWindow{
		{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 2000},
		{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 500},
		{Keys: []string{"merchant"}, Time: "ts", Size: 1750, Slide: 1000},
	}
	for _, seed := range testutil.Seeds(3) {
		for wi, w := range windows {
			for _, lateness := range []int64{1000, 5000} {
				t.Run(fmt.Sprintf("seed=%d/w=%d/lateness=%d", seed, wi, lateness), func(t *testing.T) {
					t.Parallel()
					checkGroupLateness(t, seed, w, lateness, bound)
				})
			}
		}
	}
}

func checkGroupLateness(t *testing.T, seed uint64, w testutil.GroupWindow, lateness, bound int64) {
	rng := testutil.Rand(seed)
	// Not scaled down under -race: the test needs its late rows.
	events := testutil.MLEvents(rng, testutil.DefaultEvents(400))
	tab := events.Subset(holdBack(rng, testutil.Shuffle(rng, events, "ts", w.Keys, bound), 8, 3, 15))
	g := newGroupOpWith(t, seed, withLateness(groupConfig(t, w, groupTestAggs), lateness), len(w.Keys))
	kc := make([]int, len(w.Keys))
	for j, k := range w.Keys {
		kc[j] = tab.Col(k)
	}
	type winID struct {
		key   string
		start int64
	}
	// members are the rows each window accepted, in arrival order.
	members := map[winID][]int{}
	var wantLate []int64
	applied := 0
	var out [][]any
	maxTs, wm := watermark.None, watermark.None
	for lo := 0; lo < len(tab.Rows); {
		hi := min(len(tab.Rows), lo+1+rng.IntN(6))
		for i := lo; i < hi; i++ {
			ts := tab.Value(i, "ts").(int64)
			late := ts <= wm
			took := false
			for s := floorMul(ts, w.Slide); s > ts-w.Size; s -= w.Slide {
				if late && (ts <= wm-lateness || s+w.Size-1 <= wm) {
					continue
				}
				took = true
				id := winID{testutil.KeyString(tab.Rows[i], kc), s}
				members[id] = append(members[id], i)
			}
			switch {
			case !took:
				wantLate = append(wantLate, tab.Value(i, "id").(int64))
			case late:
				applied++
			}
			maxTs = max(maxTs, ts)
		}
		g.push(tab, lo, hi)
		lo = hi
		if maxTs-bound > wm && rng.IntN(2) == 0 {
			wm = maxTs - bound
			out = append(out, g.advance(wm)...)
		}
	}
	out = append(out, g.advance(watermark.End)...)
	if applied == 0 {
		t.Fatalf("seed %d: no late rows applied in the test data", seed)
	}
	if dropped, app := g.op.Late(); dropped != int64(len(wantLate)) || app != int64(applied) {
		t.Errorf("seed %d: Late() = %d dropped, %d applied; want %d, %d", seed, dropped, app, len(wantLate), applied)
	}
	var want [][]any
	for id, rows := range members {
		for _, r := range testutil.GroupBy(tab.Subset(rows), w, groupTestAggs) {
			if r.Start == id.start {
				want = append(want, r.Values)
			}
		}
	}
	nk := len(w.Keys)
	want = sortGroups(want, nk)
	cols := append(slices.Clone(w.Keys), "window_start", "window_end")
	for _, a := range groupTestAggs {
		cols = append(cols, a.SQL())
	}
	if d := testutil.Diff(cols, sortGroups(out, nk), want, groupLabel(want, nk)); d != "" {
		t.Errorf("seed %d (VOLGA_SEED=%d to replay): windows vs reference over the rows each accepted:\n%s", seed, seed, d)
	}
}

func withLateness(cfg window.GroupConfig, d int64) window.GroupConfig {
	cfg.AllowedLateness = d
	return cfg
}

// floorMul is the greatest multiple of m at or below v.
func floorMul(v, m int64) int64 {
	q := v / m
	if v%m != 0 && v < 0 {
		q--
	}
	return q * m
}
