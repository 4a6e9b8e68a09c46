package volga_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/source"
)

// narrowSchema has a key of an unsigned type and value columns narrower
// than int64.
var narrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "shop", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
}, nil)

func narrowPipeline(t *testing.T) *httptest.Server {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, narrowSchema)
	defer b.Release()
	for i := range 4 {
		b.Field(0).(*array.Uint32Builder).Append(uint32(7 + i%2))
		b.Field(1).(*array.Int64Builder).Append(int64(i * 1000))
		b.Field(2).(*array.Int32Builder).Append(int32(10 * (i + 1)))
		b.Field(3).(*array.Uint8Builder).Append(uint8(i))
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	p, err := volga.SQL(`SELECT shop, sum(qty) OVER w AS qty_1m, max(small) OVER w AS small_1m
		FROM tx WINDOW w AS (PARTITION BY shop ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(narrowSchema, rec)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// TestHandlerNarrowColumns: over a loopback listener, a key or candidate
// value that its column's type cannot hold (a negative unsigned key, an
// int32 column given 2^40) is the caller's mistake, 400 naming the
// column, not a 500; values that fit are answered.
func TestHandlerNarrowColumns(t *testing.T) {
	srv := narrowPipeline(t)
	url := srv.URL + request.FeaturesPath
	status, b := post(t, url, `{"key": {"shop": 7}, "at": 2000, "row": {"qty": 5, "small": 255}}`)
	if status != http.StatusOK {
		t.Fatalf("values that fit: status %d: %s", status, b)
	}
	var res struct {
		Features map[string]json.Number `json:"features"`
	}
	decodeJSON(t, b, &res)
	if res.Features["qty_1m"] != "45" || res.Features["small_1m"] != "255" {
		t.Errorf("features %v, want qty_1m 45 (10+30+5) and small_1m 255", res.Features)
	}
	for _, tc := range []struct {
		name, body, msg string
	}{
		{"negative unsigned key", `{"key": {"shop": -1}, "at": 2000}`, `"shop"`},
		{"candidate int32 out of range", `{"key": {"shop": 7}, "at": 2000, "row": {"qty": 1099511627776}}`, `"qty"`},
		{"candidate uint8 out of range", `{"key": {"shop": 7}, "at": 2000, "row": {"small": 256}}`, `"small"`},
		{"candidate uint8 negative", `{"key": {"shop": 7}, "at": 2000, "row": {"small": -1}}`, `"small"`},
		{"candidate key negative", `{"key": {"shop": 7}, "at": 2000, "row": {"shop": -7}}`, `"shop"`},
	} {
		status, b := post(t, url, tc.body)
		var e struct{ Error string }
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: status %d, %s: not a JSON error", tc.name, status, b)
		}
		if status != http.StatusBadRequest || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: status %d, error %q; want 400 naming %s", tc.name, status, e.Error, tc.msg)
		}
	}
}

// TestHandlerCandidateColumnTwice: a candidate row that gives a column
// twice, in two spellings (columns match case-insensitively), is refused
// with 400 naming both, every time; one of the two values was taken at
// random (Go's map order), so the same request got different features.
func TestHandlerCandidateColumnTwice(t *testing.T) {
	srv := narrowPipeline(t)
	for range 20 {
		status, b := post(t, srv.URL+request.FeaturesPath, `{"key": {"shop": 7}, "at": 2000, "row": {"qty": 5, "QTY": 500}}`)
		var e struct{ Error string }
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("status %d, %s: not a JSON error", status, b)
		}
		if status != http.StatusBadRequest || !strings.Contains(e.Error, `"qty"`) || !strings.Contains(e.Error, `"QTY"`) {
			t.Fatalf("status %d, error %q; want 400 naming \"qty\" and \"QTY\"", status, e.Error)
		}
	}
}
