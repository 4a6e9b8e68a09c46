package volga_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	kafkasink "github.com/volga-go/volga/sink/kafka"
	"github.com/volga-go/volga/source/kafka"
)

// The scale-out tests run Group members in one process against kfake (an
// in-process Kafka cluster on a loopback port), with kafka-go as the
// client, as separate processes would run against a real cluster.

const groupQuery = `SELECT id, user_id, ts, amount,
  sum(amount) OVER w AS spend_2m,
  count(*) OVER w AS n_2m,
  max(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS max_4
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' MINUTE PRECEDING AND CURRENT ROW)`

var groupSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "user_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
}, nil)

var groupBase = time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)

const groupUsers = 24

func groupUser(i int) string { return fmt.Sprintf("u%02d", i%groupUsers) }

// groupEvent is event i: user u<i%24>, one second after event i-1, keyed
// by its user with enc (the producers' key encoding).
func groupEvent(i int, enc volga.KeyEncoder) (kafkago.Message, error) {
	key, err := enc([]any{groupUser(i)})
	if err != nil {
		return kafkago.Message{}, err
	}
	return kafkago.Message{
		Key: key,
		Value: fmt.Appendf(nil, `{"id":%d,"user_id":%q,"amount":%g,"ts":%q}`,
			i, groupUser(i), float64(i%7)+0.5, groupBase.Add(time.Duration(i)*time.Second).Format(time.RFC3339)),
	}, nil
}

