package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/volga-go/volga/request"
)

// constService answers every lookup with n = 1.
type constService struct{}

func (constService) KeyColumns() []string { return []string{"k"} }

func (constService) Lookup(context.Context, map[string]any, time.Time, map[string]any) (request.Features, error) {
	return request.Features{Names: []string{"n"}, Values: []any{int64(1)}, Watermark: request.EndWatermark}, nil
}

// startLookupServer serves newLookupServer over constService (and, on
// /slow, a handler that takes a second) on a loopback port.
func startLookupServer(t *testing.T) (addr string) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	srv, err := newLookupServer(newRegistry(), logger, request.DefaultMaxBodyBytes, func(opts ...request.HandlerOption) http.Handler {
		h := request.NewHandler(constService{}, opts...)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(time.Second)
				io.WriteString(w, "late\n")
				return
			}
			h.ServeHTTP(w, r)
		})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestLookupServerTimeouts: the lookup server of serve and group lets go
// of clients that stall: one that sends its body too slowly, one that
// keeps an idle connection open, one whose answer takes longer than the
// write timeout. The server had only a header timeout: the first two held
// their connection (and a goroutine) for ever.
func TestLookupServerTimeouts(t *testing.T) {
	saved := serverTimeouts
	t.Cleanup(func() { serverTimeouts = saved })
	serverTimeouts.readHeader = 300 * time.Millisecond
	serverTimeouts.read = 300 * time.Millisecond
	serverTimeouts.write = 300 * time.Millisecond
	serverTimeouts.idle = 300 * time.Millisecond
	addr := startLookupServer(t)
	dial := func(t *testing.T) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// The test's own bound: far beyond the server's timeouts.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	// closedOrAnswered reads what the server sends until it closes the
	// connection, and fails if the test's own deadline struck first.
	closedOrAnswered := func(t *testing.T, what string, c net.Conn, start time.Time) string {
		t.Helper()
		b, err := io.ReadAll(c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: the server still held the connection after %v (read %q)", what, time.Since(start).Round(time.Millisecond), b)
		}
		return string(b)
	}

	t.Run("slow body", func(t *testing.T) {
		c := dial(t)
		start := time.Now()
		io.WriteString(c, "POST /v1/features HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"key\":")
		got := closedOrAnswered(t, "a body that never ends", c, start)
		if strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Errorf("an incomplete body was answered 200: %q", got)
		}
	})

	t.Run("idle connection", func(t *testing.T) {
		c := dial(t)
		body := `{"key":{"k":1},"at":0}`
		io.WriteString(c, "POST /v1/features HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		rd := bufio.NewReader(c)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"features":{"n":1}`) {
			t.Fatalf("lookup: %d %s", resp.StatusCode, b)
		}
		start := time.Now()
		if _, err := rd.ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("an idle keep-alive connection was still open after %v", time.Since(start).Round(time.Millisecond))
		} else if err != io.EOF {
			t.Fatalf("idle connection: %v, want the server to close it", err)
		}
	})

	t.Run("slow answer", func(t *testing.T) {
		c := dial(t)
		start := time.Now()
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		if got := closedOrAnswered(t, "an answer past the write timeout", c, start); strings.Contains(got, "late") {
			t.Errorf("an answer written after the write timeout went out: %q", got)
		}
	})
}

