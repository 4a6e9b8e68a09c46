package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
)

// partInterrupting is testutil.Interrupting split into partitions
// (source.Partitioned): a batch's partition is its first row's id modulo
// parts (every batch holds rows of one partition).
type partInterrupting struct {
	*testutil.Interrupting
	parts int
}

func (s *partInterrupting) Partitions() int { return s.parts }
func (s *partInterrupting) PartitionOf(rec arrow.RecordBatch) int {
	if rec.NumRows() == 0 {
		return -1
	}
	return int(rec.Column(0).(*array.Int64).Value(0) % int64(s.parts))
}

// runPartitioned runs query over batches read from a partInterrupting
// source into a CSV file, stopping gracefully after after reads (0: to
// the end).
func runPartitioned(t *testing.T, query, path string, parts int, batches []arrow.RecordBatch, after int, opts ...volga.Option) {
	t.Helper()
	out, err := sink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &partInterrupting{Interrupting: testutil.NewInterrupting(testutil.EventSchema, after, nil, batches...), parts: parts}
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	src.Interrupt = p.Stop
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointRestoresPartitionWatermarks: a run resumed from a
// checkpoint starts with every partition's watermark where the checkpoint
// left it, not with partitions that have no row since the restore holding
// the watermark back: rows late in a run without the stop are late in the
// resumed one too.
func TestCheckpointRestoresPartitionWatermarks(t *testing.T) {
	row := func(id, ts int64) []any { return []any{id, int64(1), "m", ts, int64(1), 1.0, "c"} }
	mk := func(rows ...[]any) arrow.RecordBatch {
		return testutil.BuildRecord(memory.DefaultAllocator, testutil.EventSchema, rows)
	}
	// Partition = id % 2. The watermark (bound 0) is 1000 after two
	// batches; partition 0 then moves to 3000, so the watermark is 2000
	// (partition 1's), and the row at 1500 is late.
	batches := []arrow.RecordBatch{mk(row(0, 1000)), mk(row(1, 2000)), mk(row(2, 3000)), mk(row(4, 1500)), mk(row(6, 4000))}
	defer arrowutil.ReleaseAll(batches)
	const query = `SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n FROM events`
	opts := []volga.Option{volga.WithMode(volga.Streaming)}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.csv")
	runPartitioned(t, query, ref, 2, batches, 0, opts...)
	want, _ := os.ReadFile(ref)
	if string(want) != "id,n\n0,1\n1,2\n2,3\n6,4\n" {
		t.Fatalf("uninterrupted run:\n%s", want)
	}
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	ckOpts := append(opts, volga.WithCheckpointBucket(bucket, time.Hour))
	runPartitioned(t, query, out, 2, batches, 2, ckOpts...)
	runPartitioned(t, query, out, 2, batches, 0, ckOpts...)
	got, _ := os.ReadFile(out)
	if string(got) != string(want) {
		t.Fatalf("resumed after a stop:\n%s\nwant\n%s", got, want)
	}
}
