package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRunKafka: `volga run` reads a topic through the real Kafka protocol
// (an in-process kfake cluster on loopback) and writes features to a file
// and to another topic; a malformed message is reported as a dead letter
// and the run carries on.
func TestRunKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "tx", "features"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	want := map[string]float64{} // user -> spend over the last hour at the user's last event
	for i := 0; i < 40; i++ {
		user := fmt.Sprintf("u%d", i%2)
		ts := base.Add(time.Duration(i) * 10 * time.Minute)
		amount := float64(i)
		recs = append(recs, &kgo.Record{Topic: "tx", Partition: int32(i % 2),
			Value: fmt.Appendf(nil, `{"user_id":%q,"ts":%q,"amount":%g}`, user, ts.Format(time.RFC3339), amount)})
		if i >= 38 { // the last hour of each user: its events at i-6 (60 min before) ... i
			var s float64
			for j := i; j >= 0 && j >= i-6; j -= 2 {
				s += float64(j)
			}
			want[user] = s
		}
	}
	recs = append(recs, &kgo.Record{Topic: "tx", Partition: 0, Value: []byte(`{"user_id": "u0", "ts": 12`)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := files(t, "q.sql", `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS spend_1h FROM tx`)
	src := fmt.Sprintf("tx=kafka://%s/tx?time_field=ts&format=json", addr)
	out := filepath.Join(dir, "out.csv")
	code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", src, "--sink", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "dead letter") {
		t.Errorf("the malformed message was not reported: %q", stderr)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, out)), "\n")
	if len(lines) != 41 {
		t.Fatalf("%d output lines, want a header and 40 rows:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	last := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if f[1] > last[f[0]+"ts"] {
			last[f[0]+"ts"], last[f[0]] = f[1], f[2]
		}
	}
	for user, w := range want {
		if last[user] != fmt.Sprint(w) {
			t.Errorf("%s: spend_1h at the last event = %s, want %g", user, last[user], w)
		}
	}

	// The same features to a topic, keyed by user.
	sinkURL := fmt.Sprintf("kafka://%s/features?key=user_id", addr)
	if code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", src, "--sink", sinkURL); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := 0
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("features"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for got < 40 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d feature messages before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if !strings.Contains(string(r.Value), `"spend_1h"`) || !strings.HasPrefix(string(r.Key), `"u`) {
				t.Errorf("feature message %s (key %s)", r.Value, r.Key)
			}
		})
	}
}

func TestKafkaURLErrors(t *testing.T) {
	for _, u := range []string{
		"kafka://",
		"kafka://host:9092",
		"kafka://host:9092/a/b",
		"kafka://host:9092/t?format=avro",
		"kafka://host:9092/t?format=xml",
		"kafka://host:9092/t?format=avro&avro_schema=/nonexistent.avsc",
		"kafka://host:9092/t?format=avro&schema_registry=ftp%3A%2F%2Fx",
		"kafka://host:9092/t?batch_size=0",
		"kafka://host:9092/t?color=red",
	} {
		if _, err := openSource(u, true, nil, nil); err == nil {
			t.Errorf("openSource(%q): no error", u)
		}
	}
	if _, err := openOutput("kafka://host:9092/t?partition=3"); err == nil {
		t.Error("openOutput with an unknown parameter: no error")
	}
}
