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
