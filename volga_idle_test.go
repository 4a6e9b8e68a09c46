package volga_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// TestIdlePartitionReleasesHeldRows: in a streaming run over a Kafka topic
// of two partitions, rows held back by a partition that then falls silent
// go out once it has been silent for the idle timeout, with no further
// message on any partition: the source's empty batches (Config.IdleWake)
// let the engine see that time alone moved the watermark on.
func TestIdlePartitionReleasesHeldRows(t *testing.T) {
	addrs := newGroupCluster(t, 2, "tx")
	to := func(part int) kafkago.Balancer {
		return kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return part })
	}
	src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: "tx", Schema: groupSchema, TimeField: "ts", IdleWake: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var emitted atomic.Int64
	out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		emitted.Add(rec.NumRows())
		return nil
	})
	p, err := volga.SQL(groupQuery, volga.WithSource("tx", src), volga.WithSink(out),
		volga.WithMode(volga.Streaming), volga.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	defer func() {
		p.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// Event 0 on partition 1, the only partition seen yet: it goes out.
	produceGroup(t, addrs, "tx", 0, 1, to(1), volga.JSONKey)
	groupWaitFor(t, "the first row", 15*time.Second, func() bool { return emitted.Load() == 1 })
	// Events 1-20 on partition 0 are held by partition 1's watermark (event
	// 0's time) until partition 1 has been silent for a second.
	produceGroup(t, addrs, "tx", 1, 21, to(0), volga.JSONKey)
	groupWaitFor(t, "the rows partition 1 held", 15*time.Second, func() bool { return emitted.Load() == 21 })
	if st := p.Stats(); st.LateDropped != 0 || st.RowsIn != 21 {
		t.Errorf("stats %+v", st)
	}
}

// TestPartitionSubsetWatermark: a source reading some partitions of a
// topic (Config.Partitions) keeps a watermark for those only, so the
// partitions it does not read do not hold the pipeline's back: with no
// idle timeout, every row read from partition 1 of a four-partition
// topic goes out in a streaming run. (The engine had a watermark slot
// for each of the topic's partitions, three of which never moved.)
func TestPartitionSubsetWatermark(t *testing.T) {
	addrs := newGroupCluster(t, 4, "tx")
	to1 := kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return 1 })
	src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: "tx", Schema: groupSchema, TimeField: "ts", Partitions: []int{1}, IdleWake: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if n := src.Partitions(); n != 1 {
		t.Errorf("Partitions() = %d, want 1: the source reads one partition", n)
	}
	var emitted atomic.Int64
	out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		emitted.Add(rec.NumRows())
		return nil
	})
	p, err := volga.SQL(groupQuery, volga.WithSource("tx", src), volga.WithSink(out), volga.WithMode(volga.Streaming))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	defer func() {
		p.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	produceGroup(t, addrs, "tx", 0, 20, to1, volga.JSONKey)
	groupWaitFor(t, "the rows of partition 1", 15*time.Second, func() bool { return emitted.Load() == 20 })
	if st := p.Stats(); st.LateDropped != 0 || st.RowsIn != 20 {
		t.Errorf("stats %+v", st)
	}
}

// TestGroupMembersWatermark: two members of a Kafka consumer group
// (Config.GroupID) over a topic of two partitions each read the one the
// group assigns them, in streaming runs with no idle timeout: every row
// of a member's partition goes out, the partition the other member reads
// holding nothing back (source.Assigning), and the two outputs together
// hold every row once.
func TestGroupMembersWatermark(t *testing.T) {
	addrs := newGroupCluster(t, 2, "tx")
	type member struct {
		p       *volga.Pipeline
		src     *kafka.Source
		done    chan error
		emitted atomic.Int64
	}
	members := make([]*member, 2)
	for i := range members {
		m := &member{done: make(chan error, 1)}
		src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: "tx", Schema: groupSchema, TimeField: "ts", GroupID: "g", IdleWake: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		m.src = src
		out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
			m.emitted.Add(rec.NumRows())
			return nil
		})
		if m.p, err = volga.SQL(groupQuery, volga.WithSource("tx", src), volga.WithSink(out), volga.WithMode(volga.Streaming)); err != nil {
			t.Fatal(err)
		}
		go func() { m.done <- m.p.Run(context.Background()) }()
		members[i] = m
	}
	defer func() {
		for _, m := range members {
			m.p.Stop()
			if err := <-m.done; err != nil {
				t.Error(err)
			}
			m.src.Close()
		}
	}()
	// Wait until the group has given each member one partition.
	groupWaitFor(t, "the group's assignment", 30*time.Second, func() bool {
		a, b := members[0].src.Assigned(), members[1].src.Assigned()
		return len(a) == 1 && len(b) == 1 && a[0] != b[0]
	})
	byID := kafkago.BalancerFunc(func(msg kafkago.Message, parts ...int) int {
		var e struct{ ID int }
		if err := json.Unmarshal(msg.Value, &e); err != nil {
			return 0
		}
		return e.ID % 2
	})
	produceGroup(t, addrs, "tx", 0, 40, byID, volga.JSONKey)
	groupWaitFor(t, "every row out", 30*time.Second, func() bool {
		return members[0].emitted.Load()+members[1].emitted.Load() == 40
	})
	for i, m := range members {
		if n := m.emitted.Load(); n != 20 {
			t.Errorf("member %d emitted %d rows, want its partition's 20", i, n)
		}
		if st := m.p.Stats(); st.LateDropped != 0 {
			t.Errorf("member %d: %d late rows", i, st.LateDropped)
		}
	}
}
