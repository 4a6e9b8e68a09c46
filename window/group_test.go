package window_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// groupTestAggs are the aggregates of the GROUP BY operator tests:
// standard and ML ones, the order-sensitive ones included.
var groupTestAggs = []testutil.Agg{
	{Func: "first_value", Arg: "category"}, {Func: "last_value", Arg: "price"},
	{Func: "ew_avg", Arg: "amount", Param: 0.6}, {Func: "drawdown", Arg: "price"},
	{Func: "count"}, {Func: "count", Arg: "price"}, {Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"},
	{Func: "avg", Arg: "amount"}, {Func: "min", Arg: "price"}, {Func: "max", Arg: "category"},
	{Func: "var_pop", Arg: "price"}, {Func: "stddev_samp", Arg: "amount"}, {Func: "count_distinct", Arg: "tag"},
	{Func: "top", Arg: "price", Param: int64(2)},
	{Func: "topn_frequency", Arg: "tag", Param: int64(3)},
	{Func: "top1_ratio", Arg: "category"},
	{Func: "sum_where", Arg: "price", Cond: "flag"},
	{Func: "min_where", Arg: "amount", Cond: "flag"},
	{Func: "count_cate", Arg: "price", Cate: "merchant"},
	{Func: "avg_cate", Arg: "amount", Cate: "category"},
	{Func: "max_cate_where", Arg: "category", Cond: "flag", Cate: "tag"},
	{Func: "approx_percentile", Arg: "score", Param: 0.3},
	{Func: "approx_count_distinct", Arg: "price"},
}

// groupOp drives a window.GroupOperator over the ML event schema.
type groupOp struct {
	t    *testing.T
	seed uint64
	op   *window.GroupOperator
	nk   int
}

func newGroupOp(t *testing.T, seed uint64, w testutil.GroupWindow, aggs []testutil.Agg) *groupOp {
	t.Helper()
	return newGroupOpWith(t, seed, groupConfig(t, w, aggs), len(w.Keys))
}

// newGroupOpWith is newGroupOp of configuration cfg (nk key columns).
func newGroupOpWith(t *testing.T, seed uint64, cfg window.GroupConfig, nk int) *groupOp {
	t.Helper()
	op, err := window.NewGroup(cfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return &groupOp{t: t, seed: seed, op: op, nk: nk}
}

// groupConfig is the configuration of newGroupOp.
func groupConfig(t *testing.T, w testutil.GroupWindow, aggs []testutil.Agg) window.GroupConfig {
	t.Helper()
	cfg := window.GroupConfig{TsCol: mlTsCol, SeqCol: mlSeqCol, SizeMs: w.Size, SlideMs: w.Slide}
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
	return cfg
}

// push feeds rows [lo, hi) of tab (arrival sequence = row index) and
// returns the ids of the late rows.
func (g *groupOp) push(tab *testutil.Table, lo, hi int) []int64 {
	g.t.Helper()
	vals := make([][]any, 0, hi-lo)
	for i := lo; i < hi; i++ {
		vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(i)))
	}
	rec := testutil.BuildRecord(nil, mlSchema, vals)
	defer rec.Release()
	outs, late, err := g.op.Push(rec)
	if err != nil {
		g.t.Fatalf("seed %d: Push: %v", g.seed, err)
	}
	if len(outs) > 0 {
		g.t.Fatalf("seed %d: Push emitted %d batches; windows are emitted by Advance", g.seed, len(outs))
	}
	if late == nil {
		return nil
	}
	defer late.Release()
	return mlIDs(testutil.Rows(late))
}

// advance returns the emitted rows without the engine's two leading
// ordering columns: keys..., window_start, window_end, aggregates...
func (g *groupOp) advance(wm int64) [][]any {
	g.t.Helper()
	outs, err := g.op.Advance(context.Background(), wm)
	if err != nil {
		g.t.Fatalf("seed %d: Advance(%d): %v", g.seed, wm, err)
	}
	rows := testutil.Rows(outs...)
	for _, r := range outs {
		r.Release()
	}
	for i, r := range rows {
		rows[i] = r[window.GroupSeqCol+1:]
	}
	return rows
}

