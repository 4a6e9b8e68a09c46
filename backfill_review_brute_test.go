package volga_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

const reviewBackfillSQL = `
SELECT user_id, ts, amount,
       sum(amount) OVER w AS spend_1h,
       count(*)    OVER w AS n_1h,
       max(amount) OVER w AS max_1h
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts
             RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`

type reviewEvent struct {
	user   any // string or nil
	ts     int64
	amount float64
}

var reviewTS = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// reviewBatches builds batches of at most per rows.
func reviewBatches(schema *arrow.Schema, n, per int, fill func(b *array.RecordBuilder, i int)) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		fill(b, i)
		if (i+1)%per == 0 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return out
}

func appendUser(b *array.StringBuilder, u any) {
	if u == nil {
		b.AppendNull()
	} else {
		b.Append(u.(string))
	}
}

// TestReviewBackfillBruteForce compares Backfill with a scan of the
// events for each spine row: a spine out of time order, with duplicate
// rows, times before any event, keys never seen and NULL keys.
func TestReviewBackfillBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	users := []any{"u1", "u2", "u3", nil}
	var evs []reviewEvent
	for i := 0; i < 300; i++ {
		evs = append(evs, reviewEvent{users[rng.IntN(len(users))], base + int64(i)*60_000 + int64(rng.IntN(3))*1000, float64(rng.IntN(100))})
	}
	type spineRow struct {
		user  any
		ts    int64
		label int64
	}
	var spine []spineRow
	for i := 0; i < 200; i++ {
		u := []any{"u1", "u2", "u3", nil, "never"}[rng.IntN(5)]
		var ts int64
		switch rng.IntN(4) {
		case 0: // exactly at an event's time
			ts = evs[rng.IntN(len(evs))].ts
		case 1: // before any event
			ts = base - int64(rng.IntN(7200_000))
		default:
			ts = base + int64(rng.IntN(330*60_000))
		}
		spine = append(spine, spineRow{u, ts, int64(i)})
		if rng.IntN(10) == 0 { // a duplicate
			spine = append(spine, spineRow{u, ts, int64(i)})
		}
	}
	es := arrow.NewSchema([]arrow.Field{{Name: "user_id", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "ts", Type: reviewTS}, {Name: "amount", Type: arrow.PrimitiveTypes.Float64}}, nil)
	ss := arrow.NewSchema([]arrow.Field{{Name: "user_id", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "ts", Type: reviewTS}, {Name: "label", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, strict := range []bool{false, true} {
		for _, par := range []int{1, 3} {
			for _, plain := range []bool{false, true} {
				t.Run(fmt.Sprintf("strict=%v/par=%d/plain=%v", strict, par, plain), func(t *testing.T) {
					erecs := reviewBatches(es, len(evs), 17, func(b *array.RecordBuilder, i int) {
						appendUser(b.Field(0).(*array.StringBuilder), evs[i].user)
						b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(evs[i].ts))
						b.Field(2).(*array.Float64Builder).Append(evs[i].amount)
					})
					srecs := reviewBatches(ss, len(spine), 13, func(b *array.RecordBuilder, i int) {
						appendUser(b.Field(0).(*array.StringBuilder), spine[i].user)
						b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(spine[i].ts))
						b.Field(2).(*array.Int64Builder).Append(spine[i].label)
					})
					var evSrc, spSrc source.Source = source.NewMemory(es, erecs...), source.NewMemory(ss, srecs...)
					if plain { // no LowerBound: events first, then the spine
						evSrc, spSrc = reviewPlain{evSrc}, reviewPlain{spSrc}
					}
					out := sink.NewCollector()
					err := volga.Backfill(context.Background(), reviewBackfillSQL, spSrc, out,
						volga.WithSource("tx", evSrc), volga.WithStrict(strict), volga.WithParallelism(par))
					if err != nil {
						t.Fatal(err)
					}
					names := []string{}
					if recs := out.Records(); len(recs) > 0 {
						for _, f := range recs[0].Schema().Fields() {
							names = append(names, f.Name)
						}
					}
					if fmt.Sprint(names) != "[user_id ts label spend_1h n_1h max_1h]" {
						t.Fatalf("columns %v", names)
					}
					rows := out.Rows()
					if len(rows) != len(spine) {
						t.Fatalf("%d rows for %d spine rows", len(rows), len(spine))
					}
					bad := 0
					for i, s := range spine {
						var sum float64
						var n int64
						mx := math.Inf(-1)
						for _, e := range evs {
							if e.user == nil || s.user == nil || e.user != s.user {
								if !(e.user == nil && s.user == nil) {
									continue
								}
							}
							if e.ts < s.ts-3600_000 || e.ts > s.ts || (strict && e.ts == s.ts) {
								continue
							}
							sum += e.amount
							n++
							mx = max(mx, e.amount)
						}
						var wantSum, wantMax any
						if n > 0 {
							wantSum, wantMax = sum, mx
						}
						r := rows[i]
						if r[2] != s.label || r[4] != n || r[3] != wantSum || r[5] != wantMax {
							bad++
							if bad < 10 {
								t.Errorf("spine row %d (user %v, ts %d): got %v, want label %d sum %v n %d max %v", i, s.user, s.ts-base, r, s.label, wantSum, n, wantMax)
							}
						}
					}
					if bad > 0 {
						t.Errorf("%d of %d rows wrong", bad, len(spine))
					}
				})
			}
		}
	}
}

// reviewPlain hides a source's LowerBound.
type reviewPlain struct{ source.Source }
