package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tx is one row of txCSV.
type tx struct {
	user   string
	ts     time.Time
	amount float64
}

func parseTx(t *testing.T, text string) []tx {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []tx
	for _, r := range recs[1:] {
		ts, err := time.Parse(time.RFC3339, r[1])
		if err != nil {
			t.Fatal(err)
		}
		a, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tx{r[0], ts, a})
	}
	return out
}

// bruteSpend is spendSQL's features for (user, at) by definition: the
// user's rows with at-1h <= ts <= at (ts < at when strict), as
// spend_1h, n_1h, max_1h; nil for NULL.
func bruteSpend(rows []tx, user string, at time.Time, strict bool) []any {
	var sum, mx any
	n := 0
	for _, r := range rows {
		if r.user != user || r.ts.Before(at.Add(-time.Hour)) || r.ts.After(at) || (strict && r.ts.Equal(at)) {
			continue
		}
		n++
		if sum == nil {
			sum, mx = r.amount, r.amount
		} else {
			sum, mx = sum.(float64)+r.amount, math.Max(mx.(float64), r.amount)
		}
	}
	return []any{sum, float64(n), mx}
}

func near(a, b any) bool {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if ok1 && ok2 {
		return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y))
	}
	return a == b
}

// startServe runs volga serve in-process on a free port and returns its
// base URL, its stderr and a function that stops it (as SIGINT does) and
// returns its exit status.
func startServe(t *testing.T, dir string, args ...string) (url string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	wd, _ := os.Getwd()
	t.Chdir(dir)
	defer t.Chdir(wd)
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &lockedBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- serveMain(ctx, e, append([]string{"--listen", "127.0.0.1:0"}, args...), func(addr string) { addrc <- addr })
	}()
	select {
	case addr := <-addrc:
		url = "http://" + addr
	case code := <-done:
		cancel()
		t.Fatalf("serve exited with %d before serving: %s", code, stderr)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	var once sync.Once
	var code int
	stop = func() int {
		once.Do(func() {
			cancel()
			code = <-done
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return url, stderr, stop
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServe(t *testing.T) {
	for _, extra := range [][]string{
		{"--parallelism", "2"},
		// Stream mode with mini-batched watermarks: every row is in by the
		// end of the input, so lookups answer as in batch mode.
		{"--mode", "stream", "--max-out-of-order", "1h", "--watermark-interval", "1h", "--watermark-max-rows", "2", "--parallelism", "2"},
	} {
		t.Run(strings.Join(extra, " "), func(t *testing.T) { testServe(t, extra...) })
	}
}

func testServe(t *testing.T, extra ...string) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	url, stderr, stop := startServe(t, dir, append([]string{"--sql", "q.sql", "--source", "tx=tx.csv"}, extra...)...)
	rows := parseTx(t, txCSV)

	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}

	var reqs []string
	type q struct {
		user string
		at   time.Time
	}
	var qs []q
	// Lookups reach back one hour from each user's newest event at most
	// (u1: 02:00, u2: 01:20); older state is not kept.
	for _, user := range []string{"u1", "u2", "u3"} {
		for _, at := range []string{"2024-01-01T01:45:00Z", "2024-01-01T02:00:00Z", "2024-01-01T02:15:00Z", "2024-01-01T02:59:59Z", "2024-01-01T03:05:00Z"} {
			tm, _ := time.Parse(time.RFC3339, at)
			qs = append(qs, q{user, tm})
			reqs = append(reqs, fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at))
		}
	}
	status, body := postJSON(t, url+"/v1/features", "["+strings.Join(reqs, ",")+"]")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var results []struct {
		Watermark string
		Features  map[string]any
	}
	if err := json.Unmarshal([]byte(body), &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(qs) {
		t.Fatalf("%d results for %d requests", len(results), len(qs))
	}
	for i, x := range qs {
		want := bruteSpend(rows, x.user, x.at, false)
		f := results[i].Features
		if got := []any{f["spend_1h"], f["n_1h"], f["max_1h"]}; !near(got[0], want[0]) || !near(got[1], want[1]) || !near(got[2], want[2]) {
			t.Errorf("%s at %s: got %v, want %v", x.user, x.at.Format(time.RFC3339), got, want)
		}
		if results[i].Watermark != "+inf" {
			t.Errorf("watermark %q, want +inf", results[i].Watermark)
		}
	}
	if status, body := postJSON(t, url+"/v1/features", `{"key": {"user": "u1"}, "at": "2024-01-01T00:30:00Z"}`); status != 400 || !strings.Contains(body, `unknown key column \"user\"`) {
		t.Errorf("bad key: %d %s", status, body)
	}

	if code := stop(); code != exitOK {
		t.Errorf("exit status %d after shutdown, want 0; stderr:\n%s", code, stderr)
	}
	log := stderr.String()
	if !strings.Contains(log, "volga: ingested 6 rows, serving on 127.0.0.1:") || !strings.HasSuffix(log, "volga: server stopped\n") {
		t.Errorf("stderr:\n%s", log)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

func TestServeErrors(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV,
		"group.sql", "SELECT user_id, count(*) AS n FROM tx GROUP BY user_id, tumble(ts, INTERVAL '1' HOUR)")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "--source", "tx=tx.csv"}, exitUsage, "volga: serve: missing --sql FILE"},
		{[]string{"serve", "--sql", "q.sql"}, exitUsage, "volga: serve: missing --source NAME=PATH"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--max-out-of-order", "5s"}, exitUsage, "applies to --mode stream only"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--watermark-interval", "100ms"}, exitUsage, "--watermark-interval applies to --mode stream only"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--watermark-max-rows", "10"}, exitUsage, "--watermark-max-rows applies to --mode stream only"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--time-order", "1s"}, exitUsage, "--time-order applies to --mode batch only"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--time-order", "-1s"}, exitUsage, "must not be negative"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--listen", "256.0.0.1:99999"}, exitFailure, "volga: serve: listen tcp"},
		{[]string{"serve", "--sql", "group.sql", "--source", "tx=tx.csv"}, exitFailure, "needs a query with sliding windows"},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=missing.csv"}, exitFailure, "missing.csv"},
	} {
		code, _, stderr := cli(t, context.Background(), dir, "", tc.args...)
		if code != tc.code || !strings.HasPrefix(stderr, "volga: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line containing %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

// spineCSV has rows at event times (where strict and not differ), between
// them, for a user without events, with a label passed through.
const spineCSV = `user_id,ts,label
u1,2024-01-01T00:30:00Z,1
u2,2024-01-01T00:20:00Z,0
u1,2024-01-01T01:15:00Z,0
u3,2024-01-01T01:00:00Z,1
u1,2024-01-01T01:45:00Z,1
u2,2024-01-01T01:20:00Z,0
u1,2024-01-01T00:00:00Z,0
`

func TestBackfill(t *testing.T) {
	rows := parseTx(t, txCSV)
	spine, err := csv.NewReader(strings.NewReader(spineCSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, c := range []struct {
		strict    bool
		timeOrder string
	}{{false, ""}, {true, ""}, {false, "24h"}, {true, "24h"}} {
		strict := c.strict
		dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV)
		args := []string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "out.csv"}
		if strict {
			args = append(args, "--strict")
		}
		if c.timeOrder != "" {
			// Events and spine read side by side.
			args = append(args, "--time-order", c.timeOrder)
		}
		code, stdout, stderr := cli(t, context.Background(), dir, "", args...)
		if code != 0 || stderr != "" || stdout != "" {
			t.Fatalf("strict=%v: exit %d, stderr %q, stdout %q", strict, code, stderr, stdout)
		}
		out, err := csv.NewReader(strings.NewReader(readFile(t, filepath.Join(dir, "out.csv")))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(out[0], ","); got != "user_id,ts,label,spend_1h,n_1h,max_1h" {
			t.Fatalf("header %s", got)
		}
		if len(out) != len(spine) {
			t.Fatalf("%d output rows for %d spine rows", len(out)-1, len(spine)-1)
		}
		for i, s := range spine[1:] {
			o := out[i+1]
			at, _ := time.Parse(time.RFC3339, s[1])
			if o[0] != s[0] || o[1] != s[1] || o[2] != s[2] {
				t.Errorf("row %d: spine columns %v, want %v", i, o[:3], s)
			}
			want := bruteSpend(rows, s[0], at, strict)
			for j, w := range want {
				var got any
				if o[3+j] != "" {
					f, err := strconv.ParseFloat(o[3+j], 64)
					if err != nil {
						t.Fatal(err)
					}
					got = f
				}
				if !near(got, w) {
					t.Errorf("strict=%v row %d (%s at %s): column %d = %v, want %v", strict, i, s[0], s[1], 3+j, got, w)
				}
			}
			if strict && fmt.Sprint(want) != fmt.Sprint(bruteSpend(rows, s[0], at, false)) {
				differ++
			}
		}
	}
	// The spine rows at u1's 00:30, 01:15 and 00:00 and u2's 01:20 events
	// (twice: with and without --time-order).
	if differ != 8 {
		t.Errorf("strict and not differ on %d rows, want the 4 at event times, twice", differ)
	}
	// The spine is not in time order: a promise that it is stops the
	// backfill, naming it.
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV)
	code, _, stderr := cli(t, context.Background(), dir, "", "backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "out.csv", "--time-order", "0s")
	if code == 0 || !strings.Contains(stderr, "(--time-order)") {
		t.Errorf("--time-order 0s over a spine out of order: exit %d, stderr %q", code, stderr)
	}
}

func TestBackfillErrors(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV,
		"badspine.csv", "user_id,ts\n1,2024-01-01T00:30:00Z\n", "nots.csv", "user_id,when\nu1,2024-01-01T00:30:00Z\n", "bad.sql", "SELECT sum(nope) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM tx")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv"}, exitUsage, "missing --spine PATH"},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "out.txt"}, exitUsage, "volga: backfill: --sink out.txt: cannot tell the output format"},
		{[]string{"backfill", "--sql", "bad.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "out.csv"}, exitFailure, "bad.sql:1:"},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "badspine.csv"}, exitFailure, `volga: --spine badspine.csv: spine column "user_id" has type int64`},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "nots.csv"}, exitFailure, `volga: --spine nots.csv: the spine has no column "ts" (it needs the key columns user_id and the time column "ts")`},
	} {
		code, _, stderr := cli(t, context.Background(), dir, "", tc.args...)
		if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line containing %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.csv")); err == nil {
		t.Error("a query error left an output file")
	}
}

func TestCheck(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	url, _, _ := startServe(t, dir, "--sql", "q.sql", "--source", "tx=tx.csv")
	var log strings.Builder
	for _, user := range []string{"u1", "u2"} {
		for _, at := range []string{"2024-01-01T01:45:00Z", "2024-01-01T02:00:00Z", "2024-01-01T02:20:00Z", "2024-01-01T03:00:00Z"} {
			status, body := postJSON(t, url+"/v1/features", fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			log.WriteString(body)
		}
	}
	honest := log.String()
	tampered := strings.Replace(honest, `"spend_1h":4.5`, `"spend_1h":4.6`, 1)
	if tampered == honest {
		t.Fatalf("nothing to tamper with in\n%s", honest)
	}
	if err := os.WriteFile(filepath.Join(dir, "honest.jsonl"), []byte(honest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tampered.jsonl"), []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}

	// With --time-order the events are read side by side with the log.
	for _, extra := range [][]string{nil, {"--time-order", "2h"}} {
		code, stdout, stderr := cli(t, context.Background(), dir, "", append([]string{"check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "honest.jsonl"}, extra...)...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "consistent: 8 lookups checked; feature values: 24 matched, 0 mismatched, 0 missing, 0 extra\n") {
			t.Errorf("honest %v: exit %d, stderr %q, stdout:\n%s", extra, code, stderr, stdout)
		}
	}
	code, stdout, stderr := cli(t, context.Background(), dir, "", "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "tampered.jsonl")
	if code != exitFailure || stderr != "" || !strings.HasPrefix(stdout, "INCONSISTENT: 8 lookups checked; feature values: 23 matched, 1 mismatched") ||
		!strings.Contains(stdout, `spend_1h: served 4.6, recomputed 4.5`) {
		t.Errorf("tampered: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "q.sql")
	if code != exitFailure || !strings.HasPrefix(stderr, "volga: q.sql: request: log line 1:") {
		t.Errorf("not a log: exit %d, stderr %q", code, stderr)
	}
}
