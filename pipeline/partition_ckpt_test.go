package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	if err := runPartitionedCtx(context.Background(), t, query, path, parts, batches, after, nil, opts...); err != nil {
		t.Fatal(err)
	}
}

// runPartitionedCtx is runPartitioned cancelling the run with cancel
// (a crash) rather than stopping it, when cancel is not nil; it returns
// the run's error.
func runPartitionedCtx(ctx context.Context, t *testing.T, query, path string, parts int, batches []arrow.RecordBatch, after int, cancel context.CancelFunc, opts ...volga.Option) error {
	t.Helper()
	out, err := sink.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &partInterrupting{Interrupting: testutil.NewInterrupting(testutil.EventSchema, after, cancel, batches...), parts: parts}
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if cancel == nil {
		src.Interrupt = p.Stop
	}
	return p.Run(ctx)
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

// partitionedBatches cuts tab's rows, in their order, into batches of one
// partition (id modulo parts) each: every partition gathers its rows until
// it has 1 to maxRows of them (at random), then sends them as a batch. The
// caller releases them.
func partitionedBatches(rng *rand.Rand, tab *testutil.Table, parts, maxRows int) []arrow.RecordBatch {
	pending := make([][][]any, parts)
	size := make([]int, parts)
	for p := range size {
		size[p] = 1 + rng.IntN(maxRows)
	}
	var out []arrow.RecordBatch
	flush := func(p int) {
		out = append(out, testutil.BuildRecord(memory.DefaultAllocator, tab.Schema, pending[p]))
		pending[p], size[p] = nil, 1+rng.IntN(maxRows)
	}
	idc := tab.Col("id")
	for _, r := range tab.Rows {
		p := int(r[idc].(int64) % int64(parts))
		if pending[p] = append(pending[p], r); len(pending[p]) == size[p] {
			flush(p)
		}
	}
	for p := range pending {
		if len(pending[p]) > 0 {
			flush(p)
		}
	}
	return out
}

// TestCheckpointPartitionedExactlyOnce: a streaming run over a source of
// three partitions, each with rows out of order beyond the bound (late
// rows), cancelled again and again at random reads and resumed from its
// latest checkpoint, writes exactly the output and the late rows of an
// uninterrupted run, with and without allowed lateness, with OVER and
// GROUP BY windows.
func TestCheckpointPartitionedExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		par     int
		allowed time.Duration
		group   bool // a GROUP BY hop query rather than ckQuery
	}{{1, 0, false}, {2, 0, false}, {2, 500 * time.Millisecond, false}, {2, 0, true}, {1, 500 * time.Millisecond, true}} {
		for _, seed := range testutil.Seeds(2) {
			t.Run(fmt.Sprintf("par%d_allowed%v_group%v_seed%d", c.par, c.allowed, c.group, seed), func(t *testing.T) {
				rng := testutil.Rand(seed)
				tab := testutil.Events(rng, testutil.DefaultEvents(3000))
				tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 4000))
				batches := partitionedBatches(rng, tab, 3, 20)
				defer arrowutil.ReleaseAll(batches)
				query := ckQuery
				switch {
				case c.group:
					query = `SELECT user_id, count(*) AS n, sum(amount) AS s, max(merchant) AS m FROM events
						GROUP BY user_id, hop(ts, INTERVAL '2' SECOND, INTERVAL '5' SECOND)`
				case c.allowed > 0:
					query = strings.Replace(ckQuery, "RANGE BETWEEN UNBOUNDED PRECEDING", "RANGE BETWEEN INTERVAL '10' SECOND PRECEDING", 1)
				}
				opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(500 * time.Millisecond),
					volga.WithParallelism(c.par), volga.WithAllowedLateness(c.allowed)}
				dir := t.TempDir()
				withLate := func(path string) []volga.Option {
					late, err := sink.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					return append(opts[:len(opts):len(opts)], volga.WithLateSink(late))
				}
				ref, refLate := filepath.Join(dir, "ref.csv"), filepath.Join(dir, "ref-late.csv")
				if err := runPartitionedCtx(context.Background(), t, query, ref, 3, batches, 0, nil, withLate(refLate)...); err != nil {
					t.Fatal(err)
				}
				want, _ := os.ReadFile(ref)
				wantLate, _ := os.ReadFile(refLate)
				if n := bytes.Count(wantLate, []byte("\n")); n < 10 {
					t.Fatalf("only %d late rows (with the header): too few for the test to tell", n)
				}
				bucket := memblob.OpenBucket(nil)
				defer bucket.Close()
				out, outLate := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out-late.csv")
				var ckpts atomic.Int64
				crashes := crashAndResume(t, rng, 6, len(batches)/3, func(ctx context.Context, after int, cancel context.CancelFunc) error {
					ckOpts := append(withLate(outLate), volga.WithCheckpointBucket(bucket, time.Millisecond),
						volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
					return runPartitionedCtx(ctx, t, query, out, 3, batches, after, cancel, ckOpts...)
				})
				if ckpts.Load() < 2 {
					t.Fatalf("only %d checkpoints were taken", ckpts.Load())
				}
				t.Logf("%d interruptions, %d checkpoints, %d late rows", crashes, ckpts.Load(), bytes.Count(wantLate, []byte("\n"))-1)
				got, _ := os.ReadFile(out)
				if !bytes.Equal(got, want) {
					t.Fatalf("after %d interruptions the output differs from an uninterrupted run:\n%s", crashes, lineDiff(got, want))
				}
				gotLate, _ := os.ReadFile(outLate)
				if gotLate, wantLate := sortedLines(gotLate), sortedLines(wantLate); !bytes.Equal(gotLate, wantLate) {
					t.Fatalf("after %d interruptions the late rows differ from an uninterrupted run's:\n%s", crashes, lineDiff(gotLate, wantLate))
				}
			})
		}
	}
}
