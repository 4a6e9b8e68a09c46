package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/volga-go/volga"
)

const groupSQL = `SELECT id, user_id, ts, amount,
  sum(amount) OVER w AS spend_2m,
  count(*) OVER w AS n_2m
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' MINUTE PRECEDING AND CURRENT ROW)`

const groupCLIUsers = 12

var groupCLIBase = time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)

// produceCLI writes events [from, to) keyed by user as JSON (the Murmur2
// balancer and JSON keys: volga group's defaults).
func produceCLI(t *testing.T, addr string, from, to int) {
	t.Helper()
	produceCLIAt(t, addr, from, to, 0)
}

// produceCLIAt is produceCLI with ids shifted by idBase (events at the
// times of [from, to) again, under other ids).
func produceCLIAt(t *testing.T, addr string, from, to, idBase int) {
	t.Helper()
	w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: "tx", Balancer: &kafkago.Murmur2Balancer{},
		BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	var msgs []kafkago.Message
	for i := from; i < to; i++ {
		user := fmt.Sprintf("u%02d", i%groupCLIUsers)
		key, err := volga.JSONKey([]any{user})
		if err != nil {
			t.Fatal(err)
		}
		ts := groupCLIBase.Add(time.Duration(i) * time.Second)
		msgs = append(msgs, kafkago.Message{Key: key, Value: fmt.Appendf(nil,
			`{"id":%d,"user_id":%q,"amount":%g,"ts":%q}`, idBase+i, user, float64(i%17)+0.25, ts.Format(time.RFC3339))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// member is a volga group process run in-process.
type member struct {
	url    string
	stderr *lockedBuffer
	stop   func() int
}

func startMember(t *testing.T, args ...string) *member {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{stderr: &lockedBuffer{}}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: m.stderr}
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- groupMain(ctx, e, append([]string{"--listen", "127.0.0.1:0"}, args...), func(addr string) { addrc <- addr })
	}()
	select {
	case addr := <-addrc:
		m.url = "http://" + addr
	case code := <-done:
		cancel()
		t.Fatalf("volga group exited with %d before joining: %s", code, m.stderr)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("volga group did not start")
	}
	var once sync.Once
	var code int
	m.stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Error("volga group did not stop")
				code = -1
			}
		})
		return code
	}
	t.Cleanup(func() { m.stop() })
	return m
}

var runningPartition = regexp.MustCompile(`(?m)^volga_pipeline_running\{pipeline="volga-p(\d{4})"\} 1$`)

// owned returns the partitions whose pipelines the member's /metrics
// shows running.
func (m *member) owned(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(m.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, s := range runningPartition.FindAllStringSubmatch(string(b), -1) {
		out = append(out, s[1])
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// partRows returns the data lines of the partition files in dir.
func partRows(t *testing.T, dir string) []string {
	t.Helper()
	return fileRows(t, dir, "part-*.csv")
}

// fileRows returns the data lines of the CSV files in dir matching
// pattern.
func fileRows(t *testing.T, dir, pattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, pattern))
	var rows []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines[:len(lines)-1] { // the last is empty or being written
			if i > 0 {
				rows = append(rows, l)
			}
		}
	}
	return rows
}

