package volga_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"gocloud.dev/blob/memblob"
)

const query1s = `SELECT id, count(*) OVER w AS n, sum(amount) OVER w AS s
FROM events
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW)`

var win1s = testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: testutil.Frame{Preceding: 1000}}

// collect runs query over the rows of tab (one batch per row, so the
// streaming watermark advances row by row) and returns the output rows.
func collect(t *testing.T, query string, tab *testutil.Table, opts ...volga.Option) ([][]any, *volga.Pipeline) {
	t.Helper()
	src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 1)...)
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.Rows(), p
}

// want is the reference output of query1s over tab.
func want1s(tab *testutil.Table) [][]any {
	vals := testutil.Compute(tab, win1s, []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}})
	out := make([][]any, len(tab.Rows))
	for i, r := range tab.Rows {
		out[i] = append([]any{r[0]}, vals[i]...)
	}
	return out
}

func TestDeadLettersForNullEventTime(t *testing.T) {
	tab := testutil.Events(testutil.Rand(3), testutil.DefaultEvents(200))
	var nullRows []int
	for i := 0; i < len(tab.Rows); i += 17 {
		tab.Rows[i] = slices.Clone(tab.Rows[i])
		tab.Rows[i][tab.Col("ts")] = nil
		nullRows = append(nullRows, i)
	}
	var letters []source.DeadLetter
	got, p := collect(t, query1s, tab, volga.WithDeadLetters(func(d source.DeadLetter) { letters = append(letters, d) }))
	valid, _ := tab.Filter(func(r []any) bool { return r[tab.Col("ts")] != nil })
	if d := testutil.Diff([]string{"id", "n", "s"}, got, want1s(valid), testutil.Label(valid, nil, "id", "user_id", "ts")); d != "" {
		t.Fatalf("rows with an event time:\n%s", d)
	}
	if st := p.Stats(); st.DeadLetters != int64(len(nullRows)) || st.RowsIn != int64(len(tab.Rows)) || st.RowsOut != int64(len(valid.Rows)) {
		t.Errorf("stats %+v, want %d dead letters", st, len(nullRows))
	}
	if len(letters) != len(nullRows) {
		t.Fatalf("%d dead letters handed over, want %d", len(letters), len(nullRows))
	}
	for k, d := range letters {
		id := tab.Rows[nullRows[k]][0].(int64)
		if d.Reason == "" || !strings.HasPrefix(string(d.Raw), strconv.FormatInt(id, 10)+",") {
			t.Errorf("dead letter %d = %+v, want row id %d with a reason", k, d, id)
		}
	}
}

