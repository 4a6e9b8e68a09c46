package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/statestore"
)

// fencedSource is a memory source that reads a batch every few
// milliseconds and refuses checkpoints (pipeline.Fencer) once refuse is
// set, as the source of a consumer group member's partition does once
// the group handed the partition to another member.
type fencedSource struct {
	*source.Memory
	refuse   atomic.Bool
	refuseAt int64          // when not 0, the call refused (and those after it)
	unsure   map[int64]bool // calls answered errNoAnswer
	asked    atomic.Int64   // Fence calls
	pos      atomic.Int64   // the calls with a position
}

// errOtherOwner is the refusal of a source whose checkpoints another run
// owns; errNoAnswer that of one that could not tell.
var (
	errOtherOwner = fmt.Errorf("another member owns the partition: %w", pipeline.ErrFenced)
	errNoAnswer   = errors.New("the coordinator did not answer")
)

func (s *fencedSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Memory.Read(ctx)
}

func (s *fencedSource) Fence(_ context.Context, pos []byte) error {
	n := s.asked.Add(1)
	if pos != nil {
		s.pos.Add(1)
	}
	if s.refuse.Load() || s.refuseAt > 0 && n >= s.refuseAt {
		return errOtherOwner
	}
	if s.unsure[n] {
		return errNoAnswer
	}
	return nil
}

var _ pipeline.Fencer = (*fencedSource)(nil)

// runFenced runs ckQuery in streaming mode over src into out, with
// checkpoints to bucket every interval, and checks that the run ends with
// an error wrapping pipeline.ErrFenced and the source's.
func runFenced(t *testing.T, src *fencedSource, out sink.Sink, bucket *blob.Bucket, interval time.Duration, onCkpt func(volga.CheckpointInfo)) {
	t.Helper()
	p, err := volga.SQL(ckQuery, volga.WithSource("events", src), volga.WithSink(out),
		volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second),
		volga.WithCheckpointBucket(bucket, interval), volga.WithOnCheckpoint(onCkpt))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background())
	if !errors.Is(err, pipeline.ErrFenced) || !errors.Is(err, errOtherOwner) {
		t.Fatalf("Run: %v, want an error wrapping pipeline.ErrFenced and the source's", err)
	}
}

