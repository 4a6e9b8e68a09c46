package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
)

// lateEvents returns events in batches whose rows arrive up to 3 s out of
// order, and the options of a streaming run over them with a 1 s bound
// (late rows) and par tasks. The batches are released when t ends.
func lateEvents(t *testing.T, rng *rand.Rand, par int) (*testutil.Table, []arrow.RecordBatch, []volga.Option) {
	// Not scaled down under the race detector: a third has too few late
	// rows for every seed.
	tab := testutil.Events(rng, testutil.DefaultEvents(3000))
	tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 3000))
	batches := tab.Batches(rng, 25)
	t.Cleanup(func() {
		for _, b := range batches {
			b.Release()
		}
	})
	return tab, batches, []volga.Option{volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithParallelism(par)}
}

// TestCheckpointLateRowsExactlyOnce: a streaming run with a late-row sink
// (a transactional file sink), cancelled again and again and resumed from
// its latest checkpoint, writes exactly the output and exactly the late
// rows of an uninterrupted run: late rows travel behind the same barriers
// as the output, from either stage of the query (it partitions by user and
// by merchant), so the late-row file ends each epoch where the output
// does. With late rows applied (allowed lateness), their place in the
// output does not depend on the interruptions either.
func TestCheckpointLateRowsExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		par     int
		allowed time.Duration // rows late by less are applied, in place
	}{{1, 0}, {2, 0}, {2, 500 * time.Millisecond}} {
		par := c.par
		t.Run(fmt.Sprintf("par%d_allowed%v", par, c.allowed), func(t *testing.T) {
			rng := testutil.Rand(testutil.Seeds(1)[0] + 11 + uint64(par))
			tab, batches, opts := lateEvents(t, rng, par)
			opts = append(opts, volga.WithAllowedLateness(c.allowed))
			query := ckQuery
			if c.allowed > 0 {
				// Allowed lateness does not go with UNBOUNDED frames. The
				// second stage (by merchant) holds the late rows the first
				// applied until it can apply them in order; checkpoints
				// keep those it holds (TestCheckpointKeepsHeldLateRows).
				query = strings.Replace(ckQuery, "RANGE BETWEEN UNBOUNDED PRECEDING", "RANGE BETWEEN INTERVAL '10' SECOND PRECEDING", 1)
			}
			runQ := func(ctx context.Context, path string, after int, cancel context.CancelFunc, opts ...volga.Option) error {
				_, err := runQueryToFile(ctx, t, query, path, tab.Schema, batches, after, cancel, opts...)
				return err
			}
			dir := t.TempDir()
			withLate := func(path string) []volga.Option {
				late, err := sink.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				return append(opts[:len(opts):len(opts)], volga.WithLateSink(late))
			}
			ref, refLate := filepath.Join(dir, "ref.csv"), filepath.Join(dir, "ref-late.csv")
			if err := runQ(context.Background(), ref, 0, nil, withLate(refLate)...); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(ref)
			wantLate, _ := os.ReadFile(refLate)
			if n := bytes.Count(wantLate, []byte("\n")); n < 20 {
				t.Fatalf("only %d late rows (with the header): too few for the test to tell", n)
			}

			bucket := memblob.OpenBucket(nil)
			defer bucket.Close()
			out, outLate := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out-late.csv")
			var ckpts atomic.Int64
			crashes := crashAndResume(t, rng, 6, len(batches)/3, func(ctx context.Context, after int, cancel context.CancelFunc) error {
				ckOpts := append(withLate(outLate), volga.WithCheckpointBucket(bucket, time.Millisecond),
					volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
				return runQ(ctx, out, after, cancel, ckOpts...)
			})
			if ckpts.Load() < 2 {
				t.Fatalf("only %d checkpoints were taken", ckpts.Load())
			}

			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("after %d interruptions the output differs from an uninterrupted run:\n%s", crashes, lineDiff(got, want))
			}
			// Late rows of different tasks reach the sink in no set
			// order: compare them as sets (each row once).
			gotLate, _ := os.ReadFile(outLate)
			gotLate, wantLate = sortedLines(gotLate), sortedLines(wantLate)
			if !bytes.Equal(gotLate, wantLate) {
				t.Fatalf("after %d interruptions the late rows differ from an uninterrupted run's:\n%s", crashes, lineDiff(gotLate, wantLate))
			}
		})
	}
}

// sortedLines returns b's lines sorted.
func sortedLines(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	slices.SortFunc(lines, bytes.Compare)
	return bytes.Join(lines, nil)
}

// TestCheckpointLateSinkAddedOnResume: a run resumed with a late-row sink
// from a checkpoint taken without one starts that sink afresh (the late
// rows from the checkpoint on) rather than failing to recover it; the
// output is still exactly once.
func TestCheckpointLateSinkAddedOnResume(t *testing.T) {
	tab, batches, opts := lateEvents(t, testutil.Rand(testutil.Seeds(1)[0]+17), 2)
	dir := t.TempDir()
	ref, refLate := filepath.Join(dir, "ref.csv"), filepath.Join(dir, "ref-late.csv")
	late, err := sink.Open(refLate)
	if err != nil {
		t.Fatal(err)
	}
	if err := runToFile(context.Background(), t, ref, tab.Schema, batches, 0, nil, append(opts, volga.WithLateSink(late))...); err != nil {
		t.Fatal(err)
	}
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out, outLate := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out-late.csv")
	ckOpts := append(opts, volga.WithCheckpointBucket(bucket, time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	err = runToFile(ctx, t, out, tab.Schema, batches, len(batches)/2, cancel, ckOpts...)
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want it cancelled", err)
	}
	if late, err = sink.Open(outLate); err != nil {
		t.Fatal(err)
	}
	if err := runToFile(context.Background(), t, out, tab.Schema, batches, 0, nil, append(ckOpts, volga.WithLateSink(late))...); err != nil {
		t.Fatalf("resumed with a late-row sink: %v", err)
	}
	want, _ := os.ReadFile(ref)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatalf("output differs from an uninterrupted run:\n%s", lineDiff(got, want))
	}
	wantLate, _ := os.ReadFile(refLate)
	all := map[string]bool{}
	for _, l := range bytes.SplitAfter(wantLate, []byte("\n")) {
		all[string(l)] = true
	}
	gotLate, _ := os.ReadFile(outLate)
	lines := bytes.SplitAfter(gotLate, []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("the late-row sink got %d lines after the resume, want the header and late rows", len(lines))
	}
	for _, l := range lines {
		if !all[string(l)] {
			t.Fatalf("late-row line %q is not one of an uninterrupted run's", l)
		}
	}
}
