package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/rows"
)

// TestOraclePointInTime checks request mode and point-in-time training
// data against DuckDB (issue #4; SPEC.md section 6). The events are those
// of the root package's modes suite (testutil.ModesData: two integer users
// and three string merchants with NULL keys, event-time ties, NULL values,
// arrival shuffled within 5 minutes), the windows its windows restricted
// to the standard aggregates, and the spine random (key, time) points
// (testutil.ModesPoints: at, near and between events, at frame edges,
// before and after all events, keys without events, NULL keys).
//
// DuckDB's point-in-time answer for a spine row (key, t) is computed by
// definition, independently of volga's probe mechanism:
//
//   - RANGE and UNBOUNDED frames: the spine rows are unioned with the
//     events (those passing the query's WHERE) as flagged probe rows with
//     NULL values, and each aggregate runs as a DuckDB window function
//     with FILTER (WHERE NOT probe), so a probe's frame is exactly the
//     frame a row at (key, t) would have, without that row, peers
//     included. Strict mode (only events with ts < t) ends the frame at
//     1 PRECEDING instead of CURRENT ROW (ts is epoch milliseconds).
//     EXCLUDE CURRENT ROW changes nothing for a probe (it is never in its
//     own frame) and is dropped.
//   - ROWS n frames: the n events of the key last in (ts, arrival) order
//     among those with ts <= t (ts < t when strict), by a join on the
//     events' row numbers within their key.
//
// first_value/last_value are arg_min_null/arg_max_null over (ts, arrival)
// as in the other oracle tests; count_distinct is count(DISTINCT x).
// Backfill (non-strict and strict, parallelism 1 and 2) must equal these,
// and so must Pipeline.Lookup on a batch-run pipeline (non-strict; the
// UNBOUNDED query only backfills), floats within 1e-9 relative.
func TestOraclePointInTime(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			checkPointInTime(t, seed)
		})
	}
}

// pitStandard are the aggregates DuckDB has (SPEC.md section 4, standard).
var pitStandard = []string{"count", "count_distinct", "sum", "avg", "min", "max", "var_samp", "var_pop",
	"stddev_samp", "stddev_pop", "variance", "stddev", "first_value", "last_value"}

// pitWindows returns ws with only their standard aggregates.
func pitWindows(ws []testutil.ModesWindow) []testutil.ModesWindow {
	var out []testutil.ModesWindow
	for _, w := range ws {
		w.Aggs = slices.DeleteFunc(slices.Clone(w.Aggs), func(a testutil.Agg) bool { return !slices.Contains(pitStandard, a.Func) })
		out = append(out, w)
	}
	return out
}

// pitArrivalSchema is the events' schema plus arr, the arrival position.
var pitArrivalSchema = arrow.NewSchema(append(testutil.MLEventSchema.Fields(),
	arrow.Field{Name: "arr", Type: arrow.PrimitiveTypes.Int64}), nil)

var pitSpineSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sid", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func checkPointInTime(t *testing.T, seed uint64) {
	ctx := context.Background()
	tab := testutil.ModesData(seed, 700)
	rng := testutil.Rand(seed ^ 0x70697421)
	points := testutil.ModesPoints(rng, tab, 200)

	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evRows := make([][]any, len(tab.Rows))
	for i, r := range tab.Rows {
		evRows[i] = append(slices.Clone(r), int64(i))
	}
	ev := testutil.BuildRecord(nil, pitArrivalSchema, evRows)
	defer ev.Release()
	if err := db.LoadRecords(ctx, "ev", pitArrivalSchema, []arrow.RecordBatch{ev}); err != nil {
		t.Fatal(err)
	}
	spRows := make([][]any, len(points))
	for i, p := range points {
		spRows[i] = []any{int64(i), p.User, p.Merchant, p.T}
	}
	sp := testutil.BuildRecord(nil, pitSpineSchema, spRows)
	defer sp.Release()
	if err := db.LoadRecords(ctx, "sp", pitSpineSchema, []arrow.RecordBatch{sp}); err != nil {
		t.Fatal(err)
	}

	for _, q := range []struct {
		name    string
		windows []testutil.ModesWindow
		lookup  bool
	}{
		{"bounded", pitWindows(testutil.ModesLookupWindows), true},
		{"unbounded", pitWindows(testutil.ModesUnboundedWindows), false},
	} {
		query := testutil.ModesSQL("events", q.windows)
		var names []string
		for _, w := range q.windows {
			for _, a := range w.Aggs {
				names = append(names, w.FeatureName(a))
			}
		}
		for _, strict := range []bool{false, true} {
			want := pitDuckDB(t, db, q.windows, strict)
			if len(want) != len(points) {
				t.Fatalf("DuckDB answered %d spine rows, want %d", len(want), len(points))
			}
			for _, par := range []int{1, 2} {
				got := pitBackfill(t, query, tab, points, strict, par)
				pitCompare(t, fmt.Sprintf("seed %d, %s query: backfill (strict %v, parallelism %d) vs DuckDB", seed, q.name, strict, par), names, points, got, want)
			}
			if q.lookup && !strict {
				got := pitLookups(t, query, tab, points)
				pitCompare(t, fmt.Sprintf("seed %d, %s query: Lookup vs DuckDB", seed, q.name), names, points, got, want)
			}
		}
	}
}