// sortGroups orders GROUP BY rows by window start, then keys.
func sortGroups(rows [][]any, nk int) [][]any {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b []any) int {
		if c := cmp.Compare(a[nk].(int64), b[nk].(int64)); c != 0 {
			return c
		}
		return strings.Compare(fmt.Sprint(a[:nk]), fmt.Sprint(b[:nk]))
	})
	return out
}

func groupLabel(rows [][]any, nk int) func(int) string {
	return func(i int) string {
		if i >= len(rows) {
			return "?"
		}
		return fmt.Sprintf("keys=%v window=[%v, %v)", rows[i][:nk], rows[i][nk], rows[i][nk+1])
	}
}

func refValues(rows []testutil.GroupRow) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = r.Values
	}
	return out
}

var groupTestWindows = []testutil.GroupWindow{
	{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 1000},
	{Keys: []string{"merchant"}, Time: "ts", Size: 3000, Slide: 3000},
	{Keys: []string{"user_id", "merchant"}, Time: "ts", Size: 2000, Slide: 500},
	{Keys: []string{"merchant"}, Time: "ts", Size: 1750, Slide: 1000},
}

// TestGroupOperatorMatchesReference: in batch (every row pushed, then the
// End watermark) the operator emits exactly the brute-force GROUP BY rows
// in order (window start, then first arrival), NULL keys being a group of
// their own; streaming with shuffled arrival and random watermark advances
// emits each window once, as soon as the watermark reaches end-1 and not
// before, with the same values.
func TestGroupOperatorMatchesReference(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(3) {
		for _, w := range groupTestWindows {
			t.Run(fmt.Sprintf("seed=%d/keys=%v/size=%d/slide=%d", seed, w.Keys, w.Size, w.Slide), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400)))
				tab := events.Subset(testutil.Shuffle(rng, events, "ts", w.Keys, bound))
				ref := testutil.GroupBy(tab, w, groupTestAggs)
				want := refValues(ref)
				cols := append(slices.Clone(w.Keys), "window_start", "window_end")
				for _, a := range groupTestAggs {
					cols = append(cols, a.SQL())
				}
				nk := len(w.Keys)

				batch := newGroupOp(t, seed, w, groupTestAggs)
				for lo := 0; lo < len(tab.Rows); {
					hi := min(len(tab.Rows), lo+1+rng.IntN(50))
					batch.push(tab, lo, hi)
					lo = hi
				}
				got := batch.advance(watermark.End)
				if d := testutil.Diff(cols, got, want, groupLabel(want, nk)); d != "" {
					t.Errorf("seed %d (VOLGA_SEED=%d to replay), batch vs reference:\n%s", seed, seed, d)
				}

				stream := newGroupOp(t, seed, w, groupTestAggs)
				var out [][]any
				emitted := map[string]bool{}
				maxTs, wm := watermark.None, watermark.None
				for lo := 0; lo < len(tab.Rows); {
					hi := min(len(tab.Rows), lo+1+rng.IntN(20))
					if late := stream.push(tab, lo, hi); late != nil {
						t.Fatalf("seed %d: rows within the bound were late: %v", seed, late)
					}
					for i := lo; i < hi; i++ {
						maxTs = max(maxTs, tab.Value(i, "ts").(int64))
					}
					lo = hi
					if rng.IntN(3) == 0 || maxTs-bound <= wm {
						continue
					}
					wm = maxTs - bound
					rows := stream.advance(wm)
					// Exactly the windows of the reference ending by wm+1
					// that were not emitted before.
					var due []string
					for _, r := range ref {
						if id := fmt.Sprint(r.Values[:nk+1]); r.Start+w.Size-1 <= wm && !emitted[id] {
							due = append(due, id)
						}
					}
					var ids []string
					for _, r := range rows {
						ids = append(ids, fmt.Sprint(r[:nk+1]))
					}
					slices.Sort(due)
					slices.Sort(ids)
					if !slices.Equal(ids, due) {
						t.Fatalf("seed %d: Advance(%d) emitted windows %v, want %v", seed, wm, ids, due)
					}
					for _, id := range ids {
						emitted[id] = true
					}
					out = append(out, rows...)
				}
				out = append(out, stream.advance(watermark.End)...)
				ws := sortGroups(want, nk)
				if d := testutil.Diff(cols, sortGroups(out, nk), ws, groupLabel(ws, nk)); d != "" {
					t.Errorf("seed %d (VOLGA_SEED=%d to replay), streaming vs reference (as sets):\n%s", seed, seed, d)
				}
			})
		}
	}
}

