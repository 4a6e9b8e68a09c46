package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// item is one windowed aggregate of a generated query.
type item struct {
	agg testutil.Agg
	win testutil.Window
}

func (it item) name(k int) string { return fmt.Sprintf("f%d_%s", k, it.agg.Name()) }

// featureSQL renders SELECT id, <aggregates> FROM events [WHERE ...] with
// inline windows.
func featureSQL(items []item, where string) string {
	var sb strings.Builder
	sb.WriteString("SELECT id")
	for k, it := range items {
		fmt.Fprintf(&sb, ",\n  %s OVER (PARTITION BY %s ORDER BY %s %s) AS %s",
			it.agg.SQL(), strings.Join(it.win.Keys, ", "), it.win.Time, it.win.Frame.SQL(), it.name(k))
	}
	sb.WriteString("\nFROM events")
	if where != "" {
		sb.WriteString("\nWHERE " + where)
	}
	return sb.String()
}

// reference computes the rows featureSQL's query must produce for tab (in
// arrival order, already filtered): id, then each aggregate.
func reference(tab *testutil.Table, items []item) [][]any {
	out := make([][]any, len(tab.Rows))
	for i, r := range tab.Rows {
		out[i] = []any{r[tab.Col("id")]}
	}
	for _, it := range items {
		vals := testutil.Compute(tab, it.win, []testutil.Agg{it.agg})
		for i := range out {
			out[i] = append(out[i], vals[i][0])
		}
	}
	return out
}

func columns(items []item) []string {
	out := []string{"id"}
	for k, it := range items {
		out = append(out, it.name(k))
	}
	return out
}

// mixedItems uses two PARTITION BY sets (user_id and merchant) and several
// frames.
func mixedItems() []item {
	user := func(f testutil.Frame) testutil.Window {
		return testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: f}
	}
	merchant := func(f testutil.Frame) testutil.Window {
		return testutil.Window{Keys: []string{"merchant"}, Time: "ts", Frame: f}
	}
	return []item{
		{testutil.Agg{Func: "count"}, user(testutil.Frame{Preceding: 2000})},
		{testutil.Agg{Func: "sum", Arg: "price"}, user(testutil.Frame{Preceding: 2000})},
		{testutil.Agg{Func: "avg", Arg: "amount"}, user(testutil.Frame{Preceding: 5000, EndPreceding: 1000})},
		{testutil.Agg{Func: "max", Arg: "category"}, user(testutil.Frame{Unbounded: true, ExcludeCurrent: true})},
		{testutil.Agg{Func: "stddev_samp", Arg: "price"}, user(testutil.Frame{Rows: true, Preceding: 3})},
		{testutil.Agg{Func: "first_value", Arg: "amount"}, user(testutil.Frame{Rows: true, Preceding: 2, ExcludeCurrent: true})},
		{testutil.Agg{Func: "count", Arg: "amount"}, merchant(testutil.Frame{Preceding: 3000, ExcludeCurrent: true})},
		{testutil.Agg{Func: "min", Arg: "price"}, merchant(testutil.Frame{Preceding: 3000})},
		{testutil.Agg{Func: "count_distinct", Arg: "category"}, merchant(testutil.Frame{Unbounded: true})},
		{testutil.Agg{Func: "last_value", Arg: "category"}, merchant(testutil.Frame{Rows: true, Preceding: 4})},
	}
}

// run executes query over tab (cut into random batches) and returns the
// output rows and the pipeline.
func run(t *testing.T, seed uint64, query string, tab *testutil.Table, opts ...volga.Option) ([][]any, *volga.Pipeline) {
	t.Helper()
	src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatalf("seed %d: compile:\n%s\n%v", seed, query, err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("seed %d: run: %v", seed, err)
	}
	if !out.Closed() {
		t.Errorf("seed %d: the sink was not closed", seed)
	}
	return out.Rows(), p
}

func byID(rows [][]any) [][]any {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	return out
}

