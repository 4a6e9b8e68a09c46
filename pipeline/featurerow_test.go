package pipeline_test

import (
	"context"
	"math/rand/v2"
	"reflect"
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

// lookupIntoLive runs query in streaming mode over n events of users
// users (user_id, ts over span ms, amount, merchant of 5) and returns its
// live state, kept for lookups over the whole span.
func lookupIntoLive(t testing.TB, query string, users, n int, span int64) *pipeline.Live {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "merchant", Type: arrow.BinaryTypes.String},
	}, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = rng.Int64N(span)
	}
	slices.Sort(ts)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	var recs []arrow.RecordBatch
	for i, t := range ts {
		bld.Field(0).(*array.Int64Builder).Append(rng.Int64N(int64(users)))
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t))
		bld.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(10_000)) / 100)
		bld.Field(3).(*array.StringBuilder).Append([]string{"a", "b", "c", "d", "e"}[rng.IntN(5)])
		if (i+1)%1024 == 0 || i == len(ts)-1 {
			recs = append(recs, bld.NewRecordBatch())
		}
	}
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.Compile(plan, schema, "")
	if err != nil {
		t.Fatal(err)
	}
	live := &pipeline.Live{}
	out := sink.NewCollector()
	defer out.Release()
	if err := c.Run(context.Background(), testutil.NewSource(schema, recs...), out,
		pipeline.RunOptions{Mode: pipeline.Streaming, Parallelism: 2, Live: live, LookupRetention: 2 * time.Duration(span) * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return live
}

// TestLookupIntoMatchesLookup: LookupInto, into one FeatureRow reused
// for every lookup, gives the features Lookup gives (numbers, NULLs,
// strings, lists, maps), through Value and through the typed accessors,
// and none of a previous lookup's values stays behind.
func TestLookupIntoMatchesLookup(t *testing.T) {
	const span = 5 * 86_400_000
	live := lookupIntoLive(t, `SELECT user_id, ts,
       sum(amount) OVER w AS s, count(*) OVER w AS n, avg(amount) OVER w AS a, max(amount) OVER w AS m,
       last_value(merchant) OVER w AS last, topn_frequency(merchant, 2) OVER d AS top2,
       sum_cate(amount, merchant) OVER d AS by_m
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       d AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)`, 50, 20_000, span)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	var f pipeline.FeatureRow
	kinds := map[string]int{}
	for i := range 2000 {
		key := map[string]any{"user_id": rng.Int64N(60)} // some users have no rows
		at := time.UnixMilli(rng.Int64N(span + 86_400_000))
		want, err := live.Lookup(ctx, key, at, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := live.LookupInto(ctx, &f, key, at, nil); err != nil {
			t.Fatal(err)
		}
		if f.Len() != len(want.Values) || !slices.Equal(f.Names(), want.Names) || f.Watermark() != want.Watermark {
			t.Fatalf("lookup %d: %d features %v at watermark %d, want %d %v at %d", i, f.Len(), f.Names(), f.Watermark(), len(want.Values), want.Names, want.Watermark)
		}
		for j, w := range want.Values {
			if got := f.Value(j); !reflect.DeepEqual(got, w) {
				t.Fatalf("lookup %d of %v at %d: %s = %#v, want %#v", i, key, at.UnixMilli(), want.Names[j], got, w)
			}
			if f.IsNull(j) != (w == nil) {
				t.Fatalf("lookup %d: %s IsNull %v for %#v", i, want.Names[j], f.IsNull(j), w)
			}
			fv, fok := f.Float64(j)
			iv, iok := f.Int64(j)
			switch w := w.(type) {
			case float64:
				if !fok || fv != w || iok {
					t.Fatalf("lookup %d: %s Float64 (%v, %v), Int64 ok %v for %v", i, want.Names[j], fv, fok, iok, w)
				}
				kinds["float"]++
			case int64:
				if !iok || iv != w || fok {
					t.Fatalf("lookup %d: %s Int64 (%v, %v), Float64 ok %v for %v", i, want.Names[j], iv, iok, fok, w)
				}
				kinds["int"]++
			default:
				if fok || iok {
					t.Fatalf("lookup %d: %s is %T, yet Float64 ok %v, Int64 ok %v", i, want.Names[j], w, fok, iok)
				}
				if w == nil {
					kinds["null"]++
				} else {
					kinds["other"]++
				}
			}
		}
		if j := f.Index("TOP2"); j < 0 || f.Names()[j] != "top2" {
			t.Fatalf("Index(TOP2) = %d", j)
		}
		if f.Index("nope") != -1 {
			t.Fatal("Index of a missing feature is not -1")
		}
		if r := f.Result(); !reflect.DeepEqual(r, want) {
			t.Fatalf("Result() = %#v, want %#v", r, want)
		}
	}
	// Every kind of value went through the reused row.
	for _, k := range []string{"float", "int", "null", "other"} {
		if kinds[k] == 0 {
			t.Errorf("no %s feature among the lookups: %v", k, kinds)
		}
	}
}

// TestLookupIntoAllocatesNothing: with a FeatureRow and key maps reused,
// a lookup of numeric features allocates nothing, where Lookup allocates
// its Values and boxes each float. (Under -race, whose instrumented
// code allocates more, LookupInto must only allocate less.)
func TestLookupIntoAllocatesNothing(t *testing.T) {
	const span = 30 * 86_400_000
	live := lookupIntoLive(t, `SELECT user_id, ts, sum(amount) OVER w AS s, count(*) OVER w AS n, avg(amount) OVER w AS a, max(amount) OVER w AS m
FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '30' DAY PRECEDING AND CURRENT ROW)`, 100, 20_000, span)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 10))
	keys := make([]map[string]any, 64)
	ats := make([]time.Time, len(keys))
	for i := range keys {
		keys[i] = map[string]any{"user_id": rng.Int64N(100)}
		ats[i] = time.UnixMilli(span/2 + rng.Int64N(span/2))
	}
	var f pipeline.FeatureRow
	i := 0
	into := testing.AllocsPerRun(2000, func() {
		if err := live.LookupInto(ctx, &f, keys[i%len(keys)], ats[i%len(keys)], nil); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.Float64(0); !ok {
			t.Fatalf("sum over 30 days of user %v is NULL", keys[i%len(keys)])
		}
		i++
	})
	i = 0
	plain := testing.AllocsPerRun(2000, func() {
		if _, err := live.Lookup(ctx, keys[i%len(keys)], ats[i%len(keys)], nil); err != nil {
			t.Fatal(err)
		}
		i++
	})
	t.Logf("allocations a lookup: LookupInto %.2f, Lookup %.2f", into, plain)
	if testutil.Race {
		// The instrumented code allocates more, and sync.Pool drops some
		// of what it keeps: only the saving is checked.
		if into >= plain {
			t.Errorf("LookupInto allocated %.2f times a lookup, Lookup %.2f: want fewer", into, plain)
		}
		return
	}
	if into != 0 {
		t.Errorf("LookupInto allocated %.2f times a lookup, want 0 (Lookup: %.2f)", into, plain)
	}
	// Lookup boxes three floats (sum, avg, max) and allocates its Values.
	if plain < 4 {
		t.Errorf("Lookup allocated %.2f times a lookup, want at least 4: this test no longer sees the boxing", plain)
	}
}
