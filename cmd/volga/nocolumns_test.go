package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputWithoutColumns: a .json file holding a JSON array (not JSON
// lines), or lines none of which is an object with fields, inferred no
// column, and the run failed on the query with `unknown column "ts"
// (table tx has )`. The error now says what is wrong with the input; an
// empty input points to --schema, with which it runs (and writes nothing).
func TestInputWithoutColumns(t *testing.T) {
	dir := files(t, "q.sql", spendSQL,
		"array.json", "[{\"user_id\": \"u1\", \"ts\": \"2024-01-01T00:00:00Z\", \"amount\": 1},\n {\"user_id\": \"u1\", \"ts\": \"2024-01-01T00:10:00Z\", \"amount\": 2}]\n",
		"empty.jsonl", "",
		"spine.jsonl", "{}\n{}\n",
		"tx.csv", txCSV)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sql", "q.sql", "--source", "tx=array.json"},
			"volga: source: array.json: no columns: none of its first rows is a JSON object with fields (JSON lines hold one object per line; a JSON array is not read as rows)\n"},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=empty.jsonl"},
			"volga: source: empty.jsonl: no data rows, so no columns to infer: give them with --schema COL:TYPE,..., or skip the empty input\n"},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.jsonl"},
			"volga: --spine: source: spine.jsonl: no columns: none of its first rows is a JSON object with fields (JSON lines hold one object per line; a JSON array is not read as rows)\n"},
	} {
		code, stdout, stderr := cli(t, context.Background(), dir, "", tc.args...)
		if code != exitFailure || stdout != "" || stderr != tc.want {
			t.Errorf("volga %v: exit %d, stdout %q, stderr\n %q\nwant exit %d and\n %q", tc.args, code, stdout, stderr, exitFailure, tc.want)
		}
	}
	code, stdout, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=empty.jsonl", "--schema", "user_id:varchar,ts:timestamp,amount:double")
	if code != exitOK || stdout != "" || stderr != "" {
		t.Errorf("empty input with --schema: exit %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
}

// TestBrokenPromiseNamesFlag: a row that breaks the order promised with
// --time-order or --clustered-by stopped the run with an error naming the
// Go options (WithTimeOrder), (ClusteredBy); it names the flags, and the
// --sink file is left as it was.
func TestBrokenPromiseNamesFlag(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "out.csv", "precious\n",
		"late.csv", "user_id,ts,amount\nu1,2024-01-01T01:00:00Z,1\nu1,2024-01-01T00:00:00Z,2\n",
		"mixed.csv", "user_id,ts,amount\nu1,2024-01-01T01:00:00Z,1\nu2,2024-01-01T00:00:00Z,2\nu1,2024-01-01T02:00:00Z,3\n")
	for _, tc := range []struct {
		args       []string
		flag, name string
	}{
		{[]string{"--source", "tx=late.csv", "--time-order", "0s"}, "(--time-order)", "(WithTimeOrder)"},
		{[]string{"--source", "tx=mixed.csv", "--clustered-by", "user_id"}, "(--clustered-by)", "(ClusteredBy)"},
	} {
		code, stdout, stderr := cli(t, context.Background(), dir, "", append([]string{"run", "--sql", "q.sql", "--sink", "out.csv"}, tc.args...)...)
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, tc.flag) || strings.Contains(stderr, tc.name) {
			t.Errorf("volga run %v: exit %d, stdout %q, stderr %q; want exit %d and an error naming %s, not %s", tc.args, code, stdout, stderr, exitFailure, tc.flag, tc.name)
		}
		if got := readFile(t, filepath.Join(dir, "out.csv")); got != "precious\n" {
			t.Errorf("volga run %v: out.csv now holds %q", tc.args, got)
		}
	}
}
