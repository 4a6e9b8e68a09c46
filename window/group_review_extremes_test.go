package window_test

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
)

// TestGroupReviewTimeExtremes: windows of event times near the limits of
// int64 milliseconds, and of windows up to MaxInt64 ms long, against a
// reference that places rows with exact (big integer) arithmetic. A row
// whose windows all start and end within int64 goes into each of them;
// a batch with any other row is refused with an error and changes
// nothing. Before, a start below MinInt64 wrapped around: the operator
// emitted a window starting near MaxInt64 for a row at MinInt64+1, and
// looped for ever making windows for one at MinInt64+1500 (1 s tumble)
// or at -2^62 (a hop of 2^62 ms every 2^61+3 ms).
func TestGroupReviewTimeExtremes(t *testing.T) {
	windows := []testutil.GroupWindow{
		{Size: 1000, Slide: 1000}, {Size: 1000, Slide: 400}, {Size: 1750, Slide: 1000},
		{Size: 1 << 62, Slide: 1 << 62}, {Size: 1 << 62, Slide: 1<<61 + 3},
		{Size: math.MaxInt64, Slide: math.MaxInt64}, {Size: math.MaxInt64, Slide: 1<<62 + 1},
		{Size: 3 << 61, Slide: 1 << 61},
	}
	bases := []int64{math.MinInt64 + 1, math.MinInt64 + 1500, -(1 << 62), -(1 << 62) + 700, -1500, 0, 1<<62 - 1200, 1 << 62, math.MaxInt64 - 2500}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "min", Arg: "price"}}
	for _, seed := range testutil.Seeds(2) {
		for _, w := range windows {
			for _, clustered := range []bool{false, true} {
				checkTimeExtremes(t, seed, w, clustered, bases, aggs)
			}
		}
	}
}

// checkTimeExtremes is TestGroupReviewTimeExtremes for one window; an
// operator configured Clustered (whose rows and windows all go at the
// end, through emitRuns, as the input's keys are never said to be
// finished) is given the rows of each key together.
func checkTimeExtremes(t *testing.T, seed uint64, w testutil.GroupWindow, clustered bool, bases []int64, aggs []testutil.Agg) {
	w.Keys, w.Time = []string{"user_id"}, "ts"
	t.Run(fmt.Sprintf("seed=%d/size=%d/slide=%d/clustered=%v", seed, w.Size, w.Slide, clustered), func(t *testing.T) {
		rng := testutil.Rand(seed)
		cfg := testutil.DefaultEvents(4 * len(bases))
		cfg.NullKeys = false
		tab := testutil.MLEvents(rng, cfg)
		tc := tab.Col("ts")
		if clustered {
			uc := tab.Col("user_id")
			slices.SortStableFunc(tab.Rows, func(a, b []any) int { return cmp.Compare(a[uc].(int64), b[uc].(int64)) })
		}
		for i := range tab.Rows {
			b := bases[i%len(bases)]
			off := int64(rng.IntN(2000))
			if b > 0 {
				off = -off
			}
			tab.Rows[i][tc] = b + off
		}
		// Exact placement: the starts k*slide in (ts-size, ts].
		type win struct {
			key   string
			start int64
		}
		members := map[win][]int{}
		var placed []int
		g := newGroupOp(t, seed, w, aggs)
		if clustered {
			g = newClusteredGroupOp(t, seed, w, aggs)
		}
		for i, r := range tab.Rows {
			ts := big.NewInt(r[tc].(int64))
			size, slide := big.NewInt(w.Size), big.NewInt(w.Slide)
			k := new(big.Int).Sub(ts, size)
			k.Div(k, slide) // Euclidean: floor for slide > 0
			k.Add(k, big.NewInt(1))
			var starts []int64
			ok := true
			for {
				s := new(big.Int).Mul(k, slide)
				if s.Cmp(ts) > 0 {
					break
				}
				end := new(big.Int).Add(s, size)
				if !s.IsInt64() || !end.IsInt64() {
					ok = false
				} else {
					starts = append(starts, s.Int64())
				}
				k.Add(k, big.NewInt(1))
			}
			rec := testutil.BuildRecord(nil, mlSchema, [][]any{append(slices.Clone(r), int64(i))})
			_, late, err := g.op.Push(rec)
			rec.Release()
			if late != nil {
				t.Errorf("seed %d: row %d (ts %d) late before any watermark", seed, i, r[tc])
				late.Release()
			}
			if !ok {
				if err == nil {
					t.Errorf("seed %d: row %d (ts %d) has a window beyond int64 ms, but Push took it", seed, i, r[tc])
				}
				continue
			}
			if err != nil {
				t.Fatalf("seed %d: row %d (ts %d): Push: %v", seed, i, r[tc], err)
			}
			placed = append(placed, i)
			for _, s := range starts {
				id := win{testutil.KeyString(r, []int{tab.Col("user_id")}), s}
				members[id] = append(members[id], i)
			}
		}
		if len(placed) == 0 {
			t.Fatalf("seed %d: no row placed", seed)
		}
		var want [][]any
		for id, rows := range members {
			r := tab.Rows[rows[0]]
			vals := []any{r[tab.Col("user_id")], id.start, id.start + w.Size}
			for _, a := range aggs {
				vals = append(vals, testutil.Aggregate(tab, a, rows))
			}
			want = append(want, vals)
		}
		want = sortGroups(want, 1)
		// The windows complete at watermark 0 first, then the rest
		// (clustered, all at the end: every row then goes in at once,
		// through emitRuns).
		var first [][]any
		if !clustered {
			first = g.advance(0)
		}
		for _, r := range first {
			if end := r[2].(int64); end-1 > 0 {
				t.Errorf("seed %d: window %v emitted at watermark 0", seed, r[:3])
			}
		}
		early := 0
		for _, r := range want {
			if !clustered && r[2].(int64)-1 <= 0 {
				early++
			}
		}
		if len(first) != early {
			t.Errorf("seed %d: %d windows emitted at watermark 0, want %d", seed, len(first), early)
		}
		got := sortGroups(append(first, g.advance(watermark.End)...), 1)
		cols := []string{"user_id", "window_start", "window_end", "count", "sum", "min"}
		if d := testutil.Diff(cols, got, want, groupLabel(want, 1)); d != "" {
			t.Errorf("seed %d (VOLGA_SEED=%d to replay): windows vs exact reference:\n%s", seed, seed, d)
		}
	})
}
