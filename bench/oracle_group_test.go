package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// The tumble/hop oracle: GROUP BY keys, tumble(ts, INTERVAL size) and
// GROUP BY keys, hop(ts, INTERVAL slide, INTERVAL size) (SPEC.md section
// 5) against DuckDB, which has neither function. DuckDB gets the same
// grouping written out with the window start computed from the event time
// in epoch milliseconds, windows aligned to the Unix epoch:
//
//	tumble: start = ms - mod(ms, size)          (mod rounded towards -inf)
//	hop:    every start = last - j*slide, j = 0..size/slide, that still
//	        contains ms (start + size > ms), last = ms - mod(ms, slide)
//
// the hop starts listed with unnest(generate_series(...)), one input row
// per window containing it. window_end is start + size. The aggregates are
// the same calls, with the spellings of oracle_query_test.go:
// count_distinct(x) becomes count(DISTINCT x), and first_value /
// last_value become arg_min_null / arg_max_null over (ts, id), the row
// order volga uses (event time, then arrival; id is the arrival position
// and the streaming shuffle keeps peers in id order). Results are compared
// as sets: both sides sorted by the key columns and window_start.

// groupWin is a tumble or hop window of the GROUP BY.
type groupWin struct {
	slide, size     string // interval literals, e.g. "INTERVAL '5' MINUTE"
	slideMs, sizeMs int64
	hop             bool
}

func tumbleWin(lit string, ms int64) groupWin {
	return groupWin{slide: lit, size: lit, slideMs: ms, sizeMs: ms}
}

func hopWin(slideLit string, slideMs int64, sizeLit string, sizeMs int64) groupWin {
	return groupWin{slide: slideLit, size: sizeLit, slideMs: slideMs, sizeMs: sizeMs, hop: true}
}

// groupQuery is one GROUP BY query of the suite over table t.
type groupQuery struct {
	name  string
	keys  []string
	win   groupWin
	aggs  aggs
	where string
}

// groupAlias names the output column of an aggregate.
func groupAlias(fa [2]string) string {
	arg := strings.NewReplacer("*", "star", "DISTINCT ", "dist_", " ", "").Replace(fa[1])
	return fa[0] + "_" + arg
}