// TestGroupCommand: two `volga group` members share a four-partition
// topic (an in-process Kafka cluster, the real protocol). The first
// alone takes every partition; when the second joins, each ends up
// running two (its /metrics shows them), and over HTTP each answers the
// lookups of its keys with the right values and names the other as the
// owner of the rest (421). Events produced after the handover are
// processed by the new owners, and once both members stop (as SIGTERM
// does: exit status 0, final checkpoints) the union of the partition
// files equals `volga run` over the whole topic, every row once, but
// for rows produced late, which are in the partitions' late files.
func TestGroupCommand(t *testing.T) {
	const parts, first, total = 4, 240, 360
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceCLI(t, addr, 0, first)

	dir := files(t, "q.sql", groupSQL)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--sql", filepath.Join(dir, "q.sql"),
		"--source", fmt.Sprintf("tx=kafka://%s/tx?group=features&time_field=ts&max_wait=20ms", addr),
		"--checkpoints", filepath.Join(dir, "ckpt"), "--checkpoint-interval", "200ms",
		"--sink", filepath.Join(out, "part-{partition}.csv"), "--late-sink", filepath.Join(out, "late-{partition}.csv")}
	a := startMember(t, args...)
	waitUntil(t, "member a alone to own every partition and publish the first events", func() bool {
		return len(a.owned(t)) == parts && len(partRows(t, out)) == first
	})
	b := startMember(t, args...)
	waitUntil(t, "the members to own two partitions each", func() bool {
		oa, ob := a.owned(t), b.owned(t)
		return len(oa) == 2 && len(ob) == 2 && !slices.ContainsFunc(oa, func(p string) bool { return slices.Contains(ob, p) })
	})

	// Lookups: n_2m of every user as of the last event.
	at := groupCLIBase.Add(time.Duration(first-1) * time.Second)
	served := map[string]int{}
	for u := range groupCLIUsers {
		user := fmt.Sprintf("u%02d", u)
		var want int64
		for i := u; i < first; i += groupCLIUsers {
			if ts := groupCLIBase.Add(time.Duration(i) * time.Second); !ts.Before(at.Add(-2 * time.Minute)) {
				want++
			}
		}
		body := fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at.Format(time.RFC3339))
		owner, other := a, b
		code, resp := postJSON(t, a.url+"/v1/features", body)
		if code == http.StatusMisdirectedRequest {
			var m struct{ Owner string }
			if err := json.Unmarshal([]byte(resp), &m); err != nil || m.Owner != b.url {
				t.Fatalf("%s on member a: 421 naming %q (%v), want member b at %s", user, m.Owner, err, b.url)
			}
			owner, other = b, a
			code, resp = postJSON(t, b.url+"/v1/features", body)
		}
		if code != http.StatusOK {
			t.Fatalf("%s on its owner: status %d: %s", user, code, resp)
		}
		var r struct{ Features map[string]any }
		if err := json.Unmarshal([]byte(resp), &r); err != nil {
			t.Fatal(err)
		}
		if n := r.Features["n_2m"]; n != float64(want) {
			t.Fatalf("%s: n_2m = %v, want %d", user, n, want)
		}
		if code, _ := postJSON(t, other.url+"/v1/features", body); code != http.StatusMisdirectedRequest {
			t.Fatalf("%s on the member that does not own it: status %d, want 421", user, code)
		}
		served[owner.url]++
	}
	if served[a.url] == 0 || served[b.url] == 0 {
		t.Fatalf("lookups answered by a: %d, by b: %d; want some by each", served[a.url], served[b.url])
	}

	produceCLI(t, addr, first, total)
	waitUntil(t, "every event to be published", func() bool { return len(partRows(t, out)) >= total })
	// Events 3 to 8 again, under ids 10003 to 10008: minutes late.
	const lateBase = 10000
	produceCLIAt(t, addr, 3, 9, lateBase)
	waitUntil(t, "the late events to be written to the late files", func() bool { return len(fileRows(t, out, "late-*.csv")) >= 6 })
	for name, m := range map[string]*member{"a": a, "b": b} {
		if code := m.stop(); code != 0 {
			t.Fatalf("member %s exited with %d: %s", name, code, m.stderr)
		}
		if s := m.stderr.String(); !strings.Contains(s, "joining consumer group \"features\"") || !strings.Contains(s, "left the consumer group") {
			t.Errorf("member %s's stderr: %q", name, s)
		}
	}

	got := partRows(t, out)
	ref := filepath.Join(dir, "reference.csv")
	// Batch mode has no late rows: the reference leaves them out.
	withoutLate := strings.Replace(groupSQL, "FROM tx", fmt.Sprintf("FROM tx WHERE id < %d", lateBase), 1)
	if err := os.WriteFile(filepath.Join(dir, "ref.sql"), []byte(withoutLate), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "ref.sql",
		"--source", fmt.Sprintf("tx=kafka://%s/tx?time_field=ts", addr), "--sink", ref)
	if code != 0 {
		t.Fatalf("volga run: exit %d: %s", code, stderr)
	}
	want := strings.Split(strings.TrimSpace(readFile(t, ref)), "\n")[1:]
	if len(want) != total {
		t.Fatalf("the reference run has %d rows, want %d", len(want), total)
	}
	var gotLate, wantLate []string
	for i := 3; i < 9; i++ {
		wantLate = append(wantLate, fmt.Sprint(lateBase+i))
	}
	for _, r := range fileRows(t, out, "late-*.csv") {
		id, _, _ := strings.Cut(r, ",")
		gotLate = append(gotLate, id)
	}
	sort.Strings(gotLate)
	sort.Strings(wantLate)
	if !slices.Equal(gotLate, wantLate) {
		t.Fatalf("late files hold ids %v, want %v", gotLate, wantLate)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("row %d of %d (sorted): got %s, want %s", i, len(got), got[i], want[i])
			}
		}
		t.Fatalf("the members' files hold %d rows, the reference %d", len(got), len(want))
	}
}

// TestGroupCommandErrors: usage errors name what is wrong.
func TestGroupCommandErrors(t *testing.T) {
	dir := files(t, "q.sql", groupSQL)
	src := "tx=kafka://127.0.0.1:1/tx?group=g&time_field=ts"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sql", "q.sql", "--source", src, "--listen", ":0"}, "--checkpoints"},
		{[]string{"--sql", "q.sql", "--source", src, "--checkpoints", "ck"}, "give --sink PATH, --listen ADDR or both"},
		{[]string{"--sql", "q.sql", "--source", src, "--checkpoints", "ck", "--sink", "out.csv"}, "needs {partition}"},
		{[]string{"--sql", "q.sql", "--source", "tx=tx.csv", "--checkpoints", "ck", "--listen", ":0"}, "want a Kafka topic"},
		{[]string{"--sql", "q.sql", "--source", "tx=kafka://127.0.0.1:1/tx?time_field=ts", "--checkpoints", "ck", "--listen", ":0"}, "needs ?group=G"},
		{[]string{"--sql", "q.sql", "--source", src, "--checkpoints", "ck", "--listen", ":0", "--key-encoding", "xml"}, "--key-encoding must be json or raw"},
		{[]string{"--sql", "q.sql", "--source", src, "--checkpoints", "ck", "--listen", ":0", "--late-sink", "late.csv"}, "--late-sink late.csv: want a file path with {partition}"},
		{[]string{"--sql", "q.sql", "--source", src, "--checkpoints", "ck", "--sink", "p{partition}.csv", "--advertise", "http://x"}, "--advertise applies with --listen only"},
	} {
		code, _, stderr := cli(t, context.Background(), dir, "", append([]string{"group"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("volga group %s: exit %d, stderr %q; want an error with %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	// A broker that does not answer is the topic's fault: the message
	// names it, not the query file.
	code, _, stderr := cli(t, context.Background(), dir, "", "group", "--sql", "q.sql", "--source", src, "--checkpoints", "ck", "--sink", "p{partition}.csv")
	if code != exitFailure || !strings.HasPrefix(stderr, `volga: source/kafka: topic "tx": `) || !strings.Contains(stderr, "connection refused") {
		t.Errorf("unreachable broker: exit %d, stderr %q; want 1 and the source's error, not the query file's", code, stderr)
	}
}
