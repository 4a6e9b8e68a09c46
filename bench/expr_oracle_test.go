package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/expr"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/rows"
)

// exprOracleSchema is the table of TestOracleExpr: two BIGINT and two
// DOUBLE columns, all nullable, and the row id.
var exprOracleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// exprOracleRows are the rows of the table: zero divisors, signs, NULLs,
// integers beyond 2^53 and at the int64 limits (MinInt64 with -1), NaN,
// ±Inf, -0 and a float that overflows when doubled. nil is NULL.
var exprOracleRows = [][4]any{
	// a, b, x, y
	{int64(0), int64(0), 0.0, 0.0},
	{int64(7), int64(-2), 1.5, 0.0},
	{int64(-7), int64(2), -1.5, math.Copysign(0, -1)},
	{nil, int64(3), nil, 2.5},
	{int64(1<<53 + 1), nil, math.Copysign(0, -1), nil},
	{int64(math.MaxInt64), int64(-1), math.NaN(), math.NaN()},
	{int64(math.MinInt64), int64(-1), math.Inf(1), math.NaN()},
	{int64(math.MinInt64), int64(1), math.Inf(-1), math.Inf(1)},
	{int64(-(1<<53 + 1)), int64(7), 1e308, -3.0},
	{int64(3), int64(0), -2.5, 0.5},
	{int64(1), int64(math.MinInt64), 2.5, math.Copysign(0, -1)},
	{int64(math.MaxInt64), int64(math.MaxInt64), math.NaN(), 1.5},
}

// exprOracleCase is one expression, in volga's (MySQL) syntax; duckSQL
// renders it for DuckDB.
type exprOracleCase struct {
	expr string
}

var exprOracleCases = []exprOracleCase{
	// The columns themselves: NaN, ±Inf and -0 load into DuckDB intact.
	{expr: "a"}, {expr: "b"}, {expr: "x"}, {expr: "y"},

	// Integer arithmetic; overflow is an error in both.
	{expr: "a + b"}, {expr: "a - b"}, {expr: "a * b"},
	{expr: "a + 1"}, {expr: "a - 1"}, {expr: "a * 2"}, {expr: "b * -1"},
	{expr: "-a"}, {expr: "-b"}, {expr: "abs(a)"}, {expr: "abs(b)"},

	// Division and remainder: / is float division (±Inf, NaN on a zero
	// divisor, also for integers); DIV (DuckDB's //) and % of integers are
	// NULL on a zero divisor and fail on MinInt64 and -1.
	{expr: "a / b"}, {expr: "a % b"}, {expr: "a DIV b"},
	{expr: "b / a"}, {expr: "b % a"}, {expr: "b DIV a"},
	{expr: "a / 0"}, {expr: "a % 0"}, {expr: "a DIV 0"}, {expr: "0 / 0"}, {expr: "-1 / 0"},
	{expr: "a % 3"}, {expr: "a % -3"}, {expr: "a DIV 2"}, {expr: "a DIV -3"},
	{expr: "a % -1"}, {expr: "a DIV -1"}, {expr: "a / -1"},

	// Float arithmetic: IEEE 754 throughout, % is fmod.
	{expr: "x + y"}, {expr: "x - y"}, {expr: "x * y"}, {expr: "x / y"}, {expr: "x % y"},
	{expr: "y / x"}, {expr: "y % x"},
	{expr: "x / 0"}, {expr: "x % 0"}, {expr: "x % 2"}, {expr: "x % -2"}, {expr: "x % 0.0"},
	{expr: "-x"}, {expr: "abs(x)"}, {expr: "-y"}, {expr: "x * 1e308"}, {expr: "x * 10 - x * 10"},

	// An integer with a float widens to the nearest float64.
	{expr: "a + x"}, {expr: "x - a"}, {expr: "a * 1.5"}, {expr: "a - 0.5"}, {expr: "a + 0.0"},
	{expr: "a / x"}, {expr: "a % x"}, {expr: "a % 2.5"}, {expr: "b * y"}, {expr: "y % b"},
	{expr: "9007199254740993 * 1.0"},

	// Comparisons, with NaN equal to itself and above everything.
	{expr: "a = b"}, {expr: "a <> b"}, {expr: "a < b"}, {expr: "a <= b"}, {expr: "a > b"}, {expr: "a >= b"}, {expr: "a <=> b"},
	{expr: "x = y"}, {expr: "x <> y"}, {expr: "x != y"}, {expr: "x < y"}, {expr: "x <= y"}, {expr: "x > y"}, {expr: "x >= y"}, {expr: "x <=> y"},
	{expr: "x = x"}, {expr: "x > 1e308"}, {expr: "x < 0"}, {expr: "x = 0"}, {expr: "y >= -0.0"},
	{expr: "a = x"}, {expr: "a < x"}, {expr: "a >= y"}, {expr: "b <> y"},
	{expr: "a = 9007199254740992.0"}, {expr: "a = 9223372036854775808.0"}, {expr: "a > 9007199254740992.0"},
	{expr: "x / y > 0"}, {expr: "a / b < 0"},
	{expr: "x IN (1.5, 0.0 / 0)"}, {expr: "x NOT IN (1.5, 0.0 / 0)"}, {expr: "a IN (0, 7, NULL)"}, {expr: "x IN (y, 0)"},
	{expr: "x BETWEEN -2 AND 2"}, {expr: "x BETWEEN 0 AND 0.0 / 0"}, {expr: "a BETWEEN b AND 10"}, {expr: "x NOT BETWEEN y AND 2"},

	// Logic over those.
	{expr: "x > y AND a > b"}, {expr: "x > y OR a IS NULL"}, {expr: "NOT (x = y)"},
	{expr: "x / y IS NULL"}, {expr: "a % b IS NULL"}, {expr: "a DIV b IS NOT NULL"},

	// CASE, coalesce, ifnull, nullif.
	{expr: "CASE WHEN x > y THEN 'gt' WHEN x < y THEN 'lt' WHEN x = y THEN 'eq' ELSE 'null' END"},
	{expr: "CASE WHEN a > 0 THEN a ELSE x END"},
	{expr: "CASE x WHEN 0.0 / 0 THEN 'nan' WHEN 0 THEN 'zero' ELSE 'other' END"},
	{expr: "CASE a WHEN b THEN 'same' ELSE 'different' END"},
	{expr: "CASE WHEN b <> 0 THEN a / b END"},
	{expr: "CASE WHEN y = 0 THEN -1 ELSE x / y END"},
	{expr: "coalesce(a, b, 0)"}, {expr: "coalesce(x, a)"}, {expr: "coalesce(a / b, x, -1)"}, {expr: "coalesce(a % b, -1)"},
	{expr: "ifnull(x, 1.5)"}, {expr: "ifnull(b, a)"},
	{expr: "nullif(x, y)"}, {expr: "nullif(a, 0)"}, {expr: "nullif(x, 0)"}, {expr: "nullif(a, b)"},

	// A branch or argument that would fail is evaluated only for the rows
	// that need it, as in DuckDB: no error unless such a row takes it.
	{expr: "CASE WHEN a < 9223372036854775807 THEN a + 1 END"},
	{expr: "CASE WHEN a > 0 THEN a * 2 WHEN a < -10 THEN -a ELSE a - 1 END"},
	{expr: "CASE WHEN a = 9223372036854775807 THEN 0 WHEN a + 1 > 0 THEN 1 ELSE 2 END"},
	{expr: "CASE a WHEN 9223372036854775807 THEN 0 ELSE a + 1 END"},
	{expr: "coalesce(a, a + 1)"}, {expr: "coalesce(b, a * 2, 0)"}, {expr: "ifnull(a, b * a)"},
	{expr: "nullif(a + 1, 0)"},
}