// pitDuckDB computes every window's features at every spine row in
// DuckDB, in spine order (sid), all windows' features in a row.
func pitDuckDB(t *testing.T, db *duck.DB, windows []testutil.ModesWindow, strict bool) [][]any {
	t.Helper()
	var out [][]any
	for _, w := range windows {
		var sql string
		if w.Frame.Rows {
			sql = pitRowsSQL(w, strict)
		} else {
			sql = pitRangeSQL(w, strict)
		}
		_, rs, err := db.Query(context.Background(), sql)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if out == nil {
			out = make([][]any, len(rs))
		}
		for i, r := range rs {
			if r[0] != int64(i) {
				t.Fatalf("DuckDB row %d has sid %v\nquery: %s", i, r[0], sql)
			}
			out[i] = append(out[i], r[1:]...)
		}
	}
	return out
}

// pitCall renders aggregate a for DuckDB over the given argument prefix
// (e.g. "e." in a join), with FILTER when filter is set; ord is the (ts,
// arrival) order key for first_value/last_value.
func pitCall(a testutil.Agg, prefix, ord, filter string) string {
	arg := prefix + a.Arg
	var call string
	switch {
	case a.Func == "count" && a.Arg == "":
		call = "count(*)"
		if prefix != "" {
			call = "count(" + prefix + "arr)" // a LEFT JOIN without a match adds one NULL row
		}
	case a.Func == "count_distinct":
		call = "count(DISTINCT " + arg + ")"
	case a.Func == "first_value":
		call = fmt.Sprintf("arg_min_null(%s, %s)", arg, ord)
	case a.Func == "last_value":
		call = fmt.Sprintf("arg_max_null(%s, %s)", arg, ord)
	default:
		call = fmt.Sprintf("%s(%s)", a.Func, arg)
	}
	if filter != "" {
		call += " FILTER (WHERE " + filter + ")"
	}
	return call
}

func pitKeyMatch(keys []string, l, r string) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s.%s IS NOT DISTINCT FROM %s.%s", l, k, r, k))
	}
	return strings.Join(parts, " AND ")
}

// pitRangeSQL: events and probes in one table, the aggregates as window
// functions that skip the probes.
func pitRangeSQL(w testutil.ModesWindow, strict bool) string {
	f := w.Frame
	start := "UNBOUNDED PRECEDING"
	if !f.Unbounded {
		start = fmt.Sprintf("%d PRECEDING", f.Preceding)
	}
	end := "CURRENT ROW"
	switch {
	case f.EndPreceding > 0:
		end = fmt.Sprintf("%d PRECEDING", f.EndPreceding)
	case strict:
		end = "1 PRECEDING"
	}
	var items []string
	for k, a := range w.Aggs {
		items = append(items, fmt.Sprintf("%s OVER w AS f%d", pitCall(a, "", "ts * 1000000 + ord", "NOT probe"), k))
	}
	return fmt.Sprintf(`SELECT sid, %s FROM (
  SELECT sid, probe, %s
  FROM (
    SELECT NULL::BIGINT AS sid, FALSE AS probe, arr AS ord, * EXCLUDE (arr) FROM ev WHERE %s
    UNION ALL BY NAME
    SELECT sid, TRUE AS probe, NULL::BIGINT AS ord, user_id, merchant, ts FROM sp
  )
  WINDOW w AS (PARTITION BY %s ORDER BY ts RANGE BETWEEN %s AND %s)
) WHERE probe ORDER BY sid`, pitCols(len(w.Aggs)), strings.Join(items, ", "), testutil.ModesWhere, strings.Join(w.Keys, ", "), start, end)
}

