package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// typoCSV is txCSV with a typo in a column of numbers (line 3) and one in
// a column of times (line 5), among the rows a schema is inferred from.
const typoCSV = `user_id,ts,amount
u1,2024-01-01T00:00:00Z,10
u2,2024-01-01T00:10:00Z,5x
u1,2024-01-01T00:30:00Z,20
u1,2024-01-01 01:15,1.5
u2,2024-01-01T01:20:00Z,7
u1,2024-01-01T02:00:00Z,3
`

// TestSchemaFlag: a malformed value among the first rows made inference
// read its column as text, and the run failed on the query, telling a
// command-line user to call source.WithSchema. The error now names
// --schema, and with --schema the malformed rows are dead letters and
// the run goes on, for run, backfill and check alike.
func TestSchemaFlag(t *testing.T) {
	const schema = "user_id:varchar,ts:timestamp,amount:double"
	spine := "user_id,ts\nu1,2024-01-01T02:00:00Z\nu2,2024-01-01T01:20:00Z\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", typoCSV, "spine.csv", spine,
		"tx.jsonl", `{"user_id":"u1","ts":"2024-01-01T00:00:00Z","amount":10}
{"user_id":"u1","ts":"2024-01-01T00:30:00Z","amount":"ten"}
{"user_id":"u1","ts":"2024-01-01T00:40:00Z","amount":2.5}
`)
	ctx := context.Background()

	code, stdout, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv")
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "give the schema (--schema COL:TYPE,...)") || strings.Contains(stderr, "source.WithSchema") {
		t.Errorf("without --schema: exit %d, stdout %q, stderr %q; want exit %d and an error advising --schema", code, stdout, stderr, exitFailure)
	}

	code, stdout, stderr = cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--schema", schema)
	wantOut := "user_id,ts,amount,spend_1h,n_1h,max_1h\n" +
		"u1,2024-01-01T00:00:00Z,10,10,1,10\n" +
		"u1,2024-01-01T00:30:00Z,20,30,2,20\n" +
		"u2,2024-01-01T01:20:00Z,7,7,1,7\n" +
		"u1,2024-01-01T02:00:00Z,3,3,1,3\n"
	wantErr := "volga: dead letter: tx.csv:3: column \"amount\": cannot parse \"5x\" as float64\n" +
		"volga: dead letter: tx.csv:5: column \"ts\": cannot parse \"2024-01-01 01:15\" as timestamp[ms, tz=UTC]\n" +
		"volga: 2 dead letters skipped; 4 rows read\n"
	if code != exitOK || stdout != wantOut || stderr != wantErr {
		t.Errorf("run --schema: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0,\n%s\n%s", code, stdout, stderr, wantOut, wantErr)
	}

	// JSON lines: "ten" in a column of numbers.
	code, stdout, stderr = cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.jsonl", "--schema", schema)
	wantOut = "user_id,ts,amount,spend_1h,n_1h,max_1h\n" +
		"u1,2024-01-01T00:00:00Z,10,10,1,10\n" +
		"u1,2024-01-01T00:40:00Z,2.5,12.5,2,10\n"
	if code != exitOK || stdout != wantOut || !strings.HasPrefix(stderr, "volga: dead letter: tx.jsonl:2: ") {
		t.Errorf("run --schema over JSON lines: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0,\n%s\nand line 2 a dead letter", code, stdout, stderr, wantOut)
	}

	// backfill: the schema is the events'; the spine's is inferred.
	code, stdout, stderr = cli(t, ctx, dir, "", "backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--schema", schema, "--spine", "spine.csv")
	wantOut = "user_id,ts,spend_1h,n_1h,max_1h\n" +
		"u1,2024-01-01T02:00:00Z,3,1,3\n" +
		"u2,2024-01-01T01:20:00Z,7,1,7\n"
	if code != exitOK || stdout != wantOut || !strings.Contains(stderr, "2 dead letters skipped") {
		t.Errorf("backfill --schema: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0 and\n%s", code, stdout, stderr, wantOut)
	}
}

// TestSchemaFlagErrors: a --schema that cannot be used is a usage error
// naming what is wrong, before anything is written.
func TestSchemaFlagErrors(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	ctx := context.Background()
	if code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "tx.parquet"); code != exitOK {
		t.Fatalf("writing tx.parquet: exit %d, %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--schema", "user_id:long"},
			`volga: run: invalid value "user_id:long" for flag --schema: column "user_id": unknown type "long"; use bigint, double, varchar, boolean, timestamp or date (see 'volga help run')`},
		{[]string{"serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--schema", "user_id"},
			`volga: serve: invalid value "user_id" for flag --schema: want COL:TYPE,..., e.g. user_id:bigint,ts:timestamp,amount:double; "user_id" is not COL:TYPE (see 'volga help serve')`},
		{[]string{"check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "l.jsonl", "--schema", "ts:timestamp,TS:date"},
			`volga: check: invalid value "ts:timestamp,TS:date" for flag --schema: column "TS" given twice (see 'volga help check')`},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.parquet", "--schema", "user_id:varchar,ts:timestamp,amount:double", "--sink", "out.csv"},
			"volga: --schema: tx.parquet is Parquet, whose files carry their schema; --schema applies to CSV and JSON-lines input and Kafka topics"},
	} {
		code, stdout, stderr := cli(t, ctx, dir, "", tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("volga %s: exit %d, stdout %q, stderr\n %q\nwant exit %d and\n %q", strings.Join(tc.args, " "), code, stdout, stderr, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.csv")); err == nil {
		t.Error("run refused --schema over Parquet but created out.csv")
	}
}
