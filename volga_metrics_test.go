package volga_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// scrape gathers g and returns every sample of the volga_ metrics by
// "name{label="value",...}" (labels sorted); a histogram gives its _count
// and _sum.
func scrape(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "volga_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			key := func(suffix string) string { return mf.GetName() + suffix + "{" + strings.Join(ls, ",") + "}" }
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key("_count")] = float64(m.GetHistogram().GetSampleCount())
				out[key("_sum")] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// expect checks the samples of want in got, exactly.
func expect(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: missing", k)
		case v != want[k]:
			t.Errorf("%s = %v, want %v", k, v, want[k])
		}
	}
}

// metricSchema is the schema of the metric tests' events.
var metricSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
}, nil)

const metricQuery = `SELECT user_id, ts, count(*) OVER w AS n, sum(amount) OVER w AS spend
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`

// event is one row of metricSchema; ts in ms.
type event struct {
	user, ts int64
	amount   float64
}

func batchOf(evs ...event) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, metricSchema)
	defer b.Release()
	for _, e := range evs {
		b.Field(0).(*array.Int64Builder).Append(e.user)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ts))
		b.Field(2).(*array.Float64Builder).Append(e.amount)
	}
	return b.NewRecordBatch()
}

// chanSource hands out the batches sent on its channel, one per Read,
// until the channel is closed: a test drives a streaming run step by step.
type chanSource struct{ ch chan arrow.RecordBatch }

