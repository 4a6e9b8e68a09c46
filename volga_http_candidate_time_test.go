package volga_test

import (
	"context"
	"errors"
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
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// A candidate row happens at the lookup's time (SPEC section 6: counted
// in its own frame as if inserted at (key, at)). One that leaves out the
// event-time column gets the features batch mode computes for a row at
// that time, max(ts) and last_value(ts) included, which took the
// candidate's time as NULL; one that gives another time is refused (its
// time went into the aggregates while its frame was at's: a max(ts) a
// day after the lookup, a min(ts) a day before a one-hour frame).
func TestCandidateTakesTheLookupTime(t *testing.T) {
	for _, tsType := range []arrow.DataType{arrow.FixedWidthTypes.Timestamp_ms, arrow.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Timestamp_s} {
		t.Run(tsType.String(), func(t *testing.T) {
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "ts", Type: tsType},
				{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
			}, nil)
			const query = `SELECT user_id, ts, count(*) OVER w AS n, sum(amount) OVER w AS s,
				max(ts) OVER w AS max_ts, min(ts) OVER w AS min_ts, last_value(ts) OVER w AS last_ts
				FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`
			base := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
			at := base.Add(50 * time.Minute)
			// Rows of user 1 every 10 minutes from base (up to at-10min),
			// and the candidate's twin at at, last.
			build := func(withTwin bool) arrow.RecordBatch {
				b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
				defer b.Release()
				add := func(ts time.Time, amount int64) {
					b.Field(0).(*array.Int64Builder).Append(1)
					switch tb := b.Field(1).(type) {
					case *array.TimestampBuilder:
						if tsType.(*arrow.TimestampType).Unit == arrow.Second {
							tb.Append(arrow.Timestamp(ts.Unix()))
						} else {
							tb.Append(arrow.Timestamp(ts.UnixMilli()))
						}
					case *array.Int64Builder:
						tb.Append(ts.UnixMilli())
					}
					b.Field(2).(*array.Int64Builder).Append(amount)
				}
				for i := range 5 {
					add(base.Add(time.Duration(i)*10*time.Minute), int64(i+1))
				}
				if withTwin {
					add(at, 100)
				}
				return b.NewRecordBatch()
			}
			events, withTwin := build(false), build(true)
			defer events.Release()
			defer withTwin.Release()

			// Batch: the features of the twin row.
			out := sink.NewCollector()
			defer out.Release()
			bp, err := volga.SQL(query, volga.WithSource("tx", source.NewMemory(schema, withTwin)), volga.WithSink(out))
			if err != nil {
				t.Fatal(err)
			}
			if err := bp.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var want []any
			for _, r := range out.Records() {
				for _, row := range sink.Rows(r) {
					if row[len(row)-4] == nil { // min_ts is never NULL here
						t.Fatalf("batch row %v", row)
					}
					if fmt.Sprint(row[2]) == "6" { // n: the twin's frame holds all six rows
						want = row[2:]
					}
				}
			}
			if want == nil {
				t.Fatal("no batch row for the candidate's twin")
			}

			p, err := volga.SQL(query, volga.WithSource("tx", source.NewMemory(schema, events)))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, cand := range []map[string]any{{"amount": int64(100)}, {"amount": int64(100), "ts": at}, {"amount": int64(100), "TS": at.Add(300 * time.Microsecond)}} {
				res, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, at, cand)
				if err != nil {
					t.Fatalf("candidate %v: %v", cand, err)
				}
				if fmt.Sprint(res.Values) != fmt.Sprint(want) {
					t.Errorf("candidate %v: %v; batch gives its twin %v", cand, res.Values, want)
				}
			}
			for _, ts := range []any{at.Add(24 * time.Hour), at.Add(-24 * time.Hour), at.Add(time.Second), nil} {
				_, err := p.Lookup(context.Background(), map[string]any{"user_id": int64(1)}, at, map[string]any{"amount": int64(100), "ts": ts})
				if !errors.Is(err, pipeline.ErrCandidate) || !strings.Contains(err.Error(), `"ts"`) {
					t.Errorf("candidate at %v, lookup at %v: %v; want a pipeline.ErrCandidate naming ts", ts, at, err)
				}
			}

			srv := httptest.NewServer(p.Handler())
			defer srv.Close()
			url := srv.URL + request.FeaturesPath
			for _, body := range []string{
				fmt.Sprintf(`{"key":{"user_id":1},"at":%q,"row":{"amount":100}}`, at.Format(time.RFC3339)),
				fmt.Sprintf(`{"key":{"user_id":1},"at":%q,"row":{"amount":100,"ts":%d}}`, at.Format(time.RFC3339), at.UnixMilli()),
			} {
				status, b := post(t, url, body)
				if status != http.StatusOK || !strings.Contains(string(b), `"n":6,"s":115`) {
					t.Errorf("%s: status %d: %s; want the six rows' features", body, status, b)
				}
			}
			body := fmt.Sprintf(`{"key":{"user_id":1},"at":%q,"row":{"amount":100,"ts":%q}}`, at.Format(time.RFC3339), at.Add(24*time.Hour).Format(time.RFC3339))
			if status, b := post(t, url, body); status != http.StatusBadRequest || !strings.Contains(string(b), `\"ts\"`) {
				t.Errorf("%s: status %d: %s; want 400 naming ts", body, status, b)
			}
		})
	}
}