func newGroupCluster(t *testing.T, partitions int32, topics ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produceGroup writes events [from, to) with kafka-go, placing them with
// balancer as the members' GroupConfig says.
func produceGroup(t *testing.T, addrs []string, topic string, from, to int, bal kafkago.Balancer, enc volga.KeyEncoder) {
	t.Helper()
	if err := produceGroupErr(addrs, topic, from, to, bal, enc); err != nil {
		t.Fatal(err)
	}
}

func produceGroupErr(addrs []string, topic string, from, to int, bal kafkago.Balancer, enc volga.KeyEncoder) error {
	w := &kafkago.Writer{Addr: kafkago.TCP(addrs...), Topic: topic, Balancer: bal, BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	var msgs []kafkago.Message
	for i := from; i < to; i++ {
		m, err := groupEvent(i, enc)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.WriteMessages(ctx, msgs...)
}

// referenceRun computes the features of the whole topic with one batch
// pipeline over every partition: the single-instance result.
func referenceRun(t *testing.T, addrs []string, topic, path string) []string {
	t.Helper()
	src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: topic, Schema: groupSchema, TimeField: "ts", StopAtEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := sink.CreateCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := volga.SQL(groupQuery, volga.WithSource("tx", src), volga.WithSink(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, rows := csvRows(t, path)
	return rows
}

// csvRows returns the header and the complete data lines of a CSV file
// (none when it does not exist yet).
func csvRows(t *testing.T, path string) (string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header string
	var rows []string
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return header, rows // a partial last line is still being written
		}
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSuffix(line, "\n")
		if header == "" {
			header = line
			continue
		}
		if line == header {
			t.Fatalf("%s: the header again, in the middle of the data", path)
		}
		rows = append(rows, line)
	}
}

// outputs returns the rows of every partition's file.
func outputs(t *testing.T, dir string, parts int) []string {
	t.Helper()
	var all []string
	for p := range parts {
		_, rows := csvRows(t, partFile(dir, p))
		all = append(all, rows...)
	}
	return all
}

func partFile(dir string, p int) string { return filepath.Join(dir, fmt.Sprintf("part-p%04d.csv", p)) }

type runningGroup struct {
	g      *volga.Group
	cancel context.CancelFunc
	done   chan error
}

func startGroup(t *testing.T, query string, cfg volga.GroupConfig, opts ...volga.Option) *runningGroup {
	t.Helper()
	g, err := volga.NewGroup(query, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rg := &runningGroup{g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { rg.done <- g.Run(ctx) }()
	t.Cleanup(func() {
		g.Stop()
		select {
		case <-rg.done:
		case <-time.After(20 * time.Second):
			t.Error("a group member did not stop")
		}
		cancel()
	})
	return rg
}

// rawKeyGroupConfig configures a member of consumer group id over topic
// tx, whose producers key messages by the raw user id placed by Hash,
// checkpointing into bucket every second, advertised as advertise.
func rawKeyGroupConfig(addrs []string, id string, bucket *blob.Bucket, advertise string) volga.GroupConfig {
	return volga.GroupConfig{
		Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: id, Schema: groupSchema, TimeField: "ts",
			MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond},
		CheckpointBucket:   bucket,
		CheckpointInterval: time.Second,
		Advertise:          advertise,
		Balancer:           &kafkago.Hash{},
		KeyEncoder:         volga.RawKey,
	}
}

func (rg *runningGroup) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-rg.done:
		rg.done <- err
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("a group member did not stop")
		return nil
	}
}

// waitFor polls cond until it holds.
func groupWaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ownership checks that the members own every partition once between
// them.
func ownership(members []*runningGroup, parts int) bool {
	seen := map[int]int{}
	for _, m := range members {
		for _, p := range m.g.Owned() {
			seen[p]++
		}
	}
	if len(seen) != parts {
		return false
	}
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return true
}

// Three members of one consumer group split a six-partition topic; one
// leaves mid-stream (while events arrive), gracefully (Stop: final checkpoints) or by a crash
// (its context cancelled: no final checkpoint, its partitions resume from
// their last periodic checkpoint). Its partitions move to the two others,
// which restore them from the checkpoints and resume from the recorded
// offsets. Once everything is consumed the union of the per-partition CSV
// files equals a single batch run over the topic: no row missing, none
// twice, the same feature values.
func TestGroupScaleOut(t *testing.T) {
	t.Run("stop", func(t *testing.T) { testGroupScaleOut(t, false, false) })
	t.Run("crash", func(t *testing.T) { testGroupScaleOut(t, true, false) })
	// The Kafka sink is at least once: after the crash the rows since the
	// last checkpoint are written again, with the same volga-epoch and
	// volga-seq headers; dropping those duplicates leaves the
	// single-instance output.
	t.Run("crash-kafka-sink", func(t *testing.T) { testGroupScaleOut(t, true, true) })
}

func testGroupScaleOut(t *testing.T, crash, kafkaSink bool) {
	const (
		parts  = 6
		total  = 2400
		phase1 = 1200
	)
	addrs := newGroupCluster(t, parts, "tx", "features")
	produceGroup(t, addrs, "tx", 0, phase1, &kafkago.Murmur2Balancer{}, volga.JSONKey)

	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	ckDir := filepath.Join(dir, "ckpt")
	for _, d := range []string{outDir, ckDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sinkFor := func(p int) (sink.Sink, error) { return sink.CreateCSV(partFile(outDir, p)) }
	published := func() int { return len(outputs(t, outDir, parts)) }
	var ko *kafkaOutput
	interval := 100 * time.Millisecond
	if kafkaSink {
		// Rows the crashed member wrote after its last checkpoint are
		// written again: a longer interval makes sure there are some.
		interval = time.Second
		ko = consumeFeatures(t, addrs)
		sinkFor = func(int) (sink.Sink, error) {
			return kafkasink.NewSink(kafkasink.SinkConfig{Brokers: addrs, Topic: "features", KeyColumns: []string{"user_id"}, IDColumns: []string{"id"}})
		}
		published = ko.distinct
	}
	var checkpoints sync.Map // partition-independent: counts completed checkpoints
	cfg := func(name string) volga.GroupConfig {
		return volga.GroupConfig{
			Source: kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "features", Schema: groupSchema, TimeField: "ts",
				BatchSize: 64, MaxWait: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond},
			CheckpointURL:      "file://" + filepath.ToSlash(ckDir),
			CheckpointInterval: interval,
			Sink:               sinkFor,
			Advertise:          name,
			RebalanceTimeout:   10 * time.Second,
		}
	}
	onCkpt := volga.WithOnCheckpoint(func(i volga.CheckpointInfo) { checkpoints.Store(i.Epoch, true) })
	if os.Getenv("GROUPDEBUG") != "" {
		onCkpt = volga.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	start := time.Now()
	a := startGroup(t, groupQuery, cfg("a"), onCkpt)
	b := startGroup(t, groupQuery, cfg("b"), onCkpt)
	c := startGroup(t, groupQuery, cfg("c"), onCkpt)
	all := []*runningGroup{a, b, c}

	groupWaitFor(t, "the three members to share the partitions", 20*time.Second, func() bool {
		if !ownership(all, parts) {
			return false
		}
		for _, m := range all {
			if len(m.g.Owned()) != 2 {
				return false
			}
		}
		return true
	})
	groupWaitFor(t, "some output to be published", 20*time.Second, func() bool { return published() >= 300 })
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "shared and publishing")
	// The rest of the stream arrives while b leaves: b's pipelines have
	// read (and, crashing, written unpublished output of) rows after their
	// last checkpoint.
	produced := make(chan error, 1)
	go func() {
		for i := phase1; i < total; i += 50 {
			if err := produceGroupErr(addrs, "tx", i, i+50, &kafkago.Murmur2Balancer{}, volga.JSONKey); err != nil {
				produced <- err
				return
			}
			time.Sleep(30 * time.Millisecond)
		}
		produced <- nil
	}()
	groupWaitFor(t, "rows of the second half to be published", 20*time.Second, func() bool { return published() >= phase1+100 })
	moved := b.g.Owned()
	if crash {
		b.cancel()
		if err := b.wait(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("the crashed member's Run returned %v, want context.Canceled", err)
		}
	} else {
		b.g.Stop()
		if err := b.wait(t); err != nil {
			t.Fatalf("the stopped member's Run: %v", err)
		}
	}
	if got := b.g.Owned(); len(got) != 0 {
		t.Fatalf("the member that left still owns %v", got)
	}
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "member b left")
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	rest := []*runningGroup{a, c}
	groupWaitFor(t, "the two remaining members to take the partitions over", 20*time.Second, func() bool { return ownership(rest, parts) })
	for _, p := range moved {
		if !slices.Contains(a.g.Owned(), p) && !slices.Contains(c.g.Owned(), p) {
			t.Fatalf("partition %d of the member that left has no new owner", p)
		}
	}
	groupWaitFor(t, "every row to be published", 25*time.Second, func() bool {
		n := published()
		if os.Getenv("GROUPDEBUG") != "" {
			var per []int
			for p := range parts {
				_, r := csvRows(t, partFile(outDir, p))
				per = append(per, len(r))
			}
			t.Logf("%d rows %v; a owns %v, c owns %v", n, per, a.g.Owned(), c.g.Owned())
		}
		return n >= total
	})
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "every row published")
	a.g.Stop()
	c.g.Stop()
	for _, m := range rest {
		if err := m.wait(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}

	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "a and c stopped")
	got := outputs(t, outDir, parts)
	want := referenceRun(t, addrs, "tx", filepath.Join(dir, "reference.csv"))
	if kafkaSink {
		ko.settle()
		var dups int
		got, dups = ko.dedup(t, a.g)
		if dups == 0 {
			t.Error("no row was written twice: the crash did not happen mid-epoch")
		}
		for i, r := range want {
			want[i] = normalizeRow(strings.Split(r, ","))
		}
	}
	if len(want) != total {
		t.Fatalf("the reference run has %d rows, want %d", len(want), total)
	}
	sort.Strings(got)
	sort.Strings(want)
	seen := map[string]int{}
	for _, r := range got {
		id, _, _ := strings.Cut(r, ",")
		seen[id]++
		if seen[id] == 2 {
			t.Errorf("row id %s written twice", id)
		}
	}
	if !slices.Equal(got, want) {
		n := 0
		for i := 0; i < len(got) && i < len(want) && n < 5; i++ {
			if got[i] != want[i] {
				t.Errorf("row %d: got %s, want %s", i, got[i], want[i])
				n++
			}
		}
		t.Fatalf("the union of the members' outputs (%d rows) differs from the single-instance run (%d rows)", len(got), len(want))
	}
	n := 0
	checkpoints.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Fatal("no checkpoint completed")
	}
	// Every file has its header once, first (csvRows checks the rest).
	for p := range parts {
		if kafkaSink {
			break
		}
		if h, _ := csvRows(t, partFile(outDir, p)); !strings.HasPrefix(h, "id,user_id,ts,amount,spend_2m") {
			t.Fatalf("partition %d: header %q", p, h)
		}
	}
}

