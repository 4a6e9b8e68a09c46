package pipeline_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/window"
)

// batchTimeQuery covers every kind of frame (RANGE, ROWS, EXCLUDE CURRENT
// ROW, frames ending before the current row, UNBOUNDED), two partitionings
// (two stages) and a WHERE clause.
func batchTimeQuery() string {
	return testutil.ModesSQL("events", slices.Concat(testutil.ModesLookupWindows, testutil.ModesUnboundedWindows))
}

// writeEvents writes tab to a Parquet file in row groups of group rows.
func writeEvents(t *testing.T, tab *testutil.Table, group int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.parquet")
	out, err := sink.NewParquet(path, nil, sink.WithRowGroupSize(group))
	if err != nil {
		t.Fatal(err)
	}
	rec := tab.Record(memory.DefaultAllocator, 0, len(tab.Rows))
	defer rec.Release()
	if err := out.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func runBatch(t *testing.T, src source.Source, out sink.Sink, parallelism int) error {
	t.Helper()
	p, err := volga.SQL(batchTimeQuery(), volga.WithSource("events", src), volga.WithSink(out), volga.WithParallelism(parallelism))
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(context.Background())
}

// gatedSource holds back its last batches until the sink has received a
// row, so a run that emits nothing before the end of its input fails.
type gatedSource struct {
	boundedSource
	reads, gateAt int
	first         <-chan struct{}
}

func (g *gatedSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if g.reads++; g.reads >= g.gateAt {
		select {
		case <-g.first:
		case <-time.After(20 * time.Second):
			return nil, errors.New("no output row before the end of the input")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.boundedSource.Read(ctx)
}

// boundedSource is a source that knows a lower bound of the times to come.
type boundedSource interface {
	source.Source
	source.LowerBounder
}

// firstWrite is a Collector that signals its first row.
type firstWrite struct {
	*sink.Collector
	once  sync.Once
	first chan struct{}
}

func (f *firstWrite) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() > 0 {
		f.once.Do(func() { close(f.first) })
	}
	return f.Collector.Write(ctx, rec)
}

// TestBatchFinishesTimeOrderedRowsEarly: a batch run over a time-ordered
// Parquet file, or time-ordered batches in memory, emits rows before it
// has read the whole input (the row groups' statistics, or the batches
// themselves, bound the event times still to come), with the same rows, in
// the same order, as a run over the same rows from a source that knows no
// bound.
func TestBatchFinishesTimeOrderedRowsEarly(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	tab := testutil.MLEvents(testutil.Rand(5), testutil.ModesEventConfig(3000))
	want := sink.NewCollector()
	if err := runBatch(t, testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...), want, 1); err != nil {
		t.Fatal(err)
	}
	path := writeEvents(t, tab, 100)
	cols := want.Records()[0].Schema()
	names := make([]string, cols.NumFields())
	for i, f := range cols.Fields() {
		names[i] = f.Name
	}
	open := map[string]func() boundedSource{
		"parquet": func() boundedSource {
			pq, err := source.NewParquetFiles([]string{path}, source.WithBatchSize(37))
			if err != nil {
				t.Fatal(err)
			}
			return pq
		},
		"memory": func() boundedSource {
			return source.NewMemory(tab.Schema, tab.Batches(testutil.Rand(3), 37)...)
		},
	}
	for name, open := range open {
		for _, par := range []int{1, 2} {
			src := open()
			got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
			run := src
			if par == 1 {
				// One task writes straight to the sink: the first rows
				// must come out while the last batches are still unread.
				run = &gatedSource{boundedSource: src, gateAt: 3000/37 - 2, first: got.first}
			}
			if err := runBatch(t, run, got, par); err != nil {
				t.Fatalf("%s, parallelism %d: %v", name, par, err)
			}
			src.Close()
			if d := testutil.Diff(names, got.Rows(), want.Rows(), nil); d != "" {
				t.Fatalf("%s, parallelism %d: time-ordered input changed the output:\n%s", name, par, d)
			}
		}
	}
}

// TestBatchFinishesDisorderedRowsEarly: rows in arrival order, each a
// little late (up to testutil.ModesMaxOutOfOrder), are emitted before the
// whole input is read too, one task or several, from Parquet row groups
// that overlap in time or from batches in memory, with the output of the
// same rows from a source that knows no bound. There are two users (and
// NULL) and three merchants (and NULL) to partition by, so that with
// three or four tasks some have no rows: they do not hold the others'
// output back.
func TestBatchFinishesDisorderedRowsEarly(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	const rows = 3000
	tab := testutil.ModesData(9, rows)
	late, newest := 0, int64(math.MinInt64)
	for i := range tab.Rows {
		ts := tab.Value(i, "ts").(int64)
		if ts < newest {
			late++
		}
		newest = max(newest, ts)
	}
	if late < rows/20 {
		t.Fatalf("only %d rows of %d out of time order", late, rows)
	}
	want := sink.NewCollector()
	if err := runBatch(t, testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...), want, 1); err != nil {
		t.Fatal(err)
	}
	path := writeEvents(t, tab, 100)
	open := map[string]func() boundedSource{
		"parquet": func() boundedSource {
			return must(source.NewParquetFiles([]string{path}, source.WithBatchSize(37)))
		},
		"memory": func() boundedSource {
			return source.NewMemory(tab.Schema, tab.Batches(testutil.Rand(3), 37)...)
		},
	}
	for name, open := range open {
		for _, par := range []int{1, 2, 3, 4} {
			src := open()
			got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
			gated := &gatedSource{boundedSource: src, gateAt: rows/37 - 2, first: got.first}
			if err := runBatch(t, gated, got, par); err != nil {
				t.Fatalf("%s, parallelism %d: %v", name, par, err)
			}
			src.Close()
			if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
				t.Fatalf("%s, parallelism %d: disordered input released early changed the output:\n%s", name, par, d)
			}
		}
	}
}