// TestGroupOperatorLateRows: rows at or behind the watermark are returned
// as late, counted, and left out of every window, including the windows
// of a hop still open.
func TestGroupOperatorLateRows(t *testing.T) {
	const bound = 500
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 500}
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		tab := lateGroupArrival(rng, w, bound)
		g := newGroupOp(t, seed, w, groupTestAggs)
		var accepted []int
		var wantLate, gotLate []int64
		var out [][]any
		maxTs, wm := watermark.None, watermark.None
		for lo := 0; lo < len(tab.Rows); {
			hi := min(len(tab.Rows), lo+1+rng.IntN(6))
			for i := lo; i < hi; i++ {
				if tab.Value(i, "ts").(int64) <= wm {
					wantLate = append(wantLate, tab.Value(i, "id").(int64))
				} else {
					accepted = append(accepted, i)
				}
				maxTs = max(maxTs, tab.Value(i, "ts").(int64))
			}
			gotLate = append(gotLate, g.push(tab, lo, hi)...)
			lo = hi
			if maxTs-bound > wm {
				wm = maxTs - bound
				out = append(out, g.advance(wm)...)
			}
		}
		out = append(out, g.advance(watermark.End)...)
		if len(wantLate) == 0 {
			t.Fatalf("seed %d: no late rows in the test data", seed)
		}
		slices.Sort(wantLate)
		slices.Sort(gotLate)
		if !slices.Equal(gotLate, wantLate) {
			t.Fatalf("seed %d: late rows %v, want %v", seed, gotLate, wantLate)
		}
		if dropped, applied := g.op.Late(); dropped != int64(len(wantLate)) || applied != 0 {
			t.Errorf("seed %d: Late() = %d dropped, %d applied; want %d, 0", seed, dropped, applied, len(wantLate))
		}
		cols := append(slices.Clone(w.Keys), "window_start", "window_end")
		for _, a := range groupTestAggs {
			cols = append(cols, a.SQL())
		}
		want := sortGroups(refValues(testutil.GroupBy(tab.Subset(accepted), w, groupTestAggs)), 1)
		if d := testutil.Diff(cols, sortGroups(out, 1), want, groupLabel(want, 1)); d != "" {
			t.Errorf("seed %d: windows vs reference over the accepted rows:\n%s", seed, d)
		}
	}
}

// lateGroupArrival returns ML events in an arrival order within bound of
// event time, but for a tenth of them held back 3-17 rows more: late
// rows for a watermark bound behind the newest time.
func lateGroupArrival(rng *rand.Rand, w testutil.GroupWindow, bound int64) *testutil.Table {
	events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400)))
	order := testutil.Shuffle(rng, events, "ts", w.Keys, bound)
	return events.Subset(holdBack(rng, order, 10, 3, 15))
}

// TestGroupOperatorNegativeTimes: windows stay aligned to the epoch for
// event times before it.
func TestGroupOperatorNegativeTimes(t *testing.T) {
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 400}
	cfg := testutil.DefaultEvents(60)
	cfg.Start = -12_345
	tab := testutil.MLEvents(testutil.Rand(1), cfg)
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}}
	g := newGroupOp(t, 1, w, aggs)
	g.push(tab, 0, len(tab.Rows))
	got := g.advance(watermark.End)
	want := refValues(testutil.GroupBy(tab, w, aggs))
	if d := testutil.Diff([]string{"user_id", "window_start", "window_end", "count", "sum"}, got, want, groupLabel(want, 1)); d != "" {
		t.Error(d)
	}
}