// TestParallelismAndModesAgree: a query with two PARTITION BY sets gives
// the reference's values in batch mode (in input order) and in streaming
// mode (shuffled within the out-of-orderness bound), with parallelism 1, 2
// and 4, and every parallelism gives the same output in the same order.
func TestParallelismAndModesAgree(t *testing.T) {
	const bound = 3000
	items := mixedItems()
	query := featureSQL(items, "")
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		events := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(500)))
		// Rows sharing a time keep their order, so both key sets see the
		// same (ts, arrival) order in batch and streaming.
		tab := events.Subset(testutil.Shuffle(rng, events, "ts", nil, bound))
		want := reference(tab, items)
		label := testutil.Label(tab, nil, "id", "user_id", "merchant", "ts")
		var batch1, stream1 [][]any
		for _, par := range []int{1, 2, 4} {
			got, p := run(t, seed, query, tab, volga.WithParallelism(par))
			if d := testutil.Diff(columns(items), got, want, label); d != "" {
				t.Fatalf("seed %d, batch, parallelism %d vs reference:\n%s", seed, par, d)
			}
			if st := p.Stats(); st.RowsIn != int64(len(tab.Rows)) || st.RowsOut != st.RowsIn {
				t.Errorf("seed %d: stats %+v", seed, st)
			}
			stream, _ := run(t, seed, query, tab, volga.WithParallelism(par), volga.WithMode(volga.Streaming),
				volga.WithMaxOutOfOrder(bound*time.Millisecond))
			if d := testutil.Diff(columns(items), byID(stream), byID(want), func(i int) string { return fmt.Sprint("id=", i) }); d != "" {
				t.Fatalf("seed %d, streaming, parallelism %d vs reference:\n%s", seed, par, d)
			}
			if par == 1 {
				batch1, stream1 = got, stream
				continue
			}
			if !slices.EqualFunc(got, batch1, slices.Equal) {
				t.Errorf("seed %d: batch output with parallelism %d differs from parallelism 1 (order or values)", seed, par)
			}
			if !slices.EqualFunc(stream, stream1, slices.Equal) {
				t.Errorf("seed %d: streaming output with parallelism %d differs from parallelism 1 (order or values)", seed, par)
			}
		}
	}
}

// TestWhereAndProjections: WHERE filters rows before windowing, and
// projected expressions are evaluated per row.
func TestWhereAndProjections(t *testing.T) {
	w := "PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW"
	query := `SELECT id, price * 2 AS p2, upper(category) AS ucat, coalesce(amount, 0) + 1 AS a1,
  amount > 100 AS big, CASE WHEN price IS NULL THEN 'none' ELSE 'some' END AS has_price,
  sum(amount) OVER w AS s, count(*) OVER w AS n, max(price) OVER w AS mx
FROM events
WHERE (amount IS NULL OR amount >= 0) AND merchant <> 'm0'
WINDOW w AS (` + w + `)`
	win := testutil.Window{Keys: []string{"user_id"}, Time: "ts", Frame: testutil.Frame{Preceding: 2000}}
	aggs := []testutil.Agg{{Func: "sum", Arg: "amount"}, {Func: "count"}, {Func: "max", Arg: "price"}}
	cols := []string{"id", "p2", "ucat", "a1", "big", "has_price", "s", "n", "mx"}
	for _, seed := range testutil.Seeds(2) {
		rng := testutil.Rand(seed)
		tab := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(400)))
		kept, _ := tab.Filter(func(r []any) bool {
			amount, merchant := r[tab.Col("amount")], r[tab.Col("merchant")]
			// merchant <> 'm0' is NULL (not TRUE) for a NULL merchant.
			return (amount == nil || amount.(int64) >= 0) && merchant != nil && merchant != "m0"
		})
		vals := testutil.Compute(kept, win, aggs)
		want := make([][]any, len(kept.Rows))
		for i, r := range kept.Rows {
			get := func(c string) any { return r[kept.Col(c)] }
			var p2, ucat, big any
			if v := get("price"); v != nil {
				p2 = v.(float64) * 2
			}
			if v := get("category"); v != nil {
				ucat = strings.ToUpper(v.(string))
			}
			a1 := int64(1)
			if v := get("amount"); v != nil {
				a1 += v.(int64)
				big = v.(int64) > 100
			}
			has := "some"
			if get("price") == nil {
				has = "none"
			}
			want[i] = append([]any{get("id"), p2, ucat, a1, big, has}, vals[i]...)
		}
		got, p := run(t, seed, query, tab, volga.WithParallelism(2))
		if d := testutil.Diff(cols, got, want, testutil.Label(kept, nil, "id", "user_id", "ts")); d != "" {
			t.Fatalf("seed %d:\n%s", seed, d)
		}
		if st := p.Stats(); st.Filtered != int64(len(tab.Rows)-len(kept.Rows)) {
			t.Errorf("seed %d: Stats().Filtered = %d, want %d", seed, st.Filtered, len(tab.Rows)-len(kept.Rows))
		}
	}
}

// endlessEvents is an unbounded stream of 10-row batches: users 1..5, one
// event per 100 ms, in order.
func endlessEvents() *testutil.Endless {
	return testutil.NewEndless(testutil.EventSchema, func(n int) arrow.RecordBatch {
		rows := make([][]any, 10)
		for j := range rows {
			i := int64(n*10 + j)
			rows[j] = []any{i, i%5 + 1, "m1", 1_700_000_000_000 + 100*i, i % 7, float64(i) / 4, "food"}
		}
		return testutil.BuildRecord(nil, testutil.EventSchema, rows)
	})
}

