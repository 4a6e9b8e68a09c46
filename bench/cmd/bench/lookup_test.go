package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRawConn checks the load generator's HTTP/1.1 client against
// net/http's server: bodies with a Content-Length, chunked ones, error
// statuses, a server closing the connection, and keep-alive reuse.
func TestRawConn(t *testing.T) {
	var conns int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch string(body) {
		case "chunked":
			for i := range 3 {
				fmt.Fprintf(w, "part %d;", i)
				w.(http.Flusher).Flush()
			}
		case "close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case "bad":
			http.Error(w, "no", http.StatusBadRequest)
		default:
			w.Write(body)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns++
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	rc, err := dialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	for _, tc := range []struct {
		body   string
		status int
	}{{"hello", 200}, {"chunked", 200}, {"bad", 400}, {strings.Repeat("x", 10000), 200}, {"close", 200}, {"again", 200}, {"chunked", 200}} {
		status, err := rc.do(rawRequest(addr, "/", []byte(tc.body)))
		if err != nil || status != tc.status {
			t.Fatalf("body %.10q: status %d, %v; want %d", tc.body, status, err, tc.status)
		}
	}
	if conns != 2 {
		t.Errorf("%d connections, want 2 (one closed by the server)", conns)
	}
}

// TestPacer checks that the pacer waits at least as long as asked, and not
// much longer.
func TestPacer(t *testing.T) {
	p, err := newPacer()
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	late := time.Hour // the earliest wake-up's lateness
	for range 50 {
		t0 := time.Now()
		if err := p.sleep(300 * time.Microsecond); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		if d < 300*time.Microsecond {
			t.Fatalf("slept %s, want at least 300µs", d)
		}
		late = min(late, d-300*time.Microsecond)
	}
	// The best of 50 wake-ups should beat a millisecond timer's rounding,
	// even on a loaded machine.
	if late > 900*time.Microsecond {
		t.Errorf("best wake-up %s late, want well under a millisecond", late)
	}
}

// The load generator's client against net/http's, one request at a time
// on one keep-alive connection to a net/http server answering a lookup
// response's worth of bytes: the CPU a request costs the client (and the
// server, the same in both).
func benchClientServer(b *testing.B) (addr string, body []byte) {
	resp := []byte(`{"key":{"user_id":48213},"at":"2023-11-14T22:13:20.123Z","watermark":"2023-12-31T23:59:59Z","features":{"sum_30d":1234.5,"n_30d":17,"avg_30d":72.61764705882354,"max_30d":998.25}}` + "\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	b.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), []byte(`{"key":{"user_id":48213},"at":1700000000123}`)
}

func BenchmarkClientRaw(b *testing.B) {
	addr, body := benchClientServer(b)
	rc, err := dialRaw(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.close()
	req := rawRequest(addr, "/v1/features", body)
	b.ReportAllocs()
	for b.Loop() {
		if status, err := rc.do(req); err != nil || status != 200 {
			b.Fatal(status, err)
		}
	}
}

func BenchmarkClientNetHTTP(b *testing.B) {
	addr, body := benchClientServer(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	url := "http://" + addr + "/v1/features"
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.StatusCode)
		}
	}
}

func TestHistQuantile(t *testing.T) {
	h := hist{counts: []uint64{0, 90, 9, 1}, buckets: []float64{0, 1, 2, 4, math.Inf(1)}}
	for _, tc := range []struct{ q, want float64 }{{0.5, 2}, {0.9, 2}, {0.99, 4}, {1, 4}} {
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	d := h.sub(hist{counts: []uint64{0, 90, 0, 0}, buckets: h.buckets})
	if got := d.quantile(0.5); got != 4 {
		t.Errorf("difference: quantile(0.5) = %v, want 4", got)
	}
	if got := (hist{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
	if got := readHist(schedLatencies); len(got.counts) == 0 || len(got.buckets) != len(got.counts)+1 {
		t.Errorf("%s: %d counts, %d buckets", schedLatencies, len(got.counts), len(got.buckets))
	}
}

// TestHTTPLoad runs the load generator against a loopback server that
// fails some requests: every request is sent once, on schedule, its
// latencies recorded, and the failures counted; the result survives the
// JSON hand-over from a -http-load process.
func TestHTTPLoad(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	total := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(body)]++
		total++
		k := total
		mu.Unlock()
		if r.URL.Path != "/v1/features" || r.Method != http.MethodPost {
			http.Error(w, "wrong request", http.StatusNotFound)
			return
		}
		// Every 50th request after the warm-up (one per connection) fails.
		if k > httpClients && (k-httpClients)%50 == 0 {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"sum":1}`)
	}))
	defer srv.Close()
	spec := httpLoadSpec{Addr: strings.TrimPrefix(srv.URL, "http://"), N: 400, Rate: 4000, Users: 1000, Lo: 0, Span: 86_400_000, Seed: 7}
	start := time.Now()
	res, err := httpLoad(spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("400 requests at 4000/s took %s, want about 100 ms", d)
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back httpLoadResult
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Lat) != spec.N || len(back.FromSend) != spec.N || len(back.SendLag) != spec.N {
		t.Fatalf("%d/%d/%d latencies for %d requests", len(back.Lat), len(back.FromSend), len(back.SendLag), spec.N)
	}
	for i := range back.Lat {
		if back.FromSend[i] <= 0 || back.SendLag[i] < 0 || math.Abs(back.Lat[i]-back.FromSend[i]-back.SendLag[i]) > 1 {
			t.Fatalf("request %d: latency %.1f µs, from the send %.1f, send lag %.1f", i, back.Lat[i], back.FromSend[i], back.SendLag[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	requests := 0
	for _, n := range seen {
		requests += n
	}
	// The warm-up sends one request per connection before the load.
	if want := spec.N + httpClients; requests != want {
		t.Errorf("server saw %d requests, want %d", requests, want)
	}
	if want := int64(spec.N / 50); back.Failed != want || back.FirstErr != "status 503" {
		t.Errorf("%d failures, first %q; want %d 503s", back.Failed, back.FirstErr, want)
	}
	if len(seen) < spec.N/2 {
		t.Errorf("%d distinct requests of %d: the requests should vary", len(seen), spec.N)
	}
	if back.ElapsedNs <= 0 || back.MaxLagNs < 0 {
		t.Errorf("elapsed %d ns, max lag %d ns", back.ElapsedNs, back.MaxLagNs)
	}
}
