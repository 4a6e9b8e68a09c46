package kafka_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/volga-go/volga/source/kafka"
)

// Config.Partitions reads only the partitions named, and its positions
// cover only them.
func TestExplicitPartitions(t *testing.T) {
	addrs := newCluster(t, 4, "events")
	produce(t, addrs, events("events", 0, 200, 4)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", TimeField: "ts", BatchSize: 16, StopAtEnd: true, Partitions: []int{1}}
	src := open(t, cfg) // schema inferred from partition 1 alone
	if got, topic := src.Partitions(), src.TopicPartitions(); got != 1 || topic != 4 {
		t.Fatalf("Partitions = %d, TopicPartitions = %d; want the 1 partition read of the topic's 4", got, topic)
	}
	if got, want := src.ValueSchema().String(), eventSchema.String(); got != want {
		t.Fatalf("ValueSchema = %s, want %s", got, want)
	}
	rows := readRows(t, src, -1)
	if len(rows) != 50 {
		t.Fatalf("read %d rows, want the 50 of partition 1", len(rows))
	}
	for _, r := range rows {
		checkEvent(t, r, 4)
		if r.part != 1 {
			t.Fatalf("row of partition %d", r.part)
		}
	}
	pos, err := src.Position()
	if err != nil {
		t.Fatal(err)
	}
	next, err := kafka.DecodePosition("events", pos)
	if err != nil {
		t.Fatal(err)
	}
	if len(next) != 1 || next[1] != 50 {
		t.Fatalf("position %v, want map[1:50]", next)
	}

	// A second source of the same partition, sought to the middle of a
	// position that names other partitions too, reads the rest of
	// partition 1 only.
	all := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", StopAtEnd: true})
	readRows(t, all, 100)
	mid, err := all.Position()
	if err != nil {
		t.Fatal(err)
	}
	midNext, _ := kafka.DecodePosition("events", mid)
	cfg.Schema = src.ValueSchema()
	again := open(t, cfg)
	if !again.Schema().Equal(src.Schema()) {
		t.Fatalf("schema %s, want %s", again.Schema(), src.Schema())
	}
	if err := again.Seek(mid); err != nil {
		t.Fatal(err)
	}
	rest := readRows(t, again, -1)
	if want := 50 - int(midNext[1]); len(rest) != want {
		t.Fatalf("after Seek read %d rows, want %d", len(rest), want)
	}
	for _, r := range rest {
		if r.part != 1 {
			t.Fatalf("row of partition %d after Seek", r.part)
		}
	}
	pos, _ = again.Position()
	if next, _ := kafka.DecodePosition("events", pos); len(next) != 1 || next[1] != 50 {
		t.Fatalf("position after Seek %v, want map[1:50]", next)
	}
}

func TestExplicitPartitionsErrors(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	produce(t, addrs, events("events", 0, 4, 2)...)
	for _, tc := range []struct {
		name string
		cfg  kafka.Config
		want string
	}{
		{"with a group", kafka.Config{Brokers: addrs, Topic: "events", GroupID: "g", Partitions: []int{0}}, "exclude each other"},
		{"repeated", kafka.Config{Brokers: addrs, Topic: "events", Partitions: []int{1, 1}}, "repeated"},
		{"out of range", kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, Partitions: []int{2}}, "names partition 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := kafka.NewSource(tc.cfg)
			if err == nil {
				src.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// deleteRecords moves the log start offset of topic's partition to before
// (as retention does), with a DeleteRecords request.
func deleteRecords(t *testing.T, addrs []string, topic string, partition int32, before int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	res, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := res.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
}

// Retention deleted the oldest messages (log start offset > 0): the
// source starts at the log start, a partition left empty is at its end
// at once, and a position older than the log start is an error of Read
// that names the offset and the offsets the partition holds.
func TestLogStartOffset(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	produce(t, addrs, events("events", 0, 20, 2)...) // 10 per partition
	cfg := kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", StopAtEnd: true}
	p0 := cfg
	p0.Partitions, p0.BatchSize = []int{0}, 2
	old := open(t, p0)
	readRows(t, old, 2)
	pos, err := old.Position()
	if err != nil {
		t.Fatal(err)
	}
	deleteRecords(t, addrs, "events", 0, 4)  // partition 0 holds offsets 4 to 9
	deleteRecords(t, addrs, "events", 1, 10) // partition 1 holds none

	src := open(t, cfg)
	rows := readRows(t, src, -1)
	if got, want := ids(rows), []int64{8, 10, 12, 14, 16, 18}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	end, _ := src.Position()
	if next, err := kafka.DecodePosition("events", end); err != nil || !maps.Equal(next, map[int]int64{0: 10, 1: 10}) {
		t.Fatalf("position at the end %v %v", next, err)
	}

	// old's position holds offset 2 of partition 0: deleted since.
	stale := open(t, cfg)
	if err := stale.Seek(pos); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = stale.Read(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Read at a deleted offset: %v", err)
	}
	for _, want := range []string{`topic "events" partition 0`, "offset 2 is out of range", "holds offsets 4 to 9"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// TestReaderPanicIsAnError: a panic in a partition's reader goroutine (a
// broker answer the protocol layer trips over) ends the source with an
// error of Read naming the partition, instead of taking the process
// down; the other partitions' rows read before are not lost.
func TestReaderPanicIsAnError(t *testing.T) {
	addrs := newCluster(t, 2, "events")
	produce(t, addrs, events("events", 0, 10, 2)...)
	undo := kafka.SetFetchHook(func(p int) {
		if p == 1 {
			panic("boom")
		}
	})
	defer undo()
	src := open(t, kafka.Config{Brokers: addrs, Topic: "events", Schema: eventSchema, TimeField: "ts", StopAtEnd: true})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rows := 0
	for {
		rec, err := src.Read(ctx)
		if err != nil {
			if !strings.Contains(err.Error(), `topic "events" partition 1: internal error reading the partition: boom`) {
				t.Fatalf("Read: %v, want the reader's panic as an error", err)
			}
			break
		}
		if p := src.PartitionID(rec); rec.NumRows() > 0 && p != 0 {
			t.Errorf("rows of partition %d", p)
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	if rows > 5 {
		t.Errorf("%d rows, partition 0 has 5", rows)
	}
}