func (c chanSource) Schema() *arrow.Schema { return metricSchema }
func (c chanSource) Close() error          { return nil }
func (c chanSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case rec, ok := <-c.ch:
		if !ok {
			return nil, io.EOF
		}
		return rec, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitFor polls cond until it holds or a few seconds have passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkGoroutines fails t if the number of goroutines does not come back
// to what it was when checkGoroutines was called.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines after the test, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func TestMetricsBatchCounts(t *testing.T) {
	checkGoroutines(t)
	evs := []event{{1, 0, 20}, {2, 60_000, 5}, {1, 120_000, 30}, {3, 180_000, 1}, {2, 240_000, 7.5}, {1, 300_000, 100}}
	rec := batchOf(evs...)
	defer rec.Release()
	reg := prometheus.NewPedanticRegistry()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(metricQuery,
		volga.WithSource("tx", source.NewMemorySliced(metricSchema, 2, rec)), volga.WithSink(out),
		volga.WithParallelism(2), volga.WithMetrics(reg), volga.WithName("fraud"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.Rows()) != len(evs) {
		t.Fatalf("%d rows out, want %d", len(out.Rows()), len(evs))
	}
	// The run's counters, exactly, in the exposition format.
	const want = `
# HELP volga_source_rows_total Rows read from the source.
# TYPE volga_source_rows_total counter
volga_source_rows_total{pipeline="fraud"} 6
# HELP volga_sink_rows_total Rows written to the sink.
# TYPE volga_sink_rows_total counter
volga_sink_rows_total{pipeline="fraud"} 6
# HELP volga_filtered_rows_total Rows removed by the WHERE clause.
# TYPE volga_filtered_rows_total counter
volga_filtered_rows_total{pipeline="fraud"} 0
# HELP volga_pipeline_running 1 while the pipeline runs, 0 otherwise.
# TYPE volga_pipeline_running gauge
volga_pipeline_running{pipeline="fraud"} 0
`
	if err := promtest.GatherAndCompare(reg, strings.NewReader(want),
		"volga_source_rows_total", "volga_sink_rows_total", "volga_filtered_rows_total", "volga_pipeline_running"); err != nil {
		t.Error(err)
	}
	got := scrape(t, reg)
	expect(t, got, map[string]float64{
		`volga_late_rows_total{outcome="dropped",pipeline="fraud"}`:  0,
		`volga_late_rows_total{outcome="applied",pipeline="fraud"}`:  0,
		`volga_dead_letters_total{origin="engine",pipeline="fraud"}`: 0,
		`volga_dead_letters_total{origin="source",pipeline="fraud"}`: 0,
		`volga_window_input_rows_total{pipeline="fraud",stage="0"}`:  6,
		`volga_window_output_rows_total{pipeline="fraud",stage="0"}`: 6,
		`volga_window_keys{pipeline="fraud",stage="0"}`:              3,
		`volga_window_pending_rows{pipeline="fraud",stage="0"}`:      0,
		`volga_lookup_duration_seconds_count{pipeline="fraud"}`:      0,
		`volga_lookup_errors_total{pipeline="fraud"}`:                0,
	})
	// Batch mode has no watermark to show.
	for k := range got {
		if strings.HasPrefix(k, "volga_watermark") {
			t.Errorf("%s present after a batch run", k)
		}
	}
}

// TestMetricsGroupBy: a tumbling-window query reports its window
// operators like a sliding one: rows in, windows out (one row per key and
// window), the keys held, nothing pending at the end, no rows retained.
func TestMetricsGroupBy(t *testing.T) {
	checkGoroutines(t)
	// Users 1-3 over three 2-minute windows: (1, 2) in the first, (1, 2)
	// in the second, (1, 3) in the third.
	evs := []event{{1, 0, 20}, {2, 60_000, 5}, {1, 120_000, 30}, {2, 180_000, 1}, {3, 240_000, 7.5}, {1, 300_000, 100}, {1, 310_000, 1}}
	rec := batchOf(evs...)
	defer rec.Release()
	reg := prometheus.NewPedanticRegistry()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(`SELECT user_id, window_start, count(*) AS n, sum(amount) AS spend
FROM tx GROUP BY user_id, tumble(ts, INTERVAL '2' MINUTE)`,
		volga.WithSource("tx", source.NewMemorySliced(metricSchema, 2, rec)), volga.WithSink(out),
		volga.WithParallelism(2), volga.WithMetrics(reg), volga.WithName("hourly"))
	if err != nil {
		t.Fatal(err)
	}
	// Scrapes while the run goes on read the operators' counters from
	// another goroutine (the race detector checks it).
	done := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			select {
			case <-done:
				return
			default:
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	err = p.Run(context.Background())
	close(done)
	<-scraped
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Rows()); n != 6 {
		t.Fatalf("%d windows out, want 6", n)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_window_input_rows_total{pipeline="hourly",stage="0"}`:     7,
		`volga_window_output_rows_total{pipeline="hourly",stage="0"}`:    6,
		`volga_window_keys{pipeline="hourly",stage="0"}`:                 3,
		`volga_window_resident_keys{pipeline="hourly",stage="0"}`:        3,
		`volga_window_pending_rows{pipeline="hourly",stage="0"}`:         0,
		`volga_window_retained_rows{pipeline="hourly",stage="0"}`:        0,
		`volga_window_forgotten_keys_total{pipeline="hourly",stage="0"}`: 0,
		`volga_sink_rows_total{pipeline="hourly"}`:                       6,
	})
}

func TestMetricsFilteredRows(t *testing.T) {
	rec := batchOf(event{1, 0, 20}, event{2, 1, 5}, event{1, 2, 30}, event{3, 3, 1})
	defer rec.Release()
	reg := prometheus.NewPedanticRegistry()
	p, err := volga.SQL(strings.Replace(metricQuery, "FROM tx", "FROM tx WHERE amount > 10", 1),
		volga.WithSource("tx", source.NewMemory(metricSchema, rec)), volga.WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_source_rows_total{pipeline="volga"}`:   4,
		`volga_filtered_rows_total{pipeline="volga"}`: 2,
		`volga_sink_rows_total{pipeline="volga"}`:     2,
	})
}

// runMetricStream starts metricQuery in streaming mode over a channel
// source, with metrics in reg; Run's result comes on the returned
// channel once the source channel is closed.
func runMetricStream(t *testing.T, reg prometheus.Registerer, name string, opts ...volga.Option) (*volga.Pipeline, chanSource, <-chan error) {
	t.Helper()
	src := chanSource{ch: make(chan arrow.RecordBatch)}
	out := sink.NewCollector()
	t.Cleanup(out.Release)
	opts = append([]volga.Option{volga.WithSource("tx", src), volga.WithSink(out),
		volga.WithMode(volga.Streaming), volga.WithMetrics(reg), volga.WithName(name)}, opts...)
	p, err := volga.SQL(metricQuery, opts...)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(context.Background()) }()
	return p, src, runErr
}

