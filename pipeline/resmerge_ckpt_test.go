package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
)

// userWindowsQuery is the cross-mode query's windows over user_id only:
// one stage, whose batch runs merge results onto the input. all keeps
// every aggregate (lists, maps and strings among them); otherwise only
// those whose results are numbers or times, which runs without
// checkpoints write in place.
func userWindowsQuery(all bool) string {
	var ws []testutil.ModesWindow
	for _, w := range slices.Concat(testutil.ModesLookupWindows, testutil.ModesUnboundedWindows) {
		if !slices.Equal(w.Keys, []string{"user_id"}) {
			continue
		}
		if !all {
			w.Aggs = slices.DeleteFunc(slices.Clone(w.Aggs), func(a testutil.Agg) bool {
				return !slices.Contains([]string{"count", "sum", "avg", "var_samp", "var_pop", "stddev_samp", "stddev_pop", "count_where", "sum_where"}, a.Func) ||
					a.Arg == "category"
			})
		}
		ws = append(ws, w)
	}
	return testutil.ModesSQL("events", ws)
}

// TestBatchResultMergeResumeExactlyOnce: a batch run of one OVER-window
// stage, over one task or several, which merges the tasks' results onto
// its input batches, cancelled again and again and resumed from its latest
// checkpoint, writes exactly the file of an uninterrupted run: its
// checkpoints hold the input rows not written yet and the results the
// tasks sent for them (lists, maps and strings too), over input a little
// out of time order; results the uninterrupted run writes in place are
// gathered with checkpoints.
func TestBatchResultMergeResumeExactlyOnce(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab := testutil.ModesData(61, 3000)
	batches := tab.Batches(testutil.Rand(62), 40)
	defer arrowutil.ReleaseAll(batches)
	for _, all := range []bool{true, false} {
		for _, par := range []int{1, 2, 3} {
			merged, dests := pipeline.ResultMergeRuns(), pipeline.DestRuns()
			checkBatchResume(t, userWindowsQuery(all), tab.Schema, batches, par, 63+uint64(par), 6)
			if pipeline.ResultMergeRuns()-merged < 2 {
				t.Fatalf("parallelism %d: %d runs merged results onto their input", par, pipeline.ResultMergeRuns()-merged)
			}
			// Only the uninterrupted run writes results in place.
			if d := pipeline.DestRuns() - dests; d != map[bool]int64{true: 0, false: 1}[all] {
				t.Fatalf("parallelism %d, all aggregates %v: %d runs wrote results in place", par, all, d)
			}
		}
	}
}

// TestBatchResumeOtherMerger: a checkpoint whose merger merged whole rows
// (as every batch run's did before results were merged with checkpoints)
// is resumed the same way, to the same output; one whose merger merged
// results cannot be resumed by a run that merges whole rows, and says so;
// with one task and with two.
func TestBatchResumeOtherMerger(t *testing.T) {
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetMergeChunk(50)()
	tab := testutil.ModesData(71, 2000)
	batches := tab.Batches(testutil.Rand(72), 30)
	defer arrowutil.ReleaseAll(batches)
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("par%d", par), func(t *testing.T) { checkResumeOtherMerger(t, tab.Schema, batches, par) })
	}
}

// checkResumeOtherMerger is TestBatchResumeOtherMerger with par tasks.
func checkResumeOtherMerger(t *testing.T, schema *arrow.Schema, batches []arrow.RecordBatch, par int) {
	query := userWindowsQuery(true)
	dir := t.TempDir()
	run := func(path string, after int, opts ...volga.Option) error {
		return runBatchToFile(context.Background(), t, query, schema, batches, par, path, after, nil, opts...)
	}
	ref := filepath.Join(dir, "ref.csv")
	if err := run(ref, 0); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)

	// Stopped (a final checkpoint with the rows held) with results merged
	// as whole rows, resumed by a run that would merge results.
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	ck := volga.WithCheckpointBucket(bucket, time.Hour)
	undo := pipeline.SetResultMerging(false)
	err := run(out, len(batches)/2, ck)
	undo()
	if err != nil {
		t.Fatal(err)
	}
	merged := pipeline.ResultMergeRuns()
	if err := run(out, 0, ck); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatalf("resumed from a checkpoint of whole rows, the output differs from an uninterrupted run:\n%s", lineDiff(got, want))
	}
	if n := pipeline.ResultMergeRuns() - merged; n != 0 {
		t.Fatalf("%d runs resuming a checkpoint of whole rows merged results", n)
	}

	// And the other way round.
	bucket2 := memblob.OpenBucket(nil)
	defer bucket2.Close()
	out2 := filepath.Join(dir, "out2.csv")
	ck2 := volga.WithCheckpointBucket(bucket2, time.Hour)
	if err := run(out2, len(batches)/2, ck2); err != nil {
		t.Fatal(err)
	}
	defer pipeline.SetResultMerging(false)()
	err = run(out2, 0, ck2)
	if err == nil || !strings.Contains(err.Error(), "merged results onto its input") {
		t.Fatalf("resuming a checkpoint of merged results without merging them: %v", err)
	}
}
