package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// countingSink counts the rows written to a transactional sink and, at
// each PrepareCommit (the merger has passed the epoch's barrier), how
// many were written by then.
type countingSink struct {
	sink.Sink
	rows atomic.Int64
	mu   sync.Mutex
	prep map[uint64]int64
}

func (s *countingSink) Write(ctx context.Context, rec arrow.RecordBatch) error {
	s.rows.Add(rec.NumRows())
	return s.Sink.Write(ctx, rec)
}

func (s *countingSink) PrepareCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	s.mu.Lock()
	s.prep[epoch] = s.rows.Load()
	s.mu.Unlock()
	return s.Sink.(sink.Committer).PrepareCommit(ctx, epoch)
}

func (s *countingSink) Commit(ctx context.Context, epoch uint64) error {
	return s.Sink.(sink.Committer).Commit(ctx, epoch)
}

func (s *countingSink) Recover(ctx context.Context, epoch uint64, state []byte) error {
	return s.Sink.(sink.Committer).Recover(ctx, epoch, state)
}

// TestCheckpointOutputFlowsWhileStateIsWritten: window tasks have a
// checkpoint's key states encoded after passing its barrier on, by a
// goroutine of the operator's own, so the output goes on meanwhile: rows reach
// the sink after the merger has passed a checkpoint's barrier and before
// the window tasks have all written their state for it. The run, crashed
// and resumed from its checkpoints, still writes exactly what an
// uninterrupted run writes.
func TestCheckpointOutputFlowsWhileStateIsWritten(t *testing.T) {
	var mu sync.Mutex
	var cur *countingSink
	overlaps := 0
	// Key states are encoded slowly enough for rows to flow meanwhile.
	slow := func(id int32) {
		if id%16 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	undo := pipeline.SetCheckpointTestHooks(slow, func(epoch uint64) {
		mu.Lock()
		defer mu.Unlock()
		cur.mu.Lock()
		defer cur.mu.Unlock()
		if n, ok := cur.prep[epoch]; ok && cur.rows.Load() > n {
			overlaps++
		}
	})
	defer undo()

	rng := testutil.Rand(testutil.Seeds(1)[0] + 11)
	ecfg := testutil.DefaultEvents(testutil.Scale(6000))
	ecfg.Users, ecfg.Merchants = 2000, 300 // thousands of keys to write
	tab := testutil.Events(rng, ecfg)
	tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
	batches := tab.Batches(rng, 25)
	defer arrowutil.ReleaseAll(batches)
	opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithParallelism(2), volga.WithMaxOutOfOrder(time.Second)}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.csv")
	if err := runToFile(context.Background(), t, ref, tab.Schema, batches, 0, nil, opts...); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)

	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	var ckpts atomic.Int64
	out := filepath.Join(dir, "out.csv")
	ckOpts := append(opts, volga.WithCheckpointBucket(bucket, 2*time.Millisecond),
		volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithCancel(context.Background())
		after := 0 // the last attempt runs to the end
		if attempt < 2 {
			after = (attempt + 1) * len(batches) / 3
		}
		fs, err := sink.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingSink{Sink: fs, prep: map[uint64]int64{}}
		mu.Lock()
		cur = cs
		mu.Unlock()
		src := testutil.NewInterrupting(tab.Schema, after, cancel, batches...)
		p, err := volga.SQL(ckQuery, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(cs)}, ckOpts...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Run(ctx)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("the output of the resumed runs differs from an uninterrupted run:\n%s", lineDiff(got, want))
	}
	if ckpts.Load() < 2 {
		t.Fatalf("only %d checkpoints were taken", ckpts.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if overlaps == 0 {
		t.Error("no rows reached the sink between a checkpoint's barrier and the end of the window tasks' writes for it")
	}
	t.Logf("%d checkpoints; %d times a task finished writing a checkpoint's state after rows past its barrier reached the sink", ckpts.Load(), overlaps)
}
