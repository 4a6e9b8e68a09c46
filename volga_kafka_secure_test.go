package volga_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/kafkatest"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source/kafka"
)

// TestGroupOverTLSAndSASL: a Group member reads a cluster that takes only
// TLS connections authenticated with SCRAM-SHA-512 (kfake over loopback),
// with the source's Dialer serving the consumer group, the partitions'
// readers, the membership checks before each checkpoint and the lookup
// router alike, and writes what one batch run over the topic writes.
func TestGroupOverTLSAndSASL(t *testing.T) {
	const parts, total = 3, 600
	k := kafkatest.NewSecureKafka(t, parts, "tx")
	mech, err := scram.Mechanism(scram.SHA512, k.User, k.Password)
	if err != nil {
		t.Fatal(err)
	}
	dialer := &kafkago.Dialer{TLS: k.TLS, SASLMechanism: mech, Timeout: 10 * time.Second}

	w := &kafkago.Writer{Addr: kafkago.TCP(k.Addrs...), Topic: "tx", Balancer: &kafkago.Murmur2Balancer{}, BatchTimeout: time.Millisecond,
		RequiredAcks: kafkago.RequireAll, Transport: &kafkago.Transport{TLS: k.TLS, SASL: mech}}
	var msgs []kafkago.Message
	for i := range total {
		m, err := groupEvent(i, volga.JSONKey)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	// The single-instance result, read over the same secured connections.
	src, err := kafka.NewSource(kafka.Config{Brokers: k.Addrs, Topic: "tx", Schema: groupSchema, TimeField: "ts", StopAtEnd: true, Dialer: dialer})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	refPath := filepath.Join(dir, "ref.csv")
	out, err := sink.CreateCSV(refPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := volga.SQL(groupQuery, volga.WithSource("tx", src), volga.WithSink(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	src.Close()
	_, want := csvRows(t, refPath)
	if len(want) != total {
		t.Fatalf("the batch run wrote %d rows, want %d", len(want), total)
	}

	outDir := filepath.Join(dir, "out")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ckDir := t.TempDir()
	startGroup(t, groupQuery, volga.GroupConfig{
		Source: kafka.Config{Brokers: k.Addrs, Topic: "tx", GroupID: "secure", Schema: groupSchema, TimeField: "ts",
			MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, Dialer: dialer},
		CheckpointURL:      "file://" + filepath.ToSlash(ckDir),
		CheckpointInterval: 100 * time.Millisecond,
		Sink:               func(p int) (sink.Sink, error) { return sink.CreateCSV(partFile(outDir, p)) },
		Advertise:          "a",
	})
	groupWaitFor(t, "the member to write every row", 30*time.Second, func() bool { return len(outputs(t, outDir, parts)) >= total })
	got := outputs(t, outDir, parts)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the member wrote %d rows unlike the batch run's %d", len(got), len(want))
	}
}