const streamQuery = `SELECT id, user_id, count(*) OVER w AS n, sum(amount) OVER w AS s
FROM events
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW)`

// checkNoLeak waits for the goroutine count to come back to before.
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		now := runtime.NumGoroutine()
		if now <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines still running, %d before the pipeline:\n%s", now, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runAsync starts p and returns a channel with Run's result.
func runAsync(ctx context.Context, p *volga.Pipeline) <-chan error {
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return done
}

func wait(t *testing.T, done <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		buf := make([]byte, 1<<20)
		t.Fatalf("Run did not return within %v:\n%s", within, buf[:runtime.Stack(buf, true)])
		return nil
	}
}

// TestCancelStopsPromptly: cancelling the context of a running streaming
// pipeline makes Run return context.Canceled promptly, with every
// goroutine it started gone.
func TestCancelStopsPromptly(t *testing.T) {
	for _, par := range []int{1, 3} {
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		var once sync.Once
		var writes int
		out := sink.NewCallback(func(context.Context, arrow.RecordBatch) error {
			if writes++; writes == 5 {
				once.Do(cancel)
			}
			return nil
		})
		p, err := volga.SQL(streamQuery, volga.WithSource("events", endlessEvents()), volga.WithSink(out),
			volga.WithMode(volga.Streaming), volga.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		err = wait(t, runAsync(ctx, p), 5*time.Second)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("parallelism %d: Run returned %v, want context.Canceled", par, err)
		}
		checkNoLeak(t, before)
	}
}

// TestSinkErrorStopsPipeline: an error from the sink stops the pipeline
// and is returned, wrapped.
func TestSinkErrorStopsPipeline(t *testing.T) {
	errSink := errors.New("disk full")
	for _, par := range []int{1, 2} {
		before := runtime.NumGoroutine()
		writes := 0
		out := sink.NewCallback(func(context.Context, arrow.RecordBatch) error {
			if writes++; writes == 3 {
				return errSink
			}
			return nil
		})
		p, err := volga.SQL(streamQuery, volga.WithSource("events", endlessEvents()), volga.WithSink(out),
			volga.WithMode(volga.Streaming), volga.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		err = wait(t, runAsync(context.Background(), p), 5*time.Second)
		if !errors.Is(err, errSink) || err == errSink {
			t.Fatalf("parallelism %d: Run returned %v, want a wrapped %v", par, err, errSink)
		}
		if writes != 3 {
			t.Errorf("parallelism %d: the sink was called %d times after failing on the 3rd write", par, writes)
		}
		checkNoLeak(t, before)
	}
}

// TestSlowSinkBackpressure: while the sink blocks, the source is read at
// most a bounded number of batches ahead (the channels between the stages
// and the batches in the goroutines' hands), not to its end.
func TestSlowSinkBackpressure(t *testing.T) {
	const depth = 2
	for _, par := range []int{1, 2} {
		src := endlessEvents()
		entered := make(chan struct{}, 1)
		unblock := make(chan struct{})
		out := sink.NewCallback(func(ctx context.Context, _ arrow.RecordBatch) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return nil
		})
		p, err := volga.SQL(streamQuery, volga.WithSource("events", src), volga.WithSink(out),
			volga.WithMode(volga.Streaming), volga.WithParallelism(par), volga.WithChannelDepth(depth))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(ctx, p)
		<-entered
		// Wait for the reads to settle while the sink is blocked.
		last := src.Reads.Load()
		for stable := 0; stable < 10; {
			time.Sleep(20 * time.Millisecond)
			if n := src.Reads.Load(); n == last {
				stable++
			} else {
				last, stable = n, 0
			}
		}
		// One stage: reader -> par task channels -> merge channel (depth x
		// par), plus one batch held by the reader, each task and the sink.
		// Watermarks share the channels, so this over-counts.
		const stages = 1
		limit := int64(depth*par*(stages+1) + par*stages + 2)
		t.Logf("parallelism %d: %d batches read while the sink is blocked (limit %d)", par, last, limit)
		if last > limit {
			t.Errorf("parallelism %d: %d batches read while the sink is blocked, want at most %d", par, last, limit)
		}
		close(unblock)
		cancel()
		if err := wait(t, done, 5*time.Second); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	}
}

