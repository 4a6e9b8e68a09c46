package bench

import (
	"context"
	"testing"
)

// TestOracleDataShape guards the oracle data against silently losing what
// makes it a good test: peers within partitions, NULLs in every NULLable
// column, frames of many sizes and equal-value frames.
func TestOracleDataShape(t *testing.T) {
	f := newOracleFixture(t, *oracleSeed, oracleDataOptions{rows: *oracleRows, sorted: true})
	checks := []struct {
		what string
		sql  string
		min  int64
	}{
		{"rows with a peer (same user_id and ts)", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY user_id, ts) AS n FROM t) WHERE n > 1`, 100},
		{"rows with a peer (same merchant and ts)", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY merchant, ts) AS n FROM t) WHERE n > 1`, 50},
		{"NULL merchants", `SELECT count(*) FROM t WHERE merchant IS NULL`, 40},
		{"NULL amounts", `SELECT count(*) FROM t WHERE amount IS NULL`, 200},
		{"NULL prices", `SELECT count(*) FROM t WHERE price IS NULL`, 200},
		{"NULL qtys", `SELECT count(*) FROM t WHERE qty IS NULL`, 200},
		{"user_id keys", `SELECT count(DISTINCT user_id) FROM t`, 150},
		{"rows whose 10-minute user frame holds 5+ rows", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW) AS n FROM t) WHERE n >= 5`, 200},
		{"rows whose 10-minute user frame holds 1 row", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW) AS n FROM t) WHERE n = 1`, 200},
		{"rows whose 1-minute user point frame holds a row", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND INTERVAL '1' MINUTE PRECEDING) AS n FROM t) WHERE n >= 1`, 20},
		{"rows whose 5-minute merchant point frame holds a row", `SELECT count(*) FROM (SELECT count(*) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '5' MINUTE PRECEDING AND INTERVAL '5' MINUTE PRECEDING) AS n FROM t) WHERE n >= 1`, 20},
		{"rows whose 1-hour (user, merchant) frame has 2+ prices, all equal", `SELECT count(*) FROM (SELECT count(price) OVER w AS n, min(price) OVER w AS lo, max(price) OVER w AS hi FROM t WINDOW w AS (PARTITION BY user_id, merchant ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)) WHERE n >= 2 AND lo = hi`, 20},
	}
	for _, c := range checks {
		var n int64
		if err := f.db.SQL.QueryRowContext(context.Background(), c.sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		t.Logf("%s: %d", c.what, n)
		if n < c.min {
			t.Errorf("seed %d: only %d %s, want at least %d", f.seed, n, c.what, c.min)
		}
	}
}
