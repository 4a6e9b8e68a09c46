package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/volga-go/volga/internal/kafkatest"
)

// TestRunKafkaTLSAndSASL: `volga run` reads from and writes to a cluster
// that takes only TLS connections authenticated with SASL (kfake, over
// loopback), with SCRAM-SHA-256 and SCRAM-SHA-512 credentials from the
// URL and PLAIN with the password from VOLGA_KAFKA_PASSWORD; a wrong
// password or a missing tls fails the run with an error that does not
// show the password.
func TestRunKafkaTLSAndSASL(t *testing.T) {
	dir := files(t, "q.sql", `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS spend_1h FROM tx`)
	k := kafkatest.NewSecureKafka(t, 2, "tx", "features")
	addr, caPath, user, pass := k.Addrs[0], k.CAFile, k.User, k.Password
	clientOpts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(k.TLS),
		kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}
	cl, err := kgo.NewClient(append(clientOpts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "tx", Partition: int32(i % 2),
			Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%q,"amount":%d}`, i%3, base.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out.csv")
	for _, mech := range []string{"scram-sha-256", "scram-sha-512"} {
		src := fmt.Sprintf("tx=kafka://%s:%s@%s/tx?time_field=ts&tls_ca=%s&sasl=%s", user, pass, addr, caPath, mech)
		code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", src, "--sink", out)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mech, code, stderr)
		}
		if lines := strings.Split(strings.TrimSpace(readFile(t, out)), "\n"); len(lines) != 31 {
			t.Fatalf("%s: %d output lines, want a header and 30 rows", mech, len(lines))
		}
	}

	// PLAIN, the password from the environment, to a topic.
	t.Setenv(kafkaPasswordEnv, pass)
	src := fmt.Sprintf("tx=kafka://%s@%s/tx?time_field=ts&tls_ca=%s&sasl=plain", user, addr, caPath)
	sinkURL := fmt.Sprintf("kafka://%s@%s/features?key=user_id&tls_ca=%s&sasl=plain&client_id=volga-test", user, addr, caPath)
	if code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", src, "--sink", sinkURL); code != 0 {
		t.Fatalf("plain to a topic: exit %d: %s", code, stderr)
	}
	rd, err := kgo.NewClient(append(clientOpts, kgo.ConsumeTopics("features"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := 0
	for got < 30 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d feature messages before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if !strings.Contains(string(r.Value), `"spend_1h"`) {
				t.Errorf("feature message %s", r.Value)
			}
		})
	}

	// A wrong password, and no TLS: the run fails, quickly, saying why,
	// without the password.
	for _, bad := range []string{
		fmt.Sprintf("tx=kafka://%s:wrong-pw@%s/tx?time_field=ts&tls_ca=%s&sasl=scram-sha-256", user, addr, caPath),
		fmt.Sprintf("tx=kafka://%s:%s@%s/tx?time_field=ts&sasl=scram-sha-256", user, pass, addr),
	} {
		bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
		code, _, stderr := cli(t, bctx, dir, "", "run", "--sql", "q.sql", "--source", bad, "--sink", out)
		bcancel()
		if code == 0 {
			t.Fatalf("%s: the run succeeded", bad)
		}
		if strings.Contains(stderr, "wrong-pw") || strings.Contains(stderr, pass) {
			t.Fatalf("%s: the error shows the password: %s", bad, stderr)
		}
	}
}

// TestKafkaURLConnectionErrors: connection parameters that cannot work
// are command-line errors that say what is missing, and never show the
// password.
func TestKafkaURLConnectionErrors(t *testing.T) {
	t.Setenv(kafkaPasswordEnv, "")
	os.Unsetenv(kafkaPasswordEnv)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"kafka://h:9092/t?sasl=plain", "needs a user"},
		{"kafka://u@h:9092/t?sasl=plain", "needs a password"},
		{"kafka://u:topsecret@h:9092/t", "needs sasl="},
		{"kafka://u:topsecret@h:9092/t?sasl=gssapi", "want plain, scram-sha-256 or scram-sha-512"},
		{"kafka://h:9092/t?tls=maybe", "want true or false"},
		{"kafka://h:9092/t?tls_cert=a.pem", "tls_cert and tls_key go together"},
		{"kafka://h:9092/t?tls_ca=" + filepath.Join(dir, "none.pem"), "no such file"},
		{"kafka://h:9092/t?tls_ca=" + notPEM, "no PEM certificate"},
		{"kafka://u:topsecret@h:9092/t?sasl=plain&color=red", "unknown parameter"},
		{"kafka://u:topsecret@h:9092/t?sasl=plain&batch_size=0", "positive number"},
	} {
		_, err := openSource(c.url, true, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("openSource(%q): %v, want an error saying %q", c.url, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("openSource(%q): the error shows the password: %v", c.url, err)
		}
	}
	if _, err := openOutput("kafka://u:topsecret@h:9092/t?sasl=plain&partition=3"); err == nil || strings.Contains(err.Error(), "topsecret") || !strings.Contains(err.Error(), "unknown sink parameter") {
		t.Errorf("openOutput with an unknown parameter: %v", err)
	}
	if d, err := kafkaDialer("x", nil, map[string][]string{"batch_size": {"3"}}); d != nil || err != nil {
		t.Errorf("no connection parameters: dialer %v, error %v", d, err)
	}
}