// volga renders the query in volga's dialect.
func (q groupQuery) volga() string {
	items := append(append([]string(nil), q.keys...), "window_start", "window_end")
	for _, fa := range q.aggs {
		items = append(items, fmt.Sprintf("%s(%s) AS %s", fa[0], fa[1], groupAlias(fa)))
	}
	fn := fmt.Sprintf("tumble(ts, %s)", q.win.size)
	if q.win.hop {
		fn = fmt.Sprintf("hop(ts, %s, %s)", q.win.slide, q.win.size)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s\nFROM t", strings.Join(items, ",\n       "))
	if q.where != "" {
		b.WriteString("\nWHERE " + q.where)
	}
	fmt.Fprintf(&b, "\nGROUP BY %s, %s", strings.Join(q.keys, ", "), fn)
	return b.String()
}

// duck renders the query for DuckDB. intTime says the ts column holds
// epoch milliseconds (BIGINT) rather than a TIMESTAMP; window_start and
// window_end then are BIGINT too, as in volga.
func (q groupQuery) duck(intTime bool) string {
	ms, asTime := "epoch_ms(ts)", func(e string) string { return "epoch_ms(" + e + ")" }
	if intTime {
		ms, asTime = "ts", func(e string) string { return e }
	}
	// floorTo(e, n): the multiple of n at or below e.
	floorTo := func(e string, n int64) string { return fmt.Sprintf("(%s - ((%s %% %d) + %d) %% %d)", e, e, n, n, n) }
	var wins string
	if !q.win.hop {
		wins = fmt.Sprintf("w AS (SELECT *, %s AS __ws FROM r)", floorTo("__ms", q.win.sizeMs))
	} else {
		wins = fmt.Sprintf(`l AS (SELECT *, %s AS __last FROM r),
h AS (SELECT *, unnest(generate_series(__last - %d, __last, %d)) AS __ws FROM l),
w AS (SELECT * FROM h WHERE __ws + %d > __ms)`,
			floorTo("__ms", q.win.slideMs), (q.win.sizeMs/q.win.slideMs)*q.win.slideMs, q.win.slideMs, q.win.sizeMs)
	}
	items := append(append([]string(nil), q.keys...),
		asTime("__ws")+" AS window_start", asTime(fmt.Sprintf("__ws + %d", q.win.sizeMs))+" AS window_end")
	for _, fa := range q.aggs {
		call := fmt.Sprintf("%s(%s)", fa[0], fa[1])
		switch fa[0] {
		case "count_distinct":
			call = fmt.Sprintf("count(DISTINCT %s)", fa[1])
		case "first_value":
			call = fmt.Sprintf("arg_min_null(%s, __ms * 1000000 + id)", fa[1])
		case "last_value":
			call = fmt.Sprintf("arg_max_null(%s, __ms * 1000000 + id)", fa[1])
		}
		items = append(items, call+" AS "+groupAlias(fa))
	}
	where := ""
	if q.where != "" {
		where = " WHERE " + q.where
	}
	return fmt.Sprintf("WITH r AS (SELECT *, %s AS __ms FROM t%s),\n%s\nSELECT %s\nFROM w GROUP BY %s, __ws",
		ms, where, wins, strings.Join(items, ",\n       "), strings.Join(q.keys, ", "))
}

// groupQueries is the suite: tumble windows that divide an hour and
// windows that do not (so that epoch alignment, not alignment to the data,
// is tested), hop windows whose size is and is not a multiple of the
// slide, millisecond-level sizes, int64 and string keys (merchant has
// NULLs: NULL is a key of its own), two-column keys and a WHERE clause.
// The data has two thirds of its rows on whole minutes, so rows on window
// boundaries are common.
func groupQueries() []groupQuery {
	const (
		sec    = int64(1000)
		minute = 60 * sec
		hr     = 60 * minute
	)
	return []groupQuery{
		{name: "tumble_7m_user", keys: []string{"user_id"}, win: tumbleWin("INTERVAL '7' MINUTE", 7*minute), aggs: allAggs},
		{name: "tumble_1h_merchant", keys: []string{"merchant"}, win: tumbleWin("INTERVAL '1' HOUR", hr), aggs: allAggs},
		{name: "tumble_90s_user_merchant", keys: []string{"user_id", "merchant"}, win: tumbleWin("INTERVAL '90' SECONDS", 90*sec), aggs: someAggs},
		{name: "tumble_1m_merchant_where", keys: []string{"merchant"}, win: tumbleWin("INTERVAL '60000' MILLISECOND", minute), aggs: someAggs,
			where: "(qty IS NULL OR qty > 10) AND amount < 400"},
		{name: "hop_5m_15m_user", keys: []string{"user_id"}, win: hopWin("INTERVAL '5' MINUTE", 5*minute, "INTERVAL '15' MINUTE", 15*minute), aggs: allAggs},
		{name: "hop_7m_30m_merchant", keys: []string{"merchant"}, win: hopWin("INTERVAL '7' MINUTE", 7*minute, "INTERVAL '30' MINUTES", 30*minute), aggs: allAggs},
		{name: "hop_45s_100s_merchant_user", keys: []string{"merchant", "user_id"}, win: hopWin("INTERVAL '45' SECOND", 45*sec, "INTERVAL '100' SECOND", 100*sec), aggs: someAggs},
		{name: "hop_20m_1h_user_where", keys: []string{"user_id"}, win: hopWin("INTERVAL '20' MINUTE", 20*minute, "INTERVAL '1' HOUR", hr), aggs: someAggs,
			where: "merchant <> 'shop-03'"},
		{name: "hop_equal_10m_user", keys: []string{"user_id"}, win: hopWin("INTERVAL '10' MINUTE", 10*minute, "INTERVAL '10' MINUTE", 10*minute), aggs: someAggs},
	}
}

// int64TimeSchema is oracleSchema with ts as int64 epoch milliseconds.
var int64TimeSchema = func() *arrow.Schema {
	fs := oracleSchema.Fields()
	fs[3] = arrow.Field{Name: "ts", Type: arrow.PrimitiveTypes.Int64}
	return arrow.NewSchema(fs, nil)
}()

// groupRecords builds the input batches of rs: oracleRecords, with the ts
// column reinterpreted as int64 when intTime is set (same buffers).
func groupRecords(rs []oracleRow, batchRows int, intTime bool) (*arrow.Schema, []arrow.RecordBatch) {
	recs := oracleRecords(rs, batchRows)
	if !intTime {
		return oracleSchema, recs
	}
	for i, rec := range recs {
		cols := rec.Columns()
		d := cols[3].Data()
		ts := array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Int64, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset()))
		out := make([]arrow.Array, len(cols))
		copy(out, cols)
		out[3] = ts
		recs[i] = array.NewRecordBatch(int64TimeSchema, out, rec.NumRows())
		ts.Release()
	}
	return int64TimeSchema, recs
}

