package volga_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// Keys and values beyond 2^53, which a float64 cannot tell apart: a
// response (or request) that goes through float64 anywhere mixes them up.
const (
	bigUser1 = int64(1)<<60 + 1
	bigUser2 = int64(1)<<60 + 2
	bigV     = int64(1)<<55 + 3
)

var paritySchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// parityQuery has a feature of every result shape: integers, floats
// (some ±Inf or NaN), a timestamp, a string, a boolean, lists, a list of
// topn_frequency structs and maps keyed by strings, booleans and
// timestamps.
const parityQuery = `SELECT user_id, ts,
       count(*) OVER w AS n,
       sum(v) OVER w AS sum_v,
       max(v) OVER w AS max_v,
       sum(x) OVER w AS sum_x,
       max(x) OVER w AS max_x,
       min(x) OVER w AS min_x,
       avg(x) OVER w AS avg_x,
       max(ts) OVER w AS last_ts,
       last_value(cat) OVER w AS last_cat,
       first_value(flag) OVER w AS first_flag,
       top(v, 2) OVER w AS top_v,
       topn_frequency(cat, 2) OVER w AS top_cats,
       count_cate(v, cat) OVER w AS n_by_cat,
       sum_cate(v, flag) OVER w AS v_by_flag,
       max_cate(x, ts) OVER w AS x_by_ts
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`

type parityRow struct {
	user int64
	ts   int64
	v    any // int64 or nil
	x    any // float64 or nil
	cat  any // string or nil
	flag any // bool or nil
}

func parityRows() []parityRow {
	return []parityRow{
		{bigUser1, t0, bigV, 1.5, "a", true},
		{bigUser2, t0 + 1000, int64(7), 2.25, "b", false},
		{bigUser1, t0 + 60_000, bigV + 2, math.Inf(1), "b", nil},
		{bigUser1, t0 + 120_000, nil, nil, nil, false},
		{bigUser2, t0 + 180_000, -bigV, math.Inf(-1), "b", true},
		{bigUser1, t0 + 240_000, int64(-4), 0.1, "a\"q\n\u00e9", true},
		{bigUser2, t0 + 300_000, int64(1), math.NaN(), "c", true},
	}
}

func paritySource(t testing.TB, rows []parityRow) source.Source {
	b := array.NewRecordBuilder(memory.DefaultAllocator, paritySchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.user)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		if v, ok := r.v.(int64); ok {
			b.Field(2).(*array.Int64Builder).Append(v)
		} else {
			b.Field(2).AppendNull()
		}
		if x, ok := r.x.(float64); ok {
			b.Field(3).(*array.Float64Builder).Append(x)
		} else {
			b.Field(3).AppendNull()
		}
		if c, ok := r.cat.(string); ok {
			b.Field(4).(*array.StringBuilder).Append(c)
		} else {
			b.Field(4).AppendNull()
		}
		if f, ok := r.flag.(bool); ok {
			b.Field(5).(*array.BooleanBuilder).Append(f)
		} else {
			b.Field(5).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return source.NewMemory(paritySchema, rec)
}

// decodeJSON decodes b with numbers as json.Number, so that no integer
// goes through a float64.
func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// jsonEqual reports whether got, a value decoded from a response with
// numbers as json.Number, is the JSON form of want, a value of an
// in-process LookupResult, exactly: integers digit for digit, floats bit
// for bit (NaN and ±Inf as null), times as RFC 3339 UTC, maps as objects
// in key order (order is checked by the caller) keyed by their keys' text.
func jsonEqual(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case bool, string:
		return got == want
	case int64:
		n, ok := got.(json.Number)
		return ok && string(n) == strconv.FormatInt(w, 10)
	case uint64:
		n, ok := got.(json.Number)
		return ok && string(n) == strconv.FormatUint(w, 10)
	case float64:
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return got == nil
		}
		n, ok := got.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && math.Float64bits(f) == math.Float64bits(w)
	case time.Time:
		s, ok := got.(string)
		return ok && s == w.UTC().Format(time.RFC3339Nano)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonEqual(w[i], g[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !jsonEqual(v, gv) {
				return false
			}
		}
		return true
	case []sink.MapEntry:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for _, e := range w {
			var k string
			switch kk := e.Key.(type) {
			case string:
				k = kk
			case int64:
				k = strconv.FormatInt(kk, 10)
			case bool:
				k = strconv.FormatBool(kk)
			case time.Time:
				k = kk.UTC().Format(time.RFC3339Nano)
			default:
				return false
			}
			if gv, ok := g[k]; !ok || !jsonEqual(e.Value, gv) {
				return false
			}
		}
		return true
	}
	return false
}

// mapKeyOrder is the order of a map feature's keys in a response: the
// in-process order of the entries.
func mapKeyOrder(v any) []string {
	es, ok := v.([]sink.MapEntry)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range es {
		switch k := e.Key.(type) {
		case string:
			out = append(out, k)
		case int64:
			out = append(out, strconv.FormatInt(k, 10))
		case bool:
			out = append(out, strconv.FormatBool(k))
		case time.Time:
			out = append(out, k.UTC().Format(time.RFC3339Nano))
		}
	}
	return out
}

