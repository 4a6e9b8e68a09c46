package volga_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"gocloud.dev/blob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/source/kafka"
)

// bucketKeys lists every object of the bucket at u.
func bucketKeys(t *testing.T, u string) []string {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var keys []string
	it := b.List(nil)
	for {
		obj, err := it.Next(context.Background())
		if err == io.EOF {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, obj.Key)
	}
}

// Two groups, each with its own path in one S3 bucket
// (s3://volga/job-a, s3://volga/job-b, as volga group --checkpoints
// s3://ckpt/features is documented), keep their checkpoints apart: the
// path is a prefix of the bucket. The S3 driver takes the bucket from
// the URL's host and ignores its path, so without that both groups put
// their partitions' checkpoints at p0000/ of the bucket, and the second
// restored the first one's state.
func TestGroupS3CheckpointURLPath(t *testing.T) {
	srv := testutil.S3Server(t, "volga")
	withPath := func(path string) string {
		return strings.Replace(testutil.S3URL(srv, "volga"), "s3://volga?", "s3://volga/"+path+"?", 1)
	}
	addrs := newGroupCluster(t, 1, "tx")
	produceGroup(t, addrs, "tx", 0, 100, &kafkago.Murmur2Balancer{}, volga.JSONKey)

	run := func(group, url string) *volga.Group {
		t.Helper()
		var ckpts checkpointLog
		m := startGroup(t, groupQuery, volga.GroupConfig{
			Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: group, Schema: groupSchema, TimeField: "ts",
				MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond},
			CheckpointURL:      url,
			CheckpointInterval: 100 * time.Millisecond,
		}, volga.WithOnCheckpoint(ckpts.add))
		groupWaitFor(t, group+" to checkpoint its partition", 20*time.Second, func() bool {
			return len(m.g.Owned()) == 1 && ckpts.since(time.Time{}) >= 2
		})
		m.g.Stop()
		if err := m.wait(t); err != nil {
			t.Fatalf("%s: Run: %v", group, err)
		}
		return m.g
	}
	run("a", withPath("job-a"))
	run("b", withPath("job-b/"))

	var roots []string
	for _, k := range bucketKeys(t, testutil.S3URL(srv, "volga")) {
		root, _, _ := strings.Cut(k, "/p0000/checkpoints/")
		if !slices.Contains(roots, root) {
			roots = append(roots, root)
		}
	}
	slices.Sort(roots)
	if !slices.Equal(roots, []string{"job-a", "job-b"}) {
		t.Fatalf("the groups' checkpoints are under %q, want under job-a/ and job-b/", roots)
	}

	// A path and a prefix parameter both: refused, not guessed.
	_, err := volga.NewGroup(groupQuery, volga.GroupConfig{
		Source:        kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "c", Schema: groupSchema, TimeField: "ts"},
		CheckpointURL: withPath("job-c") + "&prefix=x/",
	})
	if err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("NewGroup with a path and a prefix: %v, want an error", err)
	}
}
