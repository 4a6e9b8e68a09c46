package pipeline_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// slowCommitSource is a memory source, read a batch every few
// milliseconds, whose Commit (of checkpoint positions, as Kafka's) blocks
// until released.
type slowCommitSource struct {
	*source.Memory
	blocked chan struct{} // closed at the first Commit
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	last    []byte // the last position committed
	commits int
}

func (s *slowCommitSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	time.Sleep(time.Millisecond)
	return s.Memory.Read(ctx)
}

func (s *slowCommitSource) Commit(ctx context.Context, pos []byte) error {
	s.once.Do(func() { close(s.blocked) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = bytes.Clone(pos)
	s.commits++
	return nil
}

// TestSlowPositionCommit: a source whose Commit of checkpoint positions
// does not answer holds neither the output nor the checkpoints back
// (rows keep reaching the sink and checkpoints keep completing while it
// blocks), and the position of the final checkpoint is committed before
// Run returns.
func TestSlowPositionCommit(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 12)
	tab := testutil.Events(rng, testutil.DefaultEvents(3000))
	batches := tab.Batches(rng, 10)
	defer arrowutil.ReleaseAll(batches)
	src := &slowCommitSource{Memory: source.NewMemory(tab.Schema, batches...), blocked: make(chan struct{}), release: make(chan struct{})}
	var rows, ckpts atomic.Int64
	out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		rows.Add(rec.NumRows())
		return nil
	})
	p, err := volga.SQL(ckQuery, volga.WithSource("events", src), volga.WithSink(out),
		volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second),
		volga.WithCheckpointBucket(memblob.OpenBucket(nil), 20*time.Millisecond),
		volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	select {
	case <-src.blocked:
	case err := <-done:
		t.Fatalf("the run ended before a position was committed: %v", err)
	}
	atBlock, ckptsAtBlock := rows.Load(), ckpts.Load()
	deadline := time.After(30 * time.Second)
	for rows.Load() < atBlock+500 || ckpts.Load() < ckptsAtBlock+3 {
		select {
		case <-deadline:
			t.Fatalf("while Commit blocked: %d rows and %d checkpoints more, want 500 and 3", rows.Load()-atBlock, ckpts.Load()-ckptsAtBlock)
		case err := <-done:
			t.Fatalf("the run ended while Commit blocked (%d rows, %d checkpoints more): %v", rows.Load()-atBlock, ckpts.Load()-ckptsAtBlock, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(src.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	end, err := src.Position()
	if err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if !bytes.Equal(src.last, end) {
		t.Fatalf("the last position committed is %q, want the final checkpoint's %q", src.last, end)
	}
	if src.commits < 2 || int64(src.commits) > ckpts.Load() {
		t.Fatalf("%d commits for %d checkpoints: want the one that blocked and at least the final one, at most one a checkpoint", src.commits, ckpts.Load())
	}
}