func TestMetricsStreamingLateRowsAndWatermark(t *testing.T) {
	checkGoroutines(t)
	reg := prometheus.NewPedanticRegistry()
	late := sink.NewCollector()
	defer late.Release()
	p, src, runErr := runMetricStream(t, reg, "stream", volga.WithLateSink(late))

	base := time.Date(2024, 1, 3, 8, 0, 0, 0, time.UTC).UnixMilli()
	src.ch <- batchOf(event{1, base, 10})
	src.ch <- batchOf(event{2, base + 5_000, 20})
	src.ch <- batchOf(event{1, base + 2_000, 30}) // behind the watermark: late
	waitFor(t, "the late row", func() bool { return p.Stats().LateDropped == 1 })

	// Mid-run: the pipeline runs, the watermark is at the newest event
	// time, and the state holds both keys.
	before := time.Now()
	got := scrape(t, reg)
	wm := p.Stats().Watermark
	expect(t, got, map[string]float64{
		`volga_pipeline_running{pipeline="stream"}`:                  1,
		`volga_source_rows_total{pipeline="stream"}`:                 3,
		`volga_late_rows_total{outcome="dropped",pipeline="stream"}`: 1,
		`volga_late_rows_total{outcome="applied",pipeline="stream"}`: 0,
		`volga_watermark_seconds{pipeline="stream"}`:                 float64(wm) / 1e3,
		`volga_window_keys{pipeline="stream",stage="0"}`:             2,
		`volga_window_resident_keys{pipeline="stream",stage="0"}`:    2,
		`volga_window_input_rows_total{pipeline="stream",stage="0"}`: 3,
	})
	if wm != base+5_000 {
		t.Errorf("watermark %d, want %d", wm, base+5_000)
	}
	lag := got[`volga_watermark_lag_seconds{pipeline="stream"}`]
	if minLag := float64(before.UnixMilli()-wm) / 1e3; lag < minLag || lag > minLag+60 {
		t.Errorf("watermark lag %vs, want about %vs", lag, minLag)
	}

	close(src.ch)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	got = scrape(t, reg)
	expect(t, got, map[string]float64{
		`volga_pipeline_running{pipeline="stream"}`:                  0,
		`volga_source_rows_total{pipeline="stream"}`:                 3,
		`volga_sink_rows_total{pipeline="stream"}`:                   2,
		`volga_late_rows_total{outcome="dropped",pipeline="stream"}`: 1,
		`volga_window_pending_rows{pipeline="stream",stage="0"}`:     0,
	})
	if _, ok := got[`volga_watermark_seconds{pipeline="stream"}`]; ok {
		t.Error("watermark gauge present after the source ended")
	}
	if n := len(late.Rows()); n != 1 {
		t.Errorf("%d rows in the late sink, want 1", n)
	}
}

// TestMetricsQuietKeys: a user with no row for longer than the frame is
// let go (its retained rows drop out of volga_window_retained_rows and
// volga_window_quiet_keys_total counts it), and a lookup of it now
// answers an empty frame.
func TestMetricsQuietKeys(t *testing.T) {
	checkGoroutines(t)
	reg := prometheus.NewPedanticRegistry()
	p, src, runErr := runMetricStream(t, reg, "quiet")

	base := time.Date(2024, 1, 3, 8, 0, 0, 0, time.UTC).UnixMilli()
	src.ch <- batchOf(event{1, base, 10}, event{1, base + 60_000, 15}, event{2, base + 90_000, 20})
	waitFor(t, "the first watermark", func() bool { return p.Stats().Watermark == base+90_000 })
	// User 2 moves the watermark three hours on, user 1 is quiet.
	for h := int64(1); h <= 12; h++ {
		src.ch <- batchOf(event{2, base + h*15*60_000, 20})
	}
	waitFor(t, "user 1 let go", func() bool {
		got := scrape(t, reg)
		return got[`volga_window_quiet_keys_total{pipeline="quiet",stage="0"}`] >= 1
	})
	got := scrape(t, reg)
	// User 1 is parked (its state let go): not resident. It is not
	// forgotten: keys are forgotten a million at a time.
	expect(t, got, map[string]float64{
		`volga_window_keys{pipeline="quiet",stage="0"}`:                 2,
		`volga_window_resident_keys{pipeline="quiet",stage="0"}`:        1,
		`volga_window_forgotten_keys_total{pipeline="quiet",stage="0"}`: 0,
	})
	// User 2's rows of the last hour (and the one at the watermark's
	// edge) are all that remain.
	if r := got[`volga_window_retained_rows{pipeline="quiet",stage="0"}`]; r < 4 || r > 6 {
		t.Errorf("%v rows retained, want user 2's last hour only", r)
	}
	res, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, time.UnixMilli(base+3*3600_000), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.Feature("n")
	spend, _ := res.Feature("spend")
	if n != int64(0) || spend != nil {
		t.Errorf("user 1 three hours on: n=%v spend=%v, want 0 and NULL", n, spend)
	}
	close(src.ch)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
}

