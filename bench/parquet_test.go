package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// TestDuckDBWrittenParquet has DuckDB write the oracle data to Parquet
// (COPY ... TO, DuckDB's own encoder: microsecond timestamps, its own
// string and NULL encoding, several row groups) and checks that
// source.NewParquet reads back the same rows, and that a window query over
// that file gives DuckDB's answer.
func TestDuckDBWrittenParquet(t *testing.T) {
	f := newOracleFixture(t, *oracleSeed, oracleDataOptions{rows: *oracleRows, sorted: true})
	path := filepath.Join(t.TempDir(), "t.parquet")
	ctx := context.Background()
	copySQL := fmt.Sprintf("COPY (SELECT * FROM t ORDER BY id) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 1000)",
		strings.ReplaceAll(path, "'", "''"))
	if err := f.db.Exec(ctx, copySQL); err != nil {
		t.Fatal(err)
	}
	names, want, err := f.db.Query(ctx, "SELECT * FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}

	src, err := volgarun.Parquet(0, path)
	if err != nil {
		t.Fatalf("source.NewParquet(%s): %v", path, err)
	}
	got, err := volgarun.ReadAll(ctx, src)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if d := rows.Diff(rows.Table{Names: names, Rows: want}, got, rows.Tolerance{}, diffContext, diffRows); d != "" {
		t.Errorf("seed %d: rows read by source.NewParquet from a DuckDB-written file differ from DuckDB's table:\n%s", f.seed, d)
	}

	q := oracleQueries()[0]
	src, err = volgarun.Parquet(0, path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := volgarun.Collect(ctx, q.volga(), "t", src, volgarun.Options{Parallelism: 2})
	if err != nil {
		t.Fatalf("volga batch over %s: %v", path, err)
	}
	f.checkBatch(t, q, "volga batch over DuckDB-written Parquet vs DuckDB", f.duckdb(t, q), res)
}
