package sqlwin

import "testing"

// FuzzSplit checks that Split never panics, that errors point inside the
// query, and that Offset maps every position of the rewritten SQL into the
// original.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"SELECT sum(x) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)",
		"SELECT count(*) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING EXCLUDE CURRENT ROW) FROM t",
		"SELECT k FROM t GROUP BY k, hop(ts, INTERVAL 1 MINUTE, INTERVAL '1 hour')",
		"SELECT f() OVER (w) FROM t WINDOW w AS (PARTITION BY a ORDER BY b), v AS (PARTITION BY a ORDER BY b)",
		"SELECT a FROM t; ;", "over (", ") over", "SELECT 'x", "WINDOW w AS (",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		r, err := Split(q)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Offset < 0 || e.Offset > len(q) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		for i := 0; i <= len(r.SQL); i++ {
			if o := r.Offset(i); o < 0 || o > len(q) {
				t.Fatalf("Offset(%d) = %d outside the query", i, o)
			}
		}
	})
}
