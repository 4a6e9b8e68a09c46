package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kgo"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// crashing is a Kafka source that cancels its run (a stand-in for a
// crash) when asked for batch after+1 (after 0: never).
type crashing struct {
	*kafka.Source
	after, reads int
	cancel       context.CancelFunc
	// ready, when set, holds the crash back until it reports true (a
	// checkpoint taken), so that the run crashes after one however slow
	// the machine; reads go on meanwhile.
	ready func() bool
}

func (c *crashing) Read(ctx context.Context) (arrow.RecordBatch, error) {
	c.reads++
	if c.after > 0 && c.reads > c.after && (c.ready == nil || c.ready()) {
		c.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.Source.Read(ctx)
}

// TestPipelineCheckpointResumeExactlyOnce: a streaming run over a topic
// of three partitions (one of them behind the others in event time, so
// that it holds the watermark), cancelled again and again at random reads
// and resumed each time from its latest checkpoint with a new source
// sought to the checkpoint's offsets, writes the file an uninterrupted run
// writes. Each partition is in event-time order and event times are
// unique, so the output does not depend on how the partitions interleave.
func TestPipelineCheckpointResumeExactlyOnce(t *testing.T) {
	addrs := newCluster(t, 3, "events")
	const n = 600
	var recs []*kgo.Record
	for i := range n {
		ts := base.Add(time.Duration(i) * time.Second)
		if i%3 == 2 {
			ts = ts.Add(-20500 * time.Millisecond)
		}
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 3),
			Value: fmt.Appendf(nil, `{"id":%d,"user":"u%d","amount":%d,"ok":%t,"ts":%q}`, i, i%7, i%11, i%2 == 0, ts.Format(time.RFC3339Nano))})
	}
	produce(t, addrs, recs...)
	const query = `SELECT id, user, ts,
	  sum(amount) OVER (PARTITION BY user ORDER BY ts RANGE BETWEEN INTERVAL '30' SECOND PRECEDING AND CURRENT ROW) AS s30,
	  count(*) OVER (PARTITION BY user ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS c3,
	  max(id) OVER (PARTITION BY ok ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS m5
	FROM events`
	cfg := kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", BatchSize: 9,
		MaxWait: time.Millisecond, StopAtEnd: true}
	dir := t.TempDir()
	run := func(ctx context.Context, path string, after int, cancel context.CancelFunc, ready func() bool, opts ...volga.Option) error {
		src, err := kafka.NewSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		out, err := sink.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", &crashing{Source: src, after: after, cancel: cancel, ready: ready}),
			volga.WithSink(out), volga.WithMode(volga.Streaming), volga.WithParallelism(2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return p.Run(ctx)
	}
	ref := filepath.Join(dir, "ref.csv")
	if err := run(context.Background(), ref, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	if lines := bytes.Count(want, []byte("\n")); lines != n+1 {
		t.Fatalf("uninterrupted run: %d lines, want %d", lines, n+1)
	}
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	out := filepath.Join(dir, "out.csv")
	rng := rand.New(rand.NewPCG(5, 9))
	crashes := 0
	var ckpts atomic.Int64
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithCancel(context.Background())
		after := 0
		if attempt < 5 {
			after = 1 + rng.IntN(20)
		}
		taken := ckpts.Load()
		ready := func() bool { return ckpts.Load() > taken } // crash after a checkpoint of this attempt
		err := run(ctx, out, after, cancel, ready, volga.WithCheckpointBucket(bucket, 5*time.Millisecond),
			volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }))
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		crashes++
	}
	if ckpts.Load() < 2 {
		t.Fatalf("only %d checkpoints were taken", ckpts.Load())
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatalf("after %d interruptions the output differs from an uninterrupted run's (%d and %d bytes)", crashes, len(got), len(want))
	}
}
