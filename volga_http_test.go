package volga_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/window"
)

// httpEvent is one transaction of the HTTP tests.
type httpEvent struct {
	user   int64
	ts     int64 // ms
	amount float64
	cat    string
}

var httpSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "cat", Type: arrow.BinaryTypes.String},
}, nil)

// httpQuery has a RANGE hour, a RANGE ten minutes, a list and a map.
const httpQuery = `SELECT user_id, ts,
       count(*) OVER h AS n_1h,
       sum(amount) OVER h AS spend_1h,
       max(amount) OVER m AS max_10m,
       top(amount, 2) OVER h AS top2_1h,
       count_cate(amount, cat) OVER h AS n_by_cat_1h
FROM tx
WINDOW h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       m AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW)`

var httpFeatures = []string{"n_1h", "spend_1h", "max_10m", "top2_1h", "n_by_cat_1h"}

var t0 = time.Date(2024, 1, 3, 8, 0, 0, 0, time.UTC).UnixMilli()

// httpEvents generates n events of three users over about n minutes, in
// time order, with repeated times (peers).
func httpEvents(n int) []httpEvent {
	r := rand.New(rand.NewPCG(7, 11))
	out := make([]httpEvent, n)
	ts := t0
	for i := range out {
		if r.IntN(4) > 0 {
			ts += int64(r.IntN(120_000))
		}
		out[i] = httpEvent{user: int64(1 + r.IntN(3)), ts: ts, amount: float64(r.IntN(10_000)) / 100, cat: string(rune('a' + r.IntN(3)))}
	}
	return out
}

func httpSource(t testing.TB, evs []httpEvent) source.Source {
	b := array.NewRecordBuilder(memory.DefaultAllocator, httpSchema)
	defer b.Release()
	for _, e := range evs {
		b.Field(0).(*array.Int64Builder).Append(e.user)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ts))
		b.Field(2).(*array.Float64Builder).Append(e.amount)
		b.Field(3).(*array.StringBuilder).Append(e.cat)
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return source.NewMemorySliced(httpSchema, 64, rec)
}

// bruteFeatures computes the features of httpQuery for (user, at) by
// definition, with cand (when not nil) counted in its own frames: every
// event of the user with at-d <= ts <= at. Values are in the JSON form a
// response decodes to (numbers as float64).
func bruteFeatures(evs []httpEvent, user, at int64, cand *httpEvent) []any {
	in := func(e httpEvent, d int64) bool { return e.user == user && e.ts >= at-d && e.ts <= at }
	var hour, tenMin []httpEvent
	for _, e := range evs {
		if in(e, 3_600_000) {
			hour = append(hour, e)
		}
		if in(e, 600_000) {
			tenMin = append(tenMin, e)
		}
	}
	if cand != nil {
		hour, tenMin = append(hour, *cand), append(tenMin, *cand)
	}
	var sum, mx any
	for i, e := range hour {
		if i == 0 {
			sum = e.amount
		} else {
			sum = sum.(float64) + e.amount
		}
	}
	for _, e := range tenMin {
		if mx == nil || e.amount > mx.(float64) {
			mx = e.amount
		}
	}
	amounts := make([]float64, 0, len(hour))
	byCat := map[string]any{}
	for _, e := range hour {
		amounts = append(amounts, e.amount)
		c, _ := byCat[e.cat].(float64)
		byCat[e.cat] = c + 1
	}
	slices.Sort(amounts)
	slices.Reverse(amounts)
	top := []any{}
	for _, a := range amounts[:min(2, len(amounts))] {
		top = append(top, a)
	}
	return []any{float64(len(hour)), sum, mx, top, byCat}
}

// servePipeline runs httpQuery over evs to the end in streaming mode and
// serves it. (Rows of equal time in different batches would be late
// without an out-of-orderness bound: the watermark is at their time.)
func servePipeline(t *testing.T, evs []httpEvent, opts ...request.HandlerOption) (*httptest.Server, *volga.Pipeline) {
	t.Helper()
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, evs)), volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.LateDropped != 0 {
		t.Fatalf("%d late rows", st.LateDropped)
	}
	srv := httptest.NewServer(p.Handler(opts...))
	t.Cleanup(srv.Close)
	return srv, p
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// orderedKeys returns the member names of a JSON object in order.
func orderedKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

type wireResult struct {
	Key       map[string]any  `json:"key"`
	At        string          `json:"at"`
	Watermark any             `json:"watermark"`
	Features  json.RawMessage `json:"features"`
}