var (
	duckDecimalLit = regexp.MustCompile(`(^|[^\w.])(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)`)
	duckDiv        = regexp.MustCompile(`\bDIV\b`)
)

// duckSQL renders a volga expression for DuckDB: a literal with a decimal
// point or an exponent is cast to DOUBLE (volga reads it as float64,
// DuckDB as DECIMAL), DIV becomes // and <=> IS NOT DISTINCT FROM.
func duckSQL(s string) string {
	s = duckDecimalLit.ReplaceAllString(s, "${1}CAST(${2} AS DOUBLE)")
	s = duckDiv.ReplaceAllString(s, "//")
	return strings.ReplaceAll(s, "<=>", "IS NOT DISTINCT FROM")
}

func exprOracleRecord() arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, exprOracleSchema)
	defer b.Release()
	for i, r := range exprOracleRows {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		for c, v := range r {
			switch fb := b.Field(c + 1).(type) {
			case *array.Int64Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(int64))
				}
			case *array.Float64Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(float64))
				}
			}
		}
	}
	return b.NewRecordBatch()
}

// exprResult is one engine's answer: the values and the result type's
// class (int, float, bool, string), or an error.
type exprResult struct {
	class string
	vals  []any
	err   error
}

func arrowClass(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT64:
		return "int"
	case arrow.FLOAT64:
		return "float"
	case arrow.BOOL:
		return "bool"
	case arrow.STRING:
		return "string"
	}
	return t.String()
}

func duckClass(t string) string {
	switch t {
	case "BIGINT", "INTEGER":
		return "int"
	case "DOUBLE":
		return "float"
	case "BOOLEAN":
		return "bool"
	case "VARCHAR":
		return "string"
	}
	return t
}