type parityResult struct {
	Key       map[string]any  `json:"key"`
	At        string          `json:"at"`
	Watermark any             `json:"watermark"`
	Features  json.RawMessage `json:"features"`
}

// checkParity compares one response with the in-process lookup of the
// same key, time and candidate.
func checkParity(t *testing.T, p *volga.Pipeline, label string, res parityResult, user int64, at time.Time, cand map[string]any) {
	t.Helper()
	want, err := p.Lookup(context.Background(), map[string]any{"user_id": user}, at, cand)
	if err != nil {
		t.Fatalf("%s: in-process lookup: %v", label, err)
	}
	if n, ok := res.Key["user_id"].(json.Number); !ok || string(n) != strconv.FormatInt(user, 10) {
		t.Errorf("%s: echoed key %v, want user_id %d", label, res.Key, user)
	}
	if res.At != at.UTC().Format(time.RFC3339Nano) {
		t.Errorf("%s: echoed at %s, want %s", label, res.At, at.UTC().Format(time.RFC3339Nano))
	}
	if res.Watermark != "+inf" || want.Watermark != request.EndWatermark {
		t.Errorf("%s: watermark %v (in process %d), want +inf", label, res.Watermark, want.Watermark)
	}
	if got := orderedKeys(t, res.Features); !slices.Equal(got, want.Names) {
		t.Fatalf("%s: features %v, want %v", label, got, want.Names)
	}
	var got map[string]json.RawMessage
	decodeJSON(t, res.Features, &got)
	for i, name := range want.Names {
		var g any
		decodeJSON(t, got[name], &g)
		if !jsonEqual(want.Values[i], g) {
			t.Errorf("%s: %s = %s over HTTP, %#v in process", label, name, got[name], want.Values[i])
		}
		if order := mapKeyOrder(want.Values[i]); order != nil {
			if k := orderedKeys(t, got[name]); !slices.Equal(k, order) {
				t.Errorf("%s: %s has its keys in order %q, want %q", label, name, k, order)
			}
		}
	}
}

// TestHTTPEqualsInProcessLookup: over a loopback listener, every feature
// of every result shape, for keys and values beyond 2^53, at times given
// as RFC 3339 with offsets and as epoch milliseconds, with and without a
// candidate row, equals the in-process Lookup exactly, and a key that
// differs from another only beyond float64 precision gets its own
// features.
func TestHTTPEqualsInProcessLookup(t *testing.T) {
	rows := parityRows()
	p, err := volga.SQL(parityQuery, volga.WithSource("tx", paritySource(t, rows)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	url := srv.URL + request.FeaturesPath

	paris := time.FixedZone("UTC+1", 3600)
	type lookupCase struct {
		user   int64
		at     time.Time
		atJSON string
		row    string         // JSON candidate row, or ""
		cand   map[string]any // the same candidate, in process
	}
	var cases []lookupCase
	for _, r := range rows {
		for _, d := range []int64{0, 1, 30_000, 3_600_000} {
			at := time.UnixMilli(r.ts + d)
			cases = append(cases,
				lookupCase{user: r.user, at: at, atJSON: strconv.Quote(at.In(paris).Format(time.RFC3339Nano))},
				lookupCase{user: r.user, at: at, atJSON: strconv.FormatInt(at.UnixMilli(), 10)})
		}
	}
	last := time.UnixMilli(t0 + 300_000)
	cases = append(cases,
		lookupCase{user: bigUser1, at: last, atJSON: strconv.Quote(last.Format(time.RFC3339)),
			row:  fmt.Sprintf(`{"v": %d, "x": 1e300, "cat": "b", "flag": false}`, bigV+4),
			cand: map[string]any{"v": bigV + 4, "x": 1e300, "cat": "b", "flag": false}},
		lookupCase{user: bigUser2, at: last, atJSON: strconv.Quote("2024-01-03T03:05:00-05:00"),
			row:  fmt.Sprintf(`{"user_id": %d, "v": null, "x": -0.5, "cat": "\u00e9", "flag": true}`, bigUser2),
			cand: map[string]any{"user_id": bigUser2, "v": nil, "x": -0.5, "cat": "é", "flag": true}},
		// A key without rows: empty-frame values.
		lookupCase{user: bigUser1 + 2, at: last, atJSON: strconv.FormatInt(last.UnixMilli(), 10)},
	)

	var batch []string
	for i, c := range cases {
		body := fmt.Sprintf(`{"key": {"user_id": %d}, "at": %s`, c.user, c.atJSON)
		if c.row != "" {
			body += `, "row": ` + c.row
		}
		body += "}"
		batch = append(batch, body)
		status, b := post(t, url, body)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", body, status, b)
		}
		var res parityResult
		decodeJSON(t, b, &res)
		checkParity(t, p, fmt.Sprintf("lookup %d %s", i, body), res, c.user, c.at, c.cand)
	}
	// The same lookups as one array.
	status, b := post(t, url, "["+strings.Join(batch, ",")+"]")
	if status != http.StatusOK {
		t.Fatalf("array: status %d: %s", status, b)
	}
	var results []parityResult
	decodeJSON(t, b, &results)
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d lookups", len(results), len(cases))
	}
	for i, c := range cases {
		checkParity(t, p, fmt.Sprintf("array element %d", i), results[i], c.user, c.at, c.cand)
	}

	// The two big keys, one apart, have features of their own.
	_, b1 := post(t, url, fmt.Sprintf(`{"key": {"user_id": %d}, "at": %d}`, bigUser1, last.UnixMilli()))
	_, b2 := post(t, url, fmt.Sprintf(`{"key": {"user_id": %d}, "at": %d}`, bigUser2, last.UnixMilli()))
	var r1, r2 parityResult
	decodeJSON(t, b1, &r1)
	decodeJSON(t, b2, &r2)
	var f1, f2 struct {
		SumV json.Number `json:"sum_v"`
	}
	decodeJSON(t, r1.Features, &f1)
	decodeJSON(t, r2.Features, &f2)
	if f1.SumV != json.Number(strconv.FormatInt(bigV+bigV+2-4, 10)) || f2.SumV != json.Number(strconv.FormatInt(7-bigV+1, 10)) {
		t.Errorf("sum_v of the big keys: %s and %s, want %d and %d", f1.SumV, f2.SumV, bigV+bigV+2-4, 7-bigV+1)
	}
}

