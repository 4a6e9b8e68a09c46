package volga_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// A member of a consumer group computing features of a two-partition
// topic. Every process of the group runs this same code; here the member
// is alone, so the group assigns it both partitions. The cluster is kfake,
// an in-process Kafka on a loopback port.
func ExampleNewGroup() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tx"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx := context.Background()

	// Producers key messages by user_id, the PARTITION BY column: as JSON
	// (volga.JSONKey), placed by the Murmur2 balancer (the group's
	// defaults).
	w := &kafkago.Writer{Addr: kafkago.TCP(brokers...), Topic: "tx", Balancer: &kafkago.Murmur2Balancer{}, BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	for i, user := range []string{"alice", "bob", "alice", "carol", "bob", "alice"} {
		key, _ := volga.JSONKey([]any{user})
		value := fmt.Sprintf(`{"user_id":%q,"amount":%d,"ts":"2024-01-03T10:0%d:00Z"}`, user, 10*(i+1), i)
		if err := w.WriteMessages(ctx, kafkago.Message{Key: key, Value: []byte(value)}); err != nil {
			panic(err)
		}
	}
	w.Close()

	dir, _ := os.MkdirTemp("", "volga-group-example")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "ckpt"), 0o755)
	g, err := volga.NewGroup(`
		SELECT user_id, ts, sum(amount) OVER w AS spend_5m
		FROM tx
		WINDOW w AS (PARTITION BY user_id ORDER BY ts
		             RANGE BETWEEN INTERVAL '5' MINUTE PRECEDING AND CURRENT ROW)`,
		volga.GroupConfig{
			Source:             kafka.Config{Brokers: brokers, Topic: "tx", GroupID: "features", TimeField: "ts", HeartbeatInterval: 100 * time.Millisecond},
			CheckpointURL:      "file://" + filepath.ToSlash(filepath.Join(dir, "ckpt")),
			CheckpointInterval: 100 * time.Millisecond,
			Sink: func(p int) (sink.Sink, error) {
				return sink.CreateCSV(filepath.Join(dir, fmt.Sprintf("part-p%04d.csv", p)))
			},
			Advertise: "http://10.0.0.7:8080",
		})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()

	// Wait for the six rows to be published (each partition's file gets
	// the rows of a checkpoint once it is complete).
	var rows []string
	for deadline := time.Now().Add(20 * time.Second); len(rows) < 6 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rows = nil
		files, _ := filepath.Glob(filepath.Join(dir, "part-*.csv"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			rows = append(rows, lines[1:]...) // after the header
		}
	}
	slices.Sort(rows)
	fmt.Println(strings.Join(rows, "\n"))

	// A lookup of a key whose partition this member owns.
	res, err := g.Lookup(ctx, map[string]any{"user_id": "alice"}, time.Date(2024, 1, 3, 10, 6, 0, 0, time.UTC), nil)
	if err != nil {
		panic(err)
	}
	spend, _ := res.Feature("spend_5m")
	fmt.Println("alice's spend over 5 minutes at 10:06:", spend, "owned partitions:", g.Owned())

	g.Stop() // final checkpoints, then the member leaves the group
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// alice,2024-01-03T10:00:00Z,10
	// alice,2024-01-03T10:02:00Z,40
	// alice,2024-01-03T10:05:00Z,100
	// bob,2024-01-03T10:01:00Z,20
	// bob,2024-01-03T10:04:00Z,70
	// carol,2024-01-03T10:03:00Z,40
	// alice's spend over 5 minutes at 10:06: 90 owned partitions: [0 1]
}
