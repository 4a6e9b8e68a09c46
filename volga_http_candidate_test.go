package volga_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/source"
)

// TestCandidateExpressionFails: a candidate row on which an expression of
// the query fails (a CAST of text that is not a number, in WHERE or in a
// computed argument) is the caller's mistake: in process the error matches
// pipeline.ErrCandidate, over HTTP it is a 400 naming the expression (it
// was a 500); a candidate that evaluates is answered with itself counted.
func TestCandidateExpressionFails(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, note := range []string{"3", "4", "skip", "5"} {
		b.Field(0).(*array.Int64Builder).Append(1)
		b.Field(1).(*array.Int64Builder).Append(int64(1000 * (i + 1)))
		b.Field(2).(*array.StringBuilder).Append(note)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, where := range []bool{false, true} {
		query := `SELECT user_id, sum(CAST(note AS BIGINT)) OVER w AS s FROM tx WHERE note <> 'skip'
			WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`
		want := "evaluating CAST(note AS BIGINT)"
		if where {
			query = strings.Replace(query, "note <> 'skip'", "note <> 'skip' AND CAST(note AS BIGINT) > 0", 1)
			want = "evaluating WHERE"
		}
		rec.Retain()
		p, err := volga.SQL(query, volga.WithSource("tx", source.NewMemory(schema, rec)))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err = p.Lookup(t.Context(), map[string]any{"user_id": 1}, time.UnixMilli(10_000), map[string]any{"note": "x7"})
		if !errors.Is(err, pipeline.ErrCandidate) || !strings.Contains(err.Error(), want) {
			t.Errorf("where %v: in process: %v; want pipeline.ErrCandidate, %q", where, err, want)
		}
		srv := httptest.NewServer(p.Handler())
		status, body := post(t, srv.URL+request.FeaturesPath, `{"key": {"user_id": 1}, "at": 10000, "row": {"note": "x7"}}`)
		if status != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("where %v: HTTP status %d, %s; want 400 with %q", where, status, body, want)
		}
		status, body = post(t, srv.URL+request.FeaturesPath, `{"key": {"user_id": 1}, "at": 10000, "row": {"note": "30"}}`)
		var res struct {
			Features map[string]json.Number `json:"features"`
		}
		if err := json.Unmarshal(body, &res); err != nil || status != http.StatusOK || res.Features["s"] != "42" {
			t.Errorf("where %v: a candidate that evaluates: status %d, %s; want s 42 (3+4+5+30)", where, status, body)
		}
		srv.Close()
	}
}

// TestHTTPIntegerKeyWrittenAsFloat: an integer key written with a
// fraction or an exponent is taken when float64 holds it exactly (1.0,
// 1e0) and refused with a 400 beyond 2^53, where it may already be
// another integer than the one written (1152921504606846977.0 parses as
// 1152921504606846976): before, the neighbouring key was looked up.
func TestHTTPIntegerKeyWrittenAsFloat(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, user := range []int64{1, 1152921504606846976, 1152921504606846977} {
		b.Field(0).(*array.Int64Builder).Append(user)
		b.Field(1).(*array.Int64Builder).Append(1000)
		b.Field(2).(*array.Int64Builder).Append(int64(10 * (i + 1)))
	}
	rec := b.NewRecordBatch()
	p, err := volga.SQL(`SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM tx`,
		volga.WithSource("tx", source.NewMemory(schema, rec)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		key    string
		status int
		want   string
	}{
		{"1.0", http.StatusOK, `"s":10`},
		{"1e0", http.StatusOK, `"s":10`},
		{"1152921504606846977", http.StatusOK, `"s":30`},
		{"1152921504606846977.0", http.StatusBadRequest, "beyond 2^53"},
		{"1.152921504606846977e18", http.StatusBadRequest, "write it as an integer"},
	} {
		status, body := post(t, srv.URL+request.FeaturesPath, `{"key": {"user_id": `+tc.key+`}, "at": 5000}`)
		if status != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("key %s: status %d, %s; want %d with %s", tc.key, status, body, tc.status, tc.want)
		}
	}
}
