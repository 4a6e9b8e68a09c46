package volga_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	kafkasink "github.com/volga-go/volga/sink/kafka"
	"github.com/volga-go/volga/source/kafka"
)

// JSONKey encodes a key as sink/kafka writes message keys, so that a
// Group over a topic written by sink/kafka (or any producer writing plain
// JSON) finds every key's partition: strings with &, < or > and U+2028,
// which encoding/json escapes (\u0026...) and sink/kafka does not, and
// timestamp keys however a lookup writes their time (an RFC 3339 offset,
// epoch milliseconds), which sink/kafka writes in UTC. A key placed in
// another partition than its rows' is answered by a pipeline that never
// saw them: the empty-frame features, silently.
func TestGroupPartitionOfMatchesKafkaSink(t *testing.T) {
	const parts = 8
	addrs := newGroupCluster(t, parts, "tx")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	users := []string{"plain", "AT&T", "<b>", "x>y", "line\u2028sep", "para\u2029", "é", "q\"uote", "a&b<c>d"}
	days := []time.Time{
		time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 4, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 4, 12, 30, 0, 500_000_000, time.UTC),
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, u := range users {
		for _, d := range days {
			b.Field(0).(*array.StringBuilder).Append(u)
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(d.UnixMilli()))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(d.UnixMilli()))
			b.Field(3).(*array.Float64Builder).Append(1)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	s, err := kafkasink.NewSink(kafkasink.SinkConfig{Brokers: addrs, Topic: "tx", KeyColumns: []string{"user_id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	g, err := volga.NewGroup(`SELECT user_id, day, ts, count(*) OVER w AS n FROM tx
		WINDOW w AS (PARTITION BY user_id, day ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.GroupConfig{
			Source:           kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "g", Schema: schema, TimeField: "ts"},
			CheckpointBucket: bucket,
		})
	if err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("tx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	east := time.FixedZone("UTC+05:30", 5*3600+1800)
	west := time.FixedZone("UTC-08:00", -8*3600)
	seen, used := 0, map[int32]bool{}
	for seen < len(users)*len(days) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d messages: %v", seen, len(users)*len(days), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			used[r.Partition] = true
			var row struct {
				User string    `json:"user_id"`
				Day  time.Time `json:"day"`
			}
			if err := json.Unmarshal(r.Value, &row); err != nil {
				t.Fatalf("message %s: %v", r.Value, err)
			}
			for _, day := range []any{
				row.Day,
				row.Day.In(east),
				row.Day.In(west).Format(time.RFC3339Nano),
				row.Day.In(east).Format(time.RFC3339Nano),
				row.Day.UnixMilli(),
				float64(row.Day.UnixMilli()),
			} {
				key := map[string]any{"user_id": row.User, "day": day}
				got, err := g.PartitionOf(key)
				if err != nil {
					t.Fatalf("PartitionOf(%v): %v", key, err)
				}
				if got != int(r.Partition) {
					t.Errorf("PartitionOf(%q, %v) = %d; sink/kafka put the key %s in partition %d", row.User, day, got, r.Key, r.Partition)
				}
			}
		})
	}
	if len(used) < 3 {
		t.Fatalf("the keys went to partitions %v only", used)
	}
}
