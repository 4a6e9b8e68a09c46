package pipeline

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// stripAST checks that every Expr carries an AST and then drops it, so that
// plans compare with reflect.DeepEqual.
func stripAST(t *testing.T, p *Plan) *Plan {
	t.Helper()
	strip := func(e *Expr) {
		if e == nil {
			return
		}
		if e.AST == nil {
			t.Errorf("Expr %q has no AST", e.Text)
		}
		e.AST = nil
	}
	strip(p.Where)
	for _, it := range p.Items {
		strip(it.Expr)
		if it.Agg != nil {
			for _, a := range it.Agg.Args {
				strip(a)
			}
		}
	}
	return p
}

const features4 = `SELECT id, user_id, ts,
       sum(amount) OVER w1h AS spend_1h, count(*) OVER w24h AS n_24h,
       avg(amount) OVER w7d AS avg_7d,   max(amount) OVER w1h AS max_1h
FROM tx
WINDOW w1h  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       w24h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '24' HOUR PRECEDING AND CURRENT ROW),
       w7d  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)`

func TestParseSQLFeatures4(t *testing.T) {
	p, err := ParseSQL(features4)
	if err != nil {
		t.Fatal(err)
	}
	const tHour = int64(3600 * 1000)
	w1h := &WindowSpec{Name: "w1h", PartitionBy: []string{"user_id"}, OrderBy: "ts", Frame: Frame{Kind: FrameRange, Preceding: tHour}, Pos: strings.Index(features4, "(PARTITION")}
	w24h := &WindowSpec{Name: "w24h", PartitionBy: []string{"user_id"}, OrderBy: "ts", Frame: Frame{Kind: FrameRange, Preceding: 24 * tHour}, Pos: strings.Index(features4, "(PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '24'")}
	w7d := &WindowSpec{Name: "w7d", PartitionBy: []string{"user_id"}, OrderBy: "ts", Frame: Frame{Kind: FrameRange, Preceding: 7 * 24 * tHour}, Pos: strings.Index(features4, "(PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7'")}
	pos := func(s string) int { return strings.Index(features4, s) }
	col := func(name string) Item {
		return Item{Name: name, Expr: &Expr{Text: name, Pos: pos(name)}}
	}
	agg := func(name, fn, text string, w *WindowSpec, args ...string) Item {
		c := &AggCall{Func: fn, Window: w, Text: text, Pos: pos(text)}
		for _, a := range args {
			c.Args = append(c.Args, &Expr{Text: a, Pos: pos(text) + len(fn) + 1})
		}
		if len(args) == 0 {
			c.Star = true
		}
		return Item{Name: name, Agg: c}
	}
	want := &Plan{
		SQL:   features4,
		Table: "tx",
		Items: []Item{
			col("id"), col("user_id"), {Name: "ts", Expr: &Expr{Text: "ts", Pos: pos("ts,")}},
			agg("spend_1h", "sum", "sum(amount)", w1h, "amount"),
			agg("n_24h", "count", "count(*)", w24h),
			agg("avg_7d", "avg", "avg(amount)", w7d, "amount"),
			agg("max_1h", "max", "max(amount)", w1h, "amount"),
		},
		Windows: []*WindowSpec{w1h, w24h, w7d},
	}
	got := stripAST(t, p)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan mismatch\n got: %s\nwant: %s", dumpPlan(got), dumpPlan(want))
	}
	if got.Items[3].Agg.Window != got.Items[6].Agg.Window {
		t.Error("sum and max over w1h must share one *WindowSpec")
	}
}