func duckExpr(ctx context.Context, db *duck.DB, query string) exprResult {
	rs, err := db.SQL.QueryContext(ctx, query)
	if err != nil {
		return exprResult{err: err}
	}
	defer rs.Close()
	cts, err := rs.ColumnTypes()
	if err != nil {
		return exprResult{err: err}
	}
	res := exprResult{class: duckClass(cts[0].DatabaseTypeName())}
	for rs.Next() {
		var v any
		if err := rs.Scan(&v); err != nil {
			return exprResult{err: err}
		}
		res.vals = append(res.vals, rows.Canonical(v))
	}
	if err := rs.Err(); err != nil {
		return exprResult{err: err}
	}
	return res
}

func volgaExpr(e expr.Expr, rec arrow.RecordBatch) exprResult {
	out, err := e.Eval(rec)
	if err != nil {
		return exprResult{err: err}
	}
	defer out.Release()
	res := exprResult{class: arrowClass(out.DataType())}
	for i := 0; i < out.Len(); i++ {
		res.vals = append(res.vals, rows.ArrowValue(out, i))
	}
	return res
}

// sameValue is exact equality of canonical values; floats must agree to
// the bit but for NaN's payload (so -0 and 0 differ).
func sameValue(a, b any) bool {
	if x, ok := a.(float64); ok {
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		return x == y && math.Signbit(x) == math.Signbit(y)
	}
	return a == b
}

func formatVals(vals []any) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = rows.Format(v)
		if f, ok := v.(float64); ok && f == 0 && math.Signbit(f) {
			s[i] = "-0"
		}
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestOracleExpr checks scalar expressions evaluated by internal/expr
// against DuckDB on a table of edge values (exprOracleRows): integer and
// float arithmetic, division and remainder by zero, int64 overflow,
// widening of integers beyond 2^53, NaN/±Inf/-0 in arithmetic and
// comparisons, CASE, coalesce, ifnull, nullif, IN and BETWEEN.
//
// Each expression is evaluated on the whole table and on every row alone
// (a one-row slice of the batch; WHERE id = k in DuckDB), so an error is
// pinned to its row: where DuckDB fails (always an overflow here) volga
// must fail with an overflow too, and elsewhere both must give the same
// values, floats to the bit (NaN equal to NaN, -0 apart from 0), and the
// same type class. Decimal literals are cast to DOUBLE for DuckDB, which
// would otherwise compute in DECIMAL where volga uses float64.
func TestOracleExpr(t *testing.T) {
	ctx := context.Background()
	rec := exprOracleRecord()
	defer rec.Release()
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.LoadRecords(ctx, "t", exprOracleSchema, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
	n := int(rec.NumRows())
	single := make([]arrow.RecordBatch, n)
	for i := range single {
		single[i] = rec.NewSlice(int64(i), int64(i+1))
		defer single[i].Release()
	}
	for _, c := range exprOracleCases {
		t.Run(c.expr, func(t *testing.T) {
			dq := duckSQL(c.expr)
			ast, err := expr.ParseExpr(c.expr)
			if err != nil {
				t.Fatalf("ParseExpr: %v", err)
			}
			e, err := expr.Compile(ast, exprOracleSchema)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			check := func(what string, want, got exprResult) {
				t.Helper()
				switch {
				case want.err != nil && got.err != nil:
					var ee *expr.Error
					if !strings.Contains(want.err.Error(), "Overflow") ||
						!errors.As(got.err, &ee) || ee.Kind != expr.ErrEval || !strings.Contains(ee.Msg, "overflow") {
						t.Errorf("%s: both fail, but not both on an overflow:\nDuckDB (%s): %v\nvolga: %v", what, dq, want.err, got.err)
					}
				case want.err != nil:
					t.Errorf("%s: DuckDB (%s) fails, volga does not:\nDuckDB: %v\nvolga:  %s", what, dq, want.err, formatVals(got.vals))
				case got.err != nil:
					t.Errorf("%s: volga fails, DuckDB (%s) does not:\nvolga:  %v\nDuckDB: %s", what, dq, got.err, formatVals(want.vals))
				default:
					if want.class != got.class {
						t.Errorf("%s: type %s, DuckDB (%s) %s", what, got.class, dq, want.class)
					}
					ok := len(want.vals) == len(got.vals)
					for i := 0; ok && i < len(want.vals); i++ {
						ok = sameValue(want.vals[i], got.vals[i])
					}
					if !ok {
						t.Errorf("%s: values differ from DuckDB (%s)\nvolga:  %s\nDuckDB: %s", what, dq, formatVals(got.vals), formatVals(want.vals))
					}
				}
			}
			check("whole table",
				duckExpr(ctx, db, fmt.Sprintf("SELECT %s FROM t ORDER BY id", dq)),
				volgaExpr(e, rec))
			for i, s := range single {
				check(fmt.Sprintf("row id=%d %v", i+1, exprOracleRows[i]),
					duckExpr(ctx, db, fmt.Sprintf("SELECT %s FROM t WHERE id = %d", dq, i+1)),
					volgaExpr(e, s))
			}
		})
	}
}