// TestBatchUnorderedParquet: a Parquet file whose rows are out of time
// order (row groups overlapping in time) still gives the output of the
// same rows from a source without statistics.
func TestBatchUnorderedParquet(t *testing.T) {
	tab := testutil.ModesData(6, 2000)
	want := sink.NewCollector()
	if err := runBatch(t, testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(3), 50)...), want, 2); err != nil {
		t.Fatal(err)
	}
	path := writeEvents(t, tab, 64)
	pq, err := source.NewParquetFiles([]string{path}, source.WithBatchSize(40))
	if err != nil {
		t.Fatal(err)
	}
	defer pq.Close()
	got := sink.NewCollector()
	if err := runBatch(t, pq, got, 2); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows()) != len(want.Rows()) || testutil.Diff(nil, got.Rows(), want.Rows(), nil) != "" {
		t.Fatalf("unordered Parquet input changed the output (%d rows, want %d):\n%s", len(got.Rows()), len(want.Rows()),
			testutil.Diff(nil, got.Rows(), want.Rows(), nil))
	}
}

// liarSource claims that no row left is earlier than its bound.
type liarSource struct {
	*testutil.Source
	bound int64
}

func (l *liarSource) LowerBound(string) (int64, bool) { return l.bound, true }

// TestBatchSourceBoundBroken: a source whose bound is wrong (a row comes
// below it) stops the run with an error that says so, rather than giving
// wrong results.
func TestBatchSourceBoundBroken(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(5), testutil.ModesEventConfig(500))
	src := &liarSource{Source: testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...),
		bound: tab.Value(250, "ts").(int64) + 1}
	err := runBatch(t, src, sink.NewCollector(), 1)
	if err == nil || !strings.Contains(err.Error(), "LowerBound") {
		t.Fatalf("err = %v, want one naming the source's LowerBound", err)
	}
}

// TestBatchResultMergeSameAsOneTask: a batch run of one sliding-window
// stage over several tasks merges the tasks' results onto the input
// batches (no task copies its rows). Over input in time order, or in
// arrival order with rows a little late, released early, merged a few
// rows at a time (every kind of frame and aggregate of one partitioning;
// two users and NULL, so that with three or four tasks some have no
// rows), its output is that of one task, row for row; and
// so it is when every result is a number the tasks write in place
// (window.Dest), NULL results included.
func TestBatchResultMergeSameAsOneTask(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	var windows []testutil.ModesWindow
	for _, w := range slices.Concat(testutil.ModesLookupWindows, testutil.ModesUnboundedWindows) {
		if slices.Equal(w.Keys, []string{"user_id"}) {
			windows = append(windows, w)
		}
	}
	for order, tab := range map[string]*testutil.Table{
		"time order":    testutil.MLEvents(testutil.Rand(8), testutil.ModesEventConfig(3000)),
		"arrival order": testutil.ModesData(8, 3000), // rows up to ModesMaxOutOfOrder late
	} {
		t.Run(order, func(t *testing.T) { checkResultMerge(t, tab, windows) })
	}
}