// A member answers lookups of the keys of its partitions, and names the
// owner of the others (from the group's member metadata), in Go and over
// HTTP (421 Misdirected Request). Producers here key messages by the raw
// user id and place them with kafka-go's Hash balancer.
func TestGroupLookupRouting(t *testing.T) {
	const (
		parts = 4
		total = 480
	)
	addrs := newGroupCluster(t, parts, "tx")
	produceGroup(t, addrs, "tx", 0, total, &kafkago.Hash{}, volga.RawKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	a := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "lookups", bucket, "http://a.example:8080"))
	b := startGroup(t, groupQuery, rawKeyGroupConfig(addrs, "lookups", bucket, "http://b.example:8080"))
	groupWaitFor(t, "the two members to share the partitions", 20*time.Second, func() bool {
		return ownership([]*runningGroup{a, b}, parts) && len(a.g.Owned()) == 2
	})

	// The expected n_2m of every user as of the last event's time.
	at := groupBase.Add(time.Duration(total-1) * time.Second)
	want := map[string]int64{}
	for i := range total {
		ts := groupBase.Add(time.Duration(i) * time.Second)
		if !ts.Before(at.Add(-2*time.Minute)) && !ts.After(at) {
			want[groupUser(i)]++
		}
	}
	byOwner := map[*runningGroup][]string{}
	ctx := context.Background()
	for u := range groupUsers {
		user := groupUser(u)
		key := map[string]any{"user_id": user}
		p, err := a.g.PartitionOf(key)
		if err != nil {
			t.Fatal(err)
		}
		owner, other := a, b
		if slices.Contains(b.g.Owned(), p) {
			owner, other = b, a
		}
		byOwner[owner] = append(byOwner[owner], user)
		// The owner answers once it has ingested the partition.
		groupWaitFor(t, "user "+user+"'s rows to be ingested", 20*time.Second, func() bool {
			res, err := owner.g.Lookup(ctx, key, at, nil)
			if err != nil {
				return false
			}
			n, _ := res.Feature("n_2m")
			return n == want[user]
		})
		// LookupInto answers the same on the owner, and is routed the same.
		var row volga.FeatureRow
		if err := owner.g.LookupInto(ctx, &row, key, at, nil); err != nil {
			t.Fatalf("LookupInto of %s on its owner: %v", user, err)
		}
		if n, ok := row.Int64(row.Index("n_2m")); !ok || n != want[user] {
			t.Fatalf("LookupInto of %s: n_2m = %d (%v), want %d", user, n, ok, want[user])
		}
		var noeInto *volga.NotOwnerError
		if err := other.g.LookupInto(ctx, &row, key, at, nil); !errors.As(err, &noeInto) || noeInto.Partition != p {
			t.Fatalf("LookupInto of %s on the member that does not own partition %d: %v, want a NotOwnerError", user, p, err)
		}
		_, err = other.g.Lookup(ctx, key, at, nil)
		var noe *volga.NotOwnerError
		if !errors.As(err, &noe) {
			t.Fatalf("lookup of %s on the member that does not own partition %d: %v, want a NotOwnerError", user, p, err)
		}
		if noe.Partition != p || noe.Owner != advertised(owner, a, b) || noe.Member == "" {
			t.Fatalf("NotOwnerError %+v, want partition %d owned by %s", noe, p, advertised(owner, a, b))
		}
	}
	if len(byOwner[a]) == 0 || len(byOwner[b]) == 0 {
		t.Fatalf("keys by owner: a %v, b %v; want some on each", byOwner[a], byOwner[b])
	}

	// Over HTTP: the owner answers, the other member redirects.
	srvA := httptest.NewServer(a.g.Handler())
	defer srvA.Close()
	srvB := httptest.NewServer(b.g.Handler())
	defer srvB.Close()
	user := byOwner[a][0]
	body := fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at.Format(time.RFC3339))
	post := func(url string) (*http.Response, map[string]any) {
		t.Helper()
		resp, err := http.Post(url+"/v1/features", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp, m
	}
	resp, m := post(srvA.URL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("owner: status %d, body %v", resp.StatusCode, m)
	}
	if n := m["features"].(map[string]any)["n_2m"]; n != float64(want[user]) {
		t.Fatalf("owner: n_2m = %v, want %d", n, want[user])
	}
	resp, m = post(srvB.URL)
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("other member: status %d, body %v; want 421", resp.StatusCode, m)
	}
	if m["owner"] != "http://a.example:8080" || resp.Header.Get("X-Volga-Owner") != "http://a.example:8080" {
		t.Fatalf("other member: body %v, X-Volga-Owner %q; want the owner http://a.example:8080", m, resp.Header.Get("X-Volga-Owner"))
	}
}

