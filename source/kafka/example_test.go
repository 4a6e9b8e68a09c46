package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

// Read a topic to its end. The cluster here is kfake, an in-process Kafka
// speaking the real wire protocol; a deployment passes its brokers.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	w := &kafkago.Writer{Addr: kafkago.TCP(brokers...), Topic: "payments", BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	err = w.WriteMessages(context.Background(),
		kafkago.Message{Value: []byte(`{"user":"alice","amount":12.5,"ts":"2024-01-03T10:00:00Z"}`)},
		kafkago.Message{Value: []byte(`{"user":"bob","amount":3,"ts":"2024-01-03T10:00:05Z"}`)},
		kafkago.Message{Value: []byte(`{"user":"alice","amount":"lots","ts":"2024-01-03T10:00:07Z"}`)},
	)
	w.Close()
	if err != nil {
		panic(err)
	}

	src, err := kafka.NewSource(kafka.Config{
		Brokers: brokers,
		Topic:   "payments",
		Schema: arrow.NewSchema([]arrow.Field{
			{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		}, nil),
		TimeField: "ts",
		StopAtEnd: true, // stop at the end of what the topic holds now
		DeadLetter: func(d source.DeadLetter) {
			fmt.Printf("dead letter %s offset %d: %s\n", d.Source, d.Offset, d.Reason)
		},
	})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	for {
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("partition", src.PartitionID(rec), sink.Rows(rec))
		rec.Release()
	}
	fmt.Println("dead letters:", src.DeadLetters())
	// Output:
	// dead letter payments/0 offset 2: field "amount": cannot decode "lots" as float64
	// partition 0 [[alice 12.5 2024-01-03 10:00:00 +0000 UTC] [bob 3 2024-01-03 10:00:05 +0000 UTC]]
	// dead letters: 1
}
