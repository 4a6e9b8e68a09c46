package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/window"
)

// lookupFrames are the frames a lookup test covers (UNBOUNDED frames are
// not served by lookups).
var lookupFrames = []testutil.Frame{
	{Preceding: 2000},
	{Preceding: 2000, ExcludeCurrent: true},
	{Preceding: 5000, EndPreceding: 1000},
	{Rows: true, Preceding: 3},
	{Rows: true, Preceding: 2, ExcludeCurrent: true},
}

var lookupAggs = []testutil.Agg{
	{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "avg", Arg: "price"},
	{Func: "max", Arg: "price"}, {Func: "min", Arg: "category"},
	{Func: "last_value", Arg: "amount"}, {Func: "count_distinct", Arg: "category"},
}

func lookupQuery() (string, []string) {
	var items, names []string
	for f, fr := range lookupFrames {
		for a, ag := range lookupAggs {
			name := fmt.Sprintf("f%d_a%d", f, a)
			items = append(items, fmt.Sprintf("%s OVER (PARTITION BY user_id ORDER BY ts %s) AS %s", ag.SQL(), fr.SQL(), name))
			names = append(names, name)
		}
	}
	return "SELECT id, " + strings.Join(items, ", ") + " FROM events", names
}

// TestLookupMatchesDefinition: after a batch run, Lookup(key, t) equals, for
// every window, the aggregate over the frame a row at (key, t) would have
// without that row, computed by definition; with a candidate row, the
// frame with the candidate in it (left out again under EXCLUDE CURRENT
// ROW). Lookup times are at or after each key's last event, where the
// operator holds every row a frame can reach.
func TestLookupMatchesDefinition(t *testing.T) {
	query, names := lookupQuery()
	for _, seed := range testutil.Seeds(2) {
		for _, par := range []int{1, 3} {
			rng := testutil.Rand(seed)
			cfg := testutil.DefaultEvents(testutil.Scale(400))
			cfg.NullKeys = false
			tab := testutil.Events(rng, cfg)
			plan, err := pipeline.ParseSQL(query)
			if err != nil {
				t.Fatal(err)
			}
			c, err := pipeline.Compile(plan, tab.Schema, "")
			if err != nil {
				t.Fatal(err)
			}
			live := &pipeline.Live{}
			src := testutil.NewSource(tab.Schema, tab.Batches(rng, 64)...)
			if err := c.Run(context.Background(), src, sink.NewCollector(), pipeline.RunOptions{Mode: pipeline.Batch, Parallelism: par, Live: live}); err != nil {
				t.Fatal(err)
			}
			last := map[int64]int64{}
			for _, r := range tab.Rows {
				last[r[tab.Col("user_id")].(int64)] = r[tab.Col("ts")].(int64)
			}
			for q := 0; q < 60; q++ {
				user := int64(1 + rng.IntN(cfg.Users+1)) // one user may have no events
				at := last[user] + int64(rng.IntN(4000))
				if last[user] == 0 {
					at = cfg.Start + int64(rng.IntN(100000))
				}
				var cand map[string]any
				var candRow []any
				if rng.IntN(2) == 0 {
					candRow = []any{int64(-1), user, "m0", at, int64(rng.IntN(100)), float64(rng.IntN(1000)) / 10, "zzz"}
					cand = map[string]any{"id": int64(-1), "user_id": user, "merchant": "m0", "ts": at, "amount": candRow[4], "price": candRow[5], "category": "zzz"}
				}
				got, err := live.Lookup(context.Background(), map[string]any{"user_id": user}, time.UnixMilli(at), cand)
				if err != nil {
					t.Fatalf("seed %d par %d: Lookup(%d, %d): %v", seed, par, user, at, err)
				}
				if got.Watermark != window.End {
					t.Errorf("watermark after a batch run = %d, want End", got.Watermark)
				}
				// The probe: the candidate, or a placeholder row whose
				// values no frame sees (it is left out).
				probe := candRow
				if probe == nil {
					probe = []any{int64(-1), user, "m0", at, nil, nil, nil}
				}
				ext := &testutil.Table{Schema: tab.Schema, Rows: append(append([][]any{}, tab.Rows...), probe)}
				rows := make([]int, len(ext.Rows))
				for i := range rows {
					rows[i] = i
				}
				var want []any
				for _, fr := range lookupFrames {
					if cand == nil {
						fr.ExcludeCurrent = true
					}
					want = append(want, testutil.EvalAt(ext, testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: fr}, lookupAggs, rows, len(rows)-1)...)
				}
				if len(got.Values) != len(want) {
					t.Fatalf("got %d features, want %d", len(got.Values), len(want))
				}
				for i := range want {
					if got.Names[i] != names[i] {
						t.Fatalf("feature %d is named %q, want %q", i, got.Names[i], names[i])
					}
					if !testutil.Equal(got.Values[i], want[i]) {
						t.Fatalf("seed %d par %d: Lookup(user %d, t %d, candidate %v): %s = %v, want %v",
							seed, par, user, at, cand != nil, names[i], got.Values[i], want[i])
					}
				}
			}
		}
	}
}

