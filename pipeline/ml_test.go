package pipeline_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// mlKeySets are the PARTITION BY sets the ML suites rotate through.
var mlKeySets = [][]string{{"user_id"}, {"merchant"}, {"user_id", "merchant"}}

// mlEvents are generated ML events (NULLs in every column but id and ts,
// NULL keys, peers, many tags, frequency ties) in a shuffled arrival order
// within bound; rows sharing a time keep their order.
func mlEvents(seed uint64, rows int, bound int64) *testutil.Table {
	rng := testutil.Rand(seed)
	events := testutil.MLEvents(rng, testutil.DefaultEvents(rows))
	return events.Subset(testutil.Shuffle(rng, events, "ts", nil, bound))
}

// TestMLFunctionsMatchReference runs every ML aggregate of
// testutil.MLAggs over every frame kind of testutil.Frames (RANGE, RANGE
// ... AND e PRECEDING, UNBOUNDED, ROWS, with and without EXCLUDE CURRENT
// ROW) through volga.SQL, in batch mode and in streaming mode with a
// shuffled arrival, each with parallelism 1 and 2, and compares every
// value with the brute-force reference.
func TestMLFunctionsMatchReference(t *testing.T) {
	const bound = 3000
	for _, seed := range testutil.Seeds(2) {
		tab := mlEvents(seed, testutil.Scale(240), bound)
		for f, fr := range testutil.Frames {
			keys := mlKeySets[(f+int(seed))%len(mlKeySets)]
			t.Run(fmt.Sprintf("seed=%d/%s", seed, fr), func(t *testing.T) {
				t.Parallel()
				win := testutil.Window{Keys: keys, Time: "ts", Frame: fr}
				items := make([]item, len(testutil.MLAggs))
				for k, a := range testutil.MLAggs {
					items[k] = item{a, win}
				}
				query := featureSQL(items, "")
				want := reference(tab, items)
				label := testutil.Label(tab, nil, "id", "user_id", "merchant", "ts")
				for _, par := range []int{1, 2} {
					got, _ := run(t, seed, query, tab, volga.WithParallelism(par))
					if d := testutil.Diff(columns(items), got, want, label); d != "" {
						t.Errorf("seed %d, keys %v, batch, parallelism %d vs reference (VOLGA_SEED=%d to replay):\n%s", seed, keys, par, seed, d)
					}
					stream, _ := run(t, seed, query, tab, volga.WithParallelism(par), volga.WithMode(volga.Streaming),
						volga.WithMaxOutOfOrder(bound*time.Millisecond))
					if d := testutil.Diff(columns(items), byID(stream), byID(want), idLabel(tab)); d != "" {
						t.Errorf("seed %d, keys %v, streaming, parallelism %d vs reference (VOLGA_SEED=%d to replay):\n%s", seed, keys, par, seed, d)
					}
				}
			})
		}
	}
}

// idLabel labels rows sorted by id (ids are positions in event-time
// order).
func idLabel(tab *testutil.Table) func(int) string {
	byID := make([]int, len(tab.Rows))
	for i, r := range tab.Rows {
		byID[r[tab.Col("id")].(int64)] = i
	}
	return testutil.Label(tab, byID, "id", "user_id", "merchant", "ts")
}

