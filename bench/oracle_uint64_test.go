package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// The uint64 oracle: aggregates of a UBIGINT column whose values sit on
// both sides of 2^63 (where reading them as int64 makes them negative)
// and up to 2^64-1, against DuckDB.
//
//	u  UBIGINT  clustered: small, just below 2^63, from 2^63 up, near
//	            2^64-1; NULL 10%. Sums of small values and one just below
//	            2^63 fit in BIGINT or just do not.
//	v  UBIGINT  spread over [0, 2^64), half of them from 2^63 up; NULL 10%.
//
// DuckDB sums UBIGINT into HUGEINT; volga's sum of integers is BIGINT,
// NULL when the exact sum does not fit (SPEC.md section 4), so a DuckDB
// sum beyond BIGINT is compared as NULL. DuckDB's variance works in
// doubles, which cannot tell apart values closer than 2^11 near 2^64:
// the variance family reads v, whose spread keeps DuckDB's answer within
// the oracle's tolerance of the exact one volga computes.

// uintSchema is the uint64 oracle's table t.
var uintSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
}, nil)

// uintRow is one row of the uint64 oracle; pointers are NULLable.
type uintRow struct {
	id, user, ts int64
	u, v         *uint64
}

// newUintRows generates n rows in event-time order, a third of them
// peers of the row before (same ts).
func newUintRows(seed uint64, n int) []uintRow {
	rng := rand.New(rand.NewPCG(seed, 0x75696e74)) // "uint"
	ts := oracleStart.UnixMilli()
	rs := make([]uintRow, n)
	for i := range rs {
		r := &rs[i]
		if rng.IntN(3) > 0 {
			ts += 1000 * rng.Int64N(40)
		}
		r.id, r.user, r.ts = int64(i), rng.Int64N(6), ts
		if rng.IntN(10) > 0 {
			var u uint64
			switch rng.IntN(20) {
			case 0, 1, 2, 3, 4, 5, 6, 7:
				u = rng.Uint64N(1000)
			case 8, 9, 10:
				u = 1<<63 - 1 - rng.Uint64N(3000) // fits in BIGINT
			case 11, 12, 13:
				u = 1<<63 + rng.Uint64N(3000)
			case 14, 15, 16, 17:
				u = math.MaxUint64 - rng.Uint64N(3000)
			default:
				u = rng.Uint64()
			}
			r.u = &u
		}
		if rng.IntN(10) > 0 {
			v := rng.Uint64()
			r.v = &v
		}
	}
	return rs
}

// uintRecords builds record batches of up to batchRows rows of rs.
func uintRecords(rs []uintRow, batchRows int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, uintSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rs); lo += batchRows {
		for _, r := range rs[lo:min(lo+batchRows, len(rs))] {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.Int64Builder).Append(r.user)
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
			appendOpt(b.Field(3).(*array.Uint64Builder), r.u)
			appendOpt(b.Field(4).(*array.Uint64Builder), r.v)
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return recs
}

// loadUintRows creates table t in db with rs (duck.LoadRecords has no
// UBIGINT columns): INSERT statements with literal values.
func loadUintRows(ctx context.Context, db *duck.DB, rs []uintRow) error {
	if err := db.Exec(ctx, `CREATE OR REPLACE TABLE t (id BIGINT, user_id BIGINT, ts TIMESTAMP, u UBIGINT, v UBIGINT)`); err != nil {
		return err
	}
	lit := func(p *uint64) string {
		if p == nil {
			return "NULL"
		}
		return fmt.Sprintf("%d::UBIGINT", *p)
	}
	for lo := 0; lo < len(rs); lo += 500 {
		var vals []string
		for _, r := range rs[lo:min(lo+500, len(rs))] {
			vals = append(vals, fmt.Sprintf("(%d, %d, epoch_ms(%d::BIGINT), %s, %s)", r.id, r.user, r.ts, lit(r.u), lit(r.v)))
		}
		if err := db.Exec(ctx, "INSERT INTO t VALUES "+strings.Join(vals, ",\n")); err != nil {
			return err
		}
	}
	return nil
}

// hugeintAsBigint maps DuckDB's answer to volga's types: a sum (a column
// whose name starts with "sum_") beyond BIGINT, which the canonical form
// holds as a decimal string, becomes NULL.
func hugeintAsBigint(t rows.Table) rows.Table {
	for c, name := range t.Names {
		if !strings.HasPrefix(name, "sum_") {
			continue
		}
		for _, r := range t.Rows {
			if _, ok := r[c].(string); ok {
				r[c] = nil
			}
		}
	}
	return t
}

// uintAggs are the aggregates of the uint64 oracle.
var uintAggs = aggs{
	{"count", "u"}, {"sum", "u"}, {"avg", "u"}, {"min", "u"}, {"max", "u"},
	{"first_value", "u"}, {"last_value", "u"}, {"count_distinct", "u"},
	{"sum", "v"}, {"avg", "v"}, {"min", "v"}, {"max", "v"},
	{"var_samp", "v"}, {"var_pop", "v"}, {"stddev_samp", "v"}, {"stddev_pop", "v"},
}

