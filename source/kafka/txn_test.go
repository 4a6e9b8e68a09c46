package kafka_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

// txnProducer is a transactional franz-go producer.
func txnProducer(t *testing.T, addrs []string, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func txnBegin(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func txnEnd(t *testing.T, cl *kgo.Client, commit bool) {
	t.Helper()
	if err := cl.EndTransaction(context.Background(), kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// A topic written by transactional producers reads as a read_committed
// Java consumer reads it: the markers that end transactions are not
// messages (kafka-go hands them out as 6-byte values, which were dead
// letters), the messages of aborted transactions are skipped (kafka-go
// returns them), and StopAtEnd ends at the last stable offset instead of
// waiting for an open transaction.
func TestTransactionalTopic(t *testing.T) {
	addrs := newCluster(t, 1, "events")
	a, b := txnProducer(t, addrs, "a"), txnProducer(t, addrs, "b")
	aborted := func(id int) *kgo.Record {
		r := event("events", id, 1)
		r.Value = append(r.Value[:len(r.Value)-1], `,"bogus":"aborted"}`...)
		return r
	}
	txnBegin(t, a, events("events", 0, 3, 1)...)
	txnEnd(t, a, true)
	// Interleaved: b's aborted transaction around a's committed one.
	txnBegin(t, b, aborted(100), aborted(101))
	txnBegin(t, a, events("events", 3, 5, 1)...)
	txnEnd(t, b, false)
	txnEnd(t, a, true)
	txnBegin(t, a, aborted(102))
	txnEnd(t, a, false)
	txnBegin(t, b, event("events", 5, 1))
	txnEnd(t, b, true)
	produce(t, addrs, event("events", 6, 1)) // not transactional
	// Left open while the source reads: past the last stable offset.
	txnBegin(t, a, aborted(103))

	var mu sync.Mutex
	var dead []source.DeadLetter
	cfg := kafka.Config{Brokers: addrs, Topic: "events", TimeField: "ts", StopAtEnd: true, SampleTimeout: 5 * time.Second,
		DeadLetter: func(d source.DeadLetter) {
			mu.Lock()
			defer mu.Unlock()
			dead = append(dead, d)
		}}
	start := time.Now()
	src := open(t, cfg)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("NewSource took %v: the sample waited for the open transaction", d)
	}
	// The sample holds no aborted message: no "bogus" column.
	if got, want := src.ValueSchema().String(), eventSchema.String(); got != want {
		t.Fatalf("inferred schema %s, want %s", got, want)
	}
	rows := readRows(t, src, -1)
	if got, want := ids(rows), []int64{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for _, r := range rows {
		checkEvent(t, r, 1)
	}
	mu.Lock()
	if len(dead) != 0 || src.DeadLetters() != 0 {
		t.Fatalf("dead letters %d: %+v", src.DeadLetters(), dead)
	}
	mu.Unlock()

	// Once the open transaction is aborted, an unbounded source sought to
	// the end of the first one reads the one message after it, then
	// nothing more.
	txnEnd(t, a, false)
	produce(t, addrs, event("events", 7, 1))
	pos, err := src.Position()
	if err != nil {
		t.Fatal(err)
	}
	cfg.StopAtEnd, cfg.Schema = false, eventSchema
	more := open(t, cfg)
	if err := more.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if got := ids(readRows(t, more, 1)); !slices.Equal(got, []int64{7}) {
		t.Fatalf("after the position: %v", got)
	}
}
