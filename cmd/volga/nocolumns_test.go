package main

import (
	"context"
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
