package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// ckQuery has a ROWS frame, RANGE frames on two key sets (two stages), an
// unbounded frame and a merge-only aggregate.
const ckQuery = `SELECT id, user_id, ts,
  sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s2,
  count(*) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS c3,
  max(amount) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS m5,
  count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total,
  topn_frequency(merchant, 2) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS top2
FROM events`

// runToFile runs ckQuery over batches into a CSV file and returns the
// run's error.
func runToFile(ctx context.Context, t *testing.T, path string, schema *arrow.Schema, batches []arrow.RecordBatch, crashAfter int, cancel context.CancelFunc, opts ...volga.Option) error {
	_, err := runPipelineToFile(ctx, t, path, schema, batches, crashAfter, cancel, opts...)
	return err
}

func runPipelineToFile(ctx context.Context, t *testing.T, path string, schema *arrow.Schema, batches []arrow.RecordBatch, crashAfter int, cancel context.CancelFunc, opts ...volga.Option) (*volga.Pipeline, error) {
	t.Helper()
	return runQueryToFile(ctx, t, ckQuery, path, schema, batches, crashAfter, cancel, opts...)
}

// runQueryToFile is runPipelineToFile for another query than ckQuery.
func runQueryToFile(ctx context.Context, t *testing.T, query, path string, schema *arrow.Schema, batches []arrow.RecordBatch, crashAfter int, cancel context.CancelFunc, opts ...volga.Option) (*volga.Pipeline, error) {
	t.Helper()
	out, err := sink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src := testutil.NewInterrupting(schema, crashAfter, cancel, batches...)
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if cancel == nil {
		src.Interrupt = p.Stop // a graceful stop rather than a crash
	}
	return p, p.Run(ctx)
}

// crashAndResume calls run n+1 times: the first n times with after, a
// number of batches in [1, maxAfter], to be read before the run is
// cancelled (run passes it and cancel to testutil.NewInterrupting), the
// last time with after 0, to the end. It fails t on any error but the
// cancellation and returns the number of runs cancelled.
func crashAndResume(t *testing.T, rng *rand.Rand, n, maxAfter int, run func(ctx context.Context, after int, cancel context.CancelFunc) error) int {
	t.Helper()
	crashes := 0
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithCancel(context.Background())
		after := 0
		if attempt < n {
			after = 1 + rng.IntN(maxAfter)
		}
		err := run(ctx, after, cancel)
		cancel()
		if err == nil {
			return crashes
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		crashes++
	}
}