// TestMetricsEvictedAndLoadedKeys: with a memory budget of one byte every
// key's state leaves memory once its rows are out; a key's next row reads
// it back (loaded for ingest), and so does a lookup, which does not keep
// it (loaded for lookup). The counters agree with the results: the rows
// read back see the rows before them.
func TestMetricsEvictedAndLoadedKeys(t *testing.T) {
	checkGoroutines(t)
	reg := prometheus.NewPedanticRegistry()
	p, src, runErr := runMetricStream(t, reg, "budget",
		volga.WithMemoryBudget(1), volga.WithStateDir(t.TempDir()))

	base := time.Date(2024, 1, 3, 8, 0, 0, 0, time.UTC).UnixMilli()
	src.ch <- batchOf(event{1, base, 10}, event{2, base + 1_000, 20}, event{3, base + 2_000, 30})
	waitFor(t, "the three keys evicted", func() bool {
		return scrape(t, reg)[`volga_window_evicted_keys_total{pipeline="budget",stage="0"}`] >= 3
	})
	got := scrape(t, reg)
	expect(t, got, map[string]float64{
		`volga_window_keys{pipeline="budget",stage="0"}`:                           3,
		`volga_window_resident_keys{pipeline="budget",stage="0"}`:                  0,
		`volga_window_loaded_keys_total{for="ingest",pipeline="budget",stage="0"}`: 0,
		`volga_window_loaded_keys_total{for="lookup",pipeline="budget",stage="0"}`: 0,
		`volga_window_row_pages_total{op="written",pipeline="budget",stage="0"}`:   0,
		`volga_window_checkpoint_copies_total{pipeline="budget",stage="0"}`:        0,
		`volga_window_evicted_keys_total{pipeline="budget",stage="0"}`:             3,
	})

	// A lookup of user 2 reads its state and leaves it in the store.
	res, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(2)}, time.UnixMilli(base+1_000), nil)
	if err != nil {
		t.Fatal(err)
	}
	if spend, _ := res.Feature("spend"); spend != 20.0 {
		t.Errorf("lookup of user 2: spend %v, want 20", spend)
	}
	// User 1's second row needs its state back.
	src.ch <- batchOf(event{1, base + 3_000, 5})
	waitFor(t, "user 1 loaded", func() bool {
		return scrape(t, reg)[`volga_window_loaded_keys_total{for="ingest",pipeline="budget",stage="0"}`] >= 1
	})
	close(src.ch)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_window_loaded_keys_total{for="ingest",pipeline="budget",stage="0"}`: 1,
		`volga_window_loaded_keys_total{for="lookup",pipeline="budget",stage="0"}`: 1,
		`volga_window_evicted_keys_total{pipeline="budget",stage="0"}`:             4,
		`volga_sink_rows_total{pipeline="budget"}`:                                 4,
	})
}

// TestMetricsRowPages: with row paging, the rows of a long frame that no
// frame edge needs go to the store in pages and come back as the frame's
// lower edge reaches them; the counts of the sums stay exact.
func TestMetricsRowPages(t *testing.T) {
	checkGoroutines(t)
	reg := prometheus.NewPedanticRegistry()
	p, src, runErr := runMetricStream(t, reg, "paged", volga.WithRowPaging(4), volga.WithStateDir(t.TempDir()))
	base := time.Date(2024, 1, 3, 8, 0, 0, 0, time.UTC).UnixMilli()
	const rows = 300 // one a minute: five hours, sixty rows a frame
	for i := range int64(rows) {
		src.ch <- batchOf(event{1, base + i*60_000, 1})
	}
	waitFor(t, "every row out", func() bool { return p.Stats().RowsOut == rows })
	// A lookup half an hour after the last row reads the frame's paged
	// rows (and does not keep them).
	res, lookupErr := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, time.UnixMilli(base+(rows+29)*60_000), nil)
	close(src.ch)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if lookupErr != nil {
		t.Fatal(lookupErr)
	}
	if n, _ := res.Feature("n"); n != int64(31) {
		t.Errorf("lookup half an hour on: n=%v, want 31", n)
	}
	got := scrape(t, reg)
	written := got[`volga_window_row_pages_total{op="written",pipeline="paged",stage="0"}`]
	read := got[`volga_window_row_pages_total{op="read",pipeline="paged",stage="0"}`]
	lookup := got[`volga_window_row_pages_total{op="lookup",pipeline="paged",stage="0"}`]
	t.Logf("pages written %v, read %v, by the lookup %v", written, read, lookup)
	if written < 10 || read < written-20 || read > written || lookup < 1 {
		t.Errorf("pages written %v, read %v, read by the lookup %v: want tens written, nearly all read back, and the lookup reading some", written, read, lookup)
	}
}

func TestMetricsDeadLetters(t *testing.T) {
	// One row the CSV source cannot decode (line 3), one without an event
	// time (line 4), which the engine refuses.
	const csv = "user_id,ts,amount\n" +
		"1,2024-01-03T08:00:00Z,10\n" +
		"x,2024-01-03T08:01:00Z,20\n" +
		"2,,30\n" +
		"1,2024-01-03T08:02:00Z,40\n"
	var mu sync.Mutex
	var letters []source.DeadLetter
	report := func(d source.DeadLetter) {
		mu.Lock()
		defer mu.Unlock()
		letters = append(letters, d)
	}
	src, err := source.NewCSVReader(strings.NewReader(csv), source.WithSchema(metricSchema), source.WithDeadLetter(report))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	reg := prometheus.NewPedanticRegistry()
	p, err := volga.SQL(metricQuery, volga.WithSource("tx", src), volga.WithDeadLetters(report), volga.WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(letters) != 2 {
		t.Fatalf("%d dead letters handed over, want 2: %+v", len(letters), letters)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_dead_letters_total{origin="source",pipeline="volga"}`: 1,
		`volga_dead_letters_total{origin="engine",pipeline="volga"}`: 1,
		`volga_source_rows_total{pipeline="volga"}`:                  3,
		`volga_sink_rows_total{pipeline="volga"}`:                    2,
	})
}

