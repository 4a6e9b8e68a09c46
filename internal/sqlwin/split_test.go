package sqlwin

import (
	"errors"
	"strings"
	"testing"

	"github.com/xwb1989/sqlparser"
)

func TestTokenizeSpans(t *testing.T) {
	q := "SELECT a, 'it''s' x, `weird col` /* c */ FROM t -- tail\n WHERE a>=1"
	toks, err := Tokenize(q)
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	for _, tk := range toks {
		raw = append(raw, q[tk.Start:tk.End])
	}
	want := "SELECT|a|,|'it''s'|x|,|`weird col`|FROM|t|WHERE|a|>=|1"
	if got := strings.Join(raw, "|"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if toks[3].Text != "it's" || toks[6].Text != "weird col" || !toks[6].Quoted {
		t.Errorf("token values %+v %+v", toks[3], toks[6])
	}

	// "double-quoted" is an identifier (DuckDB, standard SQL); '' is an
	// empty string.
	q = `SELECT "Weird col", '', "x" FROM t`
	if toks, err = Tokenize(q); err != nil {
		t.Fatal(err)
	}
	if tk := toks[1]; tk.Type != sqlparser.ID || tk.Text != "Weird col" || !tk.Quoted {
		t.Errorf("double-quoted token %+v", tk)
	}
	if tk := toks[3]; tk.Type != sqlparser.STRING || tk.Text != "" {
		t.Errorf("empty string token %+v", tk)
	}
	if got, want := SQL(q, toks), "SELECT `Weird col`, '', `x` FROM t"; got != want {
		t.Errorf("SQL = %q, want %q", got, want)
	}
}

func TestTokenizeErrors(t *testing.T) {
	for _, tt := range []struct{ q, msg string }{
		{"SELECT 'abc", "unterminated string"},
		{"SELECT `abc", "unterminated quoted identifier"},
		{"SELECT a /* x", "unterminated comment"},
		{"SELECT /*! a */", "MySQL-specific"},
		{"SELECT 1abc", "invalid token"},
		{"SELECT a // 2", "only -- and /* */ comments"},
		{"SELECT a # 2", "only -- and /* */ comments"},
		{"SELECT a || b", "the || operator"},
		{"SELECT a && b", "the && operator"},
		{`SELECT ""`, "empty quoted identifier"},
		{`SELECT "a""b"`, "double-quoted identifier cannot contain"},
		{"SELECT \"a`b\"", "double-quoted identifier cannot contain"},
		{"SELECT \"a\"`b`", "cannot touch a back-quoted one"},
		{"SELECT `a`\"b\" FROM t", "cannot touch a back-quoted one"},
	} {
		_, err := Tokenize(tt.q)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.msg) {
			t.Errorf("Tokenize(%q) = %v, want %q", tt.q, err, tt.msg)
		}
	}
}

func TestSplitRewrite(t *testing.T) {
	q := "SELECT k, sum(x) OVER w AS s, count(*) OVER (PARTITION BY k ORDER BY ts ROWS 2 PRECEDING), f() OVER w\n" +
		"FROM t WHERE x > 0 GROUP BY k\nWINDOW w AS (PARTITION BY k ORDER BY ts)"
	r, err := Split(q)
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT k, sum(x, __volga_over_0) AS s, count(*, __volga_over_1), f(__volga_over_2)\nFROM t WHERE x > 0 GROUP BY k\n "
	if r.SQL != want {
		t.Errorf("SQL\n got %q\nwant %q", r.SQL, want)
	}
	if _, err := sqlparser.Parse(r.SQL); err != nil {
		t.Errorf("rewritten SQL does not parse: %v", err)
	}
	if len(r.Overs) != 3 || r.Overs[0].Ref.Name != "w" || r.Overs[1].Spec == nil || r.Overs[1].Spec.Kind != Rows || r.Overs[1].Spec.Preceding != 2 {
		t.Errorf("overs %+v", r.Overs)
	}
	if got := r.Overs[1].Call.Text(q); got != "count(*)" {
		t.Errorf("call %q", got)
	}
	if len(r.Windows) != 1 || r.Windows[0].Name.Name != "w" || !r.Windows[0].Spec.Unbounded {
		t.Errorf("windows %+v", r.Windows)
	}
	if len(r.Select) != 4 || r.Select[1].Text(q) != "sum(x) OVER w AS s" {
		t.Errorf("select spans %+v", r.Select)
	}
	if r.Where == nil || r.Where.Text(q) != "x > 0" {
		t.Errorf("where %+v", r.Where)
	}
	// Offsets after the rewritten calls map back to the original text.
	from := strings.Index(r.SQL, "FROM")
	if got := r.Offset(from); got != strings.Index(q, "FROM") {
		t.Errorf("Offset(FROM) = %d", got)
	}
	if got := r.Offset(strings.Index(r.SQL, "__volga_over_0")); got != strings.Index(q, ") OVER w AS s") {
		t.Errorf("Offset(marker) = %d", got)
	}
}