// checkResultMerge is TestBatchResultMergeSameAsOneTask over the events
// tab.
func checkResultMerge(t *testing.T, tab *testutil.Table, windows []testutil.ModesWindow) {
	path := writeEvents(t, tab, 100)
	run := func(query string, src source.Source, par int) *sink.Collector {
		t.Helper()
		out := sink.NewCollector()
		p, err := volga.SQL(query, volga.WithSource("events", src), volga.WithSink(out), volga.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		return out
	}
	check := func(query string, inPlace bool) (nulls int) {
		want := run(query, testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...), 1)
		schema := want.Records()[0].Schema()
		names := make([]string, schema.NumFields())
		for i, f := range schema.Fields() {
			names[i] = f.Name
		}
		for _, par := range []int{2, 3, 4} {
			for name, src := range map[string]source.Source{
				"parquet":            must(source.NewParquetFiles([]string{path}, source.WithBatchSize(37))),
				"memory":             source.NewMemory(tab.Schema, tab.Batches(testutil.Rand(3), 37)...),
				"memory (unbounded)": testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(4), 200)...),
			} {
				merged, dests := pipeline.ResultMergeRuns(), pipeline.DestRuns()
				got := run(query, src, par)
				src.Close()
				if pipeline.ResultMergeRuns() == merged {
					t.Fatalf("%s, parallelism %d: the run did not merge results onto its input", name, par)
				}
				if wrote := pipeline.DestRuns() > dests; wrote != inPlace {
					t.Fatalf("%s, parallelism %d: results written in place: %v, want %v", name, par, wrote, inPlace)
				}
				if d := testutil.Diff(names, got.Rows(), want.Rows(), nil); d != "" {
					t.Fatalf("%s, parallelism %d: output differs from one task's:\n%s", name, par, d)
				}
			}
		}
		for _, rec := range want.Records() {
			for _, c := range rec.Columns()[5:] {
				nulls += c.NullN()
			}
		}
		return nulls
	}
	check(testutil.ModesSQL("events", windows), false)

	// The same windows with only the aggregates whose results are numbers.
	probe := run(testutil.ModesSQL("events", windows), testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...), 1)
	schema := probe.Records()[0].Schema()
	var numeric []testutil.ModesWindow
	for _, w := range windows {
		nw := w
		nw.Aggs = nil
		for _, a := range w.Aggs {
			if f, ok := schema.FieldsByName(w.FeatureName(a)); ok && window.Scatterable(f[0].Type) {
				nw.Aggs = append(nw.Aggs, a)
			}
		}
		if len(nw.Aggs) > 0 {
			numeric = append(numeric, nw)
		}
	}
	if len(numeric) < 3 {
		t.Fatalf("only %d windows with numeric results", len(numeric))
	}
	if nulls := check(testutil.ModesSQL("events", numeric), true); nulls == 0 {
		t.Fatal("no NULL result among the numeric ones: the case of NULLs written in place is not covered")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestBatchGroupWindowsFinishEarly: a batch GROUP BY run over a Parquet
// file whose row groups advance in time emits its tumbling and hopping
// windows before it has read the whole input, also when the rows are out
// of time order within the out-of-orderness the row groups allow, with
// the same rows in the same order as a run from a source that knows no
// bound (which holds every window to the end).
func TestBatchGroupWindowsFinishEarly(t *testing.T) {
	aggs := []testutil.Agg{
		{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "max", Arg: "price"},
		{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "category"},
		{Func: "topn_frequency", Arg: "category", Param: int64(2)},
	}
	const rows, batch = 3000, 37
	data := map[string]*testutil.Table{
		"time-ordered": testutil.MLEvents(testutil.Rand(5), testutil.ModesEventConfig(rows)),
		"out of order": testutil.ModesData(6, rows),
	}
	windows := []testutil.GroupWindow{
		{Keys: []string{"user_id"}, Time: "ts", Size: 60_000, Slide: 60_000},
		{Keys: []string{"user_id"}, Time: "ts", Size: 300_000, Slide: 60_000},
	}
	run := func(w testutil.GroupWindow, src source.Source, out sink.Sink, par int) error {
		p, err := volga.SQL(groupQuery(w, aggs), volga.WithSource("events", src), volga.WithSink(out), volga.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		return p.Run(context.Background())
	}
	for name, tab := range data {
		path := writeEvents(t, tab, 100)
		for _, w := range windows {
			want := sink.NewCollector()
			if err := run(w, testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(2), 64)...), want, 1); err != nil {
				t.Fatal(err)
			}
			if len(want.Rows()) < 100 {
				t.Fatalf("%s: %d windows, too few for the test to tell", name, len(want.Rows()))
			}
			for _, par := range []int{1, 2} {
				pq, err := source.NewParquetFiles([]string{path}, source.WithBatchSize(batch))
				if err != nil {
					t.Fatal(err)
				}
				got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
				gated := &gatedSource{boundedSource: pq, gateAt: rows/batch - 2, first: got.first}
				if err := run(w, gated, got, par); err != nil {
					t.Fatalf("%s, %+v, parallelism %d: %v", name, w, par, err)
				}
				pq.Close()
				if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
					t.Fatalf("%s, %+v, parallelism %d: finishing windows early changed the output:\n%s", name, w, par, d)
				}
			}
		}
	}
}