// TestGroupOperatorApproxBounds: in a tumble window, approx_percentile is
// exact up to 1024 values and approx_count_distinct up to 1000 distinct
// values; beyond, they stay within their documented bounds (rank error
// N·H/1024 with H = ⌈log2(N/1024)⌉+1; HyperLogLog standard error 1.6%,
// checked at 5%).
func TestGroupOperatorApproxBounds(t *testing.T) {
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 1_000_000, Slide: 1_000_000}
	qs := []float64{0, 0.1, 0.5, 0.93, 1}
	var aggs []testutil.Agg
	for _, q := range qs {
		aggs = append(aggs, testutil.Agg{Func: "approx_percentile", Arg: "price", Param: q})
	}
	aggs = append(aggs, testutil.Agg{Func: "approx_count_distinct", Arg: "price"}, testutil.Agg{Func: "count_distinct", Arg: "price"})
	for _, n := range []int{1000, 1023, testutil.Scale(6000)} {
		rng := testutil.Rand(uint64(n))
		tab := &testutil.Table{Schema: testutil.MLEventSchema}
		for i := range n {
			// Values repeat a little, so that distinct counts differ from n.
			price := float64(rng.IntN(4*n)) / 8
			tab.Rows = append(tab.Rows, []any{int64(i), int64(1), "m", int64(rng.IntN(1000)), nil, price, nil, nil, nil, nil})
		}
		g := newGroupOp(t, 1, w, aggs)
		for lo := 0; lo < n; lo += 500 {
			g.push(tab, lo, min(n, lo+500))
		}
		got := g.advance(watermark.End)
		if len(got) != 1 {
			t.Fatalf("n=%d: %d windows, want 1", n, len(got))
		}
		res := got[0][3:]
		want := refValues(testutil.GroupBy(tab, w, aggs))[0][3:]
		vals := make([]float64, n)
		for i, r := range tab.Rows {
			vals[i] = r[tab.Col("price")].(float64)
		}
		slices.Sort(vals)
		distinct := want[len(qs)+1].(int64)
		if n < 1024 {
			if d := testutil.Diff(testutilNames(aggs), [][]any{res}, [][]any{want}, func(int) string { return fmt.Sprint("n=", n) }); d != "" {
				t.Errorf("n=%d values, %d distinct: not exact:\n%s", n, distinct, d)
			}
			continue
		}
		h := 1
		for 1024<<(h-1) < n {
			h++
		}
		h++
		bound := float64(n*h) / 1024
		for k, q := range qs {
			r := res[k].(float64)
			lt, _ := slices.BinarySearch(vals, r)
			le := lt
			for le < n && vals[le] == r {
				le++
			}
			// The rank of r is anywhere in [lt, le-1] (or lt for a value
			// between two of the data).
			target := q * float64(n-1)
			miss := max(float64(lt)-target, target-float64(max(le-1, lt)), 0)
			if miss > bound {
				t.Errorf("n=%d: approx_percentile(price, %v) = %v has rank [%d, %d], want within %.1f of %.1f", n, q, r, lt, le-1, bound, target)
			}
		}
		if est := res[len(qs)].(int64); float64(est) < 0.95*float64(distinct) || float64(est) > 1.05*float64(distinct) {
			t.Errorf("n=%d: approx_count_distinct = %d, want within 5%% of %d", n, est, distinct)
		}
	}
}

func testutilNames(aggs []testutil.Agg) []string {
	out := make([]string, len(aggs))
	for i, a := range aggs {
		out[i] = a.SQL()
	}
	return out
}

// TestApproxPercentileExactUpTo1024 is a regression test: approx_percentile
// documents that its states are exact up to 1024 values, but the 1024th
// value used to fill level 0, which was compacted at once. The values
// 0..1023 in one window: approx_percentile(price, 1.0) is 1023 and
// (price, 0.5) 511.5.
func TestApproxPercentileExactUpTo1024(t *testing.T) {
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 1000, Slide: 1000}
	aggs := []testutil.Agg{{Func: "approx_percentile", Arg: "price", Param: 1.0}, {Func: "approx_percentile", Arg: "price", Param: 0.5}}
	tab := &testutil.Table{Schema: testutil.MLEventSchema}
	for i := range 1024 {
		tab.Rows = append(tab.Rows, []any{int64(i), int64(1), "m", int64(0), nil, float64(i), nil, nil, nil, nil})
	}
	g := newGroupOp(t, 1, w, aggs)
	g.push(tab, 0, len(tab.Rows))
	got := g.advance(watermark.End)
	want := [][]any{{int64(1), int64(0), int64(1000), 1023.0, 511.5}}
	if d := testutil.Diff([]string{"user_id", "window_start", "window_end", "p100", "p50"}, got, want, func(int) string { return "1024 values" }); d != "" {
		t.Errorf("approx_percentile over 1024 values is not exact:\n%s", d)
	}
}

