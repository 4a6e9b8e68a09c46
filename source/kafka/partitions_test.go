package kafka_test

import (
	"strings"
	"testing"

	"github.com/volga-go/volga/source/kafka"
)

// Config.Partitions reads only the partitions named, and its positions
// cover only them.
func TestExplicitPartitions(t *testing.T) {
	addrs := newCluster(t, 4, "events")
	produce(t, addrs, events("events", 0, 200, 4)...)
	cfg := kafka.Config{Brokers: addrs, Topic: "events", TimeField: "ts", BatchSize: 16, StopAtEnd: true, Partitions: []int{1}}
	src := open(t, cfg) // schema inferred from partition 1 alone
	if got := src.Partitions(); got != 4 {
		t.Fatalf("Partitions = %d, want the topic's 4", got)
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