func TestMetricsLookups(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	evs := httpEvents(200)
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, evs)), volga.WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	const ok, bad = 7, 2
	at := time.UnixMilli(evs[len(evs)-1].ts)
	for i := range ok {
		if _, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1 + i%3)}, at, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range bad {
		if _, err := p.Lookup(context.Background(), map[string]any{"nope": 1}, at, nil); err == nil {
			t.Fatal("lookup without its key column succeeded")
		}
	}
	got := scrape(t, reg)
	expect(t, got, map[string]float64{
		`volga_lookup_duration_seconds_count{pipeline="volga"}`: ok + bad,
		`volga_lookup_errors_total{pipeline="volga"}`:           bad,
	})
	if s := got[`volga_lookup_duration_seconds_sum{pipeline="volga"}`]; !(s > 0) || s > 10 {
		t.Errorf("lookup durations sum to %vs", s)
	}
}

func TestMetricsHTTPHandler(t *testing.T) {
	checkGoroutines(t)
	reg := prometheus.NewPedanticRegistry()
	evs := httpEvents(100)
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, evs)), volga.WithMetrics(reg), volga.WithName("fraud"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	hm, err := request.NewMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"pipeline": "fraud"}, reg))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(request.WithMetrics(hm)))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	at := rfc(evs[len(evs)-1].ts)
	for user := 1; user <= 3; user++ {
		if code, body := post(t, srv.URL+request.FeaturesPath, fmt.Sprintf(`{"key": {"user_id": %d}, "at": %q}`, user, at)); code != http.StatusOK {
			t.Fatalf("lookup: %d %s", code, body)
		}
	}
	for _, body := range []string{`{"key": `, `{"key": {"user_id": 1}}`} {
		if code, _ := post(t, srv.URL+request.FeaturesPath, body); code != http.StatusBadRequest {
			t.Fatalf("bad request %s: %d, want 400", body, code)
		}
	}
	for _, path := range []string{request.HealthPath, "/nope"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_http_requests_total{code="200",handler="/v1/features",pipeline="fraud"}`:      3,
		`volga_http_requests_total{code="400",handler="/v1/features",pipeline="fraud"}`:      2,
		`volga_http_requests_total{code="200",handler="/healthz",pipeline="fraud"}`:          1,
		`volga_http_requests_total{code="404",handler="other",pipeline="fraud"}`:             1,
		`volga_http_request_duration_seconds_count{handler="/v1/features",pipeline="fraud"}`: 5,
		`volga_http_request_duration_seconds_count{handler="/healthz",pipeline="fraud"}`:     1,
		// Only the well-formed requests reached Pipeline.Lookup.
		`volga_lookup_duration_seconds_count{pipeline="fraud"}`: 3,
	})
}

func TestMetricsSameNameTwice(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	run := func(name string, n int) error {
		evs := make([]event, n)
		for i := range evs {
			evs[i] = event{int64(i % 2), int64(i), 1}
		}
		rec := batchOf(evs...)
		defer rec.Release()
		opts := []volga.Option{volga.WithSource("tx", source.NewMemory(metricSchema, rec)), volga.WithMetrics(reg)}
		if name != "" {
			opts = append(opts, volga.WithName(name))
		}
		p, err := volga.SQL(metricQuery, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return p.Run(context.Background())
	}
	if err := run("", 3); err != nil {
		t.Fatal(err)
	}
	err := run("volga", 5)
	if !errors.Is(err, volga.ErrMetricsRegistered) || !strings.Contains(err.Error(), `"volga"`) || !strings.Contains(err.Error(), "WithName") {
		t.Fatalf("second pipeline named volga: %v, want ErrMetricsRegistered naming it", err)
	}
	if err := run("other", 5); err != nil {
		t.Fatalf("a pipeline of another name: %v", err)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_source_rows_total{pipeline="volga"}`: 3,
		`volga_source_rows_total{pipeline="other"}`: 5,
	})
}