func TestLateRowsGoToLateSink(t *testing.T) {
	const bound = 1000
	events := testutil.Events(testutil.Rand(5), testutil.DefaultEvents(300))
	// Hold some rows back by 15 rows, far more than the bound.
	order := testutil.Shuffle(testutil.Rand(5), events, "ts", nil, 0)
	for p := 10; p+16 < len(order); p += 23 {
		row := order[p]
		order = slices.Insert(slices.Delete(order, p, p+1), p+15, row)
	}
	tab := events.Subset(order)
	// Late: event time at or behind newest-so-far - bound, as the source
	// watermark sees it before the row arrives.
	var late, onTime []int
	maxTs := int64(-1 << 63)
	for i, r := range tab.Rows {
		ts := r[tab.Col("ts")].(int64)
		if maxTs != -1<<63 && ts <= maxTs-bound {
			late = append(late, i)
		} else {
			onTime = append(onTime, i)
		}
		maxTs = max(maxTs, ts)
	}
	if len(late) == 0 {
		t.Fatal("no late rows in the test data")
	}
	lateSink := sink.NewCollector()
	defer lateSink.Release()
	got, p := collect(t, query1s, tab, volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(bound*time.Millisecond),
		volga.WithLateSink(lateSink), volga.WithParallelism(2))
	accepted := tab.Subset(onTime)
	slices.SortFunc(got, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	want := want1s(accepted)
	slices.SortFunc(want, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	if d := testutil.Diff([]string{"id", "n", "s"}, got, want, func(i int) string { return "" }); d != "" {
		t.Fatalf("on-time rows:\n%s", d)
	}
	if st := p.Stats(); st.LateDropped != int64(len(late)) {
		t.Errorf("Stats().LateDropped = %d, want %d", st.LateDropped, len(late))
	}
	if !lateSink.Closed() {
		t.Error("the late sink was not closed")
	}
	var lateIDs, wantIDs []int64
	for _, rec := range lateSink.Records() {
		if !rec.Schema().Equal(testutil.EventSchema) {
			t.Fatalf("late rows have schema %s, want the source's %s", rec.Schema(), testutil.EventSchema)
		}
	}
	for _, r := range lateSink.Rows() {
		lateIDs = append(lateIDs, r[0].(int64))
	}
	for _, i := range late {
		wantIDs = append(wantIDs, tab.Rows[i][0].(int64))
	}
	slices.Sort(lateIDs)
	slices.Sort(wantIDs)
	if !slices.Equal(lateIDs, wantIDs) {
		t.Errorf("late sink got ids %v, want %v", lateIDs, wantIDs)
	}
}

func TestSQLErrors(t *testing.T) {
	src := testutil.NewSource(testutil.EventSchema)
	for _, tc := range []struct {
		name, query, near string
		line, col         int
	}{
		{"unknown column", "SELECT id,\n  sum(amout) OVER w AS s\nFROM events\nWINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", "amout", 2, 7},
		{"unknown function", "SELECT id,\n  summ(amount) OVER w AS s\nFROM events\nWINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", "summ", 2, 3},
		{"unknown window", "SELECT id, sum(amount) OVER w2 AS s\nFROM events\nWINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", "w2", 1, 29},
		{"unknown key column", "SELECT id, count(*) OVER (PARTITION BY usr ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n FROM events", "usr", 1, 40},
		{"FOLLOWING", "SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS n FROM events", "FOLLOWING", 1, 0},
		{"JOIN", "SELECT id FROM events JOIN other ON events.id = other.id", "JOIN", 1, 0},
		{"HAVING", "SELECT id FROM events HAVING id > 1", "HAVING", 1, 0},
		{"syntax", "SELECT id,, FROM events", "", 1, 0},
	} {
		_, err := volga.SQL(tc.query, volga.WithSource("events", src))
		var se *pipeline.SQLError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v (%T), want a *pipeline.SQLError", tc.name, err, err)
			continue
		}
		if se.Line < 1 || se.Column < 1 {
			t.Errorf("%s: %v: no position", tc.name, se)
		}
		if tc.near != "" && !strings.EqualFold(se.Near, tc.near) {
			t.Errorf("%s: %v: near %q, want %q", tc.name, se, se.Near, tc.near)
		}
		if tc.col > 0 && (se.Line != tc.line || se.Column != tc.col) {
			t.Errorf("%s: %v: at %d:%d, want %d:%d", tc.name, se, se.Line, se.Column, tc.line, tc.col)
		}
	}
}

// TestOptionErrors: option values without a meaning fail SQL with a
// message naming the option, instead of running with a default.
func TestOptionErrors(t *testing.T) {
	src := testutil.NewSource(testutil.EventSchema)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	for _, tc := range []struct {
		opt  volga.Option
		want string
	}{
		{volga.WithMode(volga.Mode(7)), "unknown mode 7"},
		{volga.WithParallelism(-1), "parallelism must be positive"},
		{volga.WithMaxOutOfOrder(-time.Second), "max out-of-orderness must not be negative"},
		{volga.WithAllowedLateness(-time.Second), "allowed lateness must not be negative"},
		{volga.WithWatermarkInterval(-time.Second), "watermark interval must not be negative"},
		{volga.WithIdleTimeout(-time.Second), "idle timeout must not be negative"},
		{volga.WithLookupRetention(-time.Hour), "lookup retention must not be negative, got -1h0m0s"},
		{volga.WithChannelDepth(-1), "channel depth must not be negative"},
		{volga.WithCheckpointBucket(bucket, -time.Second), "checkpoint interval must not be negative"},
		{volga.WithCheckpointRetain(-1), "checkpoints to retain must not be negative"},
	} {
		opts := []volga.Option{volga.WithSource("events", src), tc.opt}
		if tc.want == "checkpoints to retain must not be negative" {
			opts = append(opts, volga.WithCheckpointBucket(bucket, time.Second))
		}
		_, err := volga.SQL(query1s, opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestRunsOnce(t *testing.T) {
	tab := testutil.Events(testutil.Rand(1), testutil.DefaultEvents(5))
	src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 5)...)
	defer src.Close()
	p, err := volga.SQL(query1s, volga.WithSource("events", src))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("a second Run succeeded")
	}
	if _, err := volga.SQL(query1s, volga.WithSource("other", src)); err == nil {
		t.Fatal("a query over an unbound table compiled")
	}
}

// TestLookupWhileRunning: lookups from several goroutines while a
// streaming pipeline ingests see a count that never decreases for a
// growing unbounded-in-time key, and after the run they equal the batch
// features of the key's last event.
func TestLookupWhileRunning(t *testing.T) {
	schema := testutil.EventSchema
	const n = 4000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), int64(1 + i%2), "m", int64(1000 * i), int64(i % 7), float64(i), "c"}
	}
	tab := &testutil.Table{Schema: schema, Rows: rows}
	p, err := volga.SQL(`SELECT id, count(*) OVER w AS n, sum(amount) OVER w AS s FROM events
		WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.WithSource("events", testutil.NewSource(schema, tab.Batches(testutil.Rand(3), 50)...)),
		volga.WithMode(volga.Streaming), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prev int64 = -1
			for i := 0; i < 200; i++ {
				res, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, time.UnixMilli(1000*n), nil)
				if errors.Is(err, pipeline.ErrNotRunning) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				v, _ := res.Feature("n")
				if c := v.(int64); c < prev {
					t.Errorf("count went back from %d to %d", prev, c)
					return
				} else {
					prev = c
				}
			}
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// After the run: the last hour before t=n s holds events of user 1 at
	// even seconds in [n-3600, n-1].
	res, err := p.Lookup(context.Background(), map[string]any{"user_id": 1}, time.UnixMilli(1000*(n-1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wantN, wantS int64
	for i := 0; i < n; i++ {
		if 1+i%2 == 1 && 1000*i >= 1000*(n-1)-3600_000 {
			wantN++
			wantS += int64(i % 7)
		}
	}
	if nv, _ := res.Feature("n"); nv != wantN {
		t.Errorf("n = %v, want %d", nv, wantN)
	}
	if sv, _ := res.Feature("s"); sv != wantS {
		t.Errorf("s = %v, want %d", sv, wantS)
	}
	if got := p.KeyColumns(); len(got) != 1 || got[0] != "user_id" {
		t.Errorf("KeyColumns = %v", got)
	}
}

// TestEmptyInputNote: a query over a text source that inferred its schema
// from no rows (every column utf8) fails on its event-time column with a
// note that says why; over the same source with one row it compiles.
func TestEmptyInputNote(t *testing.T) {
	const q = "SELECT user_id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS n FROM events"
	empty, err := source.NewCSVReader(strings.NewReader("user_id,ts\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = volga.SQL(q, volga.WithSource("events", empty))
	var se *pipeline.SQLError
	if !errors.As(err, &se) || se.Line != 1 || !strings.Contains(se.Msg, `event-time column "ts"`) || !strings.Contains(se.Msg, "the source has no data rows") {
		t.Errorf("header only: %v", err)
	}
	one, err := source.NewCSVReader(strings.NewReader("user_id,ts\n7,1000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := volga.SQL(q, volga.WithSource("events", one)); err != nil {
		t.Errorf("one row: %v", err)
	}
}

// TestInferenceNote: a column inferred as utf8 because of one odd value
// among numbers or times (CSV and JSON lines) makes the query's error say
// where that value is.
func TestInferenceNote(t *testing.T) {
	const q = "SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS n FROM events"
	csv, err := source.NewCSVReader(strings.NewReader("user_id,ts,amount\n1,1000,5\n1,2000,7\n2,3000,n/a\n2,4000,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	jsonl, err := source.NewJSONLReader(strings.NewReader(`{"user_id":1,"ts":1000,"amount":5}
{"user_id":1,"ts":"soon","amount":7}
{"user_id":2,"ts":3000,"amount":2}
{"user_id":2,"ts":4000,"amount":1}
`))
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[source.Source]string{
		csv:   `note: column "amount" was inferred as utf8 because line 4 holds "n/a", where 3 of the 4 values sampled are int64`,
		jsonl: `note: column "ts" was inferred as utf8 because line 2 holds "soon", where 3 of the 4 values sampled are int64`,
	} {
		_, err := volga.SQL(q, volga.WithSource("events", src))
		var se *pipeline.SQLError
		if !errors.As(err, &se) || se.Line != 1 || !strings.Contains(se.Msg, want) {
			t.Errorf("got %v, want a positioned error with %q", err, want)
		}
	}
}