// TestOracleGroupWindows runs every GROUP BY tumble/hop query of the suite
// with a timestamp[ms] and with an int64-milliseconds event-time column,
// in batch mode (parallelism 1 and 2) and in streaming mode (arrival
// shuffled within streamBound, watermark bound the same so no row is late;
// parallelism 1 and 2), and compares each result with DuckDB's as a set.
func TestOracleGroupWindows(t *testing.T) {
	seed := *oracleSeed + 3
	data := newOracleRows(seed, oracleDataOptions{rows: *oracleRows, sorted: true})
	arrival := shuffled(data, gen.ArrivalOrder(timestamps(data), streamBound, seed))
	for _, intTime := range []bool{false, true} {
		timeName := "ts_timestamp"
		if intTime {
			timeName = "ts_int64"
		}
		t.Run(timeName, func(t *testing.T) {
			t.Parallel()
			db, err := duck.Open(1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			schema, recs := groupRecords(data, 4096, intTime)
			if err := db.LoadRecords(context.Background(), "t", schema, recs); err != nil {
				t.Fatal(err)
			}
			for _, q := range groupQueries() {
				t.Run(q.name, func(t *testing.T) {
					t.Parallel()
					runGroupQuery(t, seed, db, q, intTime, data, arrival)
				})
			}
		})
	}
}

// runGroupQuery checks one query in every mode against DuckDB.
func runGroupQuery(t *testing.T, seed uint64, db *duck.DB, q groupQuery, intTime bool, data, arrival []oracleRow) {
	names, rs, err := db.Query(context.Background(), q.duck(intTime))
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	order := append(append([]string(nil), q.keys...), "window_start")
	want := rows.Table{Names: names, Rows: rs}.SortedByCols(order...)
	checkGroupShape(t, q, want)
	modes := []struct {
		name string
		in   []oracleRow
		opt  volgarun.Options
	}{
		{"batch_p1", data, volgarun.Options{Parallelism: 1}},
		{"batch_p2", data, volgarun.Options{Parallelism: 2}},
		{"stream_p1", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 1}},
		{"stream_p2", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 2}},
	}
	if slices.Contains(q.keys, "user_id") {
		// The rows sorted by user, promised so: each user's windows go out
		// once the next user's rows start, with DuckDB's values.
		byUser := shuffled(data, userOrder(data))
		for _, par := range []int{1, 2} {
			modes = append(modes, struct {
				name string
				in   []oracleRow
				opt  volgarun.Options
			}{fmt.Sprintf("batch_clustered_p%d", par), byUser, volgarun.Options{Parallelism: par, ClusteredBy: []string{"user_id"}}})
		}
	}
	for _, m := range modes {
		schema, recs := groupRecords(m.in, oracleBatchRows, intTime)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		got, err := volgarun.Collect(ctx, q.volga(), "t", volgarun.Memory(schema, recs), m.opt)
		cancel()
		if err != nil {
			t.Fatalf("%s: seed %d: volga: %v\nquery:\n%s", m.name, seed, err, q.volga())
		}
		d := rows.Diff(want, got.SortedByCols(order...), rows.DefaultTolerance, order, diffRows)
		if d != "" {
			t.Errorf("%s: volga vs DuckDB differ (seed %d; rerun with -oracle.seed=%d -run '%s')\n%s\nvolga query:\n%s\nDuckDB query:\n%s",
				m.name, seed, seed-3, t.Name(), d, q.volga(), q.duck(intTime))
		}
	}
}

// checkGroupShape guards the suite against testing little: DuckDB's
// answer must have many windows, keys with several windows, and, for
// queries grouped by merchant, a NULL-key group.
func checkGroupShape(t *testing.T, q groupQuery, want rows.Table) {
	t.Helper()
	if len(want.Rows) < 50 {
		t.Fatalf("DuckDB returned only %d windows; the test data is broken", len(want.Rows))
	}
	nullKey := false
	for _, k := range q.keys {
		c := want.Col(k)
		for _, r := range want.Rows {
			nullKey = nullKey || (k == "merchant" && r[c] == nil)
		}
	}
	if strings.Contains(strings.Join(q.keys, ","), "merchant") && !nullKey {
		t.Errorf("no window of the NULL merchant key in DuckDB's answer")
	}
}