// TestBatchGroupWindowsResumeExactlyOnce: a batch GROUP BY run over
// time-ordered batches (windows emitted as the source's bound passes
// them), cancelled again and again and resumed from its latest
// checkpoint, writes exactly the file an uninterrupted run writes.
func TestBatchGroupWindowsResumeExactlyOnce(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(21), testutil.ModesEventConfig(3000))
	batches := tab.Batches(testutil.Rand(22), 40)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	query := groupQuery(testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 120_000, Slide: 60_000},
		[]testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "last_value", Arg: "category"}})
	want := checkBatchResume(t, query, tab.Schema, batches, 2, 23, 5)
	if bytes.Count(want, []byte("\n")) < 100 {
		t.Fatalf("only %d lines: too few windows for the test to tell", bytes.Count(want, []byte("\n")))
	}
}

// checkBatchResume runs query in batch mode over batches, with
// parallelism par and opts, to a CSV file once without interruptions and
// once cancelled n times (crashAndResume with seed) and resumed from its
// latest checkpoint, and fails t unless the two files are the same; it
// returns the file.
func checkBatchResume(t *testing.T, query string, schema *arrow.Schema, batches []arrow.RecordBatch, par int, seed uint64, n int, opts ...volga.Option) []byte {
	t.Helper()
	return checkResume(t, query, schema, batches, par, seed, n, nil, opts...)
}

// checkResume is checkBatchResume (in the mode opts give) where each
// attempt of the interrupted run also gets the options each returns
// (state directory, memory budget, metrics), given a directory of the
// test's; the uninterrupted run gets opts alone.
func checkResume(t *testing.T, query string, schema *arrow.Schema, batches []arrow.RecordBatch, par int, seed uint64, n int, each func(dir string) []volga.Option, opts ...volga.Option) []byte {
	t.Helper()
	dir := t.TempDir()
	run := func(ctx context.Context, path string, after int, cancel context.CancelFunc, opts ...volga.Option) error {
		return runBatchToFile(ctx, t, query, schema, batches, par, path, after, cancel, opts...)
	}
	ref := filepath.Join(dir, "ref.csv")
	if err := run(context.Background(), ref, 0, nil, opts...); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	var ckpts atomic.Int64
	crashes := crashAndResume(t, testutil.Rand(seed), n, len(batches)/2, func(ctx context.Context, after int, cancel context.CancelFunc) error {
		o := append(slices.Clip(opts), volga.WithCheckpointBucket(bucket, time.Millisecond),
			volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
		if each != nil {
			o = append(o, each(dir)...)
		}
		return run(ctx, out, after, cancel, o...)
	})
	if ckpts.Load() < 2 {
		t.Fatalf("parallelism %d: only %d checkpoints were taken", par, ckpts.Load())
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("parallelism %d: after %d interruptions the output differs from an uninterrupted run:\n%s", par, crashes, lineDiff(got, want))
	}
	return want
}

// runBatchToFile runs query in batch mode over batches with parallelism
// par into a CSV file (sink.Open) and returns the run's error. With after
// > 0 the source interrupts the run once it has read after batches: it
// calls cancel, or when cancel is nil stops the run gracefully.
func runBatchToFile(ctx context.Context, t *testing.T, query string, schema *arrow.Schema, batches []arrow.RecordBatch, par int, path string, after int, cancel context.CancelFunc, opts ...volga.Option) error {
	t.Helper()
	out, err := sink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src := testutil.NewInterrupting(schema, after, cancel, batches...)
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out), volga.WithParallelism(par)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if cancel == nil {
		src.Interrupt = p.Stop
	}
	return p.Run(ctx)
}