// TestHTTPLookupsDuringIngest: lookups over a loopback listener from
// several goroutines while a streaming pipeline ingests (run with -race)
// answer 503 before it starts, then, for every time at or before the
// watermark an answer reports, exactly the features of every row up to
// that time.
func TestHTTPLookupsDuringIngest(t *testing.T) {
	evs := httpEvents(4000)
	p, err := volga.SQL(httpQuery, volga.WithSource("tx", httpSource(t, evs)), volga.WithMode(volga.Streaming),
		volga.WithMaxOutOfOrder(time.Second), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	url := srv.URL + request.FeaturesPath
	if status, b := post(t, url, `{"key": {"user_id": 1}, "at": 0}`); status != http.StatusServiceUnavailable {
		t.Fatalf("before the run: %d %s", status, b)
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(context.Background()) }()
	type outcome struct{ checked, during int }
	results := make(chan outcome, 4)
	errs := make(chan string, 100)
	// lookup posts one lookup and returns the status, the result and the
	// watermark it reports (MinInt64 for none, MaxInt64 for +inf).
	lookup := func(user, at int64) (int, wireResult, int64, string) {
		body := fmt.Sprintf(`{"key": {"user_id": %d}, "at": %d}`, user, at)
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, wireResult{}, 0, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res wireResult
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, res, 0, fmt.Sprintf("%s: %d %s", body, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return 0, res, 0, fmt.Sprintf("%s: %v", b, err)
		}
		w := int64(math.MinInt64)
		if x, ok := res.Watermark.(string); ok {
			if x == "+inf" {
				w = math.MaxInt64
			} else if tm, err := time.Parse(time.RFC3339Nano, x); err == nil {
				w = tm.UnixMilli()
			}
		}
		return resp.StatusCode, res, w, body
	}
	far := t0 + 365*24*3_600_000 // never too old: it tells the watermark
	for g := range 4 {
		go func() {
			var o outcome
			defer func() { results <- o }()
			user := int64(1 + g%3)
			for i := 0; ; i++ {
				time.Sleep(time.Millisecond) // leave the ingest some CPU
				running := true
				select {
				case err := <-ran:
					ran <- err // for the others and the test
					running = false
				default:
				}
				status, _, w, msg := lookup(user, far)
				if status == http.StatusServiceUnavailable {
					continue // not started yet
				}
				if status != http.StatusOK {
					errs <- msg
					return
				}
				if w == math.MinInt64 {
					continue // no row yet
				}
				at := min(w, newestOf(evs, user)) - int64((i*7919)%600_000)
				status, res, w2, msg := lookup(user, at)
				if status == http.StatusBadRequest && strings.Contains(msg, "older than the state kept") {
					continue // the user's newest row is over an hour behind the watermark
				}
				if status != http.StatusOK {
					errs <- msg
					return
				}
				if at > w2 {
					errs <- fmt.Sprintf("%s: watermark went back from %d to %d", msg, w, w2)
					return
				}
				want := bruteFeatures(evs, user, at, nil)
				var got map[string]any
				json.Unmarshal(res.Features, &got)
				for k, name := range httpFeatures {
					if !approxEqual(got[name], want[k]) {
						errs <- fmt.Sprintf("%s (watermark %v): %s = %v, want %v", msg, res.Watermark, name, got[name], want[k])
						return
					}
				}
				o.checked++
				if running {
					o.during++
				}
				if w == math.MaxInt64 {
					return
				}
			}
		}()
	}
	total := outcome{}
	for range 4 {
		o := <-results
		total.checked += o.checked
		total.during += o.during
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if total.checked == 0 {
		t.Fatal("no answer was checked")
	}
	t.Logf("%d answers checked, %d while the pipeline ran", total.checked, total.during)
}