// TestBatchOrderTwoKeySetsParallel is a regression test: in batch mode a
// query with two PARTITION BY sets (two window stages) run with
// parallelism > 1 emitted its rows out of input order, because a
// second-stage task receives the first stage's output from several tasks
// interleaved. SPEC section 6 and WithParallelism: batch output is in
// input order and identical for every parallelism.
func TestBatchOrderTwoKeySetsParallel(t *testing.T) {
	query := `SELECT id,
  count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_user,
  count(*) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_merchant
FROM events`
	tab := &testutil.Table{Schema: testutil.EventSchema}
	for i := range int64(12) {
		tab.Rows = append(tab.Rows, []any{i, i%4 + 1, fmt.Sprintf("m%d", i%3), 1000 * i, nil, nil, nil})
	}
	want := make([]any, len(tab.Rows))
	for i := range want {
		want[i] = int64(i)
	}
	// Partitioning uses a random hash seed: try a few runs.
	for attempt := range 10 {
		got, _ := run(t, uint64(attempt), query, tab, volga.WithParallelism(2))
		ids := make([]any, len(got))
		for i, r := range got {
			ids[i] = r[0]
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("attempt %d: batch output ids %v, want input order %v", attempt, ids, want)
		}
	}
}

// TestSourceBatchSchemaChecked: a source whose batches do not have the
// columns its Schema declares (two int64 columns swapped, a column of
// another type) fails the run naming both, instead of computing features
// from the wrong column.
func TestSourceBatchSchemaChecked(t *testing.T) {
	const query = `SELECT id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS s FROM events`
	tab := testutil.Events(testutil.Rand(3), testutil.DefaultEvents(50))
	good := tab.Batches(testutil.Rand(3), 1)[0]
	defer good.Release()
	ints := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 0; i < int(good.NumRows()); i++ {
		ints.Append(int64(i))
	}
	intCol := ints.NewArray()
	ints.Release()
	defer intCol.Release()
	// batch builds a batch of good's columns in the order idx, with the
	// price column replaced by intCol when retype is set.
	batch := func(idx []int, retype bool) arrow.RecordBatch {
		fields := make([]arrow.Field, len(idx))
		cols := make([]arrow.Array, len(idx))
		for i, j := range idx {
			fields[i], cols[i] = good.Schema().Field(j), good.Column(j)
			if retype && fields[i].Name == "price" {
				fields[i].Type, cols[i] = arrow.PrimitiveTypes.Int64, intCol
			}
		}
		return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, good.NumRows())
	}
	same := make([]int, good.NumCols())
	for i := range same {
		same[i] = i
	}
	swapped := slices.Clone(same)
	id, amount := good.Schema().FieldIndices("id")[0], good.Schema().FieldIndices("amount")[0]
	swapped[id], swapped[amount] = amount, id
	for name, bad := range map[string]arrow.RecordBatch{
		"swapped columns": batch(swapped, false),
		"wrong type":      batch(same, true),
	} {
		good.Retain()
		src := testutil.NewSource(tab.Schema, good, bad)
		p, err := volga.SQL(query, volga.WithSource("events", src))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Run(t.Context())
		src.Close()
		if err == nil || !strings.Contains(err.Error(), "the source returned a batch with columns (") || !strings.Contains(err.Error(), "but its Schema declares (id int64, user_id int64") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestEvalErrorsAreDeadLetters: rows on which an expression fails (here
// an int64 overflow for amount > 100) go to the dead letters with the
// error, and the run goes on with the others, giving what a query that
// filtered those rows out gives, in batch and streaming mode (where rows
// behind the watermark are late in both).
func TestEvalErrorsAreDeadLetters(t *testing.T) {
	const frame = "OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)"
	const query = "SELECT id, amount * 92233720368547758 AS big, sum(amount) " + frame + " AS s FROM events"
	const filtered = query + " WHERE amount IS NULL OR amount <= 100"
	tab := testutil.Events(testutil.Rand(11), testutil.DefaultEvents(400))
	bad := 0
	for _, r := range tab.Rows {
		if a, ok := r[tab.Col("amount")].(int64); ok && a > 100 {
			bad++
		}
	}
	if bad == 0 || bad == len(tab.Rows) {
		t.Fatalf("%d of %d rows overflow; the test needs some of both", bad, len(tab.Rows))
	}
	for _, mode := range []volga.Mode{volga.Batch, volga.Streaming} {
		want, _ := run(t, 11, filtered, tab, volga.WithMode(mode))
		var mu sync.Mutex
		var dead []source.DeadLetter
		got, p := run(t, 11, query, tab, volga.WithMode(mode), volga.WithParallelism(2),
			volga.WithDeadLetters(func(d source.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }))
		if d := testutil.Diff([]string{"id", "big", "s"}, byID(want), byID(got), testutil.Label(tab, nil, "id")); d != "" {
			t.Errorf("%v: output differs from the filtered query's:\n%s", mode, d)
		}
		if len(dead) != bad || p.Stats().DeadLetters != int64(bad) {
			t.Errorf("%v: %d dead letters (stats %d), want %d", mode, len(dead), p.Stats().DeadLetters, bad)
		}
		for _, d := range dead {
			if !strings.Contains(d.Reason, "evaluating amount * 92233720368547758: ") || !strings.Contains(d.Reason, "overflow") {
				t.Fatalf("%v: reason %q", mode, d.Reason)
			}
		}
	}
}

// TestAllowedLatenessOrderIndependentOfParallelism: with late rows applied
// (allowed lateness), the streaming output, order included, is the same
// for every parallelism and every run: a late row goes out with the
// watermark after its arrival, whatever the tasks' timing.
func TestAllowedLatenessOrderIndependentOfParallelism(t *testing.T) {
	const bound = 500 // ms of out-of-orderness promised; the data has up to 3000
	frame := "OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)"
	query := "SELECT id, ts, sum(amount) " + frame + " AS s, count(*) " + frame + " AS n FROM events"
	for _, seed := range testutil.Seeds(2) {
		rng := testutil.Rand(seed)
		events := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(600)))
		tab := events.Subset(testutil.Shuffle(rng, events, "ts", nil, 3000))
		var first [][]any
		var applied int64
		for run_, par := range []int{1, 2, 3, 2, 3} {
			got, p := run(t, seed, query, tab, volga.WithParallelism(par), volga.WithMode(volga.Streaming),
				volga.WithMaxOutOfOrder(bound*time.Millisecond), volga.WithAllowedLateness(800*time.Millisecond))
			st := p.Stats()
			if run_ == 0 {
				first, applied = got, st.LateApplied
				if applied == 0 || st.LateDropped == 0 {
					t.Fatalf("seed %d: %d late rows applied, %d dropped; the test needs both", seed, st.LateApplied, st.LateDropped)
				}
				continue
			}
			if st.LateApplied != applied || !slices.EqualFunc(got, first, slices.Equal) {
				d := testutil.Diff([]string{"id", "ts", "s", "n"}, got, first, func(i int) string { return fmt.Sprint("row ", i) })
				t.Fatalf("seed %d: parallelism %d (run %d) differs from parallelism 1 (late applied %d vs %d):\n%s", seed, par, run_, st.LateApplied, applied, d)
			}
		}
	}
}

