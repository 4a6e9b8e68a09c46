package sqlwin

import "testing"

// FuzzSplit checks that Split never panics, that errors point inside the
// query, that Offset maps every position of the rewritten SQL into the
// original, and that SQL's back-quoting of "double-quoted" identifiers
// keeps every token, its span and its value.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"SELECT sum(x) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)",
		"SELECT count(*) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING EXCLUDE CURRENT ROW) FROM t",
		"SELECT k FROM t GROUP BY k, hop(ts, INTERVAL 1 MINUTE, INTERVAL '1 hour')",
		"SELECT f() OVER (w) FROM t WINDOW w AS (PARTITION BY a ORDER BY b), v AS (PARTITION BY a ORDER BY b)",
		"SELECT a FROM t; ;", "over (", ") over", "SELECT 'x", "WINDOW w AS (",
		`SELECT "a b", sum("x") OVER "w" FROM t WINDOW "w" AS (PARTITION BY "k" ORDER BY ts)`,
		`SELECT "a""b", "" FROM t -- c`, "SELECT a // b", "a || b && c # d",
		`SELECT 'x\' OR 'a\n\'' , '\\' FROM t WHERE s LIKE '%\%' ESCAPE '\'`, `SELECT 'a\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if toks, err := Tokenize(q); err == nil {
			bq := SQL(q, toks)
			again, err := Tokenize(bq)
			if len(bq) != len(q) || err != nil || len(again) != len(toks) {
				t.Fatalf("SQL(%q) = %q: %v, %d tokens, want %d", q, bq, err, len(again), len(toks))
			}
			for i, a := range again {
				if a != toks[i] {
					t.Fatalf("token %d of %q is %+v, in %q it is %+v", i, q, toks[i], bq, a)
				}
			}
		}
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
