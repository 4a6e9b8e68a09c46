package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestRunCompressedInAndOut: volga run reads a gzip-compressed CSV and
// writes a gzip-compressed CSV (--sink out.csv.gz), and refuses a
// compressed Parquet output as a command-line error.
func TestRunCompressedInAndOut(t *testing.T) {
	var in strings.Builder
	zw := gzip.NewWriter(&in)
	if _, err := zw.Write([]byte("user_id,ts,amount\nu1,2024-01-01T00:00:00Z,10\nu1,2024-01-01T00:30:00Z,20\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := files(t, "tx.csv.gz", in.String(), "q.sql", `SELECT user_id, ts, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS spend_1h FROM tx`)
	ctx := context.Background()
	if code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv.gz", "--sink", "out.csv.gz"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	zr, err := gzip.NewReader(strings.NewReader(readFile(t, filepath.Join(dir, "out.csv.gz"))))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := zr.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if want := "user_id,ts,spend_1h\nu1,2024-01-01T00:00:00Z,10\nu1,2024-01-01T00:30:00Z,30\n"; out.String() != want {
		t.Fatalf("out.csv.gz holds\n%s\nwant\n%s", out.String(), want)
	}
	code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv.gz", "--sink", "out.parquet.gz")
	if code != exitUsage || !strings.Contains(stderr, "Parquet compresses inside") {
		t.Fatalf("out.parquet.gz: exit %d, %s", code, stderr)
	}
}
