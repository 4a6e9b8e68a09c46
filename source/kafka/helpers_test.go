package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// newCluster starts an in-process Kafka cluster (one broker, on a loopback
// port) with the topics seeded with the given number of partitions.
func newCluster(t *testing.T, partitions int32, topics ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes records with franz-go (a client independent of the one
// under test), each to its Partition.
func produce(t *testing.T, addrs []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consume reads n records of topic with franz-go.
func consume(t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), n, topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

var base = time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)

// event is message i: partition i%parts, user u<i%5>, amount i*1.5.
func event(topic string, i, parts int) *kgo.Record {
	return &kgo.Record{
		Topic:     topic,
		Partition: int32(i % parts),
		Key:       fmt.Appendf(nil, "u%d", i%5),
		Value: fmt.Appendf(nil, `{"id":%d,"user":"u%d","amount":%g,"ok":%t,"ts":%q}`,
			i, i%5, float64(i)*1.5, i%2 == 0, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339)),
		Timestamp: base.Add(time.Duration(i) * time.Minute),
	}
}

func events(topic string, from, to, parts int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < to; i++ {
		out = append(out, event(topic, i, parts))
	}
	return out
}

// row is a decoded row with the partition of its batch.
type row struct {
	part int
	vals map[string]any
}

// readRows reads until n rows arrived (n < 0: until io.EOF), checking that
// every batch holds rows of the one partition PartitionOf reports, or is
// an empty batch of no partition.
func readRows(t *testing.T, src *kafka.Source, n int) []row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []row
	for n < 0 || len(out) < n {
		rec, err := src.Read(ctx)
		if errors.Is(err, io.EOF) && n < 0 {
			return out
		}
		if err != nil {
			t.Fatalf("Read after %d rows: %v", len(out), err)
		}
		if rec.NumRows() == 0 { // Config.IdleWake passed with nothing to read
			if !rec.Schema().Equal(src.Schema()) || src.PartitionOf(rec) != -1 {
				t.Fatalf("empty batch: schema %s, partition %d", rec.Schema(), src.PartitionOf(rec))
			}
			rec.Release()
			continue
		}
		out = append(out, batchRows(t, src, rec)...)
		rec.Release()
	}
	return out
}

func batchRows(t *testing.T, src *kafka.Source, rec arrow.RecordBatch) []row {
	t.Helper()
	rows, err := checkBatch(src, rec)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkBatch decodes a batch, checking that it is not empty, has the
// source's schema and holds rows of the one partition PartitionOf reports.
func checkBatch(src *kafka.Source, rec arrow.RecordBatch) ([]row, error) {
	if rec.NumRows() == 0 {
		return nil, errors.New("Read returned an empty batch")
	}
	if slot := src.PartitionOf(rec); slot < 0 || slot >= src.Partitions() {
		return nil, fmt.Errorf("PartitionOf = %d, not in [0, %d)", slot, src.Partitions())
	}
	p := src.PartitionID(rec)
	if !rec.Schema().Equal(src.Schema()) {
		return nil, fmt.Errorf("batch schema %v, source schema %v", rec.Schema(), src.Schema())
	}
	var out []row
	for _, r := range sink.Rows(rec) {
		vals := map[string]any{}
		for i, f := range rec.Schema().Fields() {
			vals[f.Name] = r[i]
		}
		if id, ok := vals["id"].(int64); ok && int(id)%src.TopicPartitions() != p {
			return nil, fmt.Errorf("row id %d in a batch of partition %d", id, p)
		}
		out = append(out, row{part: p, vals: vals})
	}
	return out, nil
}

// ids returns the id column of rows.
func ids(rows []row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.vals["id"].(int64)
	}
	return out
}

// waitGoroutines waits until at most n goroutines run.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines still running, want <= %d:\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