// TestBatchDisorderedResumeExactlyOnce: a checkpointed batch run over rows
// in arrival order, each a little late, released as the input goes,
// cancelled again and again and resumed from its latest checkpoint, writes
// exactly the file of an uninterrupted run, rows in input order, with one
// task, two, and four (some of which have no rows): the times a late row
// ruled out before a checkpoint still hold after it.
func TestBatchDisorderedResumeExactlyOnce(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab := testutil.ModesData(31, 3000)
	batches := tab.Batches(testutil.Rand(32), 40)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for _, par := range []int{1, 2, 4} {
		checkBatchResume(t, batchTimeQuery(), tab.Schema, batches, par, 33+uint64(par), 6)
	}
}

// TestBatchHeldWarning: a batch run whose OVER-window rows are held back
// by input out of time order (here sorted by user) logs one warning that
// says so; input in time order, or a little late, logs none.
func TestBatchHeldWarning(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetHeldWarnRows(300)()
	sorted := testutil.MLEvents(testutil.Rand(41), testutil.ModesEventConfig(3000))
	byUser := make([]int, len(sorted.Rows))
	for i := range byUser {
		byUser[i] = i
	}
	uc := sorted.Col("user_id")
	slices.SortStableFunc(byUser, func(a, b int) int {
		ua, _ := sorted.Rows[a][uc].(int64)
		ub, _ := sorted.Rows[b][uc].(int64)
		return cmp.Compare(ua, ub)
	})
	for name, c := range map[string]struct {
		tab   *testutil.Table
		warns int
	}{
		"time order":    {sorted, 0},
		"arrival order": {testutil.ModesData(41, 3000), 0},
		"by user":       {sorted.Subset(byUser), 1},
	} {
		var logs bytes.Buffer
		p, err := volga.SQL(batchTimeQuery(), volga.WithSource("events", source.NewMemory(c.tab.Schema, c.tab.Batches(testutil.Rand(3), 37)...)),
			volga.WithSink(sink.NewCollector()), volga.WithLogger(slogTo(&logs)))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.Count(logs.String(), "holds its OVER-window rows"); got != c.warns {
			t.Fatalf("%s: %d warnings about the order, want %d:\n%s", name, got, c.warns, logs.String())
		}
		if c.warns > 0 && !strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("%s: the warning is not at WARN level:\n%s", name, logs.String())
		}
	}
}

// TestBatchTextTimeOrder: a CSV source promised in time order up to a
// lateness (source.WithTimeOrder) lets a batch run emit rows before the
// end of its input, with one task or two, and the output of the same
// file read without the promise; a promise the rows break (lateness 0 for
// rows up to ModesMaxOutOfOrder late) stops the run with an error that
// names it.
func TestBatchTextTimeOrder(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	const rows = 3000
	tab := testutil.ModesData(51, rows)
	path := filepath.Join(t.TempDir(), "events.csv")
	out, err := sink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := tab.Record(memory.DefaultAllocator, 0, len(tab.Rows))
	if err := out.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	want := sink.NewCollector()
	if err := runBatch(t, must(source.NewCSV(path, source.WithBatchSize(37))), want, 1); err != nil {
		t.Fatal(err)
	}
	late := time.Duration(testutil.ModesMaxOutOfOrder) * time.Millisecond
	for _, par := range []int{1, 2} {
		src := must(source.NewCSV(path, source.WithBatchSize(37), source.WithTimeOrder("ts", late)))
		got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
		gated := &gatedSource{boundedSource: src, gateAt: rows/37 - 2, first: got.first}
		if err := runBatch(t, gated, got, par); err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		src.Close()
		if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
			t.Fatalf("parallelism %d: the promised order changed the output:\n%s", par, d)
		}
	}
	src := must(source.NewCSV(path, source.WithBatchSize(37), source.WithTimeOrder("ts", 0)))
	defer src.Close()
	err = runBatch(t, src, sink.NewCollector(), 1)
	if err == nil || !strings.Contains(err.Error(), "WithTimeOrder") {
		t.Fatalf("err = %v, want one naming source.WithTimeOrder", err)
	}
}