func TestLookupErrors(t *testing.T) {
	tab := testutil.Events(testutil.Rand(1), testutil.DefaultEvents(50))
	compile := func(q string) *pipeline.Compiled {
		plan, err := pipeline.ParseSQL(q)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pipeline.Compile(plan, tab.Schema, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	live := &pipeline.Live{}
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": 1}, time.Now(), nil); !errors.Is(err, pipeline.ErrNotRunning) {
		t.Errorf("lookup before run: %v, want ErrNotRunning", err)
	}
	c := compile(`SELECT id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS s FROM events`)
	if err := c.Run(context.Background(), testutil.NewSource(tab.Schema, tab.Record(nil, 0, len(tab.Rows))), sink.NewCollector(), pipeline.RunOptions{Live: live}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.Lookup(context.Background(), map[string]any{"merchant": "m1"}, time.Now(), nil); err == nil || !strings.Contains(err.Error(), `"user_id"`) {
		t.Errorf("lookup without the key column: %v", err)
	}
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": "x"}, time.Now(), nil); err == nil {
		t.Error("lookup with a string for an integer key: no error")
	}
	first := tab.Rows[0][tab.Col("ts")].(int64)
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": tab.Rows[0][tab.Col("user_id")]}, time.UnixMilli(first-100000), nil); !errors.Is(err, window.ErrTooOld) {
		// The first rows of a key are dropped once frames pass them.
		t.Logf("lookup far in the past: %v (rows may still be held for a key with few events)", err)
	}
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": 1}, time.Now(), map[string]any{"amount": "many"}); err == nil {
		t.Error("candidate with a string amount: no error")
	}
	// A misspelt column is refused, as over HTTP, not taken for a
	// NULL amount (the row below would count in the sum as one).
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": 1}, time.Now(), map[string]any{"amout": 1.0}); err == nil || !strings.Contains(err.Error(), `unknown column "amout"`) {
		t.Errorf("candidate with an unknown column: %v", err)
	}
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": 1, "merchant": "m1"}, time.Now(), nil); err == nil || !strings.Contains(err.Error(), `unknown column "merchant"`) {
		t.Errorf("lookup key with a column that is not a key column: %v", err)
	}
	if _, err := live.Lookup(context.Background(), map[string]any{"user_id": 1, "USER_ID": 2}, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("lookup key with its column twice: %v", err)
	}
	// The spellings the checks accept: any case, for key and row alike.
	if _, err := live.Lookup(context.Background(), map[string]any{"User_ID": 1}, time.Now(), map[string]any{"AMOUNT": 1.0}); err != nil {
		t.Errorf("lookup with columns in another case: %v", err)
	}
	live2 := &pipeline.Live{}
	c2 := compile(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts) AS n FROM events`)
	if err := c2.Run(context.Background(), testutil.NewSource(tab.Schema, tab.Record(nil, 0, len(tab.Rows))), sink.NewCollector(), pipeline.RunOptions{Live: live2}); err != nil {
		t.Fatal(err)
	}
	if _, err := live2.Lookup(context.Background(), map[string]any{"user_id": 1}, time.Now(), nil); !errors.Is(err, window.ErrUnboundedLookup) {
		t.Errorf("lookup over an unbounded frame: %v, want ErrUnboundedLookup", err)
	}
}

// TestLookupRetention: with a retention, lookups at past times (back to
// the retention) equal the batch features of events at those times; a
// time further back than the kept state is refused with ErrTooOld rather
// than answered wrong.
func TestLookupRetention(t *testing.T) {
	rng := testutil.Rand(5)
	cfg := testutil.DefaultEvents(testutil.Scale(600))
	cfg.NullKeys = false
	tab := testutil.Events(rng, cfg)
	query := `SELECT id, sum(amount) OVER w AS s, count(*) OVER w AS n FROM events
		WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.Compile(plan, tab.Schema, "")
	if err != nil {
		t.Fatal(err)
	}
	first := tab.Rows[0][tab.Col("ts")].(int64)
	last := tab.Rows[len(tab.Rows)-1][tab.Col("ts")].(int64)
	live := &pipeline.Live{}
	retention := time.Duration(last-first) * time.Millisecond / 2
	if err := c.Run(context.Background(), testutil.NewSource(tab.Schema, tab.Batches(rng, 50)...), sink.NewCollector(),
		pipeline.RunOptions{Mode: pipeline.Streaming, MaxOutOfOrder: time.Second, Live: live, LookupRetention: retention}); err != nil {
		t.Fatal(err)
	}
	checked, refused := 0, 0
	for i := len(tab.Rows) - 1; i >= 0; i -= 7 {
		r := tab.Rows[i]
		at := r[tab.Col("ts")].(int64)
		got, err := live.Lookup(context.Background(), map[string]any{"user_id": r[tab.Col("user_id")]}, time.UnixMilli(at), nil)
		if errors.Is(err, window.ErrTooOld) {
			if at >= last-retention.Milliseconds() {
				t.Fatalf("lookup at %d refused though it is within the retention (newest %d, retention %v)", at, last, retention)
			}
			// The error names the key and the time.
			if want := fmt.Sprintf("key user_id=%v at %s", r[tab.Col("user_id")], time.UnixMilli(at).UTC().Format(time.RFC3339Nano)); !strings.Contains(err.Error(), want) {
				t.Fatalf("refusal %q does not say %q", err, want)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// By definition: the key's events with at-2000 <= ts <= at.
		var n int64
		var sum int64
		seen := false
		for _, e := range tab.Rows {
			if e[tab.Col("user_id")] == r[tab.Col("user_id")] {
				if ts := e[tab.Col("ts")].(int64); ts >= at-2000 && ts <= at {
					n++
					if a := e[tab.Col("amount")]; a != nil {
						sum += a.(int64)
						seen = true
					}
				}
			}
		}
		var wantS any
		if seen {
			wantS = sum
		}
		if gs, _ := got.Feature("s"); !testutil.Equal(gs, wantS) {
			t.Fatalf("lookup at %d: s = %v, want %v", at, gs, wantS)
		}
		if gn, _ := got.Feature("n"); gn != n {
			t.Fatalf("lookup at %d: n = %v, want %d", at, gn, n)
		}
		checked++
	}
	if checked == 0 || refused == 0 {
		t.Fatalf("checked %d lookups and %d were refused: want both", checked, refused)
	}
}

// TestLookupValueTypes: LookupResult.Values holds a map feature as
// []sink.MapEntry in ascending key order and topn_frequency's entries as
// structs (map[string]any with "value" and "count"), as its doc says;
// the counts are those of the frame, computed here by definition.
func TestLookupValueTypes(t *testing.T) {
	tab := testutil.Events(testutil.Rand(3), testutil.DefaultEvents(400))
	plan, err := pipeline.ParseSQL(`SELECT id,
		count_cate(amount, category) OVER w AS cc,
		topn_frequency(category, 2) OVER w AS tf
		FROM events
		WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW)`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.Compile(plan, tab.Schema, "")
	if err != nil {
		t.Fatal(err)
	}
	live := &pipeline.Live{}
	if err := c.Run(context.Background(), testutil.NewSource(tab.Schema, tab.Record(nil, 0, len(tab.Rows))), sink.NewCollector(), pipeline.RunOptions{Live: live}); err != nil {
		t.Fatal(err)
	}
	uc, tc, ac, cc := tab.Col("user_id"), tab.Col("ts"), tab.Col("amount"), tab.Col("category")
	last := tab.Rows[len(tab.Rows)-1][tc].(int64)
	checked := 0
	for user := int64(0); user < 6; user++ {
		at := last
		counts := map[string]int64{} // count_cate: rows with amount and category
		freq := map[string]int64{}   // topn_frequency: rows with a category
		for _, r := range tab.Rows {
			if r[uc] != user || r[tc].(int64) < at-5000 || r[tc].(int64) > at {
				continue
			}
			if r[cc] == nil {
				continue
			}
			freq[r[cc].(string)]++
			if r[ac] != nil {
				counts[r[cc].(string)]++
			}
		}
		res, err := live.Lookup(context.Background(), map[string]any{"user_id": user}, time.UnixMilli(at), nil)
		if err != nil {
			t.Fatalf("user %d: %v", user, err)
		}
		m, ok := res.Values[0].([]sink.MapEntry)
		if !ok {
			t.Fatalf("user %d: count_cate is %T, want []sink.MapEntry", user, res.Values[0])
		}
		if len(m) != len(counts) {
			t.Errorf("user %d: count_cate %v, want %v", user, m, counts)
		}
		for i, e := range m {
			k, _ := e.Key.(string)
			if i > 0 && m[i-1].Key.(string) >= k {
				t.Errorf("user %d: count_cate keys not ascending: %v", user, m)
			}
			if e.Value != counts[k] {
				t.Errorf("user %d: count_cate[%q] = %v, want %d", user, k, e.Value, counts[k])
			}
		}
		list, ok := res.Values[1].([]any)
		if !ok {
			t.Fatalf("user %d: topn_frequency is %T, want []any", user, res.Values[1])
		}
		for _, e := range list {
			s, ok := e.(map[string]any)
			if !ok {
				t.Fatalf("user %d: topn_frequency entry is %T, want map[string]any", user, e)
			}
			if v, _ := s["value"].(string); s["count"] != freq[v] {
				t.Errorf("user %d: topn_frequency entry %v, want count %d", user, s, freq[v])
			}
		}
		if want := min(2, len(freq)); len(list) != want {
			t.Errorf("user %d: %d topn_frequency entries, want %d", user, len(list), want)
		}
		checked += len(m)
	}
	if checked == 0 {
		t.Fatal("no key had a category in its last 5 seconds: the test checked nothing")
	}
}
