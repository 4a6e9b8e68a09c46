package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// get fetches url and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServeMetrics(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	url, _, stop := startServe(t, dir, "--sql", "q.sql", "--source", "tx=tx.csv")
	if status, body := postJSON(t, url+"/v1/features", `{"key": {"user_id": "u1"}, "at": "2024-01-01T02:00:00Z"}`); status != 200 {
		t.Fatalf("lookup: %d %s", status, body)
	}
	if status, _ := postJSON(t, url+"/v1/features", `{"key": {}}`); status != 400 {
		t.Fatalf("bad lookup: %d, want 400", status)
	}
	status, body := get(t, url+"/metrics")
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	for _, want := range []string{
		`volga_source_rows_total{pipeline="volga"} 6`,
		`volga_sink_rows_total{pipeline="volga"} 6`,
		`volga_pipeline_running{pipeline="volga"} 0`,
		`volga_window_keys{pipeline="volga",stage="0"} 2`,
		`volga_lookup_duration_seconds_count{pipeline="volga"} 1`,
		`volga_http_requests_total{code="200",handler="/v1/features",pipeline="volga"} 1`,
		`volga_http_requests_total{code="400",handler="/v1/features",pipeline="volga"} 1`,
		`volga_http_request_duration_seconds_count{handler="/v1/features",pipeline="volga"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(body, "\ngo_goroutines ") {
		t.Error("/metrics lacks the Go runtime's metrics")
	}
	// /metrics is not a lookup: the handler's counters do not see it.
	if strings.Contains(body, `handler="other"`) {
		t.Error(`/metrics counted as a lookup request (handler="other")`)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

func TestRunLogLevel(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	started := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg="volga: pipeline started" pipeline=volga mode=batch parallelism=2 table=tx$`)
	stopped := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg="volga: pipeline stopped" pipeline=volga mode=batch elapsed=\S+ rows_in=6 rows_out=6 late_dropped=0 dead_letters=0$`)

	// Default: warn, so a run that goes well says nothing.
	code, _, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "2")
	if code != exitOK || stderr != "" {
		t.Fatalf("default level: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--parallelism", "2", "--log-level", "info")
	if code != exitOK || !started.MatchString(stderr) || !stopped.MatchString(stderr) {
		t.Fatalf("--log-level info: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--log-level", "loud")
	if code != exitUsage || !strings.Contains(stderr, "want debug, info, warn or error") {
		t.Fatalf("--log-level loud: exit %d, stderr %q", code, stderr)
	}
}

func TestRunLogLevelDebugSummarizesLateRows(t *testing.T) {
	// Two late rows (one row per batch, no out-of-orderness allowed): one
	// summary line at the end, not a line per row.
	in := "user_id,ts,amount\n" +
		"u1,2024-01-01T00:10:00Z,1\n" +
		"u1,2024-01-01T00:05:00Z,2\n" +
		"u1,2024-01-01T00:20:00Z,3\n" +
		"u1,2024-01-01T00:15:00Z,4\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", in)
	code, _, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv",
		"--mode", "stream", "--batch-size", "1", "--log-level", "debug")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := strings.Count(stderr, `msg="volga: late rows"`); n != 1 || !strings.Contains(stderr, "dropped=2 applied=0 dropped_total=2") {
		t.Errorf("want one late-row summary of 2 rows, stderr:\n%s", stderr)
	}
}
