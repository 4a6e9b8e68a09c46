package request_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/request"
)

// benchService answers every lookup with four fixed features, like the
// lookup workload's pipelines.
type benchService struct{ names []string }

func (s benchService) KeyColumns() []string { return []string{"user_id"} }

func (s benchService) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (request.Features, error) {
	return request.Features{Names: s.names, Values: []any{1234.5, int64(17), 72.61764705882354, 998.25}, Watermark: at.UnixMilli()}, nil
}

// BenchmarkHandler is the handler's own cost per lookup request (decode,
// encode, routing), without the network and the engine.
func BenchmarkHandler(b *testing.B) {
	h := request.NewHandler(benchService{names: []string{"sum_30d", "n_30d", "avg_30d", "max_30d"}})
	body := `{"key":{"user_id":48213},"at":1700000000123}`
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, request.FeaturesPath, strings.NewReader(body))
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkHandlerOnly is the handler's own cost and allocations per
// lookup request: the request, its body and the response writer are
// reused, so what is counted is reading the body, decoding it, the
// service call (a fixed answer) and encoding the response.
func BenchmarkHandlerOnly(b *testing.B) {
	h := request.NewHandler(benchService{names: []string{"sum_30d", "n_30d", "avg_30d", "max_30d"}})
	const body = `{"key":{"user_id":48213},"at":1700000000123}`
	rd := strings.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, request.FeaturesPath, nil)
	req.Body = io.NopCloser(rd)
	req.ContentLength = int64(len(body))
	w := testutil.NewResponseWriter()
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		w.Reset()
		h.ServeHTTP(w, req)
		if w.Status != 200 {
			b.Fatalf("status %d: %s", w.Status, w.Body)
		}
	}
}
