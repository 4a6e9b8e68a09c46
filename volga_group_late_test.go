package volga_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// TestGroupLateSink: GroupConfig.LateSink gives each partition a sink of
// its own for its late rows: rows produced far behind the others land,
// each once, in the late file of the partition their key maps to, and
// only the on-time rows in the output files.
func TestGroupLateSink(t *testing.T) {
	const (
		parts  = 3
		onTime = 120
	)
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, onTime, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	dir := t.TempDir()
	cfg := volga.GroupConfig{
		Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "late", Schema: groupSchema, TimeField: "ts",
			MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond},
		CheckpointURL:      "file://" + filepath.ToSlash(filepath.Join(dir, "ckpt")),
		CheckpointInterval: 200 * time.Millisecond,
		Sink: func(p int) (sink.Sink, error) {
			return sink.CreateCSV(filepath.Join(dir, fmt.Sprintf("out-%d.csv", p)))
		},
		LateSink: func(p int) (sink.Sink, error) {
			return sink.CreateCSV(filepath.Join(dir, fmt.Sprintf("late-%d.csv", p)))
		},
	}
	if err := os.MkdirAll(filepath.Join(dir, "ckpt"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := startGroup(t, groupQuery, cfg)
	ids := func(pattern string) map[string]int {
		out := map[string]int{}
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			_, rows := csvRows(t, f)
			for _, r := range rows {
				id, _, _ := strings.Cut(r, ",")
				out[id]++
			}
		}
		return out
	}
	groupWaitFor(t, "the on-time rows to be published", 20*time.Second, func() bool {
		return len(ids("out-*.csv")) == onTime
	})
	// Late: events 5, 17, 30 and 41 again under new ids, at their old
	// times, once every partition has been read past them.
	lateIDs := map[int]int{1005: 5, 1017: 17, 1030: 30, 1041: 41}
	w := &kafkago.Writer{Addr: kafkago.TCP(addrs...), Topic: "tx", Balancer: &kafkago.Murmur2Balancer{},
		BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	var msgs []kafkago.Message
	for _, id := range slices.Sorted(maps.Keys(lateIDs)) {
		i := lateIDs[id]
		key, _ := volga.JSONKey([]any{groupUser(i)})
		msgs = append(msgs, kafkago.Message{Key: key, Value: fmt.Appendf(nil, `{"id":%d,"user_id":%q,"amount":1,"ts":%q}`,
			id, groupUser(i), groupBase.Add(time.Duration(i)*time.Second).Format(time.RFC3339))})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	groupWaitFor(t, "the late rows to be published", 20*time.Second, func() bool {
		return len(ids("late-*.csv")) == len(lateIDs)
	})
	m.g.Stop()
	if err := m.wait(t); err != nil {
		t.Fatal(err)
	}
	out, late := ids("out-*.csv"), ids("late-*.csv")
	for id, n := range out {
		if n != 1 {
			t.Errorf("output row %s written %d times", id, n)
		}
	}
	if len(out) != onTime {
		t.Errorf("%d output rows, want the %d on time", len(out), onTime)
	}
	for id, i := range lateIDs {
		if late[fmt.Sprint(id)] != 1 {
			t.Errorf("late row %d written %d times, want once", id, late[fmt.Sprint(id)])
		}
		if out[fmt.Sprint(id)] != 0 {
			t.Errorf("late row %d is in the output", id)
		}
		// In the late file of its key's partition.
		p, err := m.g.PartitionOf(map[string]any{"user_id": groupUser(i)})
		if err != nil {
			t.Fatal(err)
		}
		_, rows := csvRows(t, filepath.Join(dir, fmt.Sprintf("late-%d.csv", p)))
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, fmt.Sprintf("%d,", id)) }) {
			t.Errorf("late row %d (user %s) is not in late-%d.csv", id, groupUser(i), p)
		}
	}
}