// TestMetricsNotGlobal checks that nothing reaches the global registry,
// with or without WithMetrics.
func TestMetricsNotGlobal(t *testing.T) {
	rec := batchOf(event{1, 0, 1})
	defer rec.Release()
	for _, opts := range [][]volga.Option{nil, {volga.WithMetrics(prometheus.NewRegistry())}} {
		p, err := volga.SQL(metricQuery, append(opts, volga.WithSource("tx", source.NewMemory(metricSchema, rec)))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := scrape(t, prometheus.DefaultGatherer); len(got) > 0 {
		t.Errorf("volga metrics on the global registry: %v", got)
	}
}

// captured is a slog.Handler keeping the records it is given.
type captured struct {
	mu      sync.Mutex
	level   slog.Level
	records []slog.Record
}

func (c *captured) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *captured) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{c, as} }
func (c *captured) WithGroup(string) slog.Handler         { panic("no groups") }

// withAttrs adds the logger's attributes to the records it passes on.
type withAttrs struct {
	*captured
	attrs []slog.Attr
}

func (w *withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.attrs...)
	return w.captured.Handle(ctx, r)
}
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.captured, append(slices.Clip(w.attrs), as...)}
}

// logLine is a record in comparable form: level, message and attributes
// (time-dependent ones left out).
func (c *captured) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.records {
		var as []string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "elapsed" {
				as = append(as, a.Key+"="+a.Value.String())
			}
			return true
		})
		sort.Strings(as)
		out = append(out, r.Level.String()+" "+r.Message+" "+strings.Join(as, " "))
	}
	return out
}

