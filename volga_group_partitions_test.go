package volga_test

import (
	"context"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
)

// A member whose generation assigns a partition the topic did not have
// when the group started stops with an error saying so: producers place
// keys by the partition count, so keys moved to partitions without their
// window state, and the member would have run the new partition's
// pipeline from nothing.
func TestGroupTopicGainedPartitions(t *testing.T) {
	addrs := newGroupCluster(t, 1, "tx")
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	cfg := rawKeyGroupConfig(addrs, "grown", bucket, "")
	g, err := volga.NewGroup(groupQuery, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g.Partitions() != 1 {
		t.Fatalf("%d partitions, want 1", g.Partitions())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := &kafkago.Client{Addr: kafkago.TCP(addrs...)}
	res, err := client.CreatePartitions(ctx, &kafkago.CreatePartitionsRequest{
		Topics: []kafkago.TopicPartitionsConfig{{Name: "tx", Count: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	for topic, err := range res.Errors {
		if err != nil {
			t.Fatalf("creating partitions of %s: %v", topic, err)
		}
	}
	err = g.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "now has more than the 1 partitions it had when the group started (partition 1 was assigned)") {
		t.Fatalf("Run: %v", err)
	}
}
