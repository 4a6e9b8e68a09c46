package request

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// panicky is a Service whose lookups panic.
type panicky struct{}

func (panicky) KeyColumns() []string { return []string{"k"} }
func (panicky) Lookup(context.Context, map[string]any, time.Time, map[string]any) (Features, error) {
	panic("boom")
}

func TestMetricsCountPanicsAs500(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(panicky{}, WithMetrics(m))
	for _, path := range []string{FeaturesPath, "/x/" + strings.Repeat("y", 10)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"key": {"k": 1}, "at": 0}`)))
	}
	const want = `
# HELP volga_http_requests_total HTTP requests answered by the lookup handler, by path and status code.
# TYPE volga_http_requests_total counter
volga_http_requests_total{code="404",handler="other"} 1
volga_http_requests_total{code="500",handler="/v1/features"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volga_http_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2", n)
	}
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := NewMetrics(nil); err == nil {
		t.Error("NewMetrics(nil) succeeded")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	_, err := NewMetrics(reg)
	if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
		t.Fatalf("second NewMetrics on one registry: %v, want an AlreadyRegisteredError", err)
	}
	// A registration that fails half-way leaves nothing behind.
	reg = prometheus.NewRegistry()
	blocker := prometheus.NewCounter(prometheus.CounterOpts{Name: "volga_http_request_duration_seconds", Help: "x"})
	reg.MustRegister(blocker)
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("NewMetrics over a conflicting metric succeeded")
	}
	same := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "volga_http_requests_total",
		Help: "HTTP requests answered by the lookup handler, by path and status code.",
	}, []string{"handler", "code"})
	if err := reg.Register(same); err != nil {
		t.Fatalf("the request counter of the failed NewMetrics is still registered: %v", err)
	}
}

// aborter is a Service whose lookups abort the request.
type aborter struct{}

func (aborter) KeyColumns() []string { return []string{"k"} }
func (aborter) Lookup(context.Context, map[string]any, time.Time, map[string]any) (Features, error) {
	panic(http.ErrAbortHandler)
}

// TestMetricsCountAbortsAs499: a request the service aborts (net/http's
// ErrAbortHandler, passed on) is counted under StatusAborted, not as the
// 200 that nothing written would count as.
func TestMetricsCountAbortsAs499(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(aborter{}, WithMetrics(m))
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("panic %v, want http.ErrAbortHandler passed on", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, FeaturesPath, strings.NewReader(`{"key": {"k": 1}, "at": 0}`)))
	}()
	const want = `
# HELP volga_http_requests_total HTTP requests answered by the lookup handler, by path and status code.
# TYPE volga_http_requests_total counter
volga_http_requests_total{code="499",handler="/v1/features"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volga_http_requests_total"); err != nil {
		t.Error(err)
	}
}

// waiter is a Service whose lookups wait for their context to end.
type waiter struct{ entered chan struct{} }

func (waiter) KeyColumns() []string { return []string{"k"} }
func (w waiter) Lookup(ctx context.Context, _ map[string]any, _ time.Time, _ map[string]any) (Features, error) {
	w.entered <- struct{}{}
	<-ctx.Done()
	return Features{}, ctx.Err()
}

// TestMetricsCountClientGoneAs499: a lookup that fails because its client
// closed the connection (over a real listener) counts as StatusAborted,
// not as a 503, which says the service could not answer.
func TestMetricsCountClientGoneAs499(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	svc := waiter{entered: make(chan struct{}, 1)}
	srv := httptest.NewServer(NewHandler(svc, WithMetrics(m)))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+FeaturesPath, strings.NewReader(`{"key": {"k": 1}, "at": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-svc.entered
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled request: %v", err)
	}
	const want = `
# HELP volga_http_requests_total HTTP requests answered by the lookup handler, by path and status code.
# TYPE volga_http_requests_total counter
volga_http_requests_total{code="499",handler="/v1/features"} 1
`
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volga_http_requests_total")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
