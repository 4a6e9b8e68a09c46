package window_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
)

// TestGroupReviewWatermarkOnWindowEnd: event times on, just before and
// just after window ends ([start, end) excludes end), watermarks exactly
// on a window's last millisecond (end-1, which completes it), one before
// and one after, late rows exactly at the watermark and exactly at the
// watermark less the allowed lateness (dropped; one later is applied),
// and restores from checkpoints at random points. Each Advance emits
// exactly the windows whose last millisecond it passed that received a
// row, and each window's values equal the brute-force ones over the rows
// it accepted (a row at or behind the watermark is late; a late row
// enters, when less than the lateness behind, the windows of it that are
// not emitted yet).
func TestGroupReviewWatermarkOnWindowEnd(t *testing.T) {
	const bound = 1000
	windows := []testutil.GroupWindow{
		{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 1000},
		{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 500},
		{Keys: []string{"merchant"}, Time: "ts", Size: 1750, Slide: 1000},
	}
	for _, seed := range testutil.Seeds(3) {
		for wi, w := range windows {
			for _, lateness := range []int64{0, 1000, 1500} {
				t.Run(fmt.Sprintf("seed=%d/w=%d/lateness=%d", seed, wi, lateness), func(t *testing.T) {
					t.Parallel()
					checkWatermarkOnWindowEnd(t, seed, w, lateness, bound)
				})
			}
		}
	}
}

func checkWatermarkOnWindowEnd(t *testing.T, seed uint64, w testutil.GroupWindow, lateness, bound int64) {
	rng := testutil.Rand(seed)
	// Not scaled down under -race: the test needs rows at every edge.
	events := testutil.MLEvents(rng, testutil.DefaultEvents(400))
	tc := events.Col("ts")
	for _, r := range events.Rows {
		r[tc] = r[tc].(int64) + int64(rng.IntN(3)-1) // times of 250 ms steps, one either side
	}
	tab := events.Subset(holdBack(rng, testutil.Shuffle(rng, events, "ts", w.Keys, bound), 8, 3, 15))
	cfg := withLateness(groupConfig(t, w, groupTestAggs), lateness)
	g := newGroupOpWith(t, seed, cfg, len(w.Keys))
	kc := make([]int, len(w.Keys))
	for j, k := range w.Keys {
		kc[j] = tab.Col(k)
	}
	type winID struct {
		key   string
		start int64
	}
	members := map[winID][]int{}
	// emittedAt is the watermark each window went out at.
	emittedAt := map[winID]int64{}
	var wantLate []int64
	var gotLate []int64
	applied, restores := 0, 0
	var out [][]any
	var wms []int64
	maxTs, wm := watermark.None, watermark.None
	edges := map[string]bool{}
	accept := func(i int) {
		ts := tab.Value(i, "ts").(int64)
		late := ts <= wm
		if late {
			edges[fmt.Sprintf("late at wm-%d", wm-ts)] = true
		}
		took := false
		for s := floorMul(ts, w.Slide); s > ts-w.Size; s -= w.Slide {
			if late && (ts <= wm-lateness || s+w.Size-1 <= wm) {
				continue
			}
			took = true
			id := winID{testutil.KeyString(tab.Rows[i], kc), s}
			members[id] = append(members[id], i)
			if ts == s+w.Size-1 {
				edges["row on a window's last ms"] = true
			}
		}
		switch {
		case !took:
			wantLate = append(wantLate, tab.Value(i, "id").(int64))
		case late:
			applied++
		}
		maxTs = max(maxTs, ts)
	}
	idc := tab.Col("id")
	for lo := 0; lo < len(tab.Rows); {
		hi := min(len(tab.Rows), lo+1+rng.IntN(6))
		if lo > 0 && wm != watermark.None && rng.IntN(3) == 0 {
			// Rows at the edges of lateness: copies of rows pushed, at the
			// watermark, at it less the lateness and one after that, or
			// one after the watermark, put next in arrival.
			for range 1 + rng.IntN(3) {
				r := slices.Clone(tab.Rows[rng.IntN(lo)])
				r[tc] = []int64{wm, wm - lateness, wm - lateness + 1, wm + 1}[rng.IntN(4)]
				r[idc] = int64(len(tab.Rows))
				tab.Rows = slices.Insert(tab.Rows, lo, r)
				hi++
			}
			for i := range tab.Rows {
				tab.Rows[i][idc] = int64(i) // ids are arrival positions
			}
		}
		for i := lo; i < hi; i++ {
			accept(i)
		}
		gotLate = append(gotLate, g.push(tab, lo, hi)...)
		lo = hi
		if rng.IntN(4) == 0 {
			meta, err := g.op.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			g = newGroupOpWith(t, seed, cfg, len(w.Keys))
			if err := g.op.Restore(meta); err != nil {
				t.Fatalf("seed %d: Restore: %v", seed, err)
			}
			restores++
		}
		if rng.IntN(2) == 0 {
			continue
		}
		// The last millisecond of the latest window complete by
		// maxTs-bound, or one either side.
		x := maxTs - bound
		next := floorMul(x-(w.Size-1), w.Slide) + w.Size - 1 + int64(rng.IntN(3)-1)
		if next <= wm {
			continue
		}
		wm = next
		wms = append(wms, wm)
		rows := g.advance(wm)
		for _, r := range rows {
			id := winID{fmt.Sprint(r[:len(kc)]), r[len(kc)].(int64)}
			if _, ok := emittedAt[id]; ok {
				t.Fatalf("seed %d: window %v emitted twice", seed, id)
			}
			emittedAt[id] = wm
		}
		out = append(out, rows...)
	}
	for _, r := range g.advance(watermark.End) {
		emittedAt[winID{fmt.Sprint(r[:len(kc)]), r[len(kc)].(int64)}] = watermark.End
		out = append(out, r)
	}
	if applied == 0 && lateness > 0 || len(wantLate) == 0 || restores == 0 {
		t.Fatalf("seed %d: %d late rows applied, %d dropped, %d restores: the data misses a case", seed, applied, len(wantLate), restores)
	}
	if lateness > 0 && !edges[fmt.Sprintf("late at wm-%d", lateness)] || !edges["late at wm-0"] || !edges["row on a window's last ms"] {
		t.Fatalf("seed %d: edges met %v", seed, edges)
	}
	slices.Sort(wantLate)
	slices.Sort(gotLate)
	if !slices.Equal(gotLate, wantLate) {
		t.Errorf("seed %d: late rows %v, want %v", seed, gotLate, wantLate)
	}
	if dropped, app := g.op.Late(); dropped != int64(len(wantLate)) || app != int64(applied) {
		t.Errorf("seed %d: Late() = %d dropped, %d applied; want %d, %d", seed, dropped, app, len(wantLate), applied)
	}
	var want [][]any
	for id, rows := range members {
		// Emitted at the first watermark at or past its last millisecond.
		last := id.start + w.Size - 1
		at := watermark.End
		if k, _ := slices.BinarySearch(wms, last); k < len(wms) {
			at = wms[k]
		}
		for _, r := range testutil.GroupBy(tab.Subset(rows), w, groupTestAggs) {
			if r.Start == id.start {
				want = append(want, r.Values)
				key := winID{fmt.Sprint(r.Values[:len(kc)]), id.start}
				if e, ok := emittedAt[key]; !ok || e != at {
					t.Errorf("seed %d: window %v (last ms %d) emitted at watermark %d (%v), want %d", seed, key, last, e, ok, at)
				}
			}
		}
	}
	if len(emittedAt) != len(want) {
		t.Errorf("seed %d: %d windows emitted, want %d", seed, len(emittedAt), len(want))
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