// TestAllowedLatenessTwoStagesIndependentOfParallelism: as
// TestAllowedLatenessOrderIndependentOfParallelism, for a query with OVER
// windows over two PARTITION BY sets (two stages): a late row that the
// first stage applied is applied by the second as with one task, after
// the rows the watermark it came after released and before later ones,
// whatever the tasks' timing.
func TestAllowedLatenessTwoStagesIndependentOfParallelism(t *testing.T) {
	const bound = 500
	byUser := "OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)"
	byMerchant := "OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW)"
	byMerchantRows := "OVER (PARTITION BY merchant ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)"
	query := "SELECT id, ts, sum(amount) " + byUser + " AS s, count(*) " + byMerchant + " AS n, " +
		"sum(amount) " + byMerchant + " AS ms, max(id) " + byMerchantRows + " AS mr FROM events"
	cols := []string{"id", "ts", "s", "n", "ms", "mr"}
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		events := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(600)))
		tab := events.Subset(testutil.Shuffle(rng, events, "ts", nil, 3000))
		var first [][]any
		var applied int64
		for run_, par := range []int{1, 2, 3, 2, 3, 2} {
			got, p := run(t, seed, query, tab, volga.WithParallelism(par), volga.WithMode(volga.Streaming),
				volga.WithMaxOutOfOrder(bound*time.Millisecond), volga.WithAllowedLateness(800*time.Millisecond))
			st := p.Stats()
			if run_ == 0 {
				first, applied = got, st.LateApplied
				if applied == 0 || st.LateDropped == 0 {
					t.Fatalf("seed %d: %d late rows applied, %d dropped; the test needs both", seed, st.LateApplied, st.LateDropped)
				}
				continue
			}
			if !slices.EqualFunc(got, first, slices.Equal) {
				d := testutil.Diff(cols, got, first, func(i int) string { return fmt.Sprint("row ", i) })
				t.Fatalf("seed %d: parallelism %d (run %d) differs from parallelism 1 (late applied %d vs %d):\n%s", seed, par, run_, st.LateApplied, applied, d)
			}
		}
	}
}