// pitRowsSQL: the events numbered within their key in (ts, arrival)
// order; a spine row's frame is the n events numbered up to the count of
// its key's events with ts <= t (ts < t when strict).
func pitRowsSQL(w testutil.ModesWindow, strict bool) string {
	cmp := "<="
	if strict {
		cmp = "<"
	}
	var items []string
	for k, a := range w.Aggs {
		items = append(items, fmt.Sprintf("%s AS f%d", pitCall(a, "e.", "e.rn", ""), k))
	}
	return fmt.Sprintf(`WITH e AS (
  SELECT *, row_number() OVER (PARTITION BY %s ORDER BY ts, arr) AS rn FROM ev WHERE %s
), p AS (
  SELECT sp.*, (SELECT count(*) FROM e WHERE %s AND e.ts %s sp.ts) AS c FROM sp
)
SELECT p.sid, %s
FROM p LEFT JOIN e ON %s AND e.rn > p.c - %d AND e.rn <= p.c
GROUP BY p.sid ORDER BY p.sid`, strings.Join(w.Keys, ", "), testutil.ModesWhere, pitKeyMatch(w.Keys, "e", "sp"), cmp,
		strings.Join(items, ", "), pitKeyMatch(w.Keys, "e", "p"), w.Frame.Preceding)
}

func pitCols(n int) string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = fmt.Sprintf("f%d", i)
	}
	return strings.Join(cols, ", ")
}

// pitBackfill runs volga.Backfill over the spine of points and returns
// the features of each spine row.
func pitBackfill(t *testing.T, query string, tab *testutil.Table, points []testutil.ModesPoint, strict bool, par int) [][]any {
	t.Helper()
	spine := testutil.ModesSpine(points)
	rng := testutil.Rand(uint64(par))
	out := sink.NewCollector()
	defer out.Release()
	err := volga.Backfill(context.Background(), query,
		testutil.NewSource(spine.Schema, spine.Batches(rng, 50)...), out,
		volga.WithSource("events", testutil.NewSource(tab.Schema, tab.Batches(rng, 200)...)),
		volga.WithStrict(strict), volga.WithParallelism(par))
	if err != nil {
		t.Fatalf("backfill: %v\n%s", err, query)
	}
	n := spine.Schema.NumFields()
	var got [][]any
	for _, r := range out.Rows() {
		got = append(got, r[n:])
	}
	if len(got) != len(points) {
		t.Fatalf("backfill gave %d rows for %d spine rows", len(got), len(points))
	}
	return got
}

// pitLookups runs query in batch mode and looks every point up.
func pitLookups(t *testing.T, query string, tab *testutil.Table, points []testutil.ModesPoint) [][]any {
	t.Helper()
	rng := testutil.Rand(7)
	p, err := volga.SQL(query, volga.WithSource("events", testutil.NewSource(tab.Schema, tab.Batches(rng, 200)...)),
		volga.WithLookupRetention(48*time.Hour), volga.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make([][]any, len(points))
	for i, pt := range points {
		res, err := p.Lookup(context.Background(), map[string]any{"user_id": pt.User, "merchant": pt.Merchant}, time.UnixMilli(pt.T), nil)
		if err != nil {
			t.Fatalf("Lookup(%+v): %v", pt, err)
		}
		got[i] = res.Values
	}
	return got
}

// pitCompare compares volga's features with DuckDB's, spine row by spine
// row, floats within rows.DefaultTolerance.
func pitCompare(t *testing.T, what string, names []string, points []testutil.ModesPoint, got, want [][]any) {
	t.Helper()
	bad := 0
	for i := range points {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: spine row %d: %d features, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			g, w := rows.Canonical(got[i][j]), want[i][j]
			if rows.DefaultTolerance.Equal(g, w) {
				continue
			}
			if bad++; bad <= 10 {
				p := points[i]
				t.Errorf("%s: spine row %d (user_id=%v merchant=%v ts=%d): %s = %s, DuckDB %s",
					what, i, p.User, p.Merchant, p.T, names[j], rows.Format(g), rows.Format(w))
			}
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d differing values in all", what, bad)
	}
}