// TestGroupClusteredMatchesReference: over input clustered by the first
// key column, an operator configured Clustered and told after each batch
// where the key still being read starts (FinishBefore) emits, at once,
// exactly the windows of the keys before it, whatever their times; all
// its output is the brute-force GROUP BY, ordered by the first row of each
// key, then by window start, also when it is checkpointed and restored
// at random points. A key that comes back is refused (after restores too).
func TestGroupClusteredMatchesReference(t *testing.T) {
	for _, seed := range testutil.Seeds(2) {
		for _, w := range groupTestWindows {
			for _, shuffle := range []bool{false, true} {
				t.Run(fmt.Sprintf("seed=%d/keys=%v/size=%d/slide=%d/shuffle=%v", seed, w.Keys, w.Size, w.Slide, shuffle), func(t *testing.T) {
					t.Parallel()
					rng := testutil.Rand(seed)
					events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(300)))
					tab := clustered(events, w.Keys[0], shuffle, seed)
					nk := len(w.Keys)
					first, last := map[string]int{}, map[string]int{}
					keyOf := func(vals []any) string { return fmt.Sprint(vals[:nk]) }
					for i := range tab.Rows {
						vals := make([]any, nk)
						for j, k := range w.Keys {
							vals[j] = tab.Value(i, k)
						}
						k := keyOf(vals)
						if _, ok := first[k]; !ok {
							first[k] = i
						}
						last[k] = i
					}
					want := refValues(testutil.GroupBy(tab, w, groupTestAggs))
					slices.SortStableFunc(want, func(a, b []any) int {
						if c := cmp.Compare(first[keyOf(a)], first[keyOf(b)]); c != 0 {
							return c
						}
						return cmp.Compare(a[nk].(int64), b[nk].(int64))
					})
					cols := append(slices.Clone(w.Keys), "window_start", "window_end")
					for _, a := range groupTestAggs {
						cols = append(cols, a.SQL())
					}

					restMin := make([]int64, len(tab.Rows)+1) // least time of rows i...
					restMin[len(tab.Rows)] = math.MaxInt64
					for i := len(tab.Rows) - 1; i >= 0; i-- {
						restMin[i] = min(restMin[i+1], tab.Value(i, "ts").(int64))
					}
					g := newClusteredGroupOp(t, seed, w, groupTestAggs)
					var got [][]any
					wm := watermark.None
					for lo := 0; lo < len(tab.Rows); {
						hi := min(len(tab.Rows), lo+1+rng.IntN(40))
						g.push(tab, lo, hi)
						// The watermark a batch run would have (every row
						// to come is later) releases no window of a key
						// still being read.
						if hi < len(tab.Rows) {
							wm = max(wm, restMin[hi]-1)
						}
						lo = hi
						open := hi - 1 // the first row of the last run
						for open > 0 && tab.Value(open-1, w.Keys[0]) == tab.Value(hi-1, w.Keys[0]) {
							open--
						}
						g.op.FinishBefore(int64(open), true)
						got = append(got, g.advance(wm)...)
						if rng.IntN(4) == 0 {
							// A checkpoint, and on from a restored operator.
							meta, err := g.op.Checkpoint()
							if err != nil {
								t.Fatal(err)
							}
							next := newClusteredGroupOp(t, seed, w, groupTestAggs)
							if err := next.op.Restore(meta); err != nil {
								t.Fatalf("Restore: %v", err)
							}
							g = next
						}
						done := 0
						for _, r := range want {
							if last[keyOf(r)] < open {
								done++
							}
						}
						if len(got) != done {
							t.Fatalf("seed %d: after row %d, with the keys before row %d finished: %d windows out, want their %d", seed, hi, open, len(got), done)
						}
					}
					got = append(got, g.advance(watermark.End)...)
					if d := testutil.Diff(cols, got, want, groupLabel(want, nk)); d != "" {
						t.Fatalf("seed %d (VOLGA_SEED=%d to replay), clustered vs reference:\n%s", seed, seed, d)
					}

					// The first key again, after the others.
					vals := [][]any{append(slices.Clone(tab.Rows[0]), int64(len(tab.Rows)))}
					rec := testutil.BuildRecord(nil, mlSchema, vals)
					defer rec.Release()
					if _, _, err := g.op.Push(rec); !errors.Is(err, window.ErrNotClustered) {
						t.Fatalf("push of a finished key's row: %v, want ErrNotClustered", err)
					}
				})
			}
		}
	}
}