// TestCheckpointResumeExactlyOnce: a run cancelled again and again, each
// time resumed from its latest checkpoint, writes exactly the file a run
// without interruptions writes, in batch and streaming mode, with one and
// two tasks per stage, over mem://, file:// and S3 (gofakes3) buckets.
func TestCheckpointResumeExactlyOnce(t *testing.T) {
	// Batch runs release time-ordered rows early (Interrupting is a
	// source.Memory, which bounds the times to come) from the first rows
	// on, so that checkpoints hold early-released state too.
	defer pipeline.SetBatchReleaseRows(0)()
	buckets := map[string]func(t *testing.T) *blob.Bucket{
		"mem":  func(t *testing.T) *blob.Bucket { return memblob.OpenBucket(nil) },
		"file": func(t *testing.T) *blob.Bucket { return testutil.FileBucket(t) },
		"s3":   func(t *testing.T) *blob.Bucket { return testutil.S3Bucket(t) },
	}
	// Every mode and parallelism over mem://; a few over file:// and S3,
	// which store the same objects.
	type combo struct {
		bucket string
		mode   volga.Mode
		par    int
		budget int64 // WithMemoryBudget: evictions between checkpoints
		pages  int   // WithRowPaging: rows paged out between checkpoints
	}
	var combos []combo
	for _, mode := range []volga.Mode{volga.Batch, volga.Streaming} {
		for _, par := range []int{1, 2} {
			combos = append(combos, combo{"mem", mode, par, 0, 0})
		}
	}
	combos = append(combos, combo{"mem", volga.Streaming, 2, 16 << 10, 0}, combo{"mem", volga.Batch, 1, 16 << 10, 0},
		combo{"file", volga.Streaming, 2, 0, 0}, combo{"s3", volga.Batch, 2, 0, 0}, combo{"s3", volga.Streaming, 1, 0, 0},
		combo{"mem", volga.Streaming, 2, 0, 8}, combo{"file", volga.Streaming, 1, 16 << 10, 8})
	for _, cb := range combos {
		bname, mode, par := cb.bucket, cb.mode, cb.par
		t.Run(fmt.Sprintf("%s/%s/par%d/budget%d/pages%d", bname, mode, par, cb.budget, cb.pages), func(t *testing.T) {
			seed := testutil.Seeds(1)[0] + uint64(par)
			rng := testutil.Rand(seed)
			ecfg := testutil.DefaultEvents(testutil.Scale(3000))
			if cb.pages > 0 {
				ecfg.StepMs = 5 // dense enough for frames to span pages
			}
			tab := testutil.Events(rng, ecfg)
			// Rows arrive up to 1.5 s late: streaming's late rows, and
			// batch runs releasing rows early out of time order.
			tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
			batches := tab.Batches(rng, 25)
			defer func() {
				for _, b := range batches {
					b.Release()
				}
			}()
			opts := []volga.Option{volga.WithMode(mode), volga.WithParallelism(par), volga.WithMaxOutOfOrder(time.Second)}
			dir := t.TempDir()
			ref := filepath.Join(dir, "ref.csv")
			if err := runToFile(context.Background(), t, ref, tab.Schema, batches, 0, nil, opts...); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(ref)

			bucket := buckets[bname](t)
			defer bucket.Close()
			var ckpts atomic.Int64
			out := filepath.Join(dir, "out.csv")
			interval := time.Millisecond
			if cb.pages > 0 {
				// Pages are written between a checkpoint's backup and
				// the next barrier: leave room for them.
				interval = 20 * time.Millisecond
			}
			ckOpts := append(opts, volga.WithCheckpointBucket(bucket, interval), volga.WithMemoryBudget(cb.budget),
				volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }),
				volga.WithStateDir(filepath.Join(dir, "state")), volga.WithRowPaging(cb.pages))
			crashes := crashAndResume(t, rng, 6, len(batches)/3, func(ctx context.Context, after int, cancel context.CancelFunc) error {
				return runToFile(ctx, t, out, tab.Schema, batches, after, cancel, ckOpts...)
			})
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("after %d interruptions the output differs from an uninterrupted run:\n%s", crashes, lineDiff(got, want))
			}
			// At least one checkpoint besides the final one, so that some
			// attempt resumed from a checkpoint.
			if ckpts.Load() < 2 {
				t.Fatalf("only %d checkpoints were taken", ckpts.Load())
			}
		})
	}
}

// TestCheckpointStopResume: a streaming run stopped gracefully (Stop)
// several times and resumed each time writes what an uninterrupted run
// writes.
func TestCheckpointStopResume(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 3)
	tab := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(2000)))
	tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
	batches := tab.Batches(rng, 25)
	defer arrowutil.ReleaseAll(batches)
	opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithParallelism(2)}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.csv")
	if err := runToFile(context.Background(), t, ref, tab.Schema, batches, 0, nil, opts...); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	ckOpts := append(opts, volga.WithCheckpointBucket(bucket, time.Hour))
	for stops := 0; stops < 4; stops++ {
		// Each run reads a few batches more than the last, then stops.
		after := (stops + 1) * len(batches) / 5
		if err := runToFile(context.Background(), t, out, tab.Schema, batches, after, nil, ckOpts...); err != nil {
			t.Fatalf("stop %d: %v", stops, err)
		}
	}
	if err := runToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, ckOpts...); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("output after stops and resumes differs:\n%s", lineDiff(got, want))
	}
}

