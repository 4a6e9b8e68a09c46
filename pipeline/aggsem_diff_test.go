package pipeline_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
)

// aggsemSchema has a value column of every argument type the engine
// keeps in window state, a condition and three categories.
var aggsemSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "fin", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tsv", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	{Name: "c", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "g", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "gi", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// aggsemEvents are n rows of few keys (NULL among them) at clustered times
// (many peers), with NULLs everywhere but id and ts, floats among NaN,
// ±Inf, -0 and 0, integers that overflow int64 sums, uint64 values from
// 2^63 up, and empty strings.
func aggsemEvents(rng *rand.Rand, n int) *testutil.Table {
	pick := func(vals ...any) any {
		if rng.IntN(5) == 0 {
			return nil
		}
		return vals[rng.IntN(len(vals))]
	}
	nan, inf, nz := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	t := &testutil.Table{Schema: aggsemSchema}
	ts := int64(1_700_000_000_000)
	for i := range n {
		if rng.IntN(2) == 0 {
			ts += 100 * int64(rng.IntN(4))
		}
		var key any = int64(1 + rng.IntN(2))
		if rng.IntN(8) == 0 {
			key = nil
		}
		t.Rows = append(t.Rows, []any{
			int64(i), key, ts,
			pick(int64(-2), int64(0), int64(1), int64(3), int64(math.MaxInt64-1), int64(math.MinInt64+2)),
			pick(int64(-5), int64(0), int64(2), int64(math.MaxInt32), int64(math.MinInt32)),
			pick(uint64(0), uint64(1), uint64(7), uint64(1<<63-1), uint64(1<<63), uint64(math.MaxUint64)),
			pick(nan, inf, -inf, nz, 0.0, 1.5, -2.0, 1.5),
			pick(nz, 0.0, 0.5, 1.0, 2.0, -1.0, 2.0),
			pick("", "a", "b", "B", "ab", "a"),
			pick(true, false),
			pick(int64(1_000), int64(-1_000), int64(1_700_000_000_000), int64(0)),
			pick(true, false, true),
			pick("", "x", "y", "X"),
			pick(int64(-1), int64(0), int64(5)),
		})
	}
	return t
}

// aggsemFrames are frames of every kind at the scale of aggsemEvents'
// 100 ms steps: short RANGE frames (1 ms tiles), long ones (100 ms tiles
// for the merge-only aggregates), frames ending before the current row,
// UNBOUNDED, ROWS, with and without EXCLUDE CURRENT ROW.
var aggsemFrames = []testutil.Frame{
	{Preceding: 250},
	{Preceding: 250, ExcludeCurrent: true},
	{Preceding: 3200},
	{Preceding: 3200, ExcludeCurrent: true},
	{Preceding: 3200, EndPreceding: 300},
	{Preceding: 100, EndPreceding: 100},
	{Unbounded: true},
	{Unbounded: true, ExcludeCurrent: true},
	{Unbounded: true, EndPreceding: 200},
	{Rows: true, Preceding: 3},
	{Rows: true, Preceding: 2, ExcludeCurrent: true},
	{Rows: true, Preceding: 0},
}