func dumpPlan(p *Plan) string {
	var b strings.Builder
	b.WriteString("table=" + p.Table + "\n")
	for _, it := range p.Items {
		if it.Expr != nil {
			b.WriteString(it.Name + " = expr " + it.Expr.Text + "@" + itoa(it.Expr.Pos) + "\n")
			continue
		}
		a := it.Agg
		b.WriteString(it.Name + " = " + a.Func + " " + a.Text + "@" + itoa(a.Pos))
		for _, x := range a.Args {
			b.WriteString(" arg " + x.Text + "@" + itoa(x.Pos))
		}
		if a.Window != nil {
			b.WriteString(" over " + a.Window.Name + " " + a.Window.Frame.String() + "@" + itoa(a.Window.Pos))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n < 0 {
		return "-" + fmtInt(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return fmtInt(n/10) + string(rune('0'+n%10))
}

const (
	tSec  = int64(1000)
	tMin  = 60 * tSec
	tHour = 60 * tMin
	tDay  = 24 * tHour
)

func TestParseSQLFrames(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  Frame
	}{
		{"range hour", "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW", Frame{Preceding: tHour}},
		{"unquoted number", "RANGE BETWEEN INTERVAL 30 MINUTES PRECEDING AND CURRENT ROW", Frame{Preceding: 30 * tMin}},
		{"unit inside string", "RANGE BETWEEN INTERVAL '2 days' PRECEDING AND CURRENT ROW", Frame{Preceding: 2 * tDay}},
		{"milliseconds", "range between interval '250' millisecond preceding and current row", Frame{Preceding: 250}},
		{"milliseconds plural", "RANGE BETWEEN INTERVAL 250 MILLISECONDS PRECEDING AND CURRENT ROW", Frame{Preceding: 250}},
		{"seconds", "RANGE BETWEEN INTERVAL '10' Seconds PRECEDING AND CURRENT ROW", Frame{Preceding: 10 * tSec}},
		{"second", "RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW", Frame{Preceding: tSec}},
		{"minute", "RANGE BETWEEN INTERVAL '1' minute PRECEDING AND CURRENT ROW", Frame{Preceding: tMin}},
		{"hours", "RANGE BETWEEN INTERVAL '3' HOURS PRECEDING AND CURRENT ROW", Frame{Preceding: 3 * tHour}},
		{"day", "RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW", Frame{Preceding: tDay}},
		{"days", "RANGE BETWEEN INTERVAL '30' DAYS PRECEDING AND CURRENT ROW", Frame{Preceding: 30 * tDay}},
		{"unbounded", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", Frame{Unbounded: true}},
		{"default frame", "", Frame{Unbounded: true}},
		{"short form", "RANGE INTERVAL '5' MINUTE PRECEDING", Frame{Preceding: 5 * tMin}},
		{"end preceding", "RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND INTERVAL '1' DAY PRECEDING", Frame{Preceding: 7 * tDay, EndPreceding: tDay}},
		{"unbounded end preceding", "RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1' HOUR PRECEDING", Frame{Unbounded: true, EndPreceding: tHour}},
		{"end zero is current row", "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '0' HOUR PRECEDING", Frame{Preceding: tHour}},
		{"rows", "ROWS BETWEEN 10 PRECEDING AND CURRENT ROW", Frame{Kind: FrameRows, Preceding: 10}},
		{"rows zero is the current row", "ROWS BETWEEN 0 PRECEDING AND CURRENT ROW", Frame{Kind: FrameRows}},
		{"rows short", "ROWS 3 PRECEDING", Frame{Kind: FrameRows, Preceding: 3}},
		{"exclude", "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW", Frame{Preceding: tHour, ExcludeCurrent: true}},
		{"exclude only", "EXCLUDE CURRENT ROW", Frame{Unbounded: true, ExcludeCurrent: true}},
		{"rows exclude", "ROWS BETWEEN 5 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW", Frame{Kind: FrameRows, Preceding: 5, ExcludeCurrent: true}},
		{"exclude no others", "ROWS 5 PRECEDING EXCLUDE NO OTHERS", Frame{Kind: FrameRows, Preceding: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, form := range []string{"inline", "named"} {
				spec := "PARTITION BY k ORDER BY ts " + tt.frame
				q := "SELECT k, sum(x) OVER (" + spec + ") AS s FROM t"
				if form == "named" {
					q = "SELECT k, sum(x) OVER w AS s FROM t WINDOW w AS (" + spec + ")"
				}
				p, err := ParseSQL(q)
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				if len(p.Windows) != 1 {
					t.Fatalf("%s: %d windows", form, len(p.Windows))
				}
				w := p.Windows[0]
				if w.Frame != tt.want {
					t.Errorf("%s: frame %+v, want %+v", form, w.Frame, tt.want)
				}
				if p.Items[1].Agg.Window != w || w.OrderBy != "ts" || !reflect.DeepEqual(w.PartitionBy, []string{"k"}) {
					t.Errorf("%s: bad window %+v", form, w)
				}
				if form == "inline" && w.Name != "" || form == "named" && w.Name != "w" {
					t.Errorf("%s: window name %q", form, w.Name)
				}
			}
		})
	}
}

func TestParseSQLValid(t *testing.T) {
	tests := []struct {
		name  string
		query string
		check func(t *testing.T, p *Plan)
	}{
		{"inline and named mixed", `SELECT user_id,
  count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS n,
  sum(amount) OVER w AS s, avg(amount) OVER (w) AS a
FROM tx WHERE amount > 0 AND merchant IS NOT NULL
WINDOW w AS (PARTITION BY user_id, merchant ORDER BY tx.ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW),
       unused AS (PARTITION BY x ORDER BY ts)`, func(t *testing.T, p *Plan) {
			if len(p.Windows) != 2 || p.Windows[0].Name != "" || p.Windows[1].Name != "w" {
				t.Fatalf("windows %+v", p.Windows)
			}
			if !p.Windows[0].Frame.ExcludeCurrent || p.Windows[1].Frame.Kind != FrameRows {
				t.Errorf("frames %v / %v", p.Windows[0].Frame, p.Windows[1].Frame)
			}
			if !reflect.DeepEqual(p.Windows[1].PartitionBy, []string{"user_id", "merchant"}) || p.Windows[1].OrderBy != "ts" {
				t.Errorf("w = %+v", p.Windows[1])
			}
			if p.Items[2].Agg.Window != p.Items[3].Agg.Window {
				t.Error("OVER w and OVER (w) must share the window")
			}
			if p.Where == nil || p.Where.Text != "amount > 0 AND merchant IS NOT NULL" {
				t.Errorf("where %+v", p.Where)
			}
		}},
		{"scalar items and names", "select id, t.amount * 2 as dbl, lower(merchant), amount + 1 plus, sum(amount) over w from t window w as (partition by id order by ts)", func(t *testing.T, p *Plan) {
			names := []string{}
			for _, it := range p.Items {
				names = append(names, it.Name)
			}
			if want := []string{"id", "dbl", "lower(merchant)", "plus", "sum(amount)"}; !reflect.DeepEqual(names, want) {
				t.Errorf("names %q, want %q", names, want)
			}
			if e := p.Items[1].Expr; e.Text != "t.amount * 2" || e.Pos != 11 {
				t.Errorf("expr %+v", e)
			}
		}},
		{"ml aggregates", "SELECT user_id, topn_frequency(merchant, 5) OVER w AS top5, sum_cate(amount, merchant) OVER w AS by_m, count_where(*, amount > 10) OVER w AS big, count(DISTINCT merchant) OVER w AS dm, COUNT_CATE_WHERE(amount, amount > 1, merchant) OVER w FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)", func(t *testing.T, p *Plan) {
			a := p.Items[1].Agg
			if a.Func != "topn_frequency" || len(a.Args) != 2 || a.Args[0].Text != "merchant" || a.Args[1].Text != "5" {
				t.Errorf("topn %+v", a)
			}
			c := p.Items[3].Agg
			if !c.Star || len(c.Args) != 1 || c.Args[0].Text != "amount > 10" {
				t.Errorf("count_where %+v %+v", c, c.Args)
			}
			d := p.Items[4].Agg
			if !d.Distinct || len(d.Args) != 1 || d.Args[0].Text != "merchant" || d.Text != "count(DISTINCT merchant)" {
				t.Errorf("count distinct %+v", d)
			}
			if f := p.Items[5].Agg; f.Func != "count_cate_where" || len(f.Args) != 3 || p.Items[5].Name != "COUNT_CATE_WHERE(amount, amount > 1, merchant)" {
				t.Errorf("count_cate_where %+v name %q", f, p.Items[5].Name)
			}
		}},
		{"tumble", "SELECT user_id, window_start, window_end, sum(amount) AS s, count(*) AS n FROM tx GROUP BY user_id, tumble(ts, INTERVAL '1' HOUR)", func(t *testing.T, p *Plan) {
			want := &GroupWindow{Kind: GroupTumble, TimeCol: "ts", SizeMs: tHour, SlideMs: tHour, KeyCols: []string{"user_id"}, Pos: 100}
			if !reflect.DeepEqual(p.Group, want) {
				t.Errorf("group %+v, want %+v", p.Group, want)
			}
			if p.Items[3].Agg == nil || p.Items[3].Agg.Window != nil || !p.Items[4].Agg.Star || len(p.Windows) != 0 {
				t.Errorf("items %+v", p.Items)
			}
		}},
		{"hop", "select k1, k2, max(x) from t where x > 0 group by hop(t.ts, interval 5 minutes, interval '1 hour'), k1, k2", func(t *testing.T, p *Plan) {
			if g := p.Group; g.Kind != GroupHop || g.SlideMs != 5*tMin || g.SizeMs != tHour || !reflect.DeepEqual(g.KeyCols, []string{"k1", "k2"}) || g.TimeCol != "ts" {
				t.Errorf("group %+v", g)
			}
		}},
		{"comments and semicolon", "-- features\nSELECT /* key */ k, sum(x) OVER w -- s\nFROM t WINDOW w AS (PARTITION BY k ORDER BY ts);", func(t *testing.T, p *Plan) {
			if len(p.Items) != 2 || p.Items[1].Agg.Window.Name != "w" {
				t.Errorf("items %+v", p.Items)
			}
		}},
		{"projection only", "SELECT a, b + 1 AS c FROM t WHERE a IS NOT NULL", func(t *testing.T, p *Plan) {
			if len(p.Items) != 2 || len(p.Windows) != 0 || p.Group != nil || p.Where.Pos != 34 {
				t.Errorf("plan %+v", p)
			}
		}},
		{"case-insensitive window names", "SELECT sum(x) OVER W1 FROM t WINDOW w1 AS (PARTITION BY k ORDER BY ts)", func(t *testing.T, p *Plan) {
			if len(p.Windows) != 1 {
				t.Errorf("windows %+v", p.Windows)
			}
		}},
		{"quoted identifiers", "SELECT `select`, sum(`x`) OVER (PARTITION BY `k` ORDER BY `ts`) FROM `t`", func(t *testing.T, p *Plan) {
			if p.Table != "t" || p.Windows[0].PartitionBy[0] != "k" || p.Items[0].Name != "select" {
				t.Errorf("plan %+v", p)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseSQL(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if p.SQL != tt.query {
				t.Error("Plan.SQL must be the original query")
			}
			tt.check(t, p)
		})
	}
}

func TestParseSQLErrors(t *testing.T) {
	const win = " WINDOW w AS (PARTITION BY k ORDER BY ts)"
	tests := []struct {
		query     string
		msg       string
		near      string
		line, col int
	}{
		{"SELECT sum(x) OVER w2 FROM t" + win, `unknown window "w2"`, "w2", 1, 20},
		{"SELECT k,\n  sum(x) OVER w,\n  avg(x)   OVER w2\nFROM t" + win, `unknown window "w2"`, "w2", 3, 17},
		{"SELECT sum(x) FROM t", "aggregate sum needs an OVER clause", "sum(x)", 1, 8},
		{"SELECT abs(sum(x)) FROM t", "aggregate sum needs an OVER clause", "sum(x)", 1, 12},
		{"SELECT sum(x) OVER w + 1 FROM t" + win, "an expression around a windowed aggregate (sum(x) OVER w) is not supported", "sum(x) OVER w + 1", 1, 8},
		{"SELECT a FROM t JOIN u ON t.a = u.a", "JOIN is not supported", "JOIN", 1, 17},
		{"SELECT a FROM t, u", "a pipeline reads exactly one table", "FROM", 1, 10},
		{"SELECT a FROM t ORDER BY a", "ORDER BY on the outer query is not supported", "ORDER", 1, 17},
		{"SELECT a FROM t LIMIT 10", "LIMIT is not supported", "LIMIT", 1, 17},
		{"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR) HAVING sum(x) > 1", "HAVING is not supported", "HAVING", 1, 67},
		{"SELECT a FROM (SELECT a FROM t) s", "subqueries are not supported", "SELECT", 1, 16},
		{"SELECT a FROM t WHERE a IN (SELECT b FROM u)", "subqueries are not supported", "SELECT", 1, 29},
		{"SELECT DISTINCT a FROM t", "SELECT DISTINCT is not supported", "DISTINCT", 1, 8},
		{"SELECT a FROM t; SELECT b FROM t", "multiple statements are not supported", "SELECT", 1, 18},
		{"INSERT INTO t VALUES (1)", "only SELECT statements are supported", "INSERT", 1, 1},
		{"SELECT a FROM t UNION SELECT a FROM u", "UNION is not supported", "UNION", 1, 17},
		{"SELECT * FROM t", "SELECT * is not supported", "*", 1, 8},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '1' HOUR FOLLOWING) FROM t", "FOLLOWING is not supported", "FOLLOWING", 1, 112},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t", "FOLLOWING is not supported", "FOLLOWING", 1, 79},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '2' HOUR PRECEDING) FROM t", "the frame ends before it starts", "INTERVAL", 1, 94},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '0' HOUR PRECEDING AND CURRENT ROW) FROM t", "the frame size must be positive", "INTERVAL", 1, 62},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '-5' MINUTE PRECEDING AND CURRENT ROW) FROM t", "an interval must be positive", "'-5'", 1, 71},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts, id) FROM t", "ORDER BY takes exactly one event-time column", ",", 1, 47},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts DESC) FROM t", "DESC is not supported", "DESC", 1, 48},
		{"SELECT sum(x) OVER (ORDER BY ts) FROM t", "a window needs PARTITION BY", "ORDER", 1, 21},
		{"SELECT sum(x) OVER (PARTITION BY k) FROM t", "a window needs ORDER BY", ")", 1, 35},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' WEEK PRECEDING AND CURRENT ROW) FROM t", `unknown interval unit "WEEK"`, "WEEK", 1, 75},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1.5' HOUR PRECEDING AND CURRENT ROW) FROM t", "whole number", "'1.5'", 1, 71},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) FROM t", "a RANGE frame is measured in time", "5", 1, 62},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t", "ROWS BETWEEN UNBOUNDED PRECEDING is not supported", "UNBOUNDED", 1, 61},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts GROUPS 1 PRECEDING) FROM t", "GROUPS frames are not supported", "GROUPS", 1, 48},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts EXCLUDE TIES) FROM t", "only EXCLUDE CURRENT ROW is supported", "TIES", 1, 56},
		{"SELECT sum(x) OVER FROM t", "OVER needs a window name", "FROM", 1, 20},
		{"SELECT (x + 1) OVER w FROM t" + win, "OVER must follow an aggregate call", "OVER", 1, 16},
		{"SELECT a FROM t WINDOW w AS (PARTITION BY k ORDER BY ts), w AS (PARTITION BY k ORDER BY ts)", `window "w" is defined twice`, "w", 1, 59},
		{"SELECT a FROM t WINDOW w AS (PARTITION BY k ORDER BY ts) WHERE a > 1", "the WINDOW clause must come after WHERE", "WHERE", 1, 58},
		{"SELECT a FROM t WHERE sum(x) OVER w > 1" + win, "window functions are not allowed in WHERE", "sum(x) OVER w", 1, 23},
		{"SELECT a FROM t WHERE count(*) > 1", "aggregate functions are not allowed in WHERE", "count(*)", 1, 23},
		{"SELECT k, sum(x) FROM t GROUP BY k", "GROUP BY needs a tumble", "GROUP", 1, 25},
		{"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR), tumble(ts, INTERVAL '2' HOUR)", "only one tumble or hop", "tumble", 1, 68},
		{"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts)", "wrong number of arguments", "tumble", 1, 37},
		{"SELECT k, sum(x) FROM t GROUP BY k, hop(ts, INTERVAL '1' HOUR)", "wrong number of arguments", "hop", 1, 37},
		{"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL '0' HOUR)", "needs a positive interval", "INTERVAL", 1, 48},
		{"SELECT k, sum(x) + 1 FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR)", "an expression around an aggregate is not supported", "sum(x) + 1", 1, 11},
		{"SELECT k, sum(x) OVER w FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR)" + win, "OVER cannot be used in a GROUP BY query", "sum(x) OVER w", 1, 11},
		{"SELECT k, lower(k) FROM t GROUP BY lower(k), tumble(ts, INTERVAL '1' HOUR)", "GROUP BY supports only key columns", "lower(k)", 1, 36},
		{"SELECT sum(DISTINCT x) OVER w FROM t" + win, "DISTINCT is only supported in count(DISTINCT x)", "sum(DISTINCT x)", 1, 8},
		{"SELECT sum(*) OVER w FROM t" + win, "* is only allowed as the first argument", "*", 1, 12},
		{"SELECT sum(sum(x) OVER w) OVER w FROM t" + win, "window functions cannot be nested", "sum(x) OVER w", 1, 12},
		{"SELECT a FROM t WHERE a >", "syntax error", "", 1, 26},
		{"SELECT a,\n  b c d\nFROM t", "syntax error", "d", 2, 7},
		{"SELECT a FROM t WHERE b = 'open", "unterminated string literal", "'open", 1, 27},
		{"   ", "empty query", "", 0, 0},
		{"-- only a comment", "empty query", "", 0, 0},
		{"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '999999999999' DAY PRECEDING AND CURRENT ROW) FROM t", "interval too large", "'999999999999'", 1, 71},
		{"SELECT sum(x) OVER (w2 ORDER BY ts) FROM t" + win, "cannot refine another window", "w2", 1, 21},
		{"SELECT a FROM t /*! WHERE a > 1 */", "MySQL-specific comments", "/*!", 1, 17},
		{"SELECT a FROM t WHERE a > 1 // c", "only -- and /* */ comments are supported", "// c", 1, 29},
		{"SELECT a\nFROM t # c", "only -- and /* */ comments are supported", "# c", 2, 8},
		{"SELECT a FROM t WHERE a = 1 || b = 2", "the || operator is not supported", "||", 1, 29},
		{"SELECT a FROM t WHERE a = 1 && b = 2", "the && operator is not supported", "&&", 1, 29},
		{`SELECT "a""b" FROM t`, "a double-quoted identifier cannot contain", `"a""b" FROM t`, 1, 8},
		{`SELECT "a\\b" FROM t`, "a double-quoted identifier cannot contain", `"a\\b" FROM t`, 1, 8},
		{`SELECT "" FROM t`, "empty quoted identifier", `"" FROM t`, 1, 8},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			p, err := ParseSQL(tt.query)
			if err == nil {
				t.Fatalf("no error; plan %+v", p)
			}
			var se *SQLError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v, want *SQLError", err, err)
			}
			if !strings.Contains(se.Msg, tt.msg) || se.Near != tt.near || se.Line != tt.line || se.Column != tt.col {
				t.Errorf("got  %v\n     (msg %q near %q line %d col %d)\nwant msg ~%q near %q line %d col %d", err, se.Msg, se.Near, se.Line, se.Column, tt.msg, tt.near, tt.line, tt.col)
			}
			if tt.line > 0 {
				if l, c := Locate(tt.query, se.Offset); l != se.Line || c != se.Column {
					t.Errorf("Offset %d locates at %d:%d", se.Offset, l, c)
				}
				if tt.near != "" && !strings.HasPrefix(tt.query[se.Offset:], tt.near) {
					t.Errorf("Offset %d does not point at %q", se.Offset, tt.near)
				}
			}
		})
	}
}

