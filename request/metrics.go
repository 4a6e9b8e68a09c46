package request

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts the requests a handler serves, by path and status, and
// times them. Create it with NewMetrics and hand it to NewHandler with
// WithMetrics; one Metrics may serve several handlers.
//
// It exports, on the registerer given to NewMetrics:
//
//	volga_http_requests_total{handler, code}             counter
//	volga_http_request_duration_seconds{handler}         histogram
//
// handler is the path served (FeaturesPath or HealthPath) or "other" for
// any other path, so that the label stays bounded whatever clients send;
// code is the HTTP status answered (StatusAborted for a request the
// service aborted before answering, or one whose client went away while
// it was looked up).
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the handler metrics on reg. To tell several
// handlers apart on one registry, wrap reg with labels of your own
// (prometheus.WrapRegistererWith); registering twice on the same labels
// is an error.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("request: NewMetrics needs a prometheus.Registerer")
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "volga_http_requests_total",
			Help: "HTTP requests answered by the lookup handler, by path and status code.",
		}, []string{"handler", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "volga_http_request_duration_seconds",
			Help: "Time to answer an HTTP request of the lookup handler, by path.",
			// 100µs to about 6.5s: a lookup is typically well under a
			// millisecond, a large batch or a slow client much longer.
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 9),
		}, []string{"handler"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			if c != m.requests {
				reg.Unregister(m.requests)
			}
			return nil, fmt.Errorf("request: registering the handler metrics: %w", err)
		}
	}
	return m, nil
}

// WithMetrics counts and times the handler's requests in m. A nil m
// leaves the handler uninstrumented.
func WithMetrics(m *Metrics) HandlerOption { return func(h *handler) { h.metrics = m } }

// StatusAborted is the code the request metrics count a request under
// when the service aborted it (a panic with http.ErrAbortHandler) before
// answering, or when its lookup failed because the request's context was
// cancelled (the client closed the connection): 499, the code nginx logs
// for a request closed before its answer.
const StatusAborted = 499

// observe records one answered request.
func (m *Metrics) observe(path string, code int, d time.Duration) {
	switch path {
	case FeaturesPath, HealthPath:
	default:
		path = "other"
	}
	if code == 0 {
		code = http.StatusOK // nothing written: net/http answers 200
	}
	m.requests.WithLabelValues(path, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(path).Observe(d.Seconds())
}
