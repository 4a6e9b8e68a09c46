package volga_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// clusterInputQuery mixes ML aggregates, RANGE and ROWS frames and a
// second window stage keyed by merchant (which holds its rows to the end
// of the input), all first partitioned by user_id.
const clusterInputQuery = `
SELECT id, user_id, ts,
       topn_frequency(category, 2) OVER w1d AS top_cat,
       sum_cate(amount, merchant) OVER w1h AS spend_by_merchant,
       top1_ratio(merchant) OVER w1d AS top1,
       sum(price) OVER r3 AS price_r3,
       count(*) OVER m1h AS merchant_n
FROM events
WINDOW w1h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       w1d AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW),
       r3  AS (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW),
       m1h AS (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`

// TestWithClusterInput: a batch run that orders its time-ordered input by
// user itself gives every row exactly the features of a run in input
// order, with one task or several; its output comes user by user, the
// users in the order of their first events and each user's rows in input
// order. Only the first stage (by user) is run key by key; the merchant
// stage, keyed otherwise, still sees every row.
func TestWithClusterInput(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(93), testutil.EventConfig{
		Rows: testutil.Scale(4000), Users: 60, Merchants: 7, Start: 1_700_000_000_000,
		StepMs: 60_000, MaxSteps: 20, DupRate: 0.1, NullRate: 0.05,
	})
	batches := tab.Batches(testutil.Rand(94), 64)
	defer arrowutil.ReleaseAll(batches)
	run := func(opts ...volga.Option) [][]any {
		t.Helper()
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(clusterInputQuery, append([]volga.Option{
			volga.WithSource("events", source.NewMemory(tab.Schema, batches...)), volga.WithSink(out)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Rows()
	}
	want := run()
	// Users in the order of their first rows, and each user's rows in
	// input (= output) order.
	var users []any
	byUser := map[string][]string{}
	for _, r := range want {
		u := fmt.Sprint(r[1])
		if _, ok := byUser[u]; !ok {
			users = append(users, r[1])
		}
		byUser[u] = append(byUser[u], fmt.Sprint(r))
	}
	if len(users) < 10 {
		t.Fatalf("only %d users", len(users))
	}
	for _, par := range []int{1, 2, 3} {
		got := run(volga.WithClusterInput("USER_ID"), volga.WithParallelism(par))
		if len(got) != len(want) {
			t.Fatalf("parallelism %d: %d rows, want %d", par, len(got), len(want))
		}
		i := 0
		for _, u := range users {
			rows := byUser[fmt.Sprint(u)]
			for j, w := range rows {
				if g := fmt.Sprint(got[i]); g != w {
					t.Fatalf("parallelism %d: row %d (user %v's row %d) is\n%s, want\n%s", par, i, u, j, g, w)
				}
				i++
			}
		}
	}
	// The same promise given twice is one promise.
	got := run(volga.WithClusterInput("user_id"), volga.WithClusteredBy("user_id"), volga.WithParallelism(2))
	slices.SortFunc(got, func(a, b []any) int { return cmp.Compare(a[0].(int64), b[0].(int64)) })
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("with WithClusteredBy too: row %d is %v, want %v", i, got[i], want[i])
		}
	}
}

