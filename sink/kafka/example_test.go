package kafka_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/volga-go/volga/sink/kafka"
)

// Write features keyed by user. The cluster here is kfake, an in-process
// Kafka speaking the real wire protocol; a deployment passes its brokers.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "features"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "spend_1h", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"alice", "bob"}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{15.5, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()

	s, err := kafka.NewSink(kafka.SinkConfig{Brokers: brokers, Topic: "features", KeyColumns: []string{"user"}})
	if err != nil {
		panic(err)
	}
	if err := s.Write(context.Background(), rec); err != nil {
		panic(err)
	}
	s.Close()

	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: "features", MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for range 2 {
		m, err := r.ReadMessage(context.Background())
		if err != nil {
			panic(err)
		}
		fmt.Printf("key %s value %s headers %s=%s %s=%s\n", m.Key, m.Value,
			m.Headers[0].Key, m.Headers[0].Value, m.Headers[1].Key, m.Headers[1].Value)
	}
	// Output:
	// key "alice" value {"user":"alice","spend_1h":15.5} headers volga-epoch=0 volga-seq=0
	// key "bob" value {"user":"bob","spend_1h":3} headers volga-epoch=0 volga-seq=1
}
