//go:build !volgaonly

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/workload"
)

// withDuckDB reports whether this build links DuckDB (see volgaonly.go).
const withDuckDB = true

// runDuckDB runs the query with DuckDB over read_parquet of the same file.
// The query text is the volga query unchanged: tx is a view over the file.
//
// With -duckdb-consume=sql (the default) DuckDB itself sums every output
// column of every row, which forces every window value to be computed and
// charges DuckDB nothing for handing rows to Go. With rows, every row is
// scanned through database/sql into Go variables, which adds the driver's
// per-value cost.
func runDuckDB(ctx context.Context, c config) (result, error) {
	db, start, err := openTx(ctx, c)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	var sum workload.Features4Checksum
	switch c.DuckConsume {
	case "sql":
		q := `SELECT count(*), sum(id)::BIGINT, sum(spend_1h), sum(n_24h)::BIGINT, sum(avg_7d), sum(max_1h) FROM (` +
			workload.Features4Query + `)`
		if err := db.SQL.QueryRowContext(ctx, q).Scan(&sum.Rows, &sum.IDs, &sum.Spend1h, &sum.N24h, &sum.Avg7d, &sum.Max1h); err != nil {
			return result{}, fmt.Errorf("duckdb: %w", err)
		}
	case "rows":
		rs, err := db.SQL.QueryContext(ctx, workload.Features4Query)
		if err != nil {
			return result{}, fmt.Errorf("duckdb: %w", err)
		}
		defer rs.Close()
		var (
			id, user, n24       int64
			ts                  time.Time
			spend, avg7d, max1h float64
		)
		for rs.Next() {
			if err := rs.Scan(&id, &user, &ts, &spend, &n24, &avg7d, &max1h); err != nil {
				return result{}, err
			}
			sum.Add(id, spend, n24, avg7d, max1h)
		}
		if err := rs.Err(); err != nil {
			return result{}, err
		}
	default:
		return result{}, fmt.Errorf("unknown -duckdb-consume %q (want sql or rows)", c.DuckConsume)
	}
	return result{Seconds: time.Since(start).Seconds(), Checksum: sum}, nil
}

// runDuckDBGroup runs the group-1 query with DuckDB over read_parquet of
// the same file (GroupDuckQuery: time_bucket for tumble), DuckDB summing
// every output row's columns itself (GroupDuckChecksum), as -duckdb-consume
// sql does for features-4.
func runDuckDBGroup(ctx context.Context, c config) (result, error) {
	db, start, err := openTx(ctx, c)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	var sum workload.GroupChecksum
	if err := db.SQL.QueryRowContext(ctx, workload.GroupDuckChecksum).Scan(&sum.Windows, &sum.Users, &sum.Starts, &sum.Lengths, &sum.N, &sum.Spend, &sum.Max); err != nil {
		return result{}, fmt.Errorf("duckdb: %w", err)
	}
	return result{Seconds: time.Since(start).Seconds(), Group: &sum}, nil
}

// openTx opens DuckDB with view tx over the input file, and returns when
// the clock started: after opening the database, before the view (whose
// creation reads the file's metadata).
func openTx(ctx context.Context, c config) (*duck.DB, time.Time, error) {
	db, err := duck.Open(c.DuckThreads)
	if err != nil {
		return nil, time.Time{}, err
	}
	start := time.Now()
	view := fmt.Sprintf("CREATE VIEW tx AS SELECT * FROM read_parquet('%s')", strings.ReplaceAll(c.Input.Log, "'", "''"))
	if err := db.Exec(ctx, view); err != nil {
		db.Close()
		return nil, time.Time{}, err
	}
	return db, start, nil
}
