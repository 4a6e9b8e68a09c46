package volga_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
)

// TestHandlerUnbounded: a pipeline whose query has an UNBOUNDED PRECEDING
// frame cannot serve lookups: over a loopback listener, before and after
// its run, every lookup is answered 501 with an error naming the window
// and its features, not 500.
func TestHandlerUnbounded(t *testing.T) {
	const query = `SELECT user_id, ts,
       count(*) OVER h AS n_1h,
       sum(amount) OVER forever AS spend_ever,
       max(amount) OVER forever AS max_ever
FROM tx
WINDOW h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       forever AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`
	p, err := volga.SQL(query, volga.WithSource("tx", httpSource(t, httpEvents(200))), volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	check := func(when string) {
		t.Helper()
		for _, body := range []string{
			`{"key": {"user_id": 1}, "at": "2024-01-03T09:00:00Z"}`,
			`[{"key": {"user_id": 1}, "at": 0}, {"key": {"user_id": 2}, "at": 1}]`,
			`{"key": {"user_id": 1}, "at": 0, "row": {"amount": 3.5}}`,
		} {
			status, b := post(t, srv.URL+request.FeaturesPath, body)
			var e struct{ Error string }
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%s: %s: answer %q is not a JSON error: %v", when, body, b, err)
			}
			if status != http.StatusNotImplemented {
				t.Errorf("%s: %s: status %d (%s), want 501", when, body, status, b)
			}
			for _, want := range []string{"UNBOUNDED PRECEDING", "forever", "spend_ever", "max_ever"} {
				if !strings.Contains(e.Error, want) {
					t.Errorf("%s: %s: error %q does not mention %q", when, body, e.Error, want)
				}
			}
			if strings.Contains(e.Error, "n_1h") {
				t.Errorf("%s: error %q names a feature of a bounded window", when, e.Error)
			}
		}
	}
	check("before the run")
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after the run")
	// The in-process Lookup says the same.
	if _, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, time.UnixMilli(t0), nil); err == nil || !strings.Contains(err.Error(), "forever") {
		t.Errorf("Lookup: %v, want an error naming the window", err)
	}
}
