package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