// TestCheckpointFinishedRunReadsNothingTwice: a run started again on the
// bucket of a finished run resumes from its final checkpoint and leaves
// the output as it was.
func TestCheckpointFinishedRunReadsNothingTwice(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0])
	tab := testutil.Events(rng, testutil.DefaultEvents(500))
	batches := tab.Batches(rng, 30)
	defer arrowutil.ReleaseAll(batches)
	dir := t.TempDir()
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	var final []volga.CheckpointInfo
	opts := []volga.Option{volga.WithCheckpointBucket(bucket, time.Hour),
		volga.WithOnCheckpoint(func(i volga.CheckpointInfo) { final = append(final, i) })}
	p1, err := runPipelineToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	if len(final) != 1 || !final[0].Final {
		t.Fatalf("checkpoints of a bounded run with a long interval: %+v, want one final", final)
	}
	p2, err := runPipelineToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(out)
	// Lookups answer the same from the restored state.
	for i := 0; i < len(tab.Rows); i += 37 {
		key := map[string]any{"user_id": tab.Value(i, "user_id")}
		at := time.UnixMilli(tab.Value(i, "ts").(int64) + 500)
		a, err1 := p1.Lookup(context.Background(), key, at, nil)
		b, err2 := p2.Lookup(context.Background(), key, at, nil)
		if (err1 == nil) != (err2 == nil) || !testutil.Equal(a.Values, b.Values) {
			t.Fatalf("lookup %v at %v: before restore %v (%v), after %v (%v)", key, at, a.Values, err1, b.Values, err2)
		}
	}
	if !bytes.Equal(first, again) {
		t.Fatalf("the second run changed the output:\n%s", lineDiff(again, first))
	}
	if len(final) != 2 || final[1].Epoch <= final[0].Epoch {
		t.Fatalf("checkpoints: %+v", final)
	}
}

// TestCheckpointCorruptLatestFallsBack: when the newest checkpoint is
// damaged, the run resumes from the one before (and says so in the log),
// and the output is still exact.
func TestCheckpointCorruptLatestFallsBack(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 7)
	tab := testutil.Events(rng, testutil.DefaultEvents(2000))
	batches := tab.Batches(rng, 20)
	defer arrowutil.ReleaseAll(batches)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.csv")
	if err := runToFile(context.Background(), t, ref, tab.Schema, batches, 0, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	for _, damage := range []string{"manifest", "state", "part"} {
		t.Run(damage, func(t *testing.T) {
			bucket := memblob.OpenBucket(nil)
			defer bucket.Close()
			out := filepath.Join(t.TempDir(), "out.csv")
			var epochs []uint64
			opts := []volga.Option{volga.WithCheckpointBucket(bucket, time.Millisecond), volga.WithCheckpointRetain(10),
				volga.WithOnCheckpoint(func(i volga.CheckpointInfo) { epochs = append(epochs, i.Epoch) })}
			ctx, cancel := context.WithCancel(context.Background())
			err := runToFile(ctx, t, out, tab.Schema, batches, len(batches)/2, cancel, opts...)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("first run: %v", err)
			}
			if len(epochs) < 2 {
				t.Fatalf("only %d checkpoints before the interruption", len(epochs))
			}
			// The newest complete checkpoint in the bucket: the run may
			// have been cancelled after a manifest was written but before
			// its callback.
			damageCheckpoint(t, bucket, newestCheckpoint(t, bucket), damage)
			var logs bytes.Buffer
			log := slogTo(&logs)
			if err := runToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, append(opts, volga.WithLogger(log))...); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("output after resuming past a damaged checkpoint differs:\n%s", lineDiff(got, want))
			}
			if !bytes.Contains(logs.Bytes(), []byte("skipping incomplete checkpoint")) {
				t.Fatalf("the damaged checkpoint was not reported; log:\n%s", logs.String())
			}
		})
	}
}

