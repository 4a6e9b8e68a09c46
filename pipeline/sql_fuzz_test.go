package pipeline

import (
	"errors"
	"testing"
)

// FuzzParseSQL checks that ParseSQL never panics, that it fails only with
// a *SQLError whose position lies inside the query, and that a plan it
// returns is well formed.
func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{
		features4,
		"SELECT k, sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM t",
		"SELECT k, count(*) OVER w FROM t WHERE x > 1 WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1' HOUR PRECEDING)",
		"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR)",
		"SELECT k, max(x) FROM t GROUP BY hop(ts, INTERVAL 5 MINUTES, INTERVAL '1 hour'), k",
		"SELECT count(DISTINCT m) OVER w, count_where(*, a > 1) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)",
		"SELECT sum(x) OVER w2 FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)",
		"SELECT sum(x) OVER w + 1 FROM t",
		"SELECT a FROM t JOIN u ON t.a = u.a ORDER BY a LIMIT 1",
		"SELECT sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '1' HOUR FOLLOWING) FROM t",
		"SELECT a FROM t; SELECT b FROM t",
		"SELECT a FROM t WHERE b = 'unterminated",
		"SELECT a FROM t /*! comment */",
		"SELECT (x) OVER (w) FROM t WINDOW w AS (w)",
		"SELECT f() OVER w FROM t WINDOW w AS (PARTITION BY a ORDER BY b ROWS 1 PRECEDING)",
		"SELECT a FROM t GROUP BY tumble(",
		"select over over over",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		p, err := ParseSQL(q)
		if err != nil {
			var se *SQLError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SQLError", err, err)
			}
			if se.Offset > len(q) {
				t.Fatalf("offset %d beyond the query (%d bytes): %v", se.Offset, len(q), err)
			}
			_ = err.Error()
			return
		}
		if p.SQL != q || len(p.Items) == 0 {
			t.Fatalf("bad plan for %q", q)
		}
		for _, it := range p.Items {
			if (it.Expr == nil) == (it.Agg == nil) {
				t.Fatalf("item %q must be either an expression or an aggregate", it.Name)
			}
			if it.Agg != nil && p.Group == nil && it.Agg.Window == nil {
				t.Fatalf("aggregate %q has no window", it.Agg.Text)
			}
		}
		for _, w := range p.Windows {
			if len(w.PartitionBy) == 0 || w.OrderBy == "" {
				t.Fatalf("incomplete window %+v", w)
			}
			if !w.Frame.Unbounded && w.Frame.Preceding <= 0 {
				t.Fatalf("frame %+v", w.Frame)
			}
		}
		_ = p.ErrorAt("x", "probe")
	})
}
