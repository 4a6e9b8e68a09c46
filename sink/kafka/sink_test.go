package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/sink/kafka"
	kafkasource "github.com/volga-go/volga/source/kafka"
)

func newCluster(t *testing.T, partitions int32, topics ...string) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}

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
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

var base = time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)

// batch builds rows from..to-1: user u<i%4> (NULL for i%7 == 6), n = i,
// amount i/2 (NULL for i%5 == 4), ok i even, ts base+i s, tags [t<i%3>].
func batch(from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < to; i++ {
		if i%7 == 6 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("u%d", i%4))
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%5 == 4 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
		}
		b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMilli()))
		lb := b.Field(5).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", i%3))
	}
	return b.NewRecordBatch()
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	return h
}

func open(t *testing.T, cfg kafka.SinkConfig) *kafka.Sink {
	t.Helper()
	s, err := kafka.NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSinkRoundTrip(t *testing.T) {
	_, addrs := newCluster(t, 3, "features")
	s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features", KeyColumns: []string{"user"}, IDColumns: []string{"user", "n"}, FirstEpoch: 3})
	ctx := context.Background()
	rec := batch(0, 20)
	defer rec.Release()
	if err := s.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if state, err := s.PrepareCommit(ctx, 3); err != nil || state != nil {
		t.Fatal(state, err)
	}
	if err := s.Commit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if s.Epoch() != 4 {
		t.Fatalf("Epoch = %d", s.Epoch())
	}
	rec2 := batch(20, 30)
	defer rec2.Release()
	if err := s.Write(ctx, rec2); err != nil {
		t.Fatal(err)
	}

	got := consume(t, addrs, "features", 30)
	partOf := map[string]int32{}
	parts := map[int32]bool{}
	for _, r := range got {
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("value %s: %v", r.Value, err)
		}
		i := int(v["n"].(float64))
		want := map[string]any{
			"user": fmt.Sprintf("u%d", i%4), "n": float64(i), "amount": float64(i) / 2, "ok": i%2 == 0,
			"ts": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339), "tags": []any{fmt.Sprintf("t%d", i%3)},
		}
		wantKey := strconv.Quote(fmt.Sprintf("u%d", i%4))
		if i%7 == 6 {
			want["user"], wantKey = nil, "null"
		}
		if i%5 == 4 {
			want["amount"] = nil
		}
		if fmt.Sprint(v) != fmt.Sprint(want) || len(v) != len(want) {
			t.Fatalf("row %d: %s, want %v", i, r.Value, want)
		}
		if string(r.Key) != wantKey {
			t.Fatalf("row %d: key %s, want %s", i, r.Key, wantKey)
		}
		if p, ok := partOf[wantKey]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", wantKey, p, r.Partition)
		}
		partOf[wantKey] = r.Partition
		parts[r.Partition] = true

		h := headers(r)
		wantEpoch, wantSeq := "3", i
		if i >= 20 {
			wantEpoch, wantSeq = "4", i-20
		}
		wantID := fmt.Sprintf("[%s,%d]", wantKey, i)
		if h[kafka.HeaderEpoch] != wantEpoch || h[kafka.HeaderSeq] != strconv.Itoa(wantSeq) || h[kafka.HeaderID] != wantID {
			t.Fatalf("row %d: headers %v, want epoch %s seq %d id %s", i, h, wantEpoch, wantSeq, wantID)
		}
	}
	if len(parts) < 2 {
		t.Fatalf("5 keys all in partitions %v", parts)
	}
}

