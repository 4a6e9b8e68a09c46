package pipeline_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/window"
	"gocloud.dev/blob/memblob"
)

// byUser returns tab's rows sorted by user (stable: each user's rows in
// their order in tab).
func byUser(tab *testutil.Table) *testutil.Table {
	idx := upTo(len(tab.Rows))
	uc := tab.Col("user_id")
	slices.SortStableFunc(idx, func(a, b int) int {
		ua, _ := tab.Rows[a][uc].(int64)
		ub, _ := tab.Rows[b][uc].(int64)
		return cmp.Compare(ua, ub)
	})
	return tab.Subset(idx)
}

// upTo returns 0, 1, ..., n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// runQuery runs query in batch mode (unless opts say otherwise) over src
// into out.
func runQuery(query string, src source.Source, out sink.Sink, opts ...volga.Option) error {
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		return err
	}
	return p.Run(context.Background())
}

// TestBatchClusteredByKey: a batch run over input sorted by user, promised
// clustered by user (WithClusteredBy), emits rows before it has read its
// input (which, far from time order, is otherwise held to the end), with
// one task or several, and exactly the rows of a run without the promise,
// in the same order: for one stage over user_id, for two stages over
// user_id and over user_id and merchant, and for the cross-mode query,
// whose first stage is over user_id and later ones over other keys (which
// hold their rows to the end).
func TestBatchClusteredByKey(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	const rows = 3000
	tab := byUser(testutil.ModesData(81, rows))
	batches := tab.Batches(testutil.Rand(82), 40)
	defer arrowutil.ReleaseAll(batches)
	var byUserMerchant []testutil.ModesWindow
	for _, w := range testutil.ModesLookupWindows {
		if slices.Contains(w.Keys, "user_id") {
			w.Keys = []string{"user_id", "merchant"}
			byUserMerchant = append(byUserMerchant, w)
		}
	}
	for name, c := range map[string]struct {
		query string
		early bool
	}{
		"one stage":    {userWindowsQuery(true), true},
		"user stages":  {testutil.ModesSQL("events", slices.Concat(testutil.ModesLookupWindows[:2], byUserMerchant[2:])), true},
		"other stages": {batchTimeQuery(), false},
	} {
		want := sink.NewCollector()
		if err := runQuery(c.query, source.NewMemory(tab.Schema, batches...), want); err != nil {
			t.Fatal(err)
		}
		for _, par := range []int{1, 2, 3} {
			got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
			var src source.Source = source.NewMemory(tab.Schema, batches...)
			if c.early {
				src = &gatedSource{boundedSource: source.NewMemory(tab.Schema, batches...), gateAt: len(batches) - 2, first: got.first}
			}
			// Column names compare without case.
			if err := runQuery(c.query, src, got, volga.WithParallelism(par), volga.WithClusteredBy("User_ID")); err != nil {
				t.Fatalf("%s, parallelism %d: %v", name, par, err)
			}
			if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
				t.Fatalf("%s, parallelism %d: the promise changed the output:\n%s", name, par, d)
			}
		}
	}
}

// TestBatchClusteredByReaderAhead: with several tasks, the reader of a
// run over clustered input may send each task only so many rows ahead of
// what it has received (the rows a task waits for before it releases),
// and sends the keys finished with the batch that finished them. With that
// bound far below the input (60 rows, batches of up to 90), the reader
// waits on the bound again and again; the output is still exactly that of
// a run without the promise, for two and three tasks, over one stage and
// over the cross-mode query's stages.
func TestBatchClusteredByReaderAhead(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(60)()
	defer pipeline.SetMergeChunk(50)()
	tab := byUser(testutil.ModesData(83, 4000))
	batches := tab.Batches(testutil.Rand(84), 90)
	defer arrowutil.ReleaseAll(batches)
	for name, query := range map[string]string{"one stage": userWindowsQuery(true), "other stages": batchTimeQuery()} {
		want := sink.NewCollector()
		if err := runQuery(query, source.NewMemory(tab.Schema, batches...), want); err != nil {
			t.Fatal(err)
		}
		// Rows without an event time go to the dead letters.
		if len(want.Rows()) < len(tab.Rows)*9/10 {
			t.Fatalf("%s: %d rows out of %d", name, len(want.Rows()), len(tab.Rows))
		}
		for _, par := range []int{2, 3} {
			got := sink.NewCollector()
			if err := runQuery(query, source.NewMemory(tab.Schema, batches...), got, volga.WithParallelism(par), volga.WithClusteredBy("user_id")); err != nil {
				t.Fatalf("%s, parallelism %d: %v", name, par, err)
			}
			if d := testutil.Diff(nil, got.Rows(), want.Rows(), nil); d != "" {
				t.Fatalf("%s, parallelism %d: the output changed:\n%s", name, par, d)
			}
		}
	}
}

