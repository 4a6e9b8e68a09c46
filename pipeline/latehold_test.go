package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
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
)

// gated is a replayable source whose read of batch gate returns empty
// batches (and so lets checkpoints be taken) until open returns true; it
// returns ctx's error once open has cancelled the run.
type gated struct {
	*source.Memory
	gate  int
	open  func() bool
	empty arrow.RecordBatch
	reads int
}

func (g *gated) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if g.reads == g.gate && !g.open() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(time.Millisecond)
		g.empty.Retain()
		return g.empty, nil
	}
	g.reads++
	return g.Memory.Read(ctx)
}

// TestCheckpointKeepsHeldLateRows: the second stage of a query over two
// PARTITION BY sets holds the rows the first stage applied late until
// both of its senders have passed their watermark (lateHold). A run
// crashed right after a checkpoint taken while it held them, and resumed
// from that checkpoint, writes the file an uninterrupted run writes, and
// that file is the same with one task and with two.
func TestCheckpointKeepsHeldLateRows(t *testing.T) {
	const query = `SELECT id, ts,
  sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS su,
  count(*) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS nm,
  sum(amount) OVER (PARTITION BY merchant ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS sm
FROM events`
	row := func(id, user int64, merchant string, ts, amount int64) []any {
		return []any{id, user, merchant, ts, amount, nil, nil}
	}
	// b0 moves the watermark to 9 000 (1 s bound); b1 holds only rows
	// behind it, within the allowed lateness, of every user and both
	// merchants, so the watermark stays; b2 comes after them in time.
	var b0, b1, b2 [][]any
	for i := range int64(10) {
		b0 = append(b0, row(i, 1+i%4, []string{"a", "b"}[i%2], 1000*(i+1), 10*i))
		b2 = append(b2, row(20+i, 1+i%4, []string{"a", "b"}[i/5], 11_000+1000*i, 100+i))
	}
	b1 = [][]any{row(10, 1, "a", 8000, 1), row(11, 2, "a", 8500, 2), row(12, 3, "b", 7000, 3), row(13, 4, "b", 8200, 4), row(14, 2, "b", 8500, 5)}
	var batches []arrow.RecordBatch
	for _, rows := range [][][]any{b0, b1, b2} {
		batches = append(batches, testutil.BuildRecord(memory.DefaultAllocator, testutil.EventSchema, rows))
	}
	empty := testutil.BuildRecord(memory.DefaultAllocator, testutil.EventSchema, nil)
	t.Cleanup(func() {
		for _, b := range batches {
			b.Release()
		}
		empty.Release()
	})
	opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second),
		volga.WithAllowedLateness(5 * time.Second)}
	dir := t.TempDir()
	runTo := func(ctx context.Context, path string, src source.Source, extra ...volga.Option) (*volga.Pipeline, error) {
		out, err := sink.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		all := append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)
		p, err := volga.SQL(query, append(all, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		return p, p.Run(ctx)
	}
	var want []byte
	for _, par := range []int{1, 2} {
		path := filepath.Join(dir, "ref.csv")
		p, err := runTo(t.Context(), path, source.NewMemory(testutil.EventSchema, batches...), volga.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.LateApplied != int64(len(b1)) || st.LateDropped != 0 {
			t.Fatalf("parallelism %d: %d late rows applied, %d dropped; want %d and 0", par, st.LateApplied, st.LateDropped, len(b1))
		}
		got, _ := os.ReadFile(path)
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("parallelism %d differs from 1:\n%s", par, lineDiff(got, want))
		}
	}

	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	before := pipeline.HeldPartEpoch()
	var done atomic.Uint64 // the last checkpoint completed
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	deadline := time.Now().Add(20 * time.Second)
	src := &gated{Memory: source.NewMemory(testutil.EventSchema, batches...), gate: 2, empty: empty, open: func() bool {
		if time.Now().After(deadline) {
			t.Error("no checkpoint took held late rows")
			cancel()
			return false
		}
		if e := pipeline.HeldPartEpoch(); e > before && done.Load() >= e {
			cancel() // crash right after it
		}
		return false
	}}
	_, err := runTo(ctx, out, src, volga.WithParallelism(2), volga.WithCheckpointBucket(bucket, time.Millisecond),
		volga.WithOnCheckpoint(func(info volga.CheckpointInfo) { done.Store(info.Epoch) }))
	if !errors.Is(err, context.Canceled) || t.Failed() {
		t.Fatalf("the run that crashes: %v", err)
	}
	if _, err := runTo(t.Context(), out, source.NewMemory(testutil.EventSchema, batches...), volga.WithParallelism(2),
		volga.WithCheckpointBucket(bucket, time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("resumed from a checkpoint holding late rows, the output differs from an uninterrupted run:\n%s", lineDiff(got, want))
	}
}