func advertised(owner, a, b *runningGroup) string {
	if owner == a {
		return "http://a.example:8080"
	}
	return "http://b.example:8080"
}

// PartitionOf places a key where a kafka-go producer with the same
// balancer and key encoding put its messages.
func TestGroupPartitionOfMatchesProducer(t *testing.T) {
	const parts, total = 5, 200
	for _, tc := range []struct {
		name string
		bal  kafkago.Balancer
		enc  volga.KeyEncoder
	}{
		{"murmur2-json", &kafkago.Murmur2Balancer{}, volga.JSONKey},
		{"hash-raw", &kafkago.Hash{}, volga.RawKey},
		{"crc32-json", &kafkago.CRC32Balancer{}, volga.JSONKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := newGroupCluster(t, parts, "tx")
			produceGroup(t, addrs, "tx", 0, total, tc.bal, tc.enc)
			bucket := memblob.OpenBucket(nil)
			defer bucket.Close()
			g, err := volga.NewGroup(groupQuery, volga.GroupConfig{
				Source:           kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "g", Schema: groupSchema, TimeField: "ts"},
				CheckpointBucket: bucket,
				Balancer:         tc.bal,
				KeyEncoder:       tc.enc,
			})
			if err != nil {
				t.Fatal(err)
			}
			if g.Partitions() != parts || !slices.Equal(g.KeyColumns(), []string{"user_id"}) {
				t.Fatalf("Partitions %d, KeyColumns %v", g.Partitions(), g.KeyColumns())
			}
			src, err := kafka.NewSource(kafka.Config{Brokers: addrs, Topic: "tx", Schema: groupSchema, TimeField: "ts", StopAtEnd: true})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			n := 0
			used := map[int]bool{}
			for {
				rec, err := src.Read(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				p := src.PartitionOf(rec)
				for _, row := range sink.Rows(rec) {
					key := map[string]any{"USER_ID": row[1]} // key columns match case-insensitively
					got, err := g.PartitionOf(key)
					if err != nil {
						t.Fatal(err)
					}
					if got != p {
						t.Fatalf("PartitionOf(%v) = %d; the producer put it in %d", key, got, p)
					}
					used[p] = true
					n++
				}
				rec.Release()
			}
			if n != total || len(used) < 2 {
				t.Fatalf("checked %d rows over partitions %v", n, used)
			}
		})
	}
}