// TestBatchClusteredByResumeExactlyOnce: a checkpointed batch run over
// input clustered by user, cancelled again and again and resumed from its
// latest checkpoint, writes the file of an uninterrupted run.
func TestBatchClusteredByResumeExactlyOnce(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab := byUser(testutil.ModesData(83, 3000))
	batches := tab.Batches(testutil.Rand(84), 40)
	defer arrowutil.ReleaseAll(batches)
	for _, par := range []int{1, 2} {
		checkBatchResume(t, userWindowsQuery(true), tab.Schema, batches, par, 85+uint64(par), 6, volga.WithClusteredBy("user_id"))
	}
}

// TestBatchClusteredByBroken: input promised clustered by user in which a
// user comes back after other users' rows stops the run with an error that
// names the promise, whether the user comes back in a later batch or in the
// batch where the next user starts.
func TestBatchClusteredByBroken(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	tab := byUser(testutil.ModesData(87, 600))
	// The first row again, after everything (a later batch), and after
	// the first rows of the second user (the same batch).
	second := slices.IndexFunc(tab.Rows, func(r []any) bool { return r[tab.Col("user_id")] != tab.Rows[0][tab.Col("user_id")] })
	for name, order := range map[string][]int{
		"later batch": append(upTo(len(tab.Rows)), 0),
		"same batch":  slices.Concat(upTo(second+2), []int{0}, upTo(len(tab.Rows))[second+2:]),
	} {
		bad := tab.Subset(order)
		for _, par := range []int{1, 2} {
			batches := bad.Batches(testutil.Rand(88), 20)
			err := runQuery(userWindowsQuery(false), source.NewMemory(bad.Schema, batches...), sink.NewCollector(),
				volga.WithParallelism(par), volga.WithClusteredBy("user_id"))
			arrowutil.ReleaseAll(batches)
			if !errors.Is(err, window.ErrNotClustered) || !strings.Contains(err.Error(), "ClusteredBy") {
				t.Fatalf("%s, parallelism %d: %v, want an error saying the input is not clustered as promised", name, par, err)
			}
		}
	}
}

// TestBatchClusteredByRefused: a promise the run cannot use is refused
// with a message saying why.
func TestBatchClusteredByRefused(t *testing.T) {
	tab := byUser(testutil.ModesData(89, 100))
	batches := tab.Batches(testutil.Rand(90), 5)
	defer arrowutil.ReleaseAll(batches)
	for _, c := range []struct {
		query string
		opts  []volga.Option
		want  string
	}{
		{userWindowsQuery(false), []volga.Option{volga.WithMode(volga.Streaming), volga.WithClusteredBy("user_id")}, "batch runs only"},
		{userWindowsQuery(false), []volga.Option{volga.WithClusteredBy("merchant")}, `column "merchant" is not among the PARTITION BY columns`},
		{userWindowsQuery(false), []volga.Option{volga.WithClusteredBy("nope")}, `no column "nope"`},
		{groupQuery(minuteByUser, []testutil.Agg{{Func: "count"}}),
			[]volga.Option{volga.WithClusteredBy("merchant")}, `column "merchant" is not among the GROUP BY columns`},
		{"SELECT user_id, amount FROM events", []volga.Option{volga.WithClusteredBy("user_id")}, "needs windows"},
	} {
		err := runQuery(c.query, source.NewMemory(tab.Schema, batches...), sink.NewCollector(), c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.opts, err, c.want)
		}
	}
}

// TestBatchClusteredByBrokenAfterResume: a run resumed from a checkpoint
// taken after a user's rows were all out still refuses that user when it
// comes back, as the run before would have.
func TestBatchClusteredByBrokenAfterResume(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	tab := byUser(testutil.ModesData(91, 600))
	bad := tab.Subset(append(upTo(len(tab.Rows)), 0)) // the first row again, at the end
	batches := bad.Batches(testutil.Rand(92), 20)
	defer arrowutil.ReleaseAll(batches)
	for _, par := range []int{1, 2} {
		bucket := memblob.OpenBucket(nil)
		path := filepath.Join(t.TempDir(), "out.csv")
		opts := []volga.Option{volga.WithClusteredBy("user_id"), volga.WithCheckpointBucket(bucket, time.Hour)}
		// Stopped half way (a final checkpoint), then resumed.
		if err := runBatchToFile(context.Background(), t, userWindowsQuery(false), bad.Schema, batches, par, path, len(batches)/2, nil, opts...); err != nil {
			t.Fatalf("parallelism %d: first run: %v", par, err)
		}
		err := runBatchToFile(context.Background(), t, userWindowsQuery(false), bad.Schema, batches, par, path, 0, nil, opts...)
		bucket.Close()
		if !errors.Is(err, window.ErrNotClustered) {
			t.Fatalf("parallelism %d: resumed run: %v, want an error saying the input is not clustered as promised", par, err)
		}
	}
}

