package pipeline_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/pipeline"
)

// specSchema is the source table of the compile-time error tests.
var specSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "Price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// compileSQL parses and compiles q against specSchema, as volga.SQL does.
func compileSQL(q string) (*pipeline.Compiled, error) {
	p, err := pipeline.ParseSQL(q)
	if err != nil {
		return nil, err
	}
	return pipeline.Compile(p, specSchema, "")
}

// lineCol locates byte offset off of q by counting, independently of
// pipeline.Locate: lines after '\n', columns in characters.
func lineCol(q string, off int) (int, int) {
	before := q[:off]
	line := strings.Count(before, "\n") + 1
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}

// TestSpecCompileErrors checks SPEC section 2's error rule: an unknown
// column, function or window, a wrong argument count or type, and every
// unsupported clause is rejected at compile time with a *SQLError that
// names the offending text and its line and column. near is the text the
// error must point at (its Near is that text or the start of it) and nth
// which occurrence of it in the query (1 the first).
func TestSpecCompileErrors(t *testing.T) {
	const w = "\nWINDOW w AS (PARTITION BY k ORDER BY ts)"
	tests := []struct {
		name, query, msg, near string
		nth                    int
	}{
		// Unsupported clauses.
		{"join", "SELECT k FROM t\n  LEFT JOIN u ON t.k = u.k", "JOIN is not supported", "JOIN", 1},
		{"cross join", "SELECT k FROM t CROSS JOIN u", "JOIN is not supported", "JOIN", 1},
		{"comma join", "SELECT k FROM t, u", "exactly one table", "FROM", 1},
		{"having", "SELECT k, count(*) AS n FROM t\nGROUP BY k, tumble(ts, INTERVAL '1' HOUR)\nHAVING count(*) > 1", "HAVING is not supported", "HAVING", 1},
		{"having without group", "SELECT k FROM t HAVING k > 1", "HAVING is not supported", "HAVING", 1},
		{"outer order by", "SELECT k, sum(amount) OVER w AS s FROM t" + w + "\nORDER BY k", "ORDER BY on the outer query", "ORDER", 2},
		{"outer order by group", "SELECT k, count(*) AS n FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR) ORDER BY n", "ORDER BY on the outer query", "ORDER", 1},
		{"limit", "SELECT k, sum(amount) OVER w AS s FROM t" + w + " LIMIT 5", "LIMIT is not supported", "LIMIT", 1},
		{"distinct", "SELECT DISTINCT k FROM t", "SELECT DISTINCT is not supported", "DISTINCT", 1},
		{"union", "SELECT k FROM t\nUNION ALL\nSELECT k FROM t", "UNION is not supported", "UNION", 1},
		{"subquery in FROM", "SELECT k FROM (SELECT k FROM t) s", "subqueries are not supported", "SELECT", 2},
		{"subquery in WHERE", "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u)", "subqueries are not supported", "SELECT", 2},
		{"scalar subquery", "SELECT k, (SELECT 1) AS one FROM t", "subqueries are not supported", "SELECT", 2},
		{"following end", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts\n  RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS s FROM t", "FOLLOWING is not supported", "FOLLOWING", 1},
		{"following start", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING) AS s FROM t", "FOLLOWING is not supported", "FOLLOWING", 1},
		{"following after current", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN CURRENT ROW AND INTERVAL '1' HOUR FOLLOWING) AS s FROM t", "FOLLOWING is not supported", "FOLLOWING", 1},
		{"frame starting at the current row", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS s FROM t", "must start at UNBOUNDED PRECEDING", "CURRENT", 1},
		{"rows with interval", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM t", "a ROWS frame counts rows", "INTERVAL", 1},
		{"range with number", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS s FROM t", "a RANGE frame is measured in time", "3", 1},
		{"range short form with number", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE 3 PRECEDING) AS s FROM t", "a RANGE frame is measured in time", "3", 1},
		{"rows ending preceding", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING) AS s FROM t", "a ROWS frame must end at CURRENT ROW", "1", 1},
		{"groups frame", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts GROUPS 1 PRECEDING) AS s FROM t", "GROUPS frames are not supported", "GROUPS", 1},
		{"exclude group", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts EXCLUDE GROUP) AS s FROM t", "only EXCLUDE CURRENT ROW", "GROUP", 1},
		{"no partition", "SELECT sum(amount) OVER (ORDER BY ts) AS s FROM t", "a window needs PARTITION BY", "ORDER", 1},
		{"window function", "SELECT k, row_number() OVER w AS r FROM t" + w, `unknown aggregate function "row_number"`, "row_number", 1},
		{"lag", "SELECT k,\n  lag(amount) OVER w AS r FROM t" + w, `unknown aggregate function "lag"`, "lag", 1},
		{"filter clause", "SELECT k, sum(amount) FILTER (WHERE amount > 0) OVER w AS s FROM t" + w, "syntax error", "(", 2},
		{"two statements", "SELECT k FROM t;\nSELECT k FROM t", "multiple statements", "SELECT", 2},
		{"aggregate without OVER", "SELECT k,\n  sum(amount) AS s FROM t", "needs an OVER clause", "sum(amount)", 1},
		{"month interval", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND CURRENT ROW) AS s FROM t", `unknown interval unit "MONTH"`, "MONTH", 1},
		{"interval without unit", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '2' PRECEDING AND CURRENT ROW) AS s FROM t", "an interval needs a unit", "INTERVAL", 1},
		{"unquoted interval without unit", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL 2 PRECEDING AND CURRENT ROW) AS s FROM t", "an interval needs a unit", "INTERVAL", 1},
		{"end before start", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND INTERVAL '2' SECOND PRECEDING) AS s FROM t", "the frame ends before it starts", "INTERVAL", 2},

		// Unknown names, wrong arguments.
		{"unknown column", "SELECT k,\n\tsum(amt) OVER w AS s FROM t" + w, `unknown column "amt"`, "amt", 1},
		{"unknown column in WHERE", "SELECT k FROM t\nWHERE prise > 1", `unknown column "prise"`, "prise", 1},
		{"unknown function", "SELECT k, absx(amount) AS a FROM t", "unknown function absx", "absx(amount)", 1},
		{"unknown aggregate", "SELECT k, summ(amount) OVER w AS s FROM t" + w, `unknown aggregate function "summ"`, "summ", 1},
		{"unknown window", "SELECT k, sum(amount) OVER w AS s, max(amount) OVER v AS m FROM t" + w, `unknown window "v"`, "v", 1},
		{"aggregate arity", "SELECT k, sum(amount, 2) OVER w AS s FROM t" + w, "sum takes 1 argument, got 2", "sum(amount, 2)", 1},
		{"aggregate type", "SELECT k, sum(k) OVER w AS s FROM t" + w, "sum: got argument of type utf8", "sum(k)", 1},
		{"function arity", "SELECT k, abs(amount, 1) AS a FROM t", "abs takes 1 argument(s), got 2", "abs(amount, 1)", 1},
		{"function type", "SELECT k, lower(amount) AS a FROM t", "lower needs a string", "lower(amount)", 1},
		{"time column type", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY Price) AS s FROM t", "must be a timestamp or int64", "Price", 1},
		{"WHERE not boolean", "SELECT k FROM t WHERE amount", "WHERE must be a boolean", "amount", 1},
		{"select item outside GROUP BY", "SELECT k, amount, count(*) AS n FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR)", "must be a GROUP BY key", "amount", 1},
		{"duplicate output names", "SELECT amount, Amount FROM t", `duplicate output column name "Amount"`, "amount", 1},
		{"duplicate default names", "SELECT sum(amount) OVER w, sum(amount) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING) FROM t" + w, `duplicate output column name "sum(amount)"`, "sum(amount)", 1},

		// Errors about a name point where the query uses it as a
		// column, not at an alias of the same name elsewhere.
		{"unknown key after alias", "SELECT amount AS kk,\n  sum(amount) OVER (PARTITION BY kk ORDER BY ts) AS s FROM t", `unknown column "kk"`, "kk", 2},
		{"unknown named-window key after alias", "SELECT amount AS kk, sum(amount) OVER w AS s FROM t\nWINDOW w AS (PARTITION BY k, kk ORDER BY ts)", `unknown column "kk"`, "kk", 2},
		{"unknown time column after alias", "SELECT amount AS tss, sum(amount) OVER (PARTITION BY k ORDER BY tss) AS s FROM t", `unknown column "tss"`, "tss", 2},
		{"wrong time type after alias", "SELECT amount AS Price, sum(amount) OVER (PARTITION BY k ORDER BY Price) AS s FROM t", "must be a timestamp or int64", "Price", 2},
		{"unknown GROUP BY key after alias", "SELECT k AS zz, count(*) AS n FROM t GROUP BY zz, tumble(ts, INTERVAL '1' HOUR)", `unknown column "zz"`, "zz", 2},
		{"unknown tumble column after alias", "SELECT k, count(*) AS tt FROM t GROUP BY k, tumble(tt, INTERVAL '1' HOUR)", `unknown column "tt"`, "tt", 2},

		// A qualifier must name the table (or its alias), as in DuckDB.
		{"wrong qualifier", "SELECT u.k FROM t", `unknown table "u"`, "u.k", 1},
		{"wrong qualifier in WHERE", "SELECT k FROM t WHERE u.amount > 1", `unknown table "u"`, "u.amount", 1},
		{"wrong qualifier in argument", "SELECT k, sum(u.amount) OVER w AS s FROM t" + w, `unknown table "u"`, "u.amount", 1},
		{"wrong qualifier in PARTITION BY", "SELECT sum(amount) OVER w AS s FROM t WINDOW w AS (PARTITION BY u.k ORDER BY ts)", `unknown table "u"`, "u.k", 1},
		{"wrong qualifier in ORDER BY", "SELECT sum(amount) OVER (PARTITION BY k ORDER BY u.ts) AS s FROM t", `unknown table "u"`, "u.ts", 1},
		{"wrong qualifier in tumble", "SELECT k, count(*) AS n FROM t GROUP BY k, tumble(u.ts, INTERVAL '1' HOUR)", `unknown table "u"`, "u.ts", 1},
		{"wrong qualifier in GROUP BY", "SELECT k, count(*) AS n FROM t GROUP BY u.k, tumble(ts, INTERVAL '1' HOUR)", `unknown table "u"`, "u.k", 1},
		{"table name behind an alias", "SELECT t.k FROM t AS x", `unknown table "t": the table is named x`, "t.k", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileSQL(tt.query)
			var se *pipeline.SQLError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v (%T), want a *SQLError", tt.query, err, err)
			}
			off := -1
			for i, from := 0, 0; i < tt.nth; i++ {
				j := strings.Index(tt.query[from:], tt.near)
				if j < 0 {
					t.Fatalf("bad test: %q has no occurrence %d of %q", tt.query, tt.nth, tt.near)
				}
				off, from = from+j, from+j+len(tt.near)
			}
			line, col := lineCol(tt.query, off)
			if !strings.Contains(se.Msg, tt.msg) || se.Offset != off || se.Line != line || se.Column != col || se.Near == "" || !strings.HasPrefix(tt.query[off:], se.Near) {
				t.Errorf("%q:\n got  %v (offset %d)\n want %q at line %d, column %d (offset %d, near %q)", tt.query, err, se.Offset, tt.msg, line, col, off, tt.near)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("message %q does not show the position", err.Error())
			}
		})
	}
}
