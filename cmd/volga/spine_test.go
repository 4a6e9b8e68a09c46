package main

import (
	"context"
	"testing"
)

// TestBackfillMissingSpine: a spine file that does not exist was reported
// as "volga: source: open labels.csv: ...", which reads as if the events
// were missing; the message now names --spine.
func TestBackfillMissingSpine(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	code, stdout, stderr := cli(t, context.Background(), dir, "", "backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "labels.csv")
	want := "volga: --spine: source: open labels.csv: no such file or directory\n"
	if code != exitFailure || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, exitFailure, want)
	}
}

// TestBackfillSpineTypoNote: a malformed time among the spine's first rows
// made its ts column text, and the backfill failed with "spine column "ts"
// has type utf8" and nothing to say which value; it now names the line.
func TestBackfillSpineTypoNote(t *testing.T) {
	spine := "user_id,ts\nu1,2024-01-01T02:00:00Z\nu1,2024-01-01 02:10\nu2,2024-01-01T01:20:00Z\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spine)
	code, stdout, stderr := cli(t, context.Background(), dir, "", "backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv")
	want := `volga: --spine spine.csv: spine column "ts" has type utf8, but the events' column has type timestamp[ms, tz=UTC]; ` +
		`note: spine column "ts" was inferred as utf8 because line 3 holds "2024-01-01 02:10", where 2 of the 3 values sampled are timestamp[ms, tz=UTC]: fix that value` + "\n"
	if code != exitFailure || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr\n %q\nwant exit %d and\n %q", code, stdout, stderr, exitFailure, want)
	}
}