// TestBatchClusteredByGroupResumeExactlyOnce: a checkpointed batch run
// of GROUP BY windows over input clustered by user, cancelled again and
// again and resumed from its latest checkpoint, writes the file of an
// uninterrupted run with the promise, with one task or two.
func TestBatchClusteredByGroupResumeExactlyOnce(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab, batches := mlEventsByUser(t, 96)
	for _, par := range []int{1, 2} {
		checkBatchResume(t, groupQuery(minuteByUser, groupAggs), tab.Schema, batches, par, 98+uint64(par), 6, volga.WithClusteredBy("user_id"))
	}
}

// mlEventsByUser returns 3 000 ML events (seed) sorted by user, and them
// in 40 batches, released when t ends.
func mlEventsByUser(t *testing.T, seed uint64) (*testutil.Table, []arrow.RecordBatch) {
	tab := byUser(testutil.MLEvents(testutil.Rand(seed), testutil.ModesEventConfig(3000)))
	batches := tab.Batches(testutil.Rand(seed+1), 40)
	t.Cleanup(func() { arrowutil.ReleaseAll(batches) })
	return tab, batches
}

// minuteByUser is a GROUP BY window of a minute per user.
var minuteByUser = testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 60_000, Slide: 60_000}

// TestBatchClusteredByGroup: GROUP BY windows over input sorted by user,
// promised clustered by user, go out before the input is read (without
// the promise they wait for its end), key by key: keys in the order of
// their first rows, each key's windows by start; they are the windows of
// a run without the promise, with one task or several, tumbling or
// hopping, over the user or the user and the merchant.
func TestBatchClusteredByGroup(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab, batches := mlEventsByUser(t, 93)
	for _, w := range []testutil.GroupWindow{
		minuteByUser,
		{Keys: []string{"user_id", "merchant"}, Time: "ts", Size: 120_000, Slide: 30_000},
	} {
		query := groupQuery(w, groupAggs)
		held := sink.NewCollector()
		if err := runQuery(query, source.NewMemory(tab.Schema, batches...), held); err != nil {
			t.Fatal(err)
		}
		// The windows of the run without the promise (ordered by start,
		// then first row), key by key.
		nk := len(w.Keys)
		keyOf := func(vals []any) string { return fmt.Sprint(vals[:nk]) }
		first := map[string]int{}
		for i := range tab.Rows {
			vals := make([]any, nk)
			for j, k := range w.Keys {
				vals[j] = tab.Value(i, k)
			}
			if _, ok := first[keyOf(vals)]; !ok {
				first[keyOf(vals)] = i
			}
		}
		want := held.Rows()
		slices.SortStableFunc(want, func(a, b []any) int { return cmp.Compare(first[keyOf(a)], first[keyOf(b)]) })
		if len(want) < 100 {
			t.Fatalf("%v: only %d windows", w, len(want))
		}
		for _, par := range []int{1, 2, 3} {
			got := &firstWrite{Collector: sink.NewCollector(), first: make(chan struct{})}
			src := &gatedSource{boundedSource: source.NewMemory(tab.Schema, batches...), gateAt: len(batches) - 2, first: got.first}
			if err := runQuery(query, src, got, volga.WithParallelism(par), volga.WithClusteredBy("user_id")); err != nil {
				t.Fatalf("%v, parallelism %d: %v", w.Keys, par, err)
			}
			if d := testutil.Diff(nil, got.Rows(), want, nil); d != "" {

				t.Fatalf("%v, parallelism %d: not the windows of the run without the promise, key by key:\n%s", w.Keys, par, d)
			}
		}
	}
	// A user that comes back after another's rows stops the run.
	bad := tab.Subset(append(upTo(len(tab.Rows)), 0))
	badBatches := bad.Batches(testutil.Rand(95), 20)
	defer arrowutil.ReleaseAll(badBatches)
	for _, par := range []int{1, 2} {
		err := runQuery(groupQuery(minuteByUser, groupAggs), source.NewMemory(bad.Schema, badBatches...), sink.NewCollector(),
			volga.WithParallelism(par), volga.WithClusteredBy("user_id"))
		if !errors.Is(err, window.ErrNotClustered) || !strings.Contains(err.Error(), "ClusteredBy") {
			t.Fatalf("parallelism %d: %v, want an error saying the input is not clustered as promised", par, err)
		}
	}
}