// newestCheckpoint returns the highest epoch with a manifest in b.
func newestCheckpoint(t *testing.T, b *blob.Bucket) uint64 {
	t.Helper()
	it := b.List(&blob.ListOptions{Prefix: "checkpoints/"})
	var newest uint64
	for {
		obj, err := it.Next(context.Background())
		if err != nil {
			break
		}
		var e uint64
		if _, err := fmt.Sscanf(obj.Key, "checkpoints/%020d/manifest.json", &e); err == nil && strings.HasSuffix(obj.Key, "/manifest.json") && e > newest {
			newest = e
		}
	}
	if newest == 0 {
		t.Fatal("no complete checkpoint in the bucket")
	}
	return newest
}

// damageCheckpoint breaks one object of checkpoint epoch.
func damageCheckpoint(t *testing.T, b *blob.Bucket, epoch uint64, what string) {
	t.Helper()
	ctx := context.Background()
	prefix := fmt.Sprintf("checkpoints/%020d/", epoch)
	it := b.List(&blob.ListOptions{Prefix: prefix})
	var keys []string
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			break
		}
		keys = append(keys, obj.Key)
	}
	for _, k := range keys {
		base := filepath.Base(k)
		hit := false
		switch what {
		case "manifest":
			hit = base == "manifest.json"
		case "state":
			hit = base == "state.backup" || filepath.Ext(base) == ".backup"
		case "part":
			hit = bytes.Contains([]byte(k), []byte("/parts/")) || bytes.HasPrefix([]byte(base), []byte("part"))
		}
		if !hit {
			continue
		}
		data, err := b.ReadAll(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			data[len(data)/2] ^= 0xff
		} else {
			data = []byte("x")
		}
		if err := b.WriteAll(ctx, k, data, nil); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no %s object among %v", what, keys)
}

// lineDiff shows the first lines where got and want differ.
func lineDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	var sb bytes.Buffer
	fmt.Fprintf(&sb, "got %d lines, want %d\n", len(g), len(w))
	shown := 0
	for i := 0; i < max(len(g), len(w)) && shown < 5; i++ {
		var a, b []byte
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if !bytes.Equal(a, b) {
			fmt.Fprintf(&sb, "line %d:\n  got  %s\n  want %s\n", i+1, a, b)
			shown++
		}
	}
	return sb.String()
}

// slogTo logs everything at debug level and above to w.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestStopWithoutCheckpoints: without checkpoints, Stop ends the input
// where reading stopped: the output is that of a run over the batches read
// so far, every pending row emitted.
func TestStopWithoutCheckpoints(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 11)
	tab := testutil.Events(rng, testutil.DefaultEvents(1500))
	tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
	batches := tab.Batches(rng, 25)
	defer arrowutil.ReleaseAll(batches)
	opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithParallelism(2)}
	dir := t.TempDir()
	n := len(batches) / 2
	ref := filepath.Join(dir, "ref.csv")
	if err := runToFile(context.Background(), t, ref, tab.Schema, batches[:n], 0, nil, opts...); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	out := filepath.Join(dir, "out.csv")
	if err := runToFile(context.Background(), t, out, tab.Schema, batches, n, nil, opts...); err != nil {
		t.Fatalf("stopped run: %v", err)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("a run stopped after %d batches differs from a run over them:\n%s", n, lineDiff(got, want))
	}
}

// TestCheckpointOtherParallelismRefused: resuming with another parallelism
// is refused with an error that says so, and the output is left alone.
func TestCheckpointOtherParallelismRefused(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 5)
	tab := testutil.Events(rng, testutil.DefaultEvents(300))
	batches := tab.Batches(rng, 50)
	defer arrowutil.ReleaseAll(batches)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(t.TempDir(), "out.csv")
	ck := volga.WithCheckpointBucket(bucket, time.Hour)
	if err := runToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, ck, volga.WithParallelism(1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(out)
	err := runToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, ck, volga.WithParallelism(2))
	if err == nil || !strings.Contains(err.Error(), "parallelism 1") {
		t.Fatalf("resuming with parallelism 2: %v, want an error naming parallelism 1", err)
	}
	after, _ := os.ReadFile(out)
	if !bytes.Equal(before, after) {
		t.Fatal("the refused run changed the output")
	}
}