// TestOracleUint64 checks OVER windows (RANGE, RANGE ending before the
// current row, UNBOUNDED, ROWS, EXCLUDE CURRENT ROW: retraction and
// merges) and GROUP BY tumble/hop windows (states merged across tiles
// and hops) over the uint64 columns against DuckDB, in batch mode with
// parallelism 1 and 2 and in streaming mode with shuffled arrival.
func TestOracleUint64(t *testing.T) {
	seed := *oracleSeed + 64
	ctx := context.Background()
	data := newUintRows(seed, 1500)
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := loadUintRows(ctx, db, data); err != nil {
		t.Fatal(err)
	}
	ts := make([]int64, len(data))
	for i, r := range data {
		ts[i] = r.ts
	}
	perm := gen.ArrivalOrder(ts, streamBound, seed)
	arrival := make([]uintRow, len(perm))
	for i, p := range perm {
		arrival[i] = data[p]
	}
	modes := []struct {
		name string
		in   []uintRow
		opt  volgarun.Options
	}{
		{"batch_p1", data, volgarun.Options{Parallelism: 1}},
		{"batch_p2", data, volgarun.Options{Parallelism: 2}},
		{"stream_p1", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 1}},
	}
	// check compares volga's answer to query in every mode with want,
	// both sorted by the order columns.
	check := func(t *testing.T, query, duckQuery string, want rows.Table, order []string) {
		want = hugeintAsBigint(want).SortedByCols(order...)
		for _, m := range modes {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			got, err := volgarun.Collect(cctx, query, "t", volgarun.Memory(uintSchema, uintRecords(m.in, oracleBatchRows)), m.opt)
			cancel()
			if err != nil {
				t.Fatalf("%s: seed %d: volga: %v\nquery:\n%s", m.name, seed, err, query)
			}
			if d := rows.Diff(want, got.SortedByCols(order...), rows.DefaultTolerance, order, diffRows); d != "" {
				t.Errorf("%s: volga vs DuckDB differ (seed %d)\n%s\nvolga query:\n%s\nDuckDB query:\n%s", m.name, seed, d, query, duckQuery)
			}
		}
	}
	// shape guards the test against testing little: sums that fit and
	// sums that do not, and values from 2^63 up in min/max.
	shape := func(t *testing.T, want rows.Table) {
		t.Helper()
		var fit, beyond, high int
		for c, name := range want.Names {
			for _, r := range want.Rows {
				switch r[c].(type) {
				case int64:
					if strings.HasPrefix(name, "sum_u") {
						fit++
					}
				case string:
					if strings.HasPrefix(name, "sum_") {
						beyond++
					} else if strings.HasPrefix(name, "max_") || strings.HasPrefix(name, "min_") {
						high++ // a canonical uint64 from 2^63 up
					}
				}
			}
		}
		if fit < 20 || beyond < 20 || high < 20 {
			t.Fatalf("DuckDB's answer has %d sums of u that fit in BIGINT, %d sums beyond it and %d min/max from 2^63 up: the test data is broken", fit, beyond, high)
		}
	}

	frames := []frame{
		rangeFrame("INTERVAL '5' MINUTE PRECEDING", "CURRENT ROW"),
		rangeFrame("INTERVAL '5' MINUTE PRECEDING", "CURRENT ROW").exclude(),
		rangeFrame("INTERVAL '30' MINUTE PRECEDING", "INTERVAL '1' MINUTE PRECEDING"),
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW"),
		rowsFrame(2),
		rowsFrame(4).exclude(),
	}
	for i, fr := range frames {
		w := &window{name: fmt.Sprintf("w%d", i), partition: "user_id", frame: fr}
		q := oracleQuery{name: w.name, project: []string{"id", "user_id", "ts"}, features: uintAggs.over(w)}
		t.Run(fmt.Sprintf("over_%s", strings.NewReplacer(" ", "_", "'", "").Replace(fr.sql)), func(t *testing.T) {
			names, rs, err := db.Query(ctx, q.duck())
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			want := rows.Table{Names: names, Rows: rs}
			if len(want.Rows) != len(data) {
				t.Fatalf("DuckDB returned %d rows, want %d", len(want.Rows), len(data))
			}
			if i == 0 {
				shape(t, want)
			}
			check(t, q.volga(), q.duck(), want, []string{"id"})
		})
	}

	const minute = int64(60_000)
	groupAggs := aggs{}
	for _, fa := range uintAggs {
		if fa[0] != "first_value" && fa[0] != "last_value" {
			groupAggs = append(groupAggs, fa)
		}
	}
	for _, q := range []groupQuery{
		{name: "tumble_10m", keys: []string{"user_id"}, win: tumbleWin("INTERVAL '10' MINUTE", 10*minute), aggs: groupAggs},
		{name: "hop_5m_30m", keys: []string{"user_id"}, win: hopWin("INTERVAL '5' MINUTE", 5*minute, "INTERVAL '30' MINUTE", 30*minute), aggs: groupAggs},
	} {
		t.Run(q.name, func(t *testing.T) {
			names, rs, err := db.Query(ctx, q.duck(false))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			want := rows.Table{Names: names, Rows: rs}
			if len(want.Rows) < 50 {
				t.Fatalf("DuckDB returned only %d windows; the test data is broken", len(want.Rows))
			}
			check(t, q.volga(), q.duck(false), want, []string{"user_id", "window_start"})
		})
	}
}
