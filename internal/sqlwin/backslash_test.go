package sqlwin

import (
	"strings"
	"testing"

	"github.com/xwb1989/sqlparser"
)

// TestBackslashStrings checks that a string literal holding a backslash is
// read as standard SQL and DuckDB read it (a backslash is an ordinary
// character; the literal ends at the first quote not doubled), not with
// the MySQL escapes of sqlparser's tokenizer, and that Split and ExprSQL
// hand sqlparser text it reads back with that value.
func TestBackslashStrings(t *testing.T) {
	q := `SELECT a FROM t WHERE s = 'x\' OR s = 'C:\new\table' OR s = 'it''s\\' OR s = 'plain'`
	toks, err := Tokenize(q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		if tk.Type == sqlparser.STRING {
			got = append(got, tk.Text+"|"+q[tk.Start:tk.End])
		}
	}
	want := []string{`x\|'x\'`, `C:\new\table|'C:\new\table'`, `it's\\|'it''s\\'`, `plain|'plain'`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("string tokens\n got  %q\n want %q", got, want)
	}
	var ors int
	for _, tk := range toks {
		if tk.Type == sqlparser.OR {
			ors++
		}
	}
	if ors != 3 {
		t.Errorf("%d OR tokens, want 3: 'x\\' must end at its second quote", ors)
	}

	res, err := Split(q)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := sqlparser.Parse(res.SQL)
	if err != nil {
		t.Fatalf("sqlparser.Parse(%q): %v", res.SQL, err)
	}
	var vals []string
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if v, ok := n.(*sqlparser.SQLVal); ok && v.Type == sqlparser.StrVal {
			vals = append(vals, string(v.Val))
		}
		return true, nil
	}, stmt)
	if want := []string{`x\`, `C:\new\table`, `it's\\`, "plain"}; strings.Join(vals, "|") != strings.Join(want, "|") {
		t.Errorf("sqlparser reads %q, want %q", vals, want)
	}
	// Offsets of the rewritten text map back to the query.
	at := strings.Index(res.SQL, "'plain'")
	if got, want := res.Offset(at), strings.Index(q, "'plain'"); got != want {
		t.Errorf("Offset(%d) = %d, want %d", at, got, want)
	}

	e, err := ExprSQL(`s LIKE 'a\%' OR s = '\'`)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err = sqlparser.Parse("select " + e)
	if err != nil {
		t.Fatalf("Parse(%q): %v", e, err)
	}
	if got, want := sqlparser.String(stmt), `select s like 'a\\%' or s = '\\' from dual`; got != want {
		t.Errorf("ExprSQL then Parse: %s, want %s", got, want)
	}

	// A literal cut short by the end of the query is unterminated in both
	// readings.
	if _, err := Tokenize(`SELECT 'abc\`); err == nil || !strings.Contains(err.Error(), "unterminated string") {
		t.Errorf("Tokenize of an unterminated literal: %v", err)
	}
	// OVER clauses and the WINDOW clause after such a literal are found.
	q = `SELECT count_where(*, s LIKE '%\') OVER w AS c, s = 'a\' AS m FROM t WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`
	if res, err = Split(q); err != nil {
		t.Fatal(err)
	}
	if len(res.Overs) != 1 || len(res.Windows) != 1 || len(res.Select) != 2 {
		t.Fatalf("Split found %d OVER, %d WINDOW, %d items", len(res.Overs), len(res.Windows), len(res.Select))
	}
	if _, err := sqlparser.Parse(res.SQL); err != nil {
		t.Errorf("sqlparser.Parse(%q): %v", res.SQL, err)
	}
}

// TestTimestampLiteral checks that DuckDB's TIMESTAMP '...' literal, which
// sqlparser does not parse, reaches it as CAST('...' AS DATETIME), in a
// query and in a builder expression, and that a backslash in it is read
// as DuckDB reads it.
func TestTimestampLiteral(t *testing.T) {
	q := `SELECT a FROM t WHERE ts > TIMESTAMP '2024-01-01 10:00:00' AND ts < timestamp 'x\'`
	res, err := Split(q)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := sqlparser.Parse(res.SQL)
	if err != nil {
		t.Fatalf("sqlparser.Parse(%q): %v", res.SQL, err)
	}
	want := `select a from t where ts > convert('2024-01-01 10:00:00', datetime) and ts < convert('x\\', datetime)`
	if got := sqlparser.String(stmt); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	e, err := ExprSQL("ts >= TIMESTAMP '2024-01-01'")
	if err != nil {
		t.Fatal(err)
	}
	if want := "ts >= cast('2024-01-01' as datetime)"; e != want {
		t.Errorf("ExprSQL = %q, want %q", e, want)
	}
}