// TestMLMapKeysAscending checks the Arrow output itself (sink.Value sorts
// map entries): the keys of every _cate map are strictly ascending.
func TestMLMapKeysAscending(t *testing.T) {
	var aggs []string
	for _, a := range testutil.MLAggs {
		if a.Cate != "" {
			aggs = append(aggs, fmt.Sprintf("%s OVER w AS %s", a.SQL(), a.Name()))
		}
	}
	query := "SELECT id, " + strings.Join(aggs, ", ") +
		" FROM events WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
	for _, seed := range testutil.Seeds(2) {
		tab := mlEvents(seed, testutil.Scale(300), 0)
		src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
		out := sink.NewCollector()
		p, err := volga.SQL(query, volga.WithSource("events", src), volga.WithSink(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		maps := 0
		for _, rec := range out.Records() {
			n, err := testutil.CheckMapKeysAscending(rec)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			maps += n
		}
		if maps == 0 {
			t.Fatalf("seed %d: no map with two keys or more was checked", seed)
		}
		out.Release()
		src.Close()
	}
}

// TestMLBuilder: ML aggregates written with the Go builder
// (pipeline.Fn) give the reference's values and the same output as SQL.
func TestMLBuilder(t *testing.T) {
	w := pipeline.Over("user_id").Range(2 * time.Second).ExcludeCurrent()
	rows := pipeline.Over("merchant").Rows(4)
	b := pipeline.From("events").EventTime("ts").Select("id").
		Agg("tf", pipeline.Fn("topn_frequency", "merchant", 3), w).
		Agg("top", pipeline.Fn("top", "amount", 2), rows).
		Agg("ew", pipeline.Fn("ew_avg", "price", 0.5), w).
		Agg("sc", pipeline.Fn("sum_cate_where", "amount", "flag", "category"), w).
		Agg("cw", pipeline.Fn("count_where", "price", "flag"), rows).
		Agg("p", pipeline.Fn("approx_percentile", "score", 0.25), pipeline.Over("user_id").Unbounded())
	user := testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: testutil.Frame{Preceding: 2000, ExcludeCurrent: true}}
	merchant := testutil.Window{Keys: []string{"merchant"}, Time: "ts", Frame: testutil.Frame{Rows: true, Preceding: 4}}
	items := []item{
		{testutil.Agg{Func: "topn_frequency", Arg: "merchant", Param: int64(3)}, user},
		{testutil.Agg{Func: "top", Arg: "amount", Param: int64(2)}, merchant},
		{testutil.Agg{Func: "ew_avg", Arg: "price", Param: 0.5}, user},
		{testutil.Agg{Func: "sum_cate_where", Arg: "amount", Cond: "flag", Cate: "category"}, user},
		{testutil.Agg{Func: "count_where", Arg: "price", Cond: "flag"}, merchant},
		{testutil.Agg{Func: "approx_percentile", Arg: "score", Param: 0.25},
			testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: testutil.Frame{Unbounded: true}}},
	}
	for _, seed := range testutil.Seeds(2) {
		tab := mlEvents(seed, testutil.Scale(300), 0)
		want := reference(tab, items)
		for _, par := range []int{1, 2} {
			src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
			out := sink.NewCollector()
			p, err := volga.Build(b, volga.WithSource("events", src), volga.WithSink(out), volga.WithParallelism(par))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := out.Rows()
			out.Release()
			src.Close()
			if d := testutil.Diff([]string{"id", "tf", "top", "ew", "sc", "cw", "p"}, got, want, testutil.Label(tab, nil, "id", "user_id", "merchant", "ts")); d != "" {
				t.Fatalf("seed %d, parallelism %d: builder vs reference:\n%s", seed, par, d)
			}
			fromSQL, _ := run(t, seed, featureSQL(items, ""), tab, volga.WithParallelism(par))
			if !slices.EqualFunc(got, fromSQL, func(a, b []any) bool { return slices.EqualFunc(a, b, testutil.Equal) }) {
				t.Fatalf("seed %d, parallelism %d: builder output differs from SQL output", seed, par)
			}
		}
	}
}

// groupQuery renders SELECT keys, window_start, window_end, aggs FROM
// events GROUP BY keys, tumble or hop.
func groupQuery(w testutil.GroupWindow, aggs []testutil.Agg) string {
	items := append(slices.Clone(w.Keys), "window_start", "window_end")
	for _, a := range aggs {
		items = append(items, a.SQL()+" AS "+a.Name())
	}
	win := fmt.Sprintf("tumble(%s, INTERVAL '%d' MILLISECOND)", w.Time, w.Size)
	if w.Slide != w.Size {
		win = fmt.Sprintf("hop(%s, INTERVAL '%d' MILLISECOND, INTERVAL '%d' MILLISECOND)", w.Time, w.Slide, w.Size)
	}
	return fmt.Sprintf("SELECT %s\nFROM events\nGROUP BY %s, %s", strings.Join(items, ", "), strings.Join(w.Keys, ", "), win)
}

// groupAggs mixes standard and ML aggregates for the GROUP BY suites,
// including the order-sensitive ones (first_value, last_value, ew_avg,
// drawdown), which must see each window's rows in (ts, arrival) order.
var groupAggs = []testutil.Agg{
	{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "avg", Arg: "price"}, {Func: "min", Arg: "category"},
	{Func: "max", Arg: "price"}, {Func: "var_samp", Arg: "price"}, {Func: "count_distinct", Arg: "category"},
	{Func: "stddev_pop", Arg: "amount"}, {Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "category"},
	{Func: "top", Arg: "amount", Param: int64(3)},
	{Func: "topn_frequency", Arg: "category", Param: int64(2)},
	{Func: "top1_ratio", Arg: "tag"},
	{Func: "count_where", Cond: "flag"},
	{Func: "avg_where", Arg: "price", Cond: "flag"},
	{Func: "max_where", Arg: "category", Cond: "flag"},
	{Func: "sum_cate", Arg: "price", Cate: "category"},
	{Func: "min_cate_where", Arg: "amount", Cond: "flag", Cate: "tag"},
	{Func: "ew_avg", Arg: "price", Param: 0.25},
	{Func: "drawdown", Arg: "score"},
	{Func: "approx_percentile", Arg: "price", Param: 0.75},
	{Func: "approx_count_distinct", Arg: "tag"},
}