// aggsemAggs calls every aggregate on every argument type it accepts.
func aggsemAggs() []testutil.Agg {
	aggs := []testutil.Agg{{Func: "count"}, {Func: "count_where", Cond: "c"}}
	for _, x := range []string{"i64", "i32", "u64", "f64", "fin", "s", "b", "tsv"} {
		aggs = append(aggs,
			testutil.Agg{Func: "count", Arg: x},
			testutil.Agg{Func: "count_distinct", Arg: x},
			testutil.Agg{Func: "min", Arg: x},
			testutil.Agg{Func: "max", Arg: x},
			testutil.Agg{Func: "first_value", Arg: x},
			testutil.Agg{Func: "last_value", Arg: x},
			testutil.Agg{Func: "top", Arg: x, Param: int64(2)},
			testutil.Agg{Func: "topn_frequency", Arg: x, Param: int64(3)},
			testutil.Agg{Func: "top1_ratio", Arg: x},
			testutil.Agg{Func: "approx_count_distinct", Arg: x},
			testutil.Agg{Func: "count_where", Arg: x, Cond: "c"},
			testutil.Agg{Func: "min_where", Arg: x, Cond: "c"},
			testutil.Agg{Func: "max_where", Arg: x, Cond: "c"},
			testutil.Agg{Func: "count_cate", Arg: x, Cate: "g"},
			testutil.Agg{Func: "min_cate", Arg: x, Cate: "gi"},
			testutil.Agg{Func: "max_cate", Arg: x, Cate: "b"},
			testutil.Agg{Func: "max_cate_where", Arg: x, Cond: "c", Cate: "g"},
			testutil.Agg{Func: "min_cate_where", Arg: x, Cond: "c", Cate: "tsv"},
		)
	}
	for _, x := range []string{"i64", "i32", "u64", "f64", "fin"} {
		aggs = append(aggs,
			testutil.Agg{Func: "sum", Arg: x},
			testutil.Agg{Func: "avg", Arg: x},
			testutil.Agg{Func: "sum_where", Arg: x, Cond: "c"},
			testutil.Agg{Func: "avg_where", Arg: x, Cond: "c"},
			testutil.Agg{Func: "sum_cate", Arg: x, Cate: "gi"},
			testutil.Agg{Func: "avg_cate", Arg: x, Cate: "g"},
			testutil.Agg{Func: "sum_cate_where", Arg: x, Cond: "c", Cate: "gi"},
			testutil.Agg{Func: "count_cate_where", Arg: x, Cond: "c", Cate: "u64"},
			testutil.Agg{Func: "var_pop", Arg: x},
			testutil.Agg{Func: "stddev_samp", Arg: x},
			testutil.Agg{Func: "approx_percentile", Arg: x, Param: 0.5},
			testutil.Agg{Func: "approx_percentile", Arg: x, Param: 1.0},
		)
	}
	// The reference computes these exactly over finite values.
	for _, x := range []string{"i32", "u64", "fin"} {
		aggs = append(aggs,
			testutil.Agg{Func: "ew_avg", Arg: x, Param: 0.5},
			testutil.Agg{Func: "drawdown", Arg: x},
		)
	}
	return aggs
}

// aggsemMillis replaces the times of engine output (timestamps) with
// epoch milliseconds, as the reference keeps them.
func aggsemMillis(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.UnixMilli()
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = aggsemMillis(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = aggsemMillis(e)
		}
		return out
	case []sink.MapEntry:
		out := make([]sink.MapEntry, len(v))
		for i, e := range v {
			out[i] = sink.MapEntry{Key: aggsemMillis(e.Key), Value: aggsemMillis(e.Value)}
		}
		return out
	}
	return v
}

func aggsemRows(rows [][]any) [][]any {
	for _, r := range rows {
		for c, v := range r {
			r[c] = aggsemMillis(v)
		}
	}
	return rows
}

// TestAggSemanticsMatchReference runs every aggregate on every argument
// type (aggsemAggs) over every frame kind (aggsemFrames) on small
// adversarial inputs (aggsemEvents), in batch mode with parallelism 1 and
// 2 and in streaming mode with a shuffled arrival, and compares every
// value with the brute-force reference. The window operator computes a
// frame by retraction, by merging tiles or by rebuilding from rows; the
// results must not depend on which.
func TestAggSemanticsMatchReference(t *testing.T) {
	const bound = 1000
	aggs := aggsemAggs()
	for _, seed := range testutil.Seeds(2) {
		rng := testutil.Rand(seed)
		events := aggsemEvents(rng, testutil.Scale(140))
		tab := events.Subset(testutil.Shuffle(rng, events, "ts", nil, bound))
		for _, fr := range aggsemFrames {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, fr), func(t *testing.T) {
				t.Parallel()
				win := testutil.Window{Keys: []string{"k"}, Time: "ts", Frame: fr}
				items := make([]item, len(aggs))
				for i, a := range aggs {
					items[i] = item{a, win}
				}
				query := featureSQL(items, "")
				want := reference(tab, items)
				label := testutil.Label(tab, nil, "id", "k", "ts")
				for _, par := range []int{1, 2} {
					got, _ := run(t, seed, query, tab, volga.WithParallelism(par))
					if d := testutil.Diff(columns(items), aggsemRows(got), want, label); d != "" {
						t.Errorf("seed %d, batch, parallelism %d vs reference:\n%s", seed, par, d)
					}
				}
				stream, _ := run(t, seed, query, tab, volga.WithParallelism(2), volga.WithMode(volga.Streaming),
					volga.WithMaxOutOfOrder(bound*time.Millisecond))
				if d := testutil.Diff(columns(items), byID(aggsemRows(stream)), byID(want), aggsemIDLabel(tab)); d != "" {
					t.Errorf("seed %d, streaming vs reference:\n%s", seed, d)
				}
			})
		}
	}
}

// aggsemIDLabel labels rows sorted by id.
func aggsemIDLabel(tab *testutil.Table) func(int) string {
	byID := make([]int, len(tab.Rows))
	for i, r := range tab.Rows {
		byID[r[tab.Col("id")].(int64)] = i
	}
	return testutil.Label(tab, byID, "id", "k", "ts")
}