// TestFencedCheckpoints: a source that refuses a periodic checkpoint ends
// the run with an error wrapping pipeline.ErrFenced and the source's, and
// the bucket's latest checkpoint stays the last one the source agreed to;
// refusing the final checkpoint of a bounded input does the same, and
// leaves the bucket without a checkpoint. Checkpoints it agrees to ask it
// twice each, with the checkpoint's source position.
func TestFencedCheckpoints(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 11)
	tab := testutil.Events(rng, testutil.DefaultEvents(2000))
	batches := tab.Batches(rng, 10)
	defer arrowutil.ReleaseAll(batches)
	discard := func() sink.Sink {
		return sink.NewCallback(func(context.Context, arrow.RecordBatch) error { return nil })
	}
	t.Run("periodic", func(t *testing.T) {
		bucket := memblob.OpenBucket(nil)
		defer bucket.Close()
		src := &fencedSource{Memory: source.NewMemory(tab.Schema, batches...)}
		var (
			mu   sync.Mutex
			done []volga.CheckpointInfo
		)
		onCkpt := func(i volga.CheckpointInfo) {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, i)
			if len(done) == 3 {
				src.refuse.Store(true)
			}
		}
		runFenced(t, src, discard(), bucket, 20*time.Millisecond, onCkpt)
		mu.Lock()
		defer mu.Unlock()
		if len(done) != 3 {
			t.Fatalf("%d checkpoints completed, want the 3 before the refusal", len(done))
		}
		m, err := statestore.NewCheckpointer(bucket).Latest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if last := done[len(done)-1]; m.Epoch != last.Epoch || m.ID != last.ID {
			t.Fatalf("the bucket's latest checkpoint is epoch %d (%s), want the last agreed to, %d (%s)", m.Epoch, m.ID, last.Epoch, last.ID)
		}
		// Two calls per agreed checkpoint, one for the refused one.
		if got := src.asked.Load(); got != 2*3+1 {
			t.Fatalf("Fence was asked %d times, want %d", got, 2*3+1)
		}
		if src.pos.Load() != src.asked.Load() {
			t.Fatalf("Fence got a position %d times of %d", src.pos.Load(), src.asked.Load())
		}
	})
	t.Run("final", func(t *testing.T) {
		bucket := memblob.OpenBucket(nil)
		defer bucket.Close()
		src := &fencedSource{Memory: source.NewMemory(tab.Schema, batches...)}
		src.refuse.Store(true)
		var n atomic.Int64
		runFenced(t, src, discard(), bucket, time.Hour, func(volga.CheckpointInfo) { n.Add(1) })
		if n.Load() != 0 || src.asked.Load() != 1 {
			t.Fatalf("%d checkpoints completed and Fence asked %d times, want 0 and 1", n.Load(), src.asked.Load())
		}
		if _, err := statestore.NewCheckpointer(bucket).Latest(context.Background()); !errors.Is(err, statestore.ErrNoCheckpoint) {
			t.Fatalf("Latest after a refused final checkpoint: %v, want ErrNoCheckpoint", err)
		}
	})
	// With a transactional sink the fence is asked a third time, before
	// the sink publishes: refused there, the checkpoint stands but its
	// output stays staged, and a run restoring it (the new owner)
	// publishes it, so the file ends as a run without checkpoints writes
	// it.
	t.Run("publish", func(t *testing.T) {
		dir := t.TempDir()
		opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second)}
		want := plainCSV(t, dir, opts, tab.Schema, batches)
		bucket := memblob.OpenBucket(nil)
		defer bucket.Close()
		out := filepath.Join(dir, "out.csv")
		src := &fencedSource{Memory: source.NewMemory(tab.Schema, batches...), refuseAt: 3 * 3}
		var n atomic.Int64
		csv, err := sink.CreateCSV(out)
		if err != nil {
			t.Fatal(err)
		}
		runFenced(t, src, csv, bucket, 20*time.Millisecond, func(volga.CheckpointInfo) { n.Add(1) })
		if n.Load() != 2 || src.asked.Load() != 9 {
			t.Fatalf("%d checkpoints completed, Fence asked %d times; want 2 and 9", n.Load(), src.asked.Load())
		}
		m, err := statestore.NewCheckpointer(bucket).Latest(context.Background())
		if err != nil || m.Epoch != 3 {
			t.Fatalf("latest checkpoint: %v, %v; want epoch 3, written before the refused publication", m, err)
		}
		// The new owner: the same bucket and file, the whole input.
		csv, err = sink.CreateCSV(out)
		if err != nil {
			t.Fatal(err)
		}
		p, err := volga.SQL(ckQuery, append(opts, volga.WithSource("events", source.NewMemory(tab.Schema, batches...)), volga.WithSink(csv),
			volga.WithCheckpointBucket(bucket, 20*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			t.Fatalf("the output after the refused publication and a restore differs:\n%s", lineDiff(got, want))
		}
	})
	// A fence that cannot tell refuses the checkpoint it is asked for,
	// or its publication, and the run goes on: the next checkpoint
	// publishes what that one did not, and the file ends as a run
	// without checkpoints writes it.
	t.Run("unsure", func(t *testing.T) {
		dir := t.TempDir()
		opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second)}
		want := plainCSV(t, dir, opts, tab.Schema, batches)
		out := filepath.Join(dir, "out.csv")
		csv, err := sink.CreateCSV(out)
		if err != nil {
			t.Fatal(err)
		}
		// The first checkpoint's publication and the second checkpoint
		// (its first question) are refused.
		src := &fencedSource{Memory: source.NewMemory(tab.Schema, batches...), unsure: map[int64]bool{3: true, 4: true}}
		var n atomic.Int64
		p, err := volga.SQL(ckQuery, append(opts, volga.WithSource("events", src), volga.WithSink(csv),
			volga.WithCheckpointBucket(memblob.OpenBucket(nil), 20*time.Millisecond), volga.WithOnCheckpoint(func(volga.CheckpointInfo) { n.Add(1) }))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		st := p.Stats()
		if st.CheckpointFailures != 1 || n.Load() < 2 || st.Checkpoints != n.Load() {
			t.Fatalf("%d checkpoints completed (%d in the stats), %d failed; want at least 2 and 1", n.Load(), st.Checkpoints, st.CheckpointFailures)
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			t.Fatalf("the output differs from a run without checkpoints:\n%s", lineDiff(got, want))
		}
	})
	// A single Parquet file is written whole when its sink closes: a run
	// that lost its checkpoints abandons it instead, and the file is the
	// new owner's to write (here: none, the old one stays).
	t.Run("parquet", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "out.parquet")
		if err := os.WriteFile(path, []byte("the new owner's"), 0o666); err != nil {
			t.Fatal(err)
		}
		pq, err := sink.NewParquet(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		src := &fencedSource{Memory: source.NewMemory(tab.Schema, batches...), refuseAt: 3*3 + 1}
		var n atomic.Int64
		runFenced(t, src, pq, memblob.OpenBucket(nil), 20*time.Millisecond, func(volga.CheckpointInfo) { n.Add(1) })
		if n.Load() != 3 {
			t.Fatalf("%d checkpoints completed, want 3", n.Load())
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != "the new owner's" {
			t.Fatalf("the file after the fenced run: %.40q (%d bytes), %v; want it untouched", got, len(got), err)
		}
	})
}

// plainCSV runs ckQuery over batches with opts and without checkpoints
// into a CSV file in dir and returns the file's bytes: what a run with
// checkpoints must end with.
func plainCSV(t *testing.T, dir string, opts []volga.Option, schema *arrow.Schema, batches []arrow.RecordBatch) []byte {
	t.Helper()
	ref := filepath.Join(dir, "ref.csv")
	plain, err := sink.CreateCSV(ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := volga.SQL(ckQuery, append(opts, volga.WithSource("events", source.NewMemory(schema, batches...)), volga.WithSink(plain))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
