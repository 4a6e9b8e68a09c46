package volga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// TestLookupUint64KeysBeyondInt64: keys of a uint64 column from 2^63 up
// (hashed ids use the whole range) are looked up in process, given as
// uint64, and over HTTP, written as JSON integers, with two window tasks
// (the key's task is found from its value); a candidate row may hold such
// a key too. Such keys were refused ("not an unsigned integer"), and over
// HTTP parsed as a float64 and refused as written with an exponent.
func TestLookupUint64KeysBeyondInt64(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ids := []uint64{1 << 63, 1<<64 - 1, 12345, 1<<63 + 1}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	// Row i: key ids[i%4], time i seconds, amount i+1; each key's sum
	// over the last minute at 100 s is the sum of its (i+1).
	want := map[uint64]int64{}
	for i := range 40 {
		id := ids[i%len(ids)]
		b.Field(0).(*array.Uint64Builder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(int64(i) * 1000)
		b.Field(2).(*array.Int64Builder).Append(int64(i + 1))
		want[id] += int64(i + 1) // all 40 s of rows are in a 100 s frame at 39 s

	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p, err := volga.SQL(`SELECT id, sum(amount) OVER w AS s FROM tx
		WINDOW w AS (PARTITION BY id ORDER BY ts RANGE BETWEEN INTERVAL '100' SECOND PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(schema, rec)), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(39_000)
	for _, id := range ids {
		res, err := p.Lookup(context.Background(), map[string]any{"id": id}, at, nil)
		if err != nil {
			t.Fatalf("Lookup(%d): %v", id, err)
		}
		if got := res.Values[0]; got != want[id] {
			t.Errorf("Lookup(%d) = %v, want %d", id, got, want[id])
		}
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	url := srv.URL + request.FeaturesPath
	for _, id := range ids {
		status, body := post(t, url, fmt.Sprintf(`{"key": {"id": %d}, "at": 39000}`, id))
		var res struct {
			Key      map[string]json.Number `json:"key"`
			Features map[string]json.Number `json:"features"`
		}
		if status != http.StatusOK {
			t.Fatalf("id %d: status %d: %s", id, status, body)
		}
		decodeJSON(t, body, &res)
		if res.Features["s"] != json.Number(fmt.Sprint(want[id])) || res.Key["id"] != json.Number(fmt.Sprint(id)) {
			t.Errorf("id %d over HTTP: %s, want s %d", id, body, want[id])
		}
		// A candidate row of the same key counts in its own frame.
		status, body = post(t, url, fmt.Sprintf(`{"key": {"id": %d}, "at": 39000, "row": {"id": %d, "ts": 39000, "amount": 1000}}`, id, id))
		if status != http.StatusOK {
			t.Fatalf("id %d with a candidate: status %d: %s", id, status, body)
		}
		decodeJSON(t, body, &res)
		if res.Features["s"] != json.Number(fmt.Sprint(want[id]+1000)) {
			t.Errorf("id %d with a candidate: %s, want s %d", id, body, want[id]+1000)
		}
	}
	for _, bad := range []string{"18446744073709551616", "-1", "1e19"} {
		status, body := post(t, url, `{"key": {"id": `+bad+`}, "at": 39000}`)
		if status != http.StatusBadRequest || !strings.Contains(string(body), `\"id\"`) && !strings.Contains(string(body), `"id"`) {
			t.Errorf("key %s: status %d: %s, want 400 naming the column", bad, status, body)
		}
	}
}
