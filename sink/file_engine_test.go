package sink_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
)

// TestFileSinksEngineExactlyOnce: a streaming run into a CSV, JSON-lines
// or Parquet file, cancelled again and again (the engine abandons its
// sink, see sink.Abandoner) and each time resumed from its latest
// checkpoint, leaves the file of an uninterrupted run, over an earlier
// file at the path, with nothing left staged.
func TestFileSinksEngineExactlyOnce(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0] + 23)
	tab := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(2000)))
	tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
	batches := tab.Batches(rng, 25)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithParallelism(2), volga.WithMaxOutOfOrder(time.Second)}
	for _, name := range []string{"out.csv", "out.jsonl", "out.parquet"} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			ref := filepath.Join(tmp, "ref-"+name)
			out, err := sink.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			if err := runQuery(context.Background(), t, out, tab.Schema, batches, 0, nil, opts...); err != nil {
				t.Fatal(err)
			}
			want := fileBytes(t, ref)

			path := filepath.Join(tmp, name)
			if err := os.WriteFile(path, []byte("earlier output\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			bucket := memblob.OpenBucket(nil)
			defer bucket.Close()
			var ckpts atomic.Int64
			ckOpts := append(opts, volga.WithCheckpointBucket(bucket, time.Millisecond),
				volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }),
				volga.WithStateDir(filepath.Join(tmp, "state")))
			crashes := 0
			for attempt := 0; ; attempt++ {
				ctx, cancel := context.WithCancel(context.Background())
				after := 0
				if attempt < 5 {
					after = 1 + rng.IntN(len(batches)/3)
				}
				out, err := sink.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				err = runQuery(ctx, t, out, tab.Schema, batches, after, cancel, ckOpts...)
				cancel()
				if err == nil {
					break
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				crashes++
			}
			if got := fileBytes(t, path); !bytes.Equal(got, want) {
				t.Fatalf("after %d interruptions the file differs from an uninterrupted run's:\n%.1500s\nwant:\n%.1500s", crashes, got, want)
			}
			if ckpts.Load() < 3 {
				t.Fatalf("%d checkpoints", ckpts.Load())
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 3 { // ref, the file, state
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Fatalf("left in the directory: %v", names)
			}
			t.Logf("%d interruptions, %d checkpoints", crashes, ckpts.Load())
		})
	}
}

// fileBytes returns a CSV or JSON-lines file's bytes, or a Parquet
// file's rows as CSV.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	if filepath.Ext(path) == ".parquet" {
		return dirAsCSV(t, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