func TestGroupConfigErrors(t *testing.T) {
	addrs := newGroupCluster(t, 2, "tx")
	produceGroup(t, addrs, "tx", 0, 10, &kafkago.Murmur2Balancer{}, volga.JSONKey)
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	good := func() volga.GroupConfig {
		return volga.GroupConfig{
			Source:           kafka.Config{Brokers: addrs, Topic: "tx", GroupID: "g", Schema: groupSchema, TimeField: "ts"},
			CheckpointBucket: bucket,
		}
	}
	for _, tc := range []struct {
		name  string
		query string
		cfg   func(*volga.GroupConfig)
		opts  []volga.Option
		want  string
	}{
		{"no group", groupQuery, func(c *volga.GroupConfig) { c.Source.GroupID = "" }, nil, "GroupID is empty"},
		{"partitions", groupQuery, func(c *volga.GroupConfig) { c.Source.Partitions = []int{0} }, nil, "Partitions must be empty"},
		{"bounded", groupQuery, func(c *volga.GroupConfig) { c.Source.StopAtEnd = true }, nil, "StopAtEnd"},
		{"no bucket", groupQuery, func(c *volga.GroupConfig) { c.CheckpointBucket = nil }, nil, "CheckpointURL and CheckpointBucket"},
		{"two buckets", groupQuery, func(c *volga.GroupConfig) { c.CheckpointURL = "mem://" }, nil, "CheckpointURL and CheckpointBucket"},
		{"with sink", groupQuery, nil, []volga.Option{volga.WithSink(sink.NewCollector())}, "not WithSource or WithSink"},
		{"with checkpoints", groupQuery, nil, []volga.Option{volga.WithCheckpoints("mem://", time.Second)}, "not WithCheckpoints"},
		{"with late sink", groupQuery, nil, []volga.Option{volga.WithLateSink(sink.NewCollector())}, "GroupConfig.LateSink"},
		{"two keys", `SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS a,
			count(*) OVER (PARTITION BY id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS b FROM tx`, nil, nil, "PARTITION BY the same columns"},
		{"bad query", `SELECT nope FROM tx`, nil, nil, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, err := volga.NewGroup(tc.query, cfg, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// A group runs once; Stop before Run makes Run return at once.
	g, err := volga.NewGroup(groupQuery, good())
	if err != nil {
		t.Fatal(err)
	}
	g.Stop()
	if err := g.Run(context.Background()); err != nil {
		t.Fatalf("Run after Stop: %v", err)
	}
	if err := g.Run(context.Background()); err == nil {
		t.Fatal("a second Run did not fail")
	}
}

func TestKeyEncoders(t *testing.T) {
	for _, tc := range []struct {
		enc  volga.KeyEncoder
		key  []any
		want string
	}{
		{volga.JSONKey, []any{"alice"}, `"alice"`},
		{volga.JSONKey, []any{int64(42)}, `42`},
		{volga.JSONKey, []any{"alice", int64(42)}, `["alice",42]`},
		{volga.JSONKey, []any{"AT&T <b>\u2028"}, "\"AT&T <b>\u2028\""},
		{volga.JSONKey, []any{time.Date(2024, 1, 3, 11, 0, 0, 500_000_000, time.FixedZone("", 3600)), nil, 1e6, uint64(1) << 63}, `["2024-01-03T10:00:00.5Z",null,1e+06,9223372036854775808]`},
		{volga.RawKey, []any{"alice"}, `alice`},
		{volga.RawKey, []any{int64(-42)}, `-42`},
		{volga.RawKey, []any{true}, `true`},
	} {
		got, err := tc.enc(tc.key)
		if err != nil || string(got) != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	if _, err := volga.RawKey([]any{"a", "b"}); err == nil {
		t.Error("RawKey of two columns")
	}
	if _, err := volga.RawKey([]any{nil}); err == nil {
		t.Error("RawKey of NULL")
	}
}

// kafkaOutput collects the messages of the output topic "features".
type kafkaOutput struct {
	mu   sync.Mutex
	recs []*kgo.Record
	ids  map[string]bool
}

func consumeFeatures(t *testing.T, addrs []string) *kafkaOutput {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("features"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ko := &kafkaOutput{ids: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				ko.mu.Lock()
				ko.recs = append(ko.recs, r)
				ko.ids[header(r, kafkasink.HeaderID)] = true
				ko.mu.Unlock()
			})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return ko
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// distinct is the number of distinct rows (volga-id) received.
func (ko *kafkaOutput) distinct() int {
	ko.mu.Lock()
	defer ko.mu.Unlock()
	return len(ko.ids)
}

// dedup drops the messages written again after a recovery: those with the
// (volga-epoch, volga-seq) of an earlier one from the same partition's
// pipeline (epochs count per partition; the row's key gives its
// partition). Duplicates must be the same row. It returns the rows
// normalized for comparison.
func (ko *kafkaOutput) dedup(t *testing.T, g *volga.Group) ([]string, int) {
	t.Helper()
	ko.mu.Lock()
	defer ko.mu.Unlock()
	cols := []string{"id", "user_id", "ts", "amount", "spend_2m", "n_2m", "max_4"}
	seen := map[string]string{}
	var out []string
	for _, r := range ko.recs {
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(string(r.Value)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		p, err := g.PartitionOf(map[string]any{"user_id": v["user_id"]})
		if err != nil {
			t.Fatal(err)
		}
		fields := make([]string, len(cols))
		for i, c := range cols {
			fields[i] = fmt.Sprint(v[c])
		}
		row := normalizeRow(fields)
		id := fmt.Sprintf("p%d/e%s/s%s", p, header(r, kafkasink.HeaderEpoch), header(r, kafkasink.HeaderSeq))
		if prev, ok := seen[id]; ok {
			if prev != row {
				t.Fatalf("%s: a duplicate differs: %s, first %s", id, row, prev)
			}
			continue
		}
		seen[id] = row
		out = append(out, row)
	}
	t.Logf("%d messages, %d after dropping duplicates by partition, volga-epoch and volga-seq", len(ko.recs), len(out))
	return out, len(ko.recs) - len(out)
}

// settle waits until no message has arrived for 300ms.
func (ko *kafkaOutput) settle() {
	n := -1
	for {
		ko.mu.Lock()
		m := len(ko.recs)
		ko.mu.Unlock()
		if m == n {
			return
		}
		n = m
		time.Sleep(300 * time.Millisecond)
	}
}

// normalizeRow renders numbers and times canonically, so that CSV text
// and JSON values compare.
func normalizeRow(fields []string) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f
		if x, err := strconv.ParseFloat(f, 64); err == nil {
			out[i] = strconv.FormatFloat(x, 'g', -1, 64)
		} else if ts, err := time.Parse(time.RFC3339Nano, f); err == nil {
			out[i] = ts.UTC().Format(time.RFC3339Nano)
		}
	}
	return strings.Join(out, ",")
}
