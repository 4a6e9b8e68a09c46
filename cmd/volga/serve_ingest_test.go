//go:build unix

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
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeAnswersWhileIngesting feeds serve its CSV through a named pipe
// in two parts, so that the test holds the ingest half way: the server
// must already answer /healthz and /metrics, refuse lookups and /readyz
// with 503 (a batch run answers only as of the rows read so far), and,
// once the rest is written and the pipe closed, answer every lookup as of
// all the rows, the second part's included.
func TestServeAnswersWhileIngesting(t *testing.T) {
	dir := files(t, "q.sql", spendSQL)
	fifo := filepath.Join(dir, "tx.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// More rows than the CSV source samples for its schema (1000), so that
	// the first part gets the pipeline past opening its source.
	var first, second strings.Builder
	first.WriteString("user_id,ts,amount\n")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	row := func(b *strings.Builder, i int) {
		fmt.Fprintf(b, "u%d,%s,%d.5\n", i%7, t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), i%13)
	}
	for i := range 1500 {
		row(&first, i)
	}
	for i := 1500; i < 1600; i++ {
		row(&second, i)
	}
	rows := parseTx(t, first.String()+second.String())

	release := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			wrote <- err
			return
		}
		defer f.Close()
		if _, err := io.WriteString(f, first.String()); err != nil {
			wrote <- err
			return
		}
		<-release
		_, err = io.WriteString(f, second.String())
		wrote <- err
	}()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	wd, _ := os.Getwd()
	t.Chdir(dir)
	defer t.Chdir(wd)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}
	readyc := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- serveMain(ctx, e, []string{"--listen", "127.0.0.1:0", "--sql", "q.sql", "--source", "tx=tx.csv"}, func(addr string) { readyc <- addr })
	}()

	// The address comes from the line serve logs before it ingests.
	listening := regexp.MustCompile(`volga: ingesting tx\.csv, listening on (127\.0\.0\.1:\d+) \(lookups answer 503 until it is read\)\n`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			url = "http://" + m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve logged no address; stderr:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/healthz"); status != 200 || body != "ok\n" {
		t.Errorf("healthz while ingesting: %d %q, want 200 ok", status, body)
	}
	if status, body := get("/readyz"); status != 503 || !strings.Contains(body, "not ready: ingesting tx.csv: ") || !strings.Contains(body, "rows read so far") {
		t.Errorf("readyz while ingesting: %d %q, want 503 naming the input", status, body)
	}
	lookup := `{"key": {"user_id": "u1"}, "at": "2024-01-02T02:00:00Z"}`
	if status, body := postJSON(t, url+"/v1/features", lookup); status != 503 || !strings.Contains(body, "ingesting tx.csv") {
		t.Errorf("lookup while ingesting: %d %s, want 503", status, body)
	}
	refused := regexp.MustCompile(`volga_http_requests_total\{code="503",handler="/v1/features",pipeline="volga"\} 1\n`)
	if status, body := get("/metrics"); status != 200 || !refused.MatchString(body) {
		t.Errorf("metrics while ingesting: %d, the refused lookup counted: %v\n%s", status, refused.MatchString(body), body)
	}

	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	select {
	case addr := <-readyc:
		if "http://"+addr != url {
			t.Errorf("ready at %s, listening at %s", addr, url)
		}
	case code := <-done:
		t.Fatalf("serve exited with %d: %s", code, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not finish ingesting; stderr:\n%s", stderr)
	}
	if status, body := get("/readyz"); status != 200 || body != "ok\n" {
		t.Errorf("readyz after ingest: %d %q, want 200 ok", status, body)
	}
	// Lookups after the last row of the second part see it.
	last := rows[len(rows)-1]
	for _, user := range []string{"u0", "u1", last.user} {
		at := last.ts
		status, body := postJSON(t, url+"/v1/features", fmt.Sprintf(`{"key": {"user_id": %q}, "at": %q}`, user, at.Format(time.RFC3339)))
		if status != 200 {
			t.Fatalf("lookup after ingest: %d %s", status, body)
		}
		var res struct{ Features map[string]any }
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatal(err)
		}
		want := bruteSpend(rows, user, at, false)
		f := res.Features
		if got := []any{f["spend_1h"], f["n_1h"], f["max_1h"]}; !near(got[0], want[0]) || !near(got[1], want[1]) || !near(got[2], want[2]) {
			t.Errorf("%s at %s: got %v, want %v", user, at.Format(time.RFC3339), got, want)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit status %d; stderr:\n%s", code, stderr)
	}
	if log := stderr.String(); !strings.Contains(log, "volga: ingested 1600 rows, serving on ") {
		t.Errorf("stderr:\n%s", log)
	}
}