// groupRef is the reference output of a GROUP BY query as rows.
func groupRef(tab *testutil.Table, w testutil.GroupWindow, aggs []testutil.Agg) [][]any {
	var out [][]any
	for _, r := range testutil.GroupBy(tab, w, aggs) {
		out = append(out, r.Values)
	}
	return out
}

// asSet sorts GROUP BY output rows by (window_start, keys), for comparing
// outputs whose order may differ.
func asSet(rows [][]any, nk int) [][]any {
	out := slices.Clone(rows)
	key := func(r []any) string { return fmt.Sprint(r[:nk]) }
	slices.SortStableFunc(out, func(a, b []any) int {
		if c := cmp.Compare(startMs(a[nk]), startMs(b[nk])); c != 0 {
			return c
		}
		return strings.Compare(key(a), key(b))
	})
	return out
}

func startMs(v any) int64 {
	if t, ok := v.(time.Time); ok {
		return t.UnixMilli()
	}
	return v.(int64)
}

func groupCols(w testutil.GroupWindow, aggs []testutil.Agg) []string {
	cols := append(slices.Clone(w.Keys), "window_start", "window_end")
	for _, a := range aggs {
		cols = append(cols, a.Name())
	}
	return cols
}

// groupWindows are the windows of the GROUP BY suites: tumble, and hop
// with a slide that divides the size and one that does not.
var groupWindows = []testutil.GroupWindow{
	{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 2000},
	{Keys: []string{"merchant", "user_id"}, Time: "ts", Size: 1000, Slide: 1000},
	{Keys: []string{"user_id"}, Time: "ts", Size: 3000, Slide: 1000},
	{Keys: []string{"merchant"}, Time: "ts", Size: 2500, Slide: 1000},
}

// TestGroupByMatchesReference runs tumble and hop queries with standard
// and ML aggregates through volga.SQL: the batch output equals the
// brute-force GROUP BY row for row (ordered by window start, then first
// arrival); streaming with shuffled arrival equals it as a set;
// parallelism 1 and 2.
func TestGroupByMatchesReference(t *testing.T) {
	for _, seed := range testutil.Seeds(2) {
		for _, w := range groupWindows {
			t.Run(fmt.Sprintf("seed=%d/keys=%v/size=%d/slide=%d", seed, w.Keys, w.Size, w.Slide), func(t *testing.T) {
				t.Parallel()
				groupMatchesReference(t, seed, w, groupAggs)
			})
		}
	}
}

func groupMatchesReference(t *testing.T, seed uint64, w testutil.GroupWindow, aggs []testutil.Agg) {
	t.Helper()
	const bound = 3000
	tab := mlEvents(seed, testutil.Scale(300), bound)
	query := groupQuery(w, aggs)
	want := groupRef(tab, w, aggs)
	cols := groupCols(w, aggs)
	rowLabel := func(rows [][]any) func(int) string {
		return func(i int) string {
			if i >= len(rows) {
				return "?"
			}
			return fmt.Sprintf("keys=%v start=%v", rows[i][:len(w.Keys)], rows[i][len(w.Keys)])
		}
	}
	for _, par := range []int{1, 2} {
		got, p := run(t, seed, query, tab, volga.WithParallelism(par))
		if d := testutil.Diff(cols, got, want, rowLabel(want)); d != "" {
			t.Errorf("seed %d, batch, parallelism %d vs reference:\n%s\n%s", seed, par, query, d)
		}
		if st := p.Stats(); st.RowsOut != int64(len(want)) {
			t.Errorf("seed %d: batch Stats().RowsOut = %d, want %d", seed, st.RowsOut, len(want))
		}
		stream, _ := run(t, seed, query, tab, volga.WithParallelism(par), volga.WithMode(volga.Streaming),
			volga.WithMaxOutOfOrder(bound*time.Millisecond))
		ws := asSet(want, len(w.Keys))
		if d := testutil.Diff(cols, asSet(stream, len(w.Keys)), ws, rowLabel(ws)); d != "" {
			t.Errorf("seed %d, streaming, parallelism %d vs reference:\n%s\n%s", seed, par, query, d)
		}
	}
}

