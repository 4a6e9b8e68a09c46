package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testhook"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

var spineSchema = arrow.NewSchema([]arrow.Field{
	{Name: "label", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// backfillItems returns the select items of every lookup aggregate over
// each of frames, by user, and their names.
func backfillItems(frames []testutil.Frame) (items, names []string) {
	for f, fr := range frames {
		for a, ag := range lookupAggs {
			name := fmt.Sprintf("f%d_a%d", f, a)
			items = append(items, fmt.Sprintf("%s OVER (PARTITION BY user_id ORDER BY ts %s) AS %s", ag.SQL(), fr.SQL(), name))
			names = append(names, name)
		}
	}
	return items, names
}

// TestBackfillMatchesDefinition: every spine row gets, for each window,
// the aggregate over the frame a row at its (key, time) would have without
// itself (SPEC section 6), over the events that pass WHERE; strict mode
// leaves out the events at the spine row's own time. Labels pass through
// and the output keeps spine order, for parallelism 1 and 2, from sources
// that bound the times to come (read interleaved) and from sources that
// do not (events, then spine).
func TestBackfillMatchesDefinition(t *testing.T) {
	frames := append(lookupFrames, testutil.Frame{Unbounded: true}, testutil.Frame{Unbounded: true, EndPreceding: 1500})
	items, names := backfillItems(frames)
	query := "SELECT id, " + strings.Join(items, ", ") + " FROM events WHERE amount IS NULL OR amount > -40"
	for _, seed := range testutil.Seeds(2) {
		for _, c := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			strict, bounded := c[0], c[1]
			for _, par := range []int{1, 2} {
				rng := testutil.Rand(seed)
				cfg := testutil.DefaultEvents(testutil.Scale(300))
				tab := testutil.Events(rng, cfg)
				kept, _ := tab.Filter(func(r []any) bool { a := r[tab.Col("amount")]; return a == nil || a.(int64) > -40 })
				// Spine: random keys (NULL included) at random times, some
				// exactly at event times.
				spine := &testutil.Table{Schema: spineSchema}
				for i := 0; i < 80; i++ {
					var user any = int64(1 + rng.IntN(cfg.Users+1))
					if rng.IntN(10) == 0 {
						user = nil
					}
					ts := tab.Rows[rng.IntN(len(tab.Rows))][tab.Col("ts")].(int64)
					if rng.IntN(2) == 0 {
						ts += int64(rng.IntN(3000)) - 1500
					}
					spine.Rows = append(spine.Rows, []any{fmt.Sprintf("s%d", i), ts, user})
				}
				plan, err := pipeline.ParseSQL(query)
				if err != nil {
					t.Fatal(err)
				}
				out := sink.NewCollector()
				eb, sb := tab.Batches(rng, 40), spine.Batches(rng, 16)
				var events, spineSrc source.Source = testutil.NewSource(tab.Schema, eb...), testutil.NewSource(spineSchema, sb...)
				if bounded {
					events, spineSrc = source.NewMemory(tab.Schema, eb...), source.NewMemory(spineSchema, sb...)
				}
				err = pipeline.Backfill(context.Background(), plan, events, spineSrc, out, "", strict, pipeline.RunOptions{Parallelism: par})
				if err != nil {
					t.Fatal(err)
				}
				desc := fmt.Sprintf("seed %d strict %v bounded %v par %d", seed, strict, bounded, par)
				checkBackfillDefinition(t, desc, kept, spine, out.Rows(), frames, names, strict)
			}
		}
	}
}

// checkBackfillDefinition fails t unless got, the output of a backfill
// over the events kept (those passing WHERE) and spine, holds for each
// spine row, in spine order, the row itself and then, for each frame and
// each of lookupAggs, the aggregate over the frame a row at its key and
// time would have without itself (SPEC section 6): the events at or
// before its time, or before it when strict.
func checkBackfillDefinition(t *testing.T, desc string, kept, spine *testutil.Table, got [][]any, frames []testutil.Frame, names []string, strict bool) {
	t.Helper()
	if len(got) != len(spine.Rows) {
		t.Fatalf("%s: backfill gave %d rows for %d spine rows", desc, len(got), len(spine.Rows))
	}
	tsCol := kept.Col("ts")
	for i, srow := range spine.Rows {
		row := got[i]
		if row[0] != srow[0] || row[1] != srow[1] || !testutil.Equal(row[2], srow[2]) {
			t.Fatalf("%s: output row %d starts %v, want the spine row %v", desc, i, row[:3], srow)
		}
		at := srow[1].(int64)
		// Events visible to the spine row, then the row itself as the
		// last arrival, left out of its own frame.
		ext := &testutil.Table{Schema: kept.Schema}
		for _, r := range kept.Rows {
			if !strict || r[tsCol].(int64) < at {
				ext.Rows = append(ext.Rows, r)
			}
		}
		ext.Rows = append(ext.Rows, []any{int64(-1), srow[2], nil, at, nil, nil, nil})
		all := make([]int, len(ext.Rows))
		for k := range all {
			all[k] = k
		}
		var want []any
		for _, fr := range frames {
			fr.ExcludeCurrent = true
			want = append(want, testutil.EvalAt(ext, testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: fr}, lookupAggs, all, len(all)-1)...)
		}
		for k, w := range want {
			if !testutil.Equal(row[3+k], w) {
				t.Fatalf("%s: spine row %v: %s = %v, want %v", desc, srow, names[k], row[3+k], w)
			}
		}
	}
}

// TestBackfillFinishesEarly: a backfill over events and a spine in time
// order, from sources that bound the times to come, writes training rows
// before it has read all the events (rather than holding every event to
// the end), with one task or two, and the rows a backfill reading the
// events, then the spine, writes.
func TestBackfillFinishesEarly(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(20)()
	rng := testutil.Rand(31)
	tab := testutil.Events(rng, testutil.DefaultEvents(3000))
	spine := &testutil.Table{Schema: spineSchema}
	for i := 0; i < len(tab.Rows); i += 7 {
		spine.Rows = append(spine.Rows, []any{fmt.Sprintf("s%d", i), tab.Value(i, "ts").(int64) + 1, tab.Value(i, "user_id")})
	}
	eb, sb := tab.Batches(rng, 40), spine.Batches(rng, 10)
	plan, err := pipeline.ParseSQL(`SELECT sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s2,
	count(*) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS c3 FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	run := func(events source.Source, out sink.Sink, par int) error {
		return pipeline.Backfill(context.Background(), plan, events, source.NewMemory(spineSchema, sb...), out, "", false, pipeline.RunOptions{Parallelism: par})
	}
	undo := pipeline.SetInterleaveBackfill(false)
	want := sink.NewCollector()
	err = run(source.NewMemory(tab.Schema, eb...), want, 1)
	undo()
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Rows()) != len(spine.Rows) {
		t.Fatalf("%d rows for %d spine rows", len(want.Rows()), len(spine.Rows))
	}
	for _, par := range []int{1, 2} {
		got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
		gated := &gatedSource{boundedSource: source.NewMemory(tab.Schema, eb...), gateAt: len(eb) - 2, first: got.first}
		if err := run(gated, got, par); err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
			t.Fatalf("parallelism %d: interleaved, the output differs:\n%s", par, d)
		}
	}
}

func TestBackfillErrors(t *testing.T) {
	tab := testutil.Events(testutil.Rand(1), testutil.DefaultEvents(20))
	run := func(query string, spine *arrow.Schema) error {
		plan, err := pipeline.ParseSQL(query)
		if err != nil {
			t.Fatal(err)
		}
		return pipeline.Backfill(context.Background(), plan, testutil.NewSource(tab.Schema), testutil.NewSource(spine), sink.NewCollector(), "", false, pipeline.RunOptions{})
	}
	q := `SELECT count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS n FROM events`
	noKey := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if err := run(q, noKey); err == nil || !strings.Contains(err.Error(), `"user_id"`) || !errors.Is(err, pipeline.ErrSpine) {
		t.Errorf("spine without the key column: %v (ErrSpine: %v)", err, errors.Is(err, pipeline.ErrSpine))
	}
	badType := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.BinaryTypes.String}, {Name: "user_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if err := run(q, badType); err == nil || !strings.Contains(err.Error(), "type") || !errors.Is(err, pipeline.ErrSpine) {
		t.Errorf("spine time column of the wrong type: %v", err)
	}
	// A label named like a feature (in another case) would be a second
	// column "n" in the output.
	dup := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.PrimitiveTypes.Int64}, {Name: "user_id", Type: arrow.PrimitiveTypes.Int64}, {Name: "N", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if err := run(q, dup); err == nil || !strings.Contains(err.Error(), `"N" has the name of a feature`) || !errors.Is(err, pipeline.ErrSpine) {
		t.Errorf("spine column named as a feature: %v", err)
	}
	if err := run(`SELECT user_id, count(*) AS n FROM events GROUP BY user_id, tumble(ts, INTERVAL '1' HOUR)`, spineSchema); err == nil || errors.Is(err, pipeline.ErrSpine) {
		t.Errorf("backfill of a tumble query: %v, want an error about the query, not the spine", err)
	}
}

// TestBackfillColdKeysMatchDefinition: a backfill whose spine asks, over
// a long span, about keys with no event (cold-start users) as well as
// keys with events, from sources read side by side and released as they
// go, lets the cold keys go once their spine rows are older than every
// frame and forgets them, and every spine row still gets what the
// definition gives (SPEC section 6), with one task and two.
func TestBackfillColdKeysMatchDefinition(t *testing.T) {
	// Rows released every 64 at most, keys forgotten a few at a time.
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetReleaseMaxRows(64, 64)()
	defer testhook.SetKeyForgetMin(4)()
	frames := lookupFrames[:3] // RANGE frames: their keys can go quiet
	items, names := backfillItems(frames)
	query := "SELECT id, " + strings.Join(items, ", ") + " FROM events"
	for _, par := range []int{1, 2} {
		rng := testutil.Rand(testutil.Seeds(1)[0] + uint64(par))
		tab := testutil.Events(rng, testutil.DefaultEvents(600))
		// Spine in time order over the events' span: half the rows ask
		// about a key of the events, half about a key of its own.
		first, last := tab.Value(0, "ts").(int64), tab.Value(len(tab.Rows)-1, "ts").(int64)
		spine := &testutil.Table{Schema: spineSchema}
		const rows = 200
		for i := range rows {
			ts := first + (last-first)*int64(i)/rows + int64(rng.IntN(500))
			user := int64(1000 + i)
			if i%2 == 0 {
				user = int64(1 + rng.IntN(6))
			}
			spine.Rows = append(spine.Rows, []any{fmt.Sprintf("s%d", i), ts, user})
		}
		out := sink.NewCollector()
		reg := prometheus.NewRegistry()
		err := volga.Backfill(context.Background(), query, source.NewMemory(spineSchema, spine.Batches(rng, 16)...), out,
			volga.WithSource("events", source.NewMemory(tab.Schema, tab.Batches(rng, 40)...)),
			volga.WithParallelism(par), volga.WithMetrics(reg))
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("par %d", par)
		checkBackfillDefinition(t, desc, tab, spine, out.Rows(), frames, names, false)
		forgotten := metricSum(t, reg, "volga_window_forgotten_keys_total")
		if forgotten < rows/4 {
			t.Fatalf("%s: %.0f keys forgotten, fewer than half the %d cold keys", desc, forgotten, rows/2)
		}
		t.Logf("%s: %.0f keys forgotten", desc, forgotten)
	}
}