func TestSQLErrorFormat(t *testing.T) {
	q := "SELECT a,\n  sum(x) OVER w,\n  avg(y) OVER w2\nFROM t WINDOW w AS (PARTITION BY a ORDER BY ts)"
	_, err := ParseSQL(q)
	if err == nil || err.Error() != `sql: unknown window "w2" at line 3, column 15 (near "w2")` {
		t.Errorf("got %v", err)
	}
	e := &SQLError{Msg: "boom", Offset: -1}
	if e.Error() != "sql: boom" {
		t.Errorf("got %q", e.Error())
	}
}

func TestLocate(t *testing.T) {
	q := "ab\ncdé\nf"
	for _, tt := range []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {7, 2, 4}, {8, 3, 1}, {9, 3, 2}, {100, 3, 2}, {-3, 1, 1},
	} {
		if l, c := Locate(q, tt.off); l != tt.line || c != tt.col {
			t.Errorf("Locate(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func TestPlanErrorAt(t *testing.T) {
	p, err := ParseSQL("SELECT amount_usd, t.amount,\n  sum(amount) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)")
	if err != nil {
		t.Fatal(err)
	}
	err = p.ErrorAt("amount", "unknown column %q", "amount")
	var se *SQLError
	if !errors.As(err, &se) || se.Line != 1 || se.Column != 22 || se.Near != "amount" {
		t.Errorf("ErrorAt: %v", err)
	}
	arg := p.Items[2].Agg.Args[0]
	err = p.ErrorAfter(arg.Pos, "amount", "unknown column %q", "amount")
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 7 {
		t.Errorf("ErrorAfter: %v", err)
	}
	err = p.ErrorAt("t.amount", "bad")
	if !errors.As(err, &se) || se.Column != 20 {
		t.Errorf("multi-token: %v", err)
	}
	err = p.ErrorAt("nowhere", "unknown column %q", "nowhere")
	if !errors.As(err, &se) || se.Line != 0 || err.Error() != `sql: unknown column "nowhere" (near "nowhere")` {
		t.Errorf("missing text: %v", err)
	}
	// Text that sqlparser renders differently from how it was written falls
	// back to the offset given.
	err = p.ErrorAfter(arg.Pos, "amount % 2", "bad")
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 7 || se.Near != "amount) OVER w FROM " {
		t.Errorf("fallback: %v", err)
	}
	var goPlan *Plan = &Plan{}
	if err := goPlan.ErrorAt("x", "unknown column %q", "x"); err.Error() != `builder: unknown column "x" (in "x")` {
		t.Errorf("Go plan: %v", err)
	}
}

// TestCompileErrorPositions: errors found while binding a parsed query to
// its schema point at the offending expression as written, also where
// sqlparser renders it differently (<> as !=, MOD as %).
func TestCompileErrorPositions(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	const win = " WINDOW w AS (PARTITION BY k ORDER BY ts)"
	for _, tt := range []struct {
		where, msg string
		col        int
	}{
		{"amount <> 'x'", "cannot compare int64 and utf8", 48},
		// sqlparser renders this one as "amount % 2 = 'x'", which is not in
		// the query: the error points at the WHERE expression.
		{"k = 'a' AND amount MOD 2 = 'x'", "cannot compare int64 and utf8", 48},
		{"k = 'a' AND amount <> 'x'", "cannot compare int64 and utf8", 60},
		{`"amount" + 'x' > 1`, "operator + needs numbers", 48},
		{`"amt" > 1`, `unknown column "amt"`, 48},
	} {
		q := "SELECT k, sum(amount) OVER w AS s FROM t WHERE " + tt.where + win
		p, err := ParseSQL(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		_, err = Compile(p, schema, "ts")
		var se *SQLError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, tt.msg) || se.Line != 1 || se.Column != tt.col {
			t.Errorf("WHERE %s: %v, want %q at column %d", tt.where, err, tt.msg, tt.col)
		}
	}
	// Near is the text as written, not sqlparser's rendering of it.
	p, err := ParseSQL("SELECT k FROM t WHERE Amount  <>  'x'" + win)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(p, schema, "ts")
	if se := (*SQLError)(nil); !errors.As(err, &se) || se.Near != "Amount  <>  'x'" {
		t.Errorf("near %v", err)
	}
	p, err = ParseSQL(`SELECT "K", sum("Amount") OVER w AS "Spend" FROM t` + win)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(p, schema, "ts")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Output.Field(1).Name; got != "Spend" {
		t.Errorf("quoted alias gives column %q, want Spend", got)
	}
}
