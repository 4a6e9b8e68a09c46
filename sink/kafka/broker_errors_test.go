package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/volga-go/volga/sink/kafka"
)

// failProduce makes the first times produce requests to c fail with code.
func failProduce(c *kfake.Cluster, code int16, times int) {
	n := 0
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n >= times {
			return nil, nil, false
		}
		n++
		r := req.(*kmsg.ProduceRequest)
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// TestSinkBrokerErrors: a broker error that kafka-go retries (not the
// leader) loses no row; one it does not (message too large) fails Write
// with an error that says it once, with the number of messages it
// failed, rather than once per message, and that errors.Is and errors.As
// still see.
func TestSinkBrokerErrors(t *testing.T) {
	const rows = 500
	t.Run("retried", func(t *testing.T) {
		c, addrs := newCluster(t, 1, "features")
		failProduce(c, kerr.NotLeaderForPartition.Code, 2)
		s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features"})
		rec := batch(0, rows)
		defer rec.Release()
		if err := s.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]int{}
		for _, r := range consume(t, addrs, "features", rows) {
			var v struct{ N int64 }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatal(err)
			}
			seen[v.N]++
		}
		for i := range int64(rows) {
			if seen[i] != 1 {
				t.Fatalf("row %d delivered %d times", i, seen[i])
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		c, addrs := newCluster(t, 1, "features")
		failProduce(c, kerr.MessageTooLarge.Code, 1<<30)
		s := open(t, kafka.SinkConfig{Brokers: addrs, Topic: "features"})
		rec := batch(0, rows)
		defer rec.Release()
		err := s.Write(context.Background(), rec)
		if err == nil {
			t.Fatal("Write succeeded against a broker that refuses every message")
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, `sink/kafka: topic "features": writing 500 rows: 500 of 500 messages failed: [10] Message Size Too Large`) ||
			!strings.HasSuffix(msg, "(500)") || strings.Count(msg, "Message Size Too Large") != 1 {
			t.Fatalf("error %.300q (%d bytes)", msg, len(msg))
		}
		if !errors.Is(err, kafkago.MessageSizeTooLarge) {
			t.Errorf("errors.Is(err, MessageSizeTooLarge) is false")
		}
		var werrs kafkago.WriteErrors
		if !errors.As(err, &werrs) || werrs.Count() != rows {
			t.Errorf("errors.As WriteErrors: %v, %d errors", errors.As(err, &werrs), werrs.Count())
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close after a failed Write: %v", err)
		}
	})
}
