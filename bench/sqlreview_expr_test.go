package bench

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/expr"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// sqlReviewSchema is the table of TestSQLReviewExpr: strings holding
// backslashes, quotes and LIKE wildcards, and floats at the rounding
// ties, beyond the int64 range, NaN and small negatives.
var sqlReviewSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
}, nil)

// sqlReviewRows are (s, f, ts in epoch milliseconds); nil is NULL.
var sqlReviewRows = [][3]any{
	{`a\b`, 2.5, int64(1700000000123)},
	{`C:\new\table`, 3.5, int64(1700000000000)},
	{`x\`, -2.5, int64(-1)},
	{`y`, 2.7, int64(0)},
	{`a%`, -2.7, int64(1700000000120)},
	{`a\%`, 0.5, int64(-62135596800000)},
	{`a_b`, -0.4, int64(253402300799999)},
	{`it's\`, 1e19, nil},
	{"a\nb", math.NaN(), int64(1)},
	{`\N`, 4503599627370497.0, int64(1700000000100)},
	{nil, nil, int64(1700000000010)},
	{`it's`, -9.3e18, int64(86400000)},
	{`%\_%`, 0.0, int64(1700000000001)},
	{`1e15`, 1e15, int64(1700000000999)},
	{`1e16`, 1e16, int64(1700000001000)},
	{`small`, 1e-5, int64(-86400001)},
	{`inf`, math.Inf(1), int64(1)},
	{`-inf`, math.Inf(-1), int64(1)},
	{`-0`, math.Copysign(0, -1), int64(1)},
	{`0.1+0.2`, 0.30000000000000004, int64(1)},
	{`100`, 100.0, int64(1)},
	{`0.0001`, 0.0001, int64(1)},
}

func sqlReviewRecord() arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sqlReviewSchema)
	defer b.Release()
	for i, r := range sqlReviewRows {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		if r[0] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r[0].(string))
		}
		if r[1] == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(r[1].(float64))
		}
		if r[2] == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(r[2].(int64)))
		}
	}
	return b.NewRecordBatch()
}

// sqlReviewCase is an expression in volga's dialect and, when it must be
// written differently, in DuckDB's.
type sqlReviewCase struct {
	expr, duck string
}

