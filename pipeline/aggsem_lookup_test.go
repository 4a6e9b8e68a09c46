package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
)

// TestAggSemanticsLookupsAndPaging: the aggregates of aggsemAggs over
// bounded frames, on enough rows per key that lookups merge tiles (frames
// of more than 256 rows) and that paging and a tiny memory budget move
// key state through its encoding, give the reference's values: batch
// output with row paging, batch output under a memory budget, and
// Lookup(k, t) on the finished pipeline (the frame a row at (k, t) would
// have, without that row) at times on, between and after the rows.
func TestAggSemanticsLookupsAndPaging(t *testing.T) {
	aggs := aggsemAggs()
	frames := []testutil.Frame{
		{Preceding: 60_000}, // the whole input: lookups over > 256 rows
		{Preceding: 3200},
		{Preceding: 3200, EndPreceding: 300, ExcludeCurrent: true},
		{Rows: true, Preceding: 4},
	}
	for _, seed := range testutil.Seeds(1) {
		rng := testutil.Rand(seed)
		tab := aggsemEvents(rng, testutil.Scale(700))
		for _, fr := range frames {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, fr), func(t *testing.T) {
				t.Parallel()
				win := testutil.Window{Keys: []string{"k"}, Time: "ts", Frame: fr}
				items := make([]item, len(aggs))
				for i, a := range aggs {
					items[i] = item{a, win}
				}
				query := featureSQL(items, "")
				want := reference(tab, items)
				label := testutil.Label(tab, nil, "id", "k", "ts")
				if !fr.Rows && fr.EndPreceding == 0 {
					got, _ := run(t, seed, query, tab, volga.WithRowPaging(16))
					if d := testutil.Diff(columns(items), aggsemRows(got), want, label); d != "" {
						t.Errorf("seed %d, row paging vs reference:\n%s", seed, d)
					}
				}
				got, _ := run(t, seed, query, tab, volga.WithMemoryBudget(1))
				if d := testutil.Diff(columns(items), aggsemRows(got), want, label); d != "" {
					t.Errorf("seed %d, memory budget vs reference:\n%s", seed, d)
				}
				aggsemCheckLookups(t, seed, query, tab, win, aggs)
			})
		}
	}
}

// aggsemCheckLookups runs query over tab and compares lookups of both
// keys at times around the rows' with the reference.
func aggsemCheckLookups(t *testing.T, seed uint64, query string, tab *testutil.Table, win testutil.Window, aggs []testutil.Agg) {
	t.Helper()
	src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(query, volga.WithSource("events", src), volga.WithSink(out), volga.WithLookupRetention(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rng := testutil.Rand(seed + 100)
	tc := tab.Col("ts")
	first, last := tab.Rows[0][tc].(int64), tab.Rows[len(tab.Rows)-1][tc].(int64)
	names := make([]string, len(aggs))
	for i := range aggs {
		names[i] = fmt.Sprint(aggs[i].SQL())
	}
	for range 25 {
		key := int64(1 + rng.IntN(2))
		at := first + rng.Int64N(last-first+400)
		if rng.IntN(2) == 0 {
			at -= at % 100 // on the rows' times
		}
		res, err := p.Lookup(context.Background(), map[string]any{"k": key}, time.UnixMilli(at), nil)
		if err != nil {
			t.Fatalf("Lookup(k=%d, %d): %v", key, at, err)
		}
		// The reference: a row at (key, at) arriving last, excluded from
		// its own frame.
		phantom := make([]any, len(tab.Schema.Fields()))
		phantom[tab.Col("id")], phantom[tab.Col("k")], phantom[tc] = int64(-1), key, at
		with := &testutil.Table{Schema: tab.Schema, Rows: append(tab.Rows[:len(tab.Rows):len(tab.Rows)], phantom)}
		pw := win
		pw.Frame.ExcludeCurrent = true
		all := make([]int, len(with.Rows))
		for i := range all {
			all[i] = i
		}
		want := testutil.EvalAt(with, pw, aggs, all, len(with.Rows)-1)
		got := make([]any, len(res.Values))
		for i, v := range res.Values {
			got[i] = aggsemMillis(v)
		}
		if d := testutil.Diff(names, [][]any{got}, [][]any{want}, func(int) string { return fmt.Sprintf("k=%d at=%d", key, at) }); d != "" {
			t.Errorf("seed %d, lookup vs reference:\n%s", seed, d)
		}
	}
}