// TestGroupClusteredStraddlingKey: a key with rows on both sides of the
// row FinishBefore names, another key's rows between, is refused at the
// Advance; checkpoints of a Clustered operator are refused.
func TestGroupClusteredStraddlingKey(t *testing.T) {
	w := groupTestWindows[0]
	events := testutil.MLEvents(testutil.Rand(5), testutil.DefaultEvents(200))
	tab := clustered(events, "user_id", false, 5)
	n := 0
	for n < len(tab.Rows) && tab.Value(n, "user_id") == tab.Value(0, "user_id") {
		n++
	}
	// The first user, the second's first row, then the first user again:
	// FinishBefore names the row where the first user's last run starts.
	// (A key repeated before that row goes out whole, and is let be.)
	bad := tab.Subset(slices.Concat(span(0, n), []int{n, 0}))
	g := newClusteredGroupOp(t, 5, w, groupTestAggs[:5])
	g.push(bad, 0, len(bad.Rows))
	g.op.FinishBefore(int64(n+1), true)
	if _, err := g.op.Advance(context.Background(), watermark.None); !errors.Is(err, window.ErrNotClustered) {
		t.Fatalf("Advance finishing a key with rows on both sides of another's: %v, want ErrNotClustered", err)
	}
}

// TestGroupClusteredCheckpointRefusesOther: the meta of an operator
// configured Clustered is refused by one that is not, and the other way
// round; each kind restores its own, not truncated.
func TestGroupClusteredCheckpointRefusesOther(t *testing.T) {
	w := groupTestWindows[0]
	tab := clustered(testutil.MLEvents(testutil.Rand(6), testutil.DefaultEvents(50)), "user_id", false, 6)
	for _, c := range []bool{false, true} {
		g := newGroupOpOf(t, c, w)
		g.push(tab, 0, len(tab.Rows))
		meta, err := g.op.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if err := newGroupOpOf(t, !c, w).op.Restore(meta); !errors.Is(err, window.ErrIncompatibleCheckpoint) {
			t.Errorf("meta of a Clustered=%v operator restored by the other kind: %v, want ErrIncompatibleCheckpoint", c, err)
		}
		if err := newGroupOpOf(t, c, w).op.Restore(meta); err != nil {
			t.Errorf("Clustered=%v: %v", c, err)
		}
		if err := newGroupOpOf(t, c, w).op.Restore(meta[:len(meta)-1]); err == nil {
			t.Errorf("Clustered=%v: truncated meta restored", c)
		}
	}
}

// newGroupOpOf is newGroupOp, or newClusteredGroupOp when clustered, of
// a few aggregates.
func newGroupOpOf(t *testing.T, clustered bool, w testutil.GroupWindow) *groupOp {
	t.Helper()
	if clustered {
		return newClusteredGroupOp(t, 6, w, groupTestAggs[:3])
	}
	return newGroupOp(t, 6, w, groupTestAggs[:3])
}

// newClusteredGroupOp is newGroupOp configured Clustered.
func newClusteredGroupOp(t *testing.T, seed uint64, w testutil.GroupWindow, aggs []testutil.Agg) *groupOp {
	t.Helper()
	cfg := groupConfig(t, w, aggs)
	cfg.Clustered = true
	return newGroupOpWith(t, seed, cfg, len(w.Keys))
}

