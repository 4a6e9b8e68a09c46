package pipeline_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/volga-go/volga/pipeline"
)

// The lookup workload of bench/ (BENCHMARKS.md) in miniature: events
// (user_id, ts, amount, and lookupIntoLive's merchant, unused) uniform
// over 30 days, ~100 per user as in the 10 M-event run, four features
// (sum, count, avg, max of amount) over one RANGE window, lookups for
// random users at random times of the log.
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
	query := fmt.Sprintf(`SELECT user_id, ts, sum(amount) OVER w AS s, count(*) OVER w AS n, avg(amount) OVER w AS a, max(amount) OVER w AS m
FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN %s PRECEDING AND CURRENT ROW)`, interval)
	live := lookupIntoLive(b, query, benchLookupUsers, benchLookupEvents, benchLookupSpan)
	runtime.GC()
	return live
}

// BenchmarkLookup times Live.Lookup per window length, and Live.LookupInto
// into one reused FeatureRow (sub-benchmarks "into"); it reports allocs/op
// (= per lookup) and the p50/p99 of the lookups it ran.
func BenchmarkLookup(b *testing.B) {
	for _, w := range benchLookupWindows {
		for _, into := range []bool{false, true} {
			name := w.name
			if into {
				name += "/into"
			}
			b.Run(name, func(b *testing.B) {
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
				var row pipeline.FeatureRow
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					var err error
					features := 0
					if into {
						err = live.LookupInto(ctx, &row, keys[i%n], ats[i%n], nil)
						features = row.Len()
					} else {
						var r pipeline.LookupResult
						r, err = live.Lookup(ctx, keys[i%n], ats[i%n], nil)
						features = len(r.Values)
					}
					lat = append(lat, time.Since(t0))
					if err != nil || features != 4 {
						b.Fatal(err, features)
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}