// TestServeShutdownFinishesInFlight: SIGINT (the context) while a lookup
// is in flight, its body half sent, stops serve gracefully: the listener
// closes at once, the lookup is still answered with its features, and
// serve exits 0.
func TestServeShutdownFinishesInFlight(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	url, stderr, stop := startServe(t, dir, "--sql", "q.sql", "--source", "tx=tx.csv")
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	body := `{"key": {"user_id": "u1"}, "at": "2024-01-01T02:00:00Z"}`
	io.WriteString(c, "POST /v1/features HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:10])
	time.Sleep(50 * time.Millisecond) // the request is being read: the connection is active
	stopped := make(chan int, 1)
	go func() { stopped <- stop() }()
	// Shutdown has begun once the listener refuses new connections.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections after the stop")
		}
	}
	select {
	case code := <-stopped:
		t.Fatalf("serve exited (%d) with a lookup in flight", code)
	default:
	}
	io.WriteString(c, body[10:])
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the lookup in flight got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"features":{"spend_1h":4.5,"n_1h":2,"max_1h":3}`) {
		t.Errorf("lookup in flight: %d %s", resp.StatusCode, b)
	}
	if code := <-stopped; code != exitOK {
		t.Errorf("exit status %d, want 0; stderr:\n%s", code, stderr)
	}
}

// TestServeKafkaStream: serve over a Kafka topic in stream mode (an
// in-process kfake cluster on loopback), which never ends, serves while it
// reads: it used to ingest "to the end" first and so never served. The
// lookups answer the features of the rows read, messages produced after
// the start included; SIGINT stops it with exit status 0.
func TestServeKafkaStream(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(lines ...string) {
		t.Helper()
		var recs []*kgo.Record
		for _, l := range lines {
			recs = append(recs, &kgo.Record{Value: []byte(l)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []string
	for _, r := range parseTx(t, txCSV) {
		msgs = append(msgs, fmt.Sprintf(`{"user_id":%q,"ts":%q,"amount":%.1f}`, r.user, r.ts.Format(time.RFC3339), r.amount)) // 10.0: a float column
	}
	produce(msgs[:3]...)

	dir := files(t, "q.sql", spendSQL)
	stderr := &lockedBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}
	sctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- serveMain(sctx, e, []string{"--listen", "127.0.0.1:0", "--sql", filepath.Join(dir, "q.sql"),
			"--source", fmt.Sprintf("tx=kafka://%s/tx?time_field=ts", addr), "--mode", "stream", "--max-out-of-order", "0s"},
			func(addr string) { addrc <- addr })
	}()
	var url string
	select {
	case a := <-addrc:
		url = "http://" + a
	case code := <-done:
		t.Fatalf("serve exited with %d before serving: %s", code, stderr)
	case <-time.After(20 * time.Second):
		interrupt()
		<-done
		t.Fatalf("serve over a Kafka stream did not start serving; stderr:\n%s", stderr)
	}
	defer func() {
		interrupt()
		if code := <-done; code != exitOK {
			t.Errorf("exit status %d after SIGINT, want 0; stderr:\n%s", code, stderr)
		}
		if log := stderr.String(); !strings.Contains(log, "serving on 127.0.0.1:") || !strings.HasSuffix(log, "volga: server stopped\n") {
			t.Errorf("stderr:\n%s", log)
		}
	}()
	// The rest of the input, and a later row of another user that moves
	// the watermark past all of them.
	produce(append(msgs[3:], `{"user_id":"u9","ts":"2024-01-01T05:00:00Z","amount":1.0}`)...)
	want := `"features":{"spend_1h":4.5,"n_1h":2,"max_1h":3}`
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status, body := postJSON(t, url+"/v1/features", `{"key": {"user_id": "u1"}, "at": "2024-01-01T02:00:00Z"}`)
		last = fmt.Sprint(status, " ", body)
		if status == http.StatusOK && strings.Contains(body, want) {
			return
		}
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Fatalf("lookup: %s", last)
		}
	}
	t.Fatalf("the lookup never saw the rows read: last answer %s, want %s", last, want)
}

// TestLookupServerMethods: /metrics and /readyz answer GET (and HEAD);
// another method is 405 naming the allowed ones, not the lookup
// handler's 404 "no such path", which tells a client the path is wrong.
func TestLookupServerMethods(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	var isReady atomic.Bool
	srv, err := newLookupServer(newRegistry(), logger, request.DefaultMaxBodyBytes, func(opts ...request.HandlerOption) http.Handler {
		return request.NewHandler(constService{}, opts...)
	}, func() error {
		if !isReady.Load() {
			return errors.New("still reading")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	do := func(method, path string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Allow"), string(b)
	}
	for _, path := range []string{"/metrics", readyPath} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			if code, allow, body := do(m, path); code != http.StatusMethodNotAllowed || allow != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q: %s; want 405 allowing GET, HEAD", m, path, code, allow, body)
			}
		}
	}
	if code, _, body := do(http.MethodGet, readyPath); code != http.StatusServiceUnavailable || !strings.Contains(body, "still reading") {
		t.Errorf("GET %s before ready: %d %s", readyPath, code, body)
	}
	isReady.Store(true)
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if code, _, _ := do(m, readyPath); code != http.StatusOK {
			t.Errorf("%s %s: %d, want 200", m, readyPath, code)
		}
	}
	if code, _, body := do(http.MethodGet, "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("GET /metrics: %d %.200s", code, body)
	}
	if code, _, body := do(http.MethodPost, request.FeaturesPath); code != http.StatusBadRequest {
		t.Errorf("POST %s {}: %d %s, want the lookup handler's 400", request.FeaturesPath, code, body)
	}
}
