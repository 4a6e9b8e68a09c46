package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// FuzzCompileSQL checks the whole SQL front end, ParseSQL and then Compile
// against a fixed schema: it never panics, never reports an internal
// error (a panic recovered by ParseSQL or Compile), fails with a
// *SQLError when the parser fails, and a query that compiles has one
// output column per select item.
func FuzzCompileSQL(f *testing.F) {
	for _, s := range []string{
		"SELECT k, ts, sum(x) OVER w AS s, count(*) OVER w AS n FROM t WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)",
		"SELECT k, avg(y) OVER (PARTITION BY k, b ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t WHERE y > 0.5 AND s <> 'x'",
		"SELECT k, window_start, window_end, count(*), max(s), topn_frequency(s, 2) FROM t GROUP BY k, hop(ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND)",
		"SELECT k, count_cate_where(x, b, s) OVER w, ew_avg(y, 0.5) OVER w, top(x, 3) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1' SECOND PRECEDING)",
		"SELECT t.k, CAST(x AS DOUBLE) / 2 AS h, CASE WHEN b THEN 1 ELSE 0 END AS c, coalesce(s, 'n') FROM t",
		"SELECT k, count(DISTINCT s) OVER w, approx_percentile(y, 0.9) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)",
		"SELECT x.k FROM t AS x",
		"SELECT k, sum(x) FROM t GROUP BY k, tumble(ts, INTERVAL 1 DAY)",
	} {
		f.Add(s)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	f.Fuzz(func(t *testing.T, q string) {
		p, err := ParseSQL(q)
		if err != nil {
			var se *SQLError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSQL error %T %v is not a *SQLError", err, err)
			}
			if strings.Contains(se.Msg, "internal error") {
				t.Fatalf("ParseSQL(%q): %v", q, err)
			}
			return
		}
		c, err := Compile(p, schema, "")
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Compile(%q): %v", q, err)
			}
			_ = err.Error()
			return
		}
		if c.Output.NumFields() != len(p.Items) {
			t.Fatalf("%q: %d output columns for %d items", q, c.Output.NumFields(), len(p.Items))
		}
	})
}