// TestGroupOperatorPushRows: an operator given some rows of shared
// batches (PushRows, as a task of a parallel run takes its keys' rows)
// emits exactly what one given those rows as batches of their own (Push)
// emits, late rows applied (allowed lateness) and dropped alike; given
// every row, PushRows is Push.
func TestGroupOperatorPushRows(t *testing.T) {
	const bound = 500
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 500}
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		tab := lateGroupArrival(rng, w, bound)
		cfg := groupConfig(t, w, groupTestAggs)
		cfg.AllowedLateness = 2000
		// rows: PushRows of the shared batch; own: Push of those rows
		// alone; all: PushRows of every row; whole: Push of the batch.
		rows, own := newGroupOpWith(t, seed, cfg, 1), newGroupOpWith(t, seed, cfg, 1)
		all, whole := newGroupOpWith(t, seed, cfg, 1), newGroupOpWith(t, seed, cfg, 1)
		mine := func(i int) bool { return fmt.Sprint(tab.Value(i, "user_id"))[0]%2 == 0 }
		var outRows, outOwn, outAll, outWhole [][]any
		var lateRows, lateOwn, lateAll, lateWhole []int64
		maxTs, wm := watermark.None, watermark.None
		injected := false
		for lo := 0; lo < len(tab.Rows); {
			hi := min(len(tab.Rows), lo+1+rng.IntN(12))
			vals := make([][]any, 0, hi-lo+2)
			sel := []int32{} // not nil: pushRowsOf pushes nil as Push
			var selVals [][]any
			add := func(i int, v []any) {
				vals = append(vals, v)
				if mine(i) {
					sel = append(sel, int32(len(vals)-1))
					selVals = append(selVals, v)
				}
			}
			for i := lo; i < hi; i++ {
				add(i, append(slices.Clone(tab.Rows[i]), int64(i)))
				maxTs = max(maxTs, tab.Value(i, "ts").(int64))
			}
			if !injected && wm != watermark.None && lo >= len(tab.Rows)/2 {
				// Rows held back may all fall within the allowed
				// lateness, or all beyond it: two more copies of row
				// lo, one late by a millisecond (applied to its windows
				// still open) and one beyond the lateness (dropped), make
				// sure of both whatever the seed.
				injected = true
				for k, ts := range []int64{wm - 1, wm - cfg.AllowedLateness - 1000} {
					v := append(slices.Clone(tab.Rows[lo]), int64(len(tab.Rows)+k))
					v[tab.Col("ts")] = ts
					add(lo, v)
				}
			}
			rec := testutil.BuildRecord(nil, mlSchema, vals)
			lateRows = append(lateRows, pushRowsOf(t, rows.op, rec, sel)...)
			lateAll = append(lateAll, pushRowsOf(t, all.op, rec, allRows(len(vals)))...)
			lateWhole = append(lateWhole, pushRowsOf(t, whole.op, rec, nil)...)
			rec.Release()
			if len(selVals) > 0 {
				sub := testutil.BuildRecord(nil, mlSchema, selVals)
				lateOwn = append(lateOwn, pushRowsOf(t, own.op, sub, nil)...)
				sub.Release()
			}
			lo = hi
			if maxTs-bound > wm {
				wm = maxTs - bound
				outRows = append(outRows, rows.advance(wm)...)
				outOwn = append(outOwn, own.advance(wm)...)
				outAll = append(outAll, all.advance(wm)...)
				outWhole = append(outWhole, whole.advance(wm)...)
			}
		}
		outRows = append(outRows, rows.advance(watermark.End)...)
		outOwn = append(outOwn, own.advance(watermark.End)...)
		outAll = append(outAll, all.advance(watermark.End)...)
		outWhole = append(outWhole, whole.advance(watermark.End)...)
		if len(outOwn) == 0 || len(outOwn) == len(outWhole) {
			t.Fatalf("seed %d: %d windows of some keys, %d of all: the split took no or every key", seed, len(outOwn), len(outWhole))
		}
		if !injected {
			t.Fatalf("seed %d: no watermark by the middle of the input: no late rows injected", seed)
		}
		if dropped, applied := whole.op.Late(); applied == 0 || dropped == 0 {
			t.Fatalf("seed %d: %d late rows applied and %d dropped: the test needs both", seed, applied, dropped)
		}
		for _, c := range []struct {
			what          string
			got, want     [][]any
			gotLt, wantLt []int64
			gotOp, wantOp *window.GroupOperator
		}{
			{"PushRows of some rows vs Push of them", outRows, outOwn, lateRows, lateOwn, rows.op, own.op},
			{"PushRows of every row vs Push", outAll, outWhole, lateAll, lateWhole, all.op, whole.op},
		} {
			if d := cmpRowLists(c.got, c.want); d != "" {
				t.Fatalf("seed %d: %s: %s", seed, c.what, d)
			}
			if !slices.Equal(c.gotLt, c.wantLt) {
				t.Fatalf("seed %d: %s: late rows %v, want %v", seed, c.what, c.gotLt, c.wantLt)
			}
			gd, ga := c.gotOp.Late()
			wd, wa := c.wantOp.Late()
			if gd != wd || ga != wa {
				t.Fatalf("seed %d: %s: Late() %d dropped %d applied, want %d and %d", seed, c.what, gd, ga, wd, wa)
			}
		}
	}
}