func TestSplitGroup(t *testing.T) {
	q := "SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL '90' SECONDS)"
	r, err := Split(q)
	if err != nil {
		t.Fatal(err)
	}
	if r.SQL != "SELECT k, sum(x) FROM t GROUP BY k, "+GroupMarker {
		t.Errorf("SQL %q", r.SQL)
	}
	if g := r.Group; g == nil || g.Kind != Tumble || g.SizeMs != 90000 || g.SlideMs != 90000 || g.TimeCol.Name != "ts" {
		t.Errorf("group %+v", r.Group)
	}
	if len(r.GroupBy) != 2 || r.GroupBy[1].Text(q) != "tumble(ts, INTERVAL '90' SECONDS)" {
		t.Errorf("group by spans %+v", r.GroupBy)
	}
}

func TestOverIndex(t *testing.T) {
	if i, ok := OverIndex("__volga_over_12"); !ok || i != 12 {
		t.Error("marker 12")
	}
	for _, s := range []string{"__volga_over_", "__volga_over_x", "__volga_over_-1", "over_1"} {
		if _, ok := OverIndex(s); ok {
			t.Errorf("OverIndex(%q) ok", s)
		}
	}
}

func TestFind(t *testing.T) {
	q := "SELECT amount_usd, t.amount, AMOUNT FROM t"
	for _, tt := range []struct {
		text string
		from int
		want int
	}{
		{"amount", 0, 21}, {"amount", 22, 29}, {"t.amount", 0, 19}, {"amount_usd", 0, 7}, {"nope", 0, -1}, {"'x", 0, -1}, {"", 0, -1},
	} {
		if got := Find(q, tt.text, tt.from); got != tt.want {
			t.Errorf("Find(%q, %d) = %d, want %d", tt.text, tt.from, got, tt.want)
		}
	}
	// sqlparser renders <> as != and identifiers in backquotes.
	q = `SELECT a FROM t WHERE "Amount" <> 'x'`
	if got := Find(q, "`amount` != 'x'", 0); got != 22 {
		t.Errorf("Find(<> as !=) = %d, want 22", got)
	}
}

func TestSplitArgs(t *testing.T) {
	q := "f(a, g(b, c), 'x,y')"
	toks, _ := Tokenize(q)
	name, args, ok := SplitArgs(toks, Span{0, len(q)})
	if !ok || name.Text != "f" || len(args) != 3 || args[1].Text(q) != "g(b, c)" || args[2].Text(q) != "'x,y'" {
		t.Errorf("SplitArgs = %v %v %v", name, args, ok)
	}
	if _, args, ok := SplitArgs(toks, Span{0, 3}); ok {
		t.Errorf("partial call accepted: %v", args)
	}
	q = "f()"
	toks, _ = Tokenize(q)
	if _, args, ok := SplitArgs(toks, Span{0, 3}); !ok || len(args) != 0 {
		t.Errorf("f(): %v %v", args, ok)
	}
}

func TestCastRewrites(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"CAST(a AS DOUBLE) + cast((b) as bigint)", "CAST(a AS decimal) + cast((b) as signed)"},
		{"CAST(f(a, (b)) AS Varchar) = 'x'", "CAST(f(a, (b)) AS char) = 'x'"},
		{`CAST("ts" AS TIMESTAMP)`, "CAST(`ts` AS datetime)"},
		{"CAST(a AS DECIMAL)", "CAST(a AS DECIMAL)"},   // sqlparser's own name stays
		{"g(a AS double)", "g(a AS double)"},           // not a CAST
		{"CAST(a AS `double`)", "CAST(a AS `double`)"}, // a quoted name is not a type
	} {
		got, err := ExprSQL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ExprSQL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	q := "SELECT CAST(x AS DOUBLE) AS d, sum(CAST(x AS INTEGER)) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)"
	r, err := Split(q)
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT CAST(x AS decimal) AS d, sum(CAST(x AS signed), __volga_over_0) FROM t  "; r.SQL != want {
		t.Errorf("SQL\n got %q\nwant %q", r.SQL, want)
	}
	if got := r.Offset(strings.Index(r.SQL, "FROM")); got != strings.Index(q, "FROM") {
		t.Errorf("Offset(FROM) = %d, want %d", got, strings.Index(q, "FROM"))
	}
}