var sqlReviewCases = []sqlReviewCase{
	// A backslash in a string literal is an ordinary character, as in
	// DuckDB and standard SQL, not a MySQL escape: '\n' is two characters,
	// 'x\' ends at its second quote.
	{expr: `s = 'a\b'`},
	{expr: `s = 'C:\new\table'`},
	{expr: `s = 'x\'`},
	{expr: `s = 'x\' OR s = 'y'`},
	{expr: `s IN ('x\', 'y', '\N')`},
	{expr: `s = 'it''s\'`},
	{expr: `length('a\nb')`},
	{expr: `length('\\')`},
	{expr: `'\'`},
	{expr: `upper('a\tb')`},
	{expr: `coalesce(s, '\N')`},
	{expr: `CASE WHEN s LIKE 'a%' THEN 'a\z' ELSE s END`},
	// LIKE has no escape character unless ESCAPE names one.
	{expr: `s LIKE 'a\%'`},
	{expr: `s LIKE '%\'`},
	{expr: `s LIKE '%\_%'`},
	{expr: `s NOT LIKE 'a\_b'`},
	{expr: `s LIKE 'a$%' ESCAPE '$'`},
	{expr: `s LIKE 'a$_b' ESCAPE '$'`},
	{expr: `s LIKE '%$%%' ESCAPE '$'`},
	{expr: `s LIKE 'a\%' ESCAPE '\'`},
	{expr: `s NOT LIKE '%\\%' ESCAPE '\'`},
	{expr: `s LIKE 'a%' ESCAPE ''`},
	// A float cast to an integer rounds to the nearest, ties to even, and
	// fails on NaN, ±Inf and values out of range (for UNSIGNED, every
	// negative value): DuckDB's DOUBLE cast.
	{expr: "CAST(f AS BIGINT)"},
	{expr: "CAST(f AS SIGNED)", duck: "CAST(f AS BIGINT)"},
	{expr: "CAST(f AS UNSIGNED)", duck: "CAST(f AS UBIGINT)"},
	{expr: "CAST(f * 2 AS BIGINT)"},
	{expr: "CASE WHEN f BETWEEN -1e18 AND 1e18 THEN CAST(f AS BIGINT) END"},
	{expr: "CASE WHEN f >= 0 AND f < 1e19 THEN CAST(f AS UBIGINT) END"},
	// A float or a timestamp cast to a string is written as DuckDB writes
	// it: 1.0, 1e+16, 1e-05, nan, -inf, -0.0; 2023-11-14 22:13:20.12.
	{expr: "CAST(f AS VARCHAR)"},
	{expr: "CAST(f AS CHAR)", duck: "CAST(f AS VARCHAR)"},
	{expr: "CAST(f / 3 AS VARCHAR)"},
	{expr: "CAST(f * 1e-9 AS TEXT)"},
	{expr: "CAST(ts AS VARCHAR)"},
	{expr: "CAST(ts AS CHAR) = '2023-11-14 22:13:20.12'", duck: "CAST(ts AS VARCHAR) = '2023-11-14 22:13:20.12'"},
	// IS [NOT] NULL of a NULL-typed expression.
	{expr: "NULL IS NULL"}, {expr: "NOT NULL IS NULL"}, {expr: "coalesce(NULL, NULL) IS NOT NULL"},
	{expr: "CASE WHEN f > 0 THEN NULL END IS NULL"}, {expr: "nullif(NULL, 1) IS NULL"},
	// DuckDB's TIMESTAMP '...' literal.
	{expr: "ts > TIMESTAMP '2023-11-14 22:13:20.12'"},
	{expr: "ts = timestamp '1970-01-01 00:00:00'"},
	{expr: "CASE WHEN ts < TIMESTAMP '1970-01-02' THEN 'early' ELSE 'late' END"},
}