// pushRowsOf pushes rows sel of rec into op (all of rec with Push when sel
// is nil) and returns the ids of the late rows.
func pushRowsOf(t *testing.T, op *window.GroupOperator, rec arrow.RecordBatch, sel []int32) []int64 {
	t.Helper()
	var outs []arrow.RecordBatch
	var late arrow.RecordBatch
	var err error
	if sel == nil {
		outs, late, err = op.Push(rec)
	} else {
		outs, late, err = op.PushRows(rec, sel)
	}
	if err != nil || len(outs) > 0 {
		t.Fatalf("push: %v (%d batches out)", err, len(outs))
	}
	if late == nil {
		return nil
	}
	defer late.Release()
	return mlIDs(testutil.Rows(late))
}

// allRows is 0, 1, ..., n-1.
func allRows(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// cmpRowLists describes the first difference between two lists of rows,
// "" when they are equal value for value, in order.
func cmpRowLists(got, want [][]any) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if g, w := fmt.Sprint(got[i]), fmt.Sprint(want[i]); g != w {
			return fmt.Sprintf("row %d:\n got %s\nwant %s", i, g, w)
		}
	}
	return ""
}

// TestGroupClusteredRunsMatchGeneral: the windows of finished keys that a
// Clustered operator emits a range of rows at a time (tumbling and
// hopping windows, no window open) are exactly, every column (the internal time and sequence
// included) and batch for batch, what the general path of tables and
// sorts emits for the same pushes, finishes and watermarks, over batches
// of random sizes ending inside keys and on their boundaries.
func TestGroupClusteredRunsMatchGeneral(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		for _, w := range groupTestWindows {
			rng := testutil.Rand(seed)
			tab := clustered(testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400))), w.Keys[0], seed%2 == 0, seed)
			// The same cuts for both runs.
			type step struct{ hi, open int }
			var steps []step
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(60))
				open := hi - 1
				for open > 0 && tab.Value(open-1, w.Keys[0]) == tab.Value(hi-1, w.Keys[0]) {
					open--
				}
				steps = append(steps, step{hi, open})
				lo = hi
			}
			run := func(runs bool) []arrow.RecordBatch {
				defer window.SetGroupRuns(runs)()
				g := newClusteredGroupOp(t, seed, w, groupTestAggs)
				var outs []arrow.RecordBatch
				lo := 0
				for _, s := range steps {
					g.push(tab, lo, s.hi)
					lo = s.hi
					g.op.FinishBefore(int64(s.open), true)
					o, err := g.op.Advance(context.Background(), watermark.None)
					if err != nil {
						t.Fatal(err)
					}
					outs = append(outs, o...)
				}
				o, err := g.op.Advance(context.Background(), watermark.End)
				if err != nil {
					t.Fatal(err)
				}
				return append(outs, o...)
			}
			fast, general := run(true), run(false)
			if len(fast) != len(general) {
				t.Fatalf("seed %d, %v: %d batches a run at a time, %d in general", seed, w.Keys, len(fast), len(general))
			}
			rows := 0
			for i := range fast {
				if !array.RecordEqual(fast[i], general[i]) {
					t.Fatalf("seed %d, %v: batch %d differs:\nruns:    %v\ngeneral: %v", seed, w.Keys, i, fast[i], general[i])
				}
				rows += int(fast[i].NumRows())
			}
			if rows == 0 {
				t.Fatalf("seed %d, %v: no windows", seed, w.Keys)
			}
			arrowutil.ReleaseAll(fast)
			arrowutil.ReleaseAll(general)
		}
	}
}
