package pipeline_test

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime/trace"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
)

// TestCheckpointTraceRegions: a checkpointed run traced with runtime/trace
// marks its window tasks' checkpoint steps as the regions the README
// names, and a run without checkpoints marks none.
func TestCheckpointTraceRegions(t *testing.T) {
	rng := testutil.Rand(testutil.Seeds(1)[0])
	tab := testutil.Events(rng, testutil.DefaultEvents(300))
	batches := tab.Batches(rng, 20)
	defer arrowutil.ReleaseAll(batches)
	traced := func(opts ...volga.Option) []byte {
		var buf bytes.Buffer
		if err := trace.Start(&buf); err != nil {
			t.Skipf("tracing is on already (go test -trace): %v", err)
		}
		err := runToFile(context.Background(), t, filepath.Join(t.TempDir(), "out.csv"), tab.Schema, batches, 0, nil, opts...)
		trace.Stop()
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	with := traced(volga.WithCheckpointBucket(bucket, time.Hour), volga.WithParallelism(2))
	without := traced(volga.WithParallelism(2))
	for _, name := range []string{"volga.checkpoint.barrier", "volga.checkpoint.write", "volga.checkpoint.encode"} {
		if !bytes.Contains(with, []byte(name)) {
			t.Errorf("the trace of a checkpointed run has no region %s", name)
		}
		if bytes.Contains(without, []byte(name)) {
			t.Errorf("the trace of a run without checkpoints has a region %s", name)
		}
	}
}