func TestLoggingStartStopLateAndDeadLetters(t *testing.T) {
	checkGoroutines(t)
	h := &captured{level: slog.LevelDebug}
	rec := batchOf(event{1, 1000, 1}, event{2, 5000, 2}, event{1, 2000, 3})
	defer rec.Release()
	after := batchOf(event{1, 6000, 4})
	defer after.Release()
	// A row without an event time: the engine dead-letters it.
	b := array.NewRecordBuilder(memory.DefaultAllocator, metricSchema)
	b.Field(0).(*array.Int64Builder).Append(3)
	b.Field(1).AppendNull()
	b.Field(2).(*array.Float64Builder).Append(1)
	noTime := b.NewRecordBatch()
	b.Release()
	defer noTime.Release()
	p, err := volga.SQL(metricQuery,
		volga.WithSource("tx", source.NewMemorySliced(metricSchema, 1, rec, noTime, after)),
		volga.WithMode(volga.Streaming), volga.WithParallelism(2), volga.WithName("fraud"),
		volga.WithLogger(slog.New(h)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"INFO volga: pipeline started mode=stream parallelism=2 pipeline=fraud table=tx",
		"DEBUG volga: late rows applied=0 applied_total=0 dropped=1 dropped_total=1 pipeline=fraud",
		"DEBUG volga: dead letters engine=1 engine_total=1 pipeline=fraud source=0 source_total=0",
		"INFO volga: pipeline stopped dead_letters=1 late_dropped=1 mode=stream pipeline=fraud rows_in=5 rows_out=3",
	}
	if got := h.lines(); !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// failingSink fails every write.
type failingSink struct{}

func (failingSink) Write(context.Context, arrow.RecordBatch) error { return errors.New("disk full") }
func (failingSink) Close() error                                   { return nil }

func TestLoggingErrors(t *testing.T) {
	h := &captured{level: slog.LevelInfo}
	rec := batchOf(event{1, 1000, 1})
	defer rec.Release()
	p, err := volga.SQL(metricQuery, volga.WithSource("tx", source.NewMemory(metricSchema, rec)),
		volga.WithSink(failingSink{}), volga.WithLogger(slog.New(h)))
	if err != nil {
		t.Fatal(err)
	}
	runErr := p.Run(context.Background())
	if runErr == nil || !strings.Contains(runErr.Error(), "disk full") {
		t.Fatalf("Run: %v, want the sink's error", runErr)
	}
	lines := h.lines()
	last := lines[len(lines)-1]
	for _, part := range []string{"ERROR volga: pipeline failed ", "error=" + runErr.Error(), "operator=sink", "pipeline=volga"} {
		if !strings.Contains(last, part) {
			t.Errorf("last log line %q lacks %q", last, part)
		}
	}
}

// TestLoggingQuietByDefault checks that a pipeline without WithLogger
// logs nothing, not even to slog's default logger.
func TestLoggingQuietByDefault(t *testing.T) {
	h := &captured{level: slog.LevelDebug}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(h))
	rec := batchOf(event{1, 1000, 1}, event{1, 500, 1})
	defer rec.Release()
	p, err := volga.SQL(metricQuery, volga.WithSource("tx", source.NewMemorySliced(metricSchema, 1, rec)), volga.WithMode(volga.Streaming))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Stats().LateDropped != 1 {
		t.Fatalf("stats %+v, want a late row", p.Stats())
	}
	if got := h.lines(); len(got) > 0 {
		t.Errorf("logged without a logger:\n%s", strings.Join(got, "\n"))
	}
}

// ExampleWithMetrics exports a pipeline's metrics on a registry of the
// application's own (serve it with promhttp.HandlerFor(reg, ...)) and
// logs its start and stop.
func ExampleWithMetrics() {
	rec := transactions()
	defer rec.Release()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		// Leave out the time and the run's duration, for a stable output.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "elapsed" {
				return slog.Attr{}
			}
			return a
		},
	}))
	p, err := volga.SQL(`
SELECT user_id, ts, sum(amount) OVER w AS spend_1h
FROM tx
WHERE amount > 10
WINDOW w AS (PARTITION BY user_id ORDER BY ts
             RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(rec.Schema(), rec)),
		volga.WithMetrics(reg), volga.WithName("spend"), volga.WithLogger(logger))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, time.UnixMilli(75*60_000), nil); err != nil {
		fmt.Println(err)
		return
	}
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch mf.GetName() {
		case "volga_source_rows_total", "volga_filtered_rows_total", "volga_sink_rows_total":
			fmt.Println(mf.GetName(), m.GetCounter().GetValue())
		case "volga_window_keys":
			fmt.Println(mf.GetName(), m.GetGauge().GetValue())
		case "volga_lookup_duration_seconds":
			fmt.Println(mf.GetName(), "count", m.GetHistogram().GetSampleCount())
		}
	}
	// Output:
	// level=INFO msg="volga: pipeline started" pipeline=spend mode=batch parallelism=1 table=tx
	// level=INFO msg="volga: pipeline stopped" pipeline=spend mode=batch rows_in=6 rows_out=4 late_dropped=0 dead_letters=0
	// volga_filtered_rows_total 2
	// volga_lookup_duration_seconds count 1
	// volga_sink_rows_total 4
	// volga_source_rows_total 6
	// volga_window_keys 1
}

// TestMetricsCheckpoints: a run with checkpoints exports their count, the
// last epoch, its bytes and timings (steps included), in agreement with the
// OnCheckpoint callback; a run without exports none of them.
func TestMetricsCheckpoints(t *testing.T) {
	checkGoroutines(t)
	var evs []event
	for i := int64(0); i < 40; i++ {
		evs = append(evs, event{user: i % 5, ts: i * 30_000, amount: float64(i)})
	}
	rec := batchOf(evs...)
	defer rec.Release()
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	reg := prometheus.NewPedanticRegistry()
	var infos []volga.CheckpointInfo
	p, err := volga.SQL(metricQuery,
		volga.WithSource("tx", source.NewMemorySliced(metricSchema, 4, rec)),
		volga.WithMode(volga.Streaming), volga.WithMetrics(reg), volga.WithName("ck"),
		volga.WithCheckpointBucket(bucket, time.Hour),
		volga.WithOnCheckpoint(func(i volga.CheckpointInfo) { infos = append(infos, i) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || !infos[0].Final || infos[0].Bytes <= 0 {
		t.Fatalf("checkpoints: %+v, want one final checkpoint with bytes", infos)
	}
	got := scrape(t, reg)
	expect(t, got, map[string]float64{
		`volga_checkpoints_total{outcome="completed",pipeline="ck"}`: 1,
		`volga_checkpoints_total{outcome="failed",pipeline="ck"}`:    0,
		`volga_checkpoint_epoch{pipeline="ck"}`:                      float64(infos[0].Epoch),
		`volga_checkpoint_bytes{pipeline="ck"}`:                      float64(infos[0].Bytes),
		`volga_checkpoint_duration_seconds{pipeline="ck"}`:           infos[0].Duration.Seconds(),
		`volga_checkpoint_stall_seconds{pipeline="ck"}`:              infos[0].Stall.Seconds(),
		`volga_checkpoint_step_seconds{pipeline="ck",step="write"}`:  infos[0].Write.Seconds(),
		`volga_checkpoint_step_seconds{pipeline="ck",step="backup"}`: infos[0].Backup.Seconds(),
		`volga_checkpoint_step_seconds{pipeline="ck",step="upload"}`: infos[0].Upload.Seconds(),
	})
	// The steps follow one another within the checkpoint's duration; the
	// backup and the upload write files, which takes some time.
	if in := infos[0]; in.Write < 0 || in.Backup <= 0 || in.Upload <= 0 || in.Write+in.Backup+in.Upload > in.Duration {
		t.Errorf("checkpoint steps: write %v, backup %v, upload %v of %v", in.Write, in.Backup, in.Upload, in.Duration)
	}
	if ts := got[`volga_checkpoint_timestamp_seconds{pipeline="ck"}`]; ts < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("volga_checkpoint_timestamp_seconds = %v, want about now", ts)
	}
	if st := p.Stats(); st.Checkpoints != 1 || st.LastCheckpoint != int64(infos[0].Epoch) {
		t.Errorf("Stats: %d checkpoints, last %d", st.Checkpoints, st.LastCheckpoint)
	}

	// Without checkpoints, no checkpoint metric at all.
	reg2 := prometheus.NewPedanticRegistry()
	p2, err := volga.SQL(metricQuery, volga.WithSource("tx", source.NewMemory(metricSchema, rec)), volga.WithMetrics(reg2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k := range scrape(t, reg2) {
		if strings.HasPrefix(k, "volga_checkpoint") {
			t.Errorf("%s present without checkpoints", k)
		}
	}
}

// TestMetricsBackfill: a backfill reports its window operator like a
// pipeline does (its metrics had no volga_window_* rows): the events and
// the spine's probe rows in, a row out for each, the keys of both.
func TestMetricsBackfill(t *testing.T) {
	checkGoroutines(t)
	evs := batchOf(event{1, 0, 10}, event{1, 60_000, 5}, event{2, 120_000, 7})
	defer evs.Release()
	spineSchema := arrow.NewSchema([]arrow.Field{metricSchema.Field(0), metricSchema.Field(1)}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, spineSchema)
	for _, p := range [][2]int64{{1, 90_000}, {3, 100_000}} { // user 3 has no event
		b.Field(0).(*array.Int64Builder).Append(p[0])
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(p[1]))
	}
	spine := b.NewRecordBatch()
	b.Release()
	defer spine.Release()
	reg := prometheus.NewPedanticRegistry()
	out := sink.NewCollector()
	defer out.Release()
	err := volga.Backfill(context.Background(), metricQuery, source.NewMemory(spineSchema, spine), out,
		volga.WithSource("tx", source.NewMemory(metricSchema, evs)), volga.WithMetrics(reg), volga.WithName("train"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Rows()); n != 2 {
		t.Fatalf("%d training rows, want 2", n)
	}
	expect(t, scrape(t, reg), map[string]float64{
		`volga_window_input_rows_total{pipeline="train",stage="0"}`:  5,
		`volga_window_output_rows_total{pipeline="train",stage="0"}`: 5,
		`volga_window_keys{pipeline="train",stage="0"}`:              3,
		`volga_window_pending_rows{pipeline="train",stage="0"}`:      0,
	})
}
