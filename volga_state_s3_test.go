package volga_test

import (
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// Two pipelines checkpointing to two paths of one S3 bucket
// (WithCheckpoints("s3://volga/job-a?..."), ".../job-b") keep their
// checkpoints apart: the path is a prefix in the bucket. The S3 driver
// takes the bucket from the URL's host and ignores its path, so without
// that both wrote at the root of the bucket, and the second pipeline
// resumed from the first one's final checkpoint and read nothing.
func TestCheckpointsS3URLPath(t *testing.T) {
	srv := testutil.S3Server(t, "volga")
	withPath := func(path string) string {
		return strings.Replace(testutil.S3URL(srv, "volga"), "s3://volga?", "s3://volga/"+path+"?", 1)
	}
	tab := testutil.Events(testutil.Rand(5), testutil.DefaultEvents(300))
	const query = "SELECT id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s FROM events"
	run := func(url string) (int64, error) {
		t.Helper()
		rec := tab.Record(nil, 0, len(tab.Rows))
		defer rec.Release()
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(query, volga.WithSource("events", source.NewMemory(tab.Schema, rec)), volga.WithSink(out),
			volga.WithCheckpoints(url, time.Second), volga.WithStateDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Run(t.Context())
		return out.NumRows(), err
	}
	for _, job := range []string{"job-a", "job-b"} {
		n, err := run(withPath(job))
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(len(tab.Rows)) {
			t.Fatalf("%s wrote %d rows, want %d: it resumed from another pipeline's checkpoint", job, n, len(tab.Rows))
		}
	}
	// Started again, job-a resumes from its own final checkpoint.
	if n, err := run(withPath("job-a")); err != nil || n != 0 {
		t.Fatalf("job-a again: %d rows (%v), want 0: a finished run reads nothing twice", n, err)
	}
	keys := bucketKeys(t, testutil.S3URL(srv, "volga"))
	if len(keys) == 0 {
		t.Fatal("no checkpoint objects in the bucket")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "job-a/") && !strings.HasPrefix(k, "job-b/") {
			t.Errorf("object %s is outside the pipelines' paths", k)
		}
	}
	_, err := run(withPath("job-a") + "&prefix=x/")
	if err == nil || !strings.Contains(err.Error(), "has a path and a prefix parameter") {
		t.Errorf("a path and prefix=: %v", err)
	}
}