// checkResult compares one decoded result with the brute-force features.
func checkResult(t *testing.T, label string, res wireResult, want []any) {
	t.Helper()
	if got := orderedKeys(t, res.Features); !slices.Equal(got, httpFeatures) {
		t.Errorf("%s: features in order %v, want %v", label, got, httpFeatures)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Features, &got); err != nil {
		t.Fatal(err)
	}
	for i, name := range httpFeatures {
		if !approxEqual(got[name], want[i]) {
			t.Errorf("%s: %s = %v, want %v", label, name, got[name], want[i])
		}
	}
}

func approxEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*max(1, math.Abs(x), math.Abs(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !approxEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !approxEqual(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// newestOf is the time of the user's newest event: lookups reach back
// one longest frame from there at most (older state is not kept).
func newestOf(evs []httpEvent, user int64) int64 {
	var n int64
	for _, e := range evs {
		if e.user == user {
			n = max(n, e.ts)
		}
	}
	return n
}

func rfc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

func TestHandlerLookups(t *testing.T) {
	evs := httpEvents(600)
	srv, _ := servePipeline(t, evs)
	r := rand.New(rand.NewPCG(3, 4))
	url := srv.URL + request.FeaturesPath

	// Single requests at event times (peers included), between them and
	// after the last event.
	for i := 0; i < 40; i++ {
		user := int64(1 + r.IntN(3))
		// On the newest event (its peers count) or up to 90 minutes after.
		at := newestOf(evs, user)
		if i%4 != 0 {
			at += int64(r.IntN(5_400_000))
		}
		body := fmt.Sprintf(`{"key": {"user_id": %d}, "at": %q}`, user, rfc(at))
		status, b := post(t, url, body)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", body, status, b)
		}
		var res wireResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if res.At != rfc(at) || res.Key["user_id"] != float64(user) || res.Watermark != "+inf" {
			t.Errorf("%s: echoed key %v, at %s, watermark %v", body, res.Key, res.At, res.Watermark)
		}
		checkResult(t, body, res, bruteFeatures(evs, user, at, nil))
	}

	// An array of requests, with "at" in epoch milliseconds and a
	// candidate row, is answered in order.
	type q struct {
		user, at int64
		cand     *httpEvent
	}
	var qs []q
	var parts []string
	for i := 0; i < 10; i++ {
		x := q{user: int64(1 + i%3)}
		x.at = newestOf(evs, x.user) + int64(r.IntN(1_000_000))
		row := ""
		if i%2 == 1 {
			x.cand = &httpEvent{user: x.user, ts: x.at, amount: 12.25, cat: "z"}
			row = fmt.Sprintf(`, "row": {"user_id": %d, "ts": %q, "amount": 12.25, "cat": "z"}`, x.user, rfc(x.at))
		}
		qs = append(qs, x)
		parts = append(parts, fmt.Sprintf(`{"key": {"USER_ID": %d}, "at": %d%s}`, x.user, x.at, row))
	}
	status, b := post(t, url, "["+strings.Join(parts, ",\n")+"]")
	if status != http.StatusOK {
		t.Fatalf("array: status %d: %s", status, b)
	}
	var results []wireResult
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(qs) {
		t.Fatalf("%d results for %d requests", len(results), len(qs))
	}
	for i, x := range qs {
		if results[i].At != rfc(x.at) {
			t.Errorf("result %d is at %s, want %s", i, results[i].At, rfc(x.at))
		}
		checkResult(t, fmt.Sprintf("array element %d", i), results[i], bruteFeatures(evs, x.user, x.at, x.cand))
	}

	// An empty array is an empty answer.
	if status, b := post(t, url, "[]"); status != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("[]: status %d, %s", status, b)
	}
}

// TestHandlerEmptyKey: a key without events gets the empty-frame values
// of SPEC section 4.
func TestHandlerEmptyKey(t *testing.T) {
	srv, _ := servePipeline(t, httpEvents(50))
	status, b := post(t, srv.URL+request.FeaturesPath, `{"key": {"user_id": 999}, "at": "2024-01-03T10:00:00Z"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	want := `{"key":{"user_id":999},"at":"2024-01-03T10:00:00Z","watermark":"+inf","features":{"n_1h":0,"spend_1h":null,"max_10m":null,"top2_1h":[],"n_by_cat_1h":{}}}`
	if got := strings.TrimSpace(string(b)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestHandlerErrors(t *testing.T) {
	srv, _ := servePipeline(t, httpEvents(400), request.WithMaxBodyBytes(4096))
	url := srv.URL + request.FeaturesPath
	at := `"2024-01-03T10:00:00Z"`
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string // the error must contain it
	}{
		{"malformed JSON", `{"key": {"user_id": 1}, "at": `, 400, "malformed JSON"},
		{"not an object", `42`, 400, "want a JSON object"},
		{"empty body", ``, 400, "empty body"},
		{"trailing data", `{"key": {"user_id": 1}, "at": ` + at + `} {}`, 400, "after the JSON value"},
		{"unknown field", `{"key": {"user_id": 1}, "at": ` + at + `, "ts": 1}`, 400, `unknown field "ts"`},
		{"missing key", `{"at": ` + at + `}`, 400, `missing "key"`},
		{"key not an object", `{"key": 1, "at": ` + at + `}`, 400, "malformed JSON"},
		{"missing key column", `{"key": {}, "at": ` + at + `}`, 400, `missing key column "user_id"`},
		{"unknown key column", `{"key": {"user_id": 1, "shop": 2}, "at": ` + at + `}`, 400, `unknown key column "shop"`},
		{"key column twice", `{"key": {"user_id": 1, "USER_ID": 2}, "at": ` + at + `}`, 400, "given twice"},
		{"key of the wrong type", `{"key": {"user_id": "u1"}, "at": ` + at + `}`, 400, "is not an integer"},
		{"fractional integer key", `{"key": {"user_id": 1.5}, "at": ` + at + `}`, 400, "is not an integer"},
		{"key not a scalar", `{"key": {"user_id": [1]}, "at": ` + at + `}`, 400, "is not a number, string, boolean or null"},
		{"missing at", `{"key": {"user_id": 1}}`, 400, `missing "at"`},
		{"bad at", `{"key": {"user_id": 1}, "at": "yesterday"}`, 400, `bad "at" "yesterday"`},
		{"fractional at", `{"key": {"user_id": 1}, "at": 1.5}`, 400, "must be an integer"},
		{"at of the wrong type", `{"key": {"user_id": 1}, "at": true}`, 400, `bad "at"`},
		{"candidate unknown column", `{"key": {"user_id": 1}, "at": ` + at + `, "row": {"amt": 1}}`, 400, `unknown column "amt"`},
		{"candidate wrong type", `{"key": {"user_id": 1}, "at": ` + at + `, "row": {"amount": "much"}}`, 400, `column "amount"`},
		{"bad array element", `[{"key": {"user_id": 1}, "at": ` + at + `}, {"key": {"user_id": 1}}]`, 400, `request 1: missing "at"`},
		{"too old", `{"key": {"user_id": 1}, "at": "2020-01-01T00:00:00Z"}`, 400, "older than the state kept"},
		{"body too large", `{"key": {"user_id": 1}, "at": ` + at + `, "row": {"cat": "` + strings.Repeat("x", 5000) + `"}}`, 413, "larger than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := post(t, url, tc.body)
			var e struct{ Error string }
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("status %d, body %s: not a JSON error: %v", status, b, err)
			}
			if status != tc.status || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("status %d, error %q; want %d and an error containing %q", status, e.Error, tc.status, tc.msg)
			}
		})
	}

	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: status %d, Allow %q; want 405, POST", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Get(srv.URL + request.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: status %d", resp.StatusCode)
	}
}

// TestHandlerBeforeRun: a pipeline that has not started answers 503.
func TestHandlerBeforeRun(t *testing.T) {
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, httpEvents(10))))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	status, b := post(t, srv.URL+request.FeaturesPath, `{"key": {"user_id": 1}, "at": 0}`)
	if status != http.StatusServiceUnavailable {
		t.Errorf("status %d (%s), want 503", status, b)
	}
}

// TestReady: Ready is pipeline.ErrNotRunning before the run and nil once
// it started (and after it ended), and a pipeline without sliding
// windows is never ready, saying why.
func TestReady(t *testing.T) {
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, httpEvents(10))))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(); !errors.Is(err, pipeline.ErrNotRunning) {
		t.Errorf("Ready before Run: %v, want ErrNotRunning", err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(); err != nil {
		t.Errorf("Ready after Run: %v", err)
	}
	g, err := volga.SQL("SELECT user_id, count(*) AS n FROM tx GROUP BY user_id, tumble(ts, INTERVAL '1' HOUR)",
		volga.WithSource("tx", httpSource(t, httpEvents(10))))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Ready(); !errors.Is(err, pipeline.ErrNoLookup) {
		t.Errorf("Ready of a GROUP BY pipeline: %v, want ErrNoLookup", err)
	}
}

// TestRecomputeCheck: lookups served over HTTP and logged, recomputed by
// Backfill, check out consistent; a tampered value is caught.
func TestRecomputeCheck(t *testing.T) {
	evs := httpEvents(500)
	srv, _ := servePipeline(t, evs)
	var log bytes.Buffer
	for i := 0; i < 30; i++ {
		at := newestOf(evs, int64(1+i%3)) + int64(i/3)*397_000 // the first on an event time: peers count
		status, b := post(t, srv.URL+request.FeaturesPath, fmt.Sprintf(`{"key": {"user_id": %d}, "at": %d}`, 1+i%3, at))
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, b)
		}
		log.Write(b)
	}
	served, err := request.ReadLog(bytes.NewReader(log.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	recomputed, err := volga.Recompute(context.Background(), httpQuery, served, volga.WithSource("tx", httpSource(t, evs)))
	if err != nil {
		t.Fatal(err)
	}
	rep := request.Check(served, recomputed, request.CheckOptions{})
	if !rep.OK() || rep.Matched != 30*len(httpFeatures) || rep.Lookups != 30 {
		t.Fatalf("honest log:\n%s", rep)
	}

	// Tamper with one spend.
	i := slices.IndexFunc(served, func(r request.Record) bool { v, _ := r.Features.Get("spend_1h"); return v != nil })
	v, _ := served[i].Features.Get("spend_1h")
	f, _ := strconv.ParseFloat(string(v.(json.Number)), 64)
	served[i].Features.Values[1] = json.Number(strconv.FormatFloat(f*1.5, 'g', -1, 64))
	rep = request.Check(served, recomputed, request.CheckOptions{})
	if rep.OK() || rep.Mismatched != 1 || math.Abs(rep.MaxRelDiff-0.5/1.5) > 1e-9 {
		t.Fatalf("tampered log:\n%s", rep)
	}
	if !strings.Contains(rep.String(), "spend_1h") {
		t.Errorf("the report does not name the feature:\n%s", rep)
	}
}

// BenchmarkPipelineHandler is the server's cost and allocations per
// lookup request of the lookup workload's shape (one int64 key, epoch
// milliseconds, four float and count features of a pipeline that has
// ingested 20 000 events), from the request body to the response bytes,
// without the network: the request and the response writer are reused.
func BenchmarkPipelineHandler(b *testing.B) {
	const q = `SELECT user_id, ts,
       sum(amount) OVER w AS sum_1d, count(*) OVER w AS n_1d,
       avg(amount) OVER w AS avg_1d, max(amount) OVER w AS max_1d
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)`
	evs := httpEvents(20_000)
	p, err := volga.SQL(q, volga.WithSource("tx", httpSource(b, evs)), volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithLookupRetention(30*24*time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	h := p.Handler()
	body := fmt.Sprintf(`{"key":{"user_id":2},"at":%d}`, newestOf(evs, 2)-3_600_000)
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

// TestLookupKeyDroppedByClusteredRun: after a batch run over input
// clustered by user (WithClusteredBy), which drops each user's state once
// the input moves on, a lookup of a finished user answers
// window.ErrKeyDropped in process and 501 over HTTP (a loopback listener),
// not features computed from an empty state; the last user, still open
// at the end, is answered.
func TestLookupKeyDroppedByClusteredRun(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for user := range 3 {
		for k := range 4 {
			b.Field(0).(*array.Int64Builder).Append(int64(user))
			b.Field(1).(*array.Int64Builder).Append(int64(k * 60_000))
			b.Field(2).(*array.Float64Builder).Append(float64(user*10 + k))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	p, err := volga.SQL(`SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM tx`,
		volga.WithSource("tx", source.NewMemory(schema, rec.NewSlice(0, 5), rec.NewSlice(5, 12))),
		volga.WithClusteredBy("user_id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(200_000)
	if _, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(0)}, at, nil); !errors.Is(err, window.ErrKeyDropped) {
		t.Fatalf("lookup of a finished user: %v, want ErrKeyDropped", err)
	}
	res, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(2)}, at, nil)
	if err != nil || res.Values[0] != 20.0+21+22+23 {
		t.Fatalf("lookup of the last user: %v, %v; want 86", res.Values, err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/features", "application/json", strings.NewReader(`{"key": {"user_id": 1}, "at": "1970-01-01T00:03:20Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), "dropped") {
		t.Fatalf("HTTP lookup of a finished user: %d %s", resp.StatusCode, body)
	}
}