// TestSQLReviewExpr checks string literals with backslashes, LIKE with and
// without ESCAPE, float-to-integer CASTs and float and timestamp to string
// CASTs against DuckDB, row by row
// through expr.ParseExpr (the Go builder's path) and on the whole table
// through a SQL pipeline (SELECT id, <expr> FROM t, the path of
// sqlwin.Split), which must output the rows DuckDB evaluates, with the same
// values, and send those where DuckDB fails to its dead letters.
func TestSQLReviewExpr(t *testing.T) {
	ctx := context.Background()
	rec := sqlReviewRecord()
	defer rec.Release()
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.LoadRecords(ctx, "t", sqlReviewSchema, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
	for _, c := range sqlReviewCases {
		t.Run(c.expr, func(t *testing.T) {
			dq := c.duck
			if dq == "" {
				dq = c.expr
			}
			duckAll := sqlReviewRowByRow(t, ctx, db, rec, c.expr, dq)
			// The same expression in a SQL pipeline.
			query := fmt.Sprintf("SELECT id, %s AS v FROM t", c.expr)
			out, err := volgarun.Collect(ctx, query, "t", volgarun.Memory(sqlReviewSchema, []arrow.RecordBatch{rec}), volgarun.Options{})
			if err != nil {
				t.Fatalf("pipeline %q: %v", query, err)
			}
			// A row whose expression fails goes to the dead letters.
			if len(out.Rows) != len(duckAll) {
				t.Errorf("pipeline %q: %d rows, want the %d DuckDB evaluates", query, len(out.Rows), len(duckAll))
			}
			for _, r := range out.Rows {
				want, ok := duckAll[r[0].(int64)]
				if !ok {
					t.Errorf("pipeline %q, row id=%v: %s, DuckDB fails", query, r[0], rows.Format(r[1]))
				} else if !sameValue(want, r[1]) {
					t.Errorf("pipeline %q, row id=%v: %s, DuckDB %s", query, r[0], rows.Format(r[1]), rows.Format(want))
				}
			}
		})
	}
}

// sqlReviewClass is the type class of a DuckDB result type, uint64 for
// UBIGINT.
func sqlReviewClass(s string) string {
	if s == "UBIGINT" {
		return "uint64"
	}
	return duckClass(s)
}

// sqlReviewRowByRow evaluates the volga expression ve on each row of rec
// alone (a one-row slice; in DuckDB, the expression dq on the row of table
// t with that id, ids counting from 1) and checks that both fail or give
// the same value and type class. It returns, by id, DuckDB's value of each
// row DuckDB evaluates.
func sqlReviewRowByRow(t *testing.T, ctx context.Context, db *duck.DB, rec arrow.RecordBatch, ve, dq string) map[int64]any {
	t.Helper()
	ast, err := expr.ParseExpr(ve)
	if err != nil {
		t.Fatalf("ParseExpr: %v", err)
	}
	e, err := expr.Compile(ast, rec.Schema())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	duckAll := map[int64]any{}
	for i := 0; i < int(rec.NumRows()); i++ {
		want := duckExpr(ctx, db, fmt.Sprintf("SELECT %s FROM t WHERE id = %d", dq, i+1))
		row := rec.NewSlice(int64(i), int64(i+1))
		got := volgaExpr(e, row)
		var vals []string
		for c := 1; c < int(row.NumCols()); c++ {
			vals = append(vals, rows.Format(rows.ArrowValue(row.Column(c), 0)))
		}
		row.Release()
		what := fmt.Sprintf("row id=%d %q", i+1, vals)
		switch {
		case want.err != nil && got.err != nil:
		case want.err != nil:
			t.Errorf("%s: DuckDB (%s) fails, volga does not:\nDuckDB: %v\nvolga:  %s", what, dq, want.err, formatVals(got.vals))
		case got.err != nil:
			t.Errorf("%s: volga fails, DuckDB (%s) does not:\nvolga:  %v\nDuckDB: %s", what, dq, got.err, formatVals(want.vals))
		default:
			if sqlReviewClass(want.class) != got.class && want.class != "\"NULL\"" {
				t.Errorf("%s: type %s, DuckDB %s", what, got.class, want.class)
			}
			if len(want.vals) != 1 || len(got.vals) != 1 || !sameValue(want.vals[0], got.vals[0]) {
				t.Errorf("%s: volga %s, DuckDB (%s) %s", what, formatVals(got.vals), dq, formatVals(want.vals))
			}
		}
		if want.err == nil && len(want.vals) == 1 {
			duckAll[int64(i+1)] = want.vals[0]
		}
	}
	return duckAll
}

// sqlReviewUintRows are (u UBIGINT, i BIGINT) pairs on both sides of 2^63
// and at the limits; nil is NULL.
var sqlReviewUintRows = [][2]any{
	{uint64(0), int64(-1)},
	{uint64(5), int64(5)},
	{uint64(math.MaxInt64), int64(math.MaxInt64)},
	{uint64(1 << 63), int64(math.MinInt64)},
	{uint64(math.MaxUint64), int64(0)},
	{nil, int64(7)},
	{uint64(7), nil},
	{uint64(1<<63 + 12345), int64(-5)},
}

var sqlReviewUintCases = []sqlReviewCase{
	// Comparisons of uint64 with int64 and with literals are exact.
	{expr: "u = i"}, {expr: "u <> i"}, {expr: "u < i"}, {expr: "u <= i"}, {expr: "u > i"}, {expr: "u >= i"},
	{expr: "i < u"}, {expr: "u <=> i", duck: "u IS NOT DISTINCT FROM i"},
	{expr: "u = 5"}, {expr: "u > 9223372036854775807"}, {expr: "u = 18446744073709551615"}, {expr: "u > -1"},
	{expr: "i < 18446744073709551615"}, {expr: "i = 9223372036854775808"},
	{expr: "u IN (5, 18446744073709551615, -1)"}, {expr: "u NOT IN (0, i)"},
	{expr: "u BETWEEN 1 AND 9223372036854775808"}, {expr: "u BETWEEN i AND 10"},
	{expr: "CASE u WHEN 5 THEN 'five' WHEN 18446744073709551615 THEN 'max' ELSE 'other' END"},
	// uint64 arithmetic; an overflow, below 0 too, fails as in DuckDB.
	{expr: "u + 1"}, {expr: "u - 1"}, {expr: "u * 2"}, {expr: "u + u"}, {expr: "u - u"},
	{expr: "u DIV 2", duck: "u // 2"}, {expr: "u % 7"}, {expr: "u DIV 0", duck: "u // 0"}, {expr: "u % 0"},
	{expr: "u / 2"}, {expr: "u * 1.5", duck: "u * CAST(1.5 AS DOUBLE)"},
	// A non-negative integer literal takes the uint64 type.
	{expr: "coalesce(u, 0)"}, {expr: "CASE WHEN u > 10 THEN u ELSE 0 END"}, {expr: "ifnull(u, 18446744073709551615)"},
	{expr: "abs(u)"}, {expr: "nullif(u, 5)"},
}

// TestSQLReviewUint64 checks scalar expressions on a UBIGINT column
// against DuckDB: comparisons with signed integers and with literals
// beyond int64 are exact, uint64 arithmetic fails on overflow, and
// coalesce/CASE with integer literals stay uint64. (Before, every
// comparison or arithmetic of a uint64 value above 2^63-1 failed.)
func TestSQLReviewUint64(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "CREATE TABLE t (id BIGINT, u UBIGINT, i BIGINT)"); err != nil {
		t.Fatal(err)
	}
	for k, r := range sqlReviewUintRows {
		b.Field(0).(*array.Int64Builder).Append(int64(k + 1))
		uv, iv := "NULL", "NULL"
		if r[0] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Uint64Builder).Append(r[0].(uint64))
			uv = fmt.Sprintf("%d::UBIGINT", r[0])
		}
		if r[1] == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(r[1].(int64))
			iv = fmt.Sprintf("(%d)::BIGINT", r[1])
			if r[1].(int64) == math.MinInt64 {
				iv = "(-9223372036854775807 - 1)::BIGINT"
			}
		}
		if err := db.Exec(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, %s, %s)", k+1, uv, iv)); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, c := range sqlReviewUintCases {
		t.Run(c.expr, func(t *testing.T) {
			dq := c.duck
			if dq == "" {
				dq = c.expr
			}
			sqlReviewRowByRow(t, ctx, db, rec, c.expr, dq)
		})
	}
}

// TestSQLReviewFloat32 checks comparisons of a FLOAT (float32) column with
// number literals against DuckDB, which casts the literal to FLOAT: a
// float32 0.1 equals 0.1 and is not above it (compared in float64 it is
// 0.10000000149011612).
func TestSQLReviewFloat32(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "g", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	vals := []float32{0.1, 0.5, 16777216, float32(math.NaN()), 0, 1e-8, -0.3, 0.2}
	for i, v := range vals {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		if i == 4 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float32Builder).Append(v)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.LoadRecords(ctx, "t", schema, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{
		"g = 0.1", "g > 0.1", "g <= 0.1", "g <> 0.2", "g < -0.3", "0.1 = g", "g = 16777217", "g > 1e-8",
		"g IN (0.1, 0.5)", "g NOT IN (0.2, -0.3)", "g BETWEEN 0.1 AND 0.2", "CASE g WHEN 0.1 THEN 'a' WHEN 0.2 THEN 'b' ELSE 'c' END",
		"nullif(g, 0.5) IS NULL",
	} {
		t.Run(e, func(t *testing.T) {
			sqlReviewRowByRow(t, ctx, db, rec, e, e)
		})
	}
}
