package pipeline_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// The lookup workload of bench/ (BENCHMARKS.md) in miniature: events
// (user_id, ts, amount) uniform over 30 days, ~100 per user as in the
// 10 M-event run, four features (sum, count, avg, max of amount) over one
// RANGE window, lookups for random users at random times of the log.
const (
	benchLookupUsers  = 2000
	benchLookupEvents = 200_000
	benchLookupSpan   = 30 * 86_400_000
)

var benchLookupWindows = []struct {
	name, interval string
}{
	{"1h", "INTERVAL '1' HOUR"},
	{"1d", "INTERVAL '1' DAY"},
	{"7d", "INTERVAL '7' DAY"},
	{"30d", "INTERVAL '30' DAY"},
}

func benchLookupLive(b *testing.B, interval string) *pipeline.Live {
	b.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	ts := make([]int64, benchLookupEvents)
	for i := range ts {
		ts[i] = rng.Int64N(benchLookupSpan)
	}
	slices.Sort(ts)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	var recs []arrow.RecordBatch
	for i, t := range ts {
		bld.Field(0).(*array.Int64Builder).Append(rng.Int64N(benchLookupUsers))
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t))
		bld.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
		if (i+1)%4096 == 0 || i == len(ts)-1 {
			recs = append(recs, bld.NewRecordBatch())
		}
	}
	query := fmt.Sprintf(`SELECT user_id, ts, sum(amount) OVER w AS s, count(*) OVER w AS n, avg(amount) OVER w AS a, max(amount) OVER w AS m
FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN %s PRECEDING AND CURRENT ROW)`, interval)
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		b.Fatal(err)
	}
	c, err := pipeline.Compile(plan, schema, "")
	if err != nil {
		b.Fatal(err)
	}
	live := &pipeline.Live{}
	src := testutil.NewSource(schema, recs...)
	out := sink.NewCollector()
	defer out.Release()
	if err := c.Run(context.Background(), src, out, pipeline.RunOptions{Mode: pipeline.Streaming, Parallelism: 2, Live: live, LookupRetention: 62 * 24 * time.Hour}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	return live
}

// BenchmarkLookup times Live.Lookup per window length; it reports
// allocs/op (= per lookup) and the p50/p99 of the lookups it ran.
func BenchmarkLookup(b *testing.B) {
	for _, w := range benchLookupWindows {
		b.Run(w.name, func(b *testing.B) {
			live := benchLookupLive(b, w.interval)
			rng := rand.New(rand.NewPCG(3, 4))
			const n = 4096
			keys := make([]map[string]any, n)
			ats := make([]time.Time, n)
			for i := range keys {
				keys[i] = map[string]any{"user_id": rng.Int64N(benchLookupUsers)}
				ats[i] = time.UnixMilli(rng.Int64N(benchLookupSpan))
			}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				r, err := live.Lookup(ctx, keys[i%n], ats[i%n], nil)
				lat = append(lat, time.Since(t0))
				if err != nil || len(r.Values) != 4 {
					b.Fatal(err, r.Values)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