// TestGroupByLateRows: in streaming mode, rows behind the watermark are
// dropped from their windows, counted and handed to the late sink; the
// windows equal the reference over the accepted rows.
func TestGroupByLateRows(t *testing.T) {
	const bound = 500
	w := testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 1000}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "top", Arg: "price", Param: int64(2)},
		{Func: "count_cate", Arg: "amount", Cate: "category"}, {Func: "approx_percentile", Arg: "score", Param: 0.5},
		{Func: "drawdown", Arg: "score"}, {Func: "first_value", Arg: "price"}}
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(300)))
		// Most rows within the bound; some held back long enough to be late.
		order := testutil.Shuffle(rng, events, "ts", nil, bound)
		for k := 0; k < len(order)/10; k++ {
			p := rng.IntN(len(order))
			q := min(len(order)-1, p+5+rng.IntN(20))
			row := order[p]
			order = slices.Insert(slices.Delete(order, p, p+1), q, row)
		}
		tab := events.Subset(order)
		// The source reads one row per batch, so the watermark after row i
		// is the newest time among rows 0..i minus the bound.
		var accepted []int
		var nLate int
		maxTs := int64(-1 << 62)
		for i, r := range tab.Rows {
			ts := r[tab.Col("ts")].(int64)
			if ts <= maxTs-bound {
				nLate++
			} else {
				accepted = append(accepted, i)
			}
			maxTs = max(maxTs, ts)
		}
		if nLate == 0 {
			t.Fatalf("seed %d: no late rows in the test data", seed)
		}
		src := testutil.NewSource(tab.Schema, tab.Batches(rng, 1)...)
		out, late := sink.NewCollector(), sink.NewCollector()
		p, err := volga.SQL(groupQuery(w, aggs), volga.WithSource("events", src), volga.WithSink(out), volga.WithLateSink(late),
			volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(bound*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := out.Rows()
		lateRows := late.Rows()
		out.Release()
		late.Release()
		src.Close()
		if st := p.Stats(); st.LateDropped != int64(nLate) || len(lateRows) != nLate {
			t.Errorf("seed %d: %d late rows dropped, %d sent to the late sink, want %d", seed, st.LateDropped, len(lateRows), nLate)
		}
		want := asSet(groupRef(tab.Subset(accepted), w, aggs), 1)
		if d := testutil.Diff(groupCols(w, aggs), asSet(got, 1), want, func(int) string { return "" }); d != "" {
			t.Errorf("seed %d: streaming with late rows vs reference over the accepted rows:\n%s", seed, d)
		}
	}
}

// TestGroupByNullKey: NULL is a grouping key of its own, and window_start
// and window_end are timestamps when the event time is one.
func TestGroupByNullKey(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tab := &testutil.Table{Schema: schema, Rows: [][]any{
		{"a", int64(500), int64(1)}, {nil, int64(600), int64(2)}, {nil, int64(1500), int64(3)},
		{"a", int64(900), nil}, {nil, int64(700), int64(4)}, {"b", int64(1999), int64(5)},
	}}
	got, _ := run(t, 1, "SELECT k, window_start, window_end, count(*) AS n, top(x, 2) AS t FROM events GROUP BY k, tumble(ts, INTERVAL '1' SECOND)", tab)
	at := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	want := [][]any{
		{"a", at(0), at(1000), int64(2), []any{int64(1)}},
		{nil, at(0), at(1000), int64(2), []any{int64(4), int64(2)}},
		{nil, at(1000), at(2000), int64(1), []any{int64(3)}},
		{"b", at(1000), at(2000), int64(1), []any{int64(5)}},
	}
	if d := testutil.Diff([]string{"k", "window_start", "window_end", "n", "t"}, got, want, func(int) string { return "" }); d != "" {
		t.Fatal(d)
	}
}

// TestGroupByOrderSensitiveAggregates is the regression test of a bug
// found by the GROUP BY reference suite: tumble/hop windows fed their
// states in arrival order, so first_value, last_value, ew_avg and drawdown
// followed arrival instead of (ts, arrival) order (SPEC section 4) when
// rows arrived out of time order. Here two rows of one window arrive
// newest first, in batch mode.
func TestGroupByOrderSensitiveAggregates(t *testing.T) {
	tab := &testutil.Table{Schema: testutil.EventSchema, Rows: [][]any{
		{int64(1), int64(7), "m", int64(600), nil, 10.0, nil}, // arrives first, newer
		{int64(0), int64(7), "m", int64(100), nil, 20.0, nil},
	}}
	got, _ := run(t, 1, `SELECT user_id, first_value(price) AS f, last_value(price) AS l, ew_avg(price, 0.5) AS e, drawdown(price) AS d
FROM events GROUP BY user_id, tumble(ts, INTERVAL '1' SECOND)`, tab)
	// In time order the prices are 20 then 10: first 20, last 10,
	// ew_avg (10 + 0.5*20) / 1.5, drawdown (20-10)/20.
	want := [][]any{{int64(7), 20.0, 10.0, 40.0 / 3, 0.5}}
	if d := testutil.Diff([]string{"user_id", "f", "l", "e", "d"}, got, want, func(int) string { return "user_id=7 window [0, 1000)" }); d != "" {
		t.Errorf("GROUP BY aggregates follow arrival order, not event time:\n%s", d)
	}
}