// The source reads back what the sink wrote: every value, with the types
// the source infers.
func TestSinkToSource(t *testing.T) {
	_, addrs := newCluster(t, 2, "features")
	s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features", KeyColumns: []string{"user"}})
	rec := batch(0, 50)
	defer rec.Release()
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	src, err := kafkasource.NewSource(kafkasource.Config{Brokers: addrs, Topic: "features", TimeField: "ts", StopAtEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	byN := map[int64][]any{}
	for {
		out, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sink.Rows(out) {
			byN[r[1].(int64)] = r
		}
		out.Release()
	}
	want := sink.Rows(rec)
	if len(byN) != len(want) {
		t.Fatalf("%d rows read back, want %d", len(byN), len(want))
	}
	for _, w := range want {
		g := byN[w[1].(int64)]
		// tags comes back as the JSON text of the list.
		w[5] = fmt.Sprintf(`["%s"]`, w[5].([]any)[0])
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("read back %v, wrote %v", g, w)
		}
	}
}

func TestSinkBatchesProduceRequests(t *testing.T) {
	c, addrs := newCluster(t, 1, "features")
	var produces atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		produces.Add(1)
		return nil, nil, false
	})
	s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features", BatchSize: 500, BatchTimeout: time.Millisecond})
	rec := batch(0, 2000)
	defer rec.Release()
	start := time.Now()
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Write took %v", d)
	}
	if n := produces.Load(); n < 4 || n > 8 {
		t.Fatalf("%d produce requests for 2000 rows in batches of 500", n)
	}
	if got := consume(t, addrs, "features", 2000); len(got) != 2000 {
		t.Fatalf("%d records", len(got))
	}
}

func TestSinkErrors(t *testing.T) {
	_, addrs := newCluster(t, 1, "features")
	if _, err := kafka.NewSink(kafka.SinkConfig{Topic: "x"}); err == nil || !strings.Contains(err.Error(), "Brokers") {
		t.Fatalf("no brokers: %v", err)
	}
	if _, err := kafka.NewSink(kafka.SinkConfig{Brokers: addrs}); err == nil || !strings.Contains(err.Error(), "Topic") {
		t.Fatalf("no topic: %v", err)
	}
	rec := batch(0, 3)
	defer rec.Release()
	s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features", KeyColumns: []string{"nope"}})
	if err := s.Write(context.Background(), rec); err == nil || !strings.Contains(err.Error(), `key column "nope"`) {
		t.Fatalf("unknown key column: %v", err)
	}
	ok := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ok.Write(ctx, rec); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a cancelled context: %v", err)
	}
	if err := ok.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ok.Write(context.Background(), rec); !errors.Is(err, kafka.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := ok.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSinkCloseLeavesNoGoroutines(t *testing.T) {
	_, addrs := newCluster(t, 2, "features")
	before := runtime.NumGoroutine()
	s, err := kafka.NewSink(kafka.SinkConfig{Brokers: addrs, Topic: "features", KeyColumns: []string{"user"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := batch(0, 100)
	defer rec.Release()
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSinkRecover: a restart from the checkpoint of epoch 7 stamps the
// replayed rows with epoch 8, numbered from 0.
func TestSinkRecover(t *testing.T) {
	s, err := kafka.NewSink(kafka.SinkConfig{Brokers: []string{"127.0.0.1:1"}, Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Recover(context.Background(), 7, nil); err != nil {
		t.Fatal(err)
	}
	if s.Epoch() != 8 {
		t.Fatalf("Epoch = %d, want 8", s.Epoch())
	}
	if state, err := s.PrepareCommit(context.Background(), 8); err != nil || state != nil || s.Epoch() != 9 {
		t.Fatalf("PrepareCommit: %q %v, Epoch %d", state, err, s.Epoch())
	}
	s.Close()
	if err := s.Recover(context.Background(), 1, nil); err == nil {
		t.Fatal("Recover after Close succeeded")
	}
}

// Values JSON cannot hold are written as the package doc says: NaN and
// ±Inf as null, uint64 beyond 2^53 exact in the text; every value is
// valid JSON.
func TestSinkValuesJSONCannotHold(t *testing.T) {
	_, addrs := newCluster(t, 1, "features")
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Uint64Builder).AppendValues([]uint64{math.MaxUint64, 1<<53 + 1, 0}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features"})
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"u":18446744073709551615,"f":null}`, `{"u":9007199254740993,"f":null}`, `{"u":0,"f":null}`}
	for i, r := range consume(t, addrs, "features", 3) {
		if string(r.Value) != want[i] || !json.Valid(r.Value) {
			t.Errorf("row %d: %s, want %s", i, r.Value, want[i])
		}
	}
}