// TestWithClusterInputGroupBy: a query of GROUP BY windows over the input
// ordered by user gives the windows of a run in input order, user by
// user (the users in the order of their first events, each user's
// windows by start).
func TestWithClusterInputGroupBy(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(97), testutil.EventConfig{
		Rows: testutil.Scale(3000), Users: 40, Merchants: 5, Start: 1_700_000_000_000,
		StepMs: 60_000, MaxSteps: 20, DupRate: 0.1, NullRate: 0.05,
	})
	batches := tab.Batches(testutil.Rand(98), 64)
	defer arrowutil.ReleaseAll(batches)
	const query = `SELECT user_id, window_start, count(*) AS n, sum(price) AS s, topn_frequency(merchant, 2) AS top
FROM events GROUP BY user_id, hop(ts, INTERVAL '30' MINUTE, INTERVAL '1' HOUR)`
	run := func(opts ...volga.Option) [][]any {
		t.Helper()
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(query, append([]volga.Option{
			volga.WithSource("events", source.NewMemory(tab.Schema, batches...)), volga.WithSink(out)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Rows()
	}
	want := run()
	var users []string
	seen := map[string]bool{}
	for _, r := range tab.Rows {
		if u := fmt.Sprint(r[tab.Col("user_id")]); !seen[u] {
			seen[u] = true
			users = append(users, u)
		}
	}
	// Without the order: windows by start across users. With it: each
	// user's windows (by start), user by user.
	var ordered [][]any
	for _, u := range users {
		for _, r := range want {
			if fmt.Sprint(r[0]) == u {
				ordered = append(ordered, r)
			}
		}
	}
	if len(ordered) != len(want) || len(want) < 100 {
		t.Fatalf("%d windows, %d of them of the input's users", len(want), len(ordered))
	}
	for _, par := range []int{1, 2} {
		got := run(volga.WithClusterInput("user_id"), volga.WithParallelism(par))
		if d := testutil.Diff(nil, got, ordered, nil); d != "" {
			t.Fatalf("parallelism %d:\n%s", par, d)
		}
	}
}

// TestWithClusterInputRefused: what WithClusterInput cannot do is refused
// when the pipeline is built (or the backfill starts), with an error
// saying why.
func TestWithClusterInputRefused(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(95), testutil.EventConfig{Rows: 50, Users: 5, Merchants: 3, Start: 1_700_000_000_000, StepMs: 1000, MaxSteps: 3})
	batches := tab.Batches(testutil.Rand(96), 20)
	defer arrowutil.ReleaseAll(batches)
	for name, c := range map[string]struct {
		opts []volga.Option
		want string
	}{
		"streaming":   {[]volga.Option{volga.WithClusterInput("user_id"), volga.WithMode(volga.Streaming)}, "batch runs only"},
		"checkpoints": {[]volga.Option{volga.WithClusterInput("user_id"), volga.WithCheckpoints("mem://", 0)}, "cannot be checkpointed"},
		"two orders":  {[]volga.Option{volga.WithClusterInput("user_id"), volga.WithClusteredBy("merchant")}, "name different columns"},
		"no column":   {[]volga.Option{volga.WithClusterInput("user")}, `no column "user"`},
		"float":       {[]volga.Option{volga.WithClusterInput("price")}, "cannot be told apart"},
	} {
		_, err := volga.SQL(clusterInputQuery, append([]volga.Option{volga.WithSource("events", source.NewMemory(tab.Schema, batches...))}, c.opts...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, c.want)
		}
	}
	spine := source.NewMemory(tab.Schema, batches...)
	err := volga.Backfill(context.Background(), clusterInputQuery, spine, sink.NewCollector(),
		volga.WithSource("events", source.NewMemory(tab.Schema, batches...)), volga.WithClusterInput("user_id"))
	if err == nil || !strings.Contains(err.Error(), "does not apply to backfills") {
		t.Errorf("backfill: err %v", err)
	}
}

// TestClusterInputSpilled: an input clustered by a source that spilled it
// (its keys come part by part, not by first row) runs as promised with
// WithClusteredBy: each row gets the features of a run in input order.
func TestClusterInputSpilled(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(99), testutil.EventConfig{
		Rows: testutil.Scale(3000), Users: 50, Merchants: 7, Start: 1_700_000_000_000,
		StepMs: 60_000, MaxSteps: 20, DupRate: 0.1, NullRate: 0.05,
	})
	batches := tab.Batches(testutil.Rand(100), 64)
	defer arrowutil.ReleaseAll(batches)
	run := func(src source.Source, opts ...volga.Option) [][]any {
		t.Helper()
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(clusterInputQuery, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Rows()
	}
	want := run(source.NewMemory(tab.Schema, batches...))
	dir := t.TempDir()
	spilled, err := source.NewClustered(source.NewMemory(tab.Schema, batches...), []string{"user_id"}, source.WithSpill(dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	got := run(spilled, volga.WithClusteredBy("user_id"), volga.WithParallelism(2))
	slices.SortFunc(got, func(a, b []any) int { return cmp.Compare(a[0].(int64), b[0].(int64)) })
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("row %d is %v, want %v", i, got[i], want[i])
		}
	}
}
