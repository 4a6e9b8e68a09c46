package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSinkPathErrors: an output path whose format the extension does not
// tell is a usage error naming the command, the flag and the path, for
// every command and flag that writes a file; group refuses it before it
// joins the group, not when a partition starts.
func TestSinkPathErrors(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV)
	kafka := "tx=kafka://127.0.0.1:1/tx?group=g&time_field=ts"
	const use = "cannot tell the output format from its extension: use .csv, .jsonl, .ndjson or .parquet (.csv.gz, .jsonl.zst ... compressed), a directory ending in / for Parquet files per checkpoint, or a kafka:// URL"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "out.txt"},
			"volga: run: --sink out.txt: " + use},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--late-sink", "late.txt"},
			"volga: run: --late-sink late.txt: " + use},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "out.txt"},
			"volga: backfill: --sink out.txt: " + use},
		{[]string{"group", "--sql", "q.sql", "--source", kafka, "--checkpoints", "ck", "--sink", "out-{partition}.txt"},
			"volga: group: --sink out-{partition}.txt: " + use},
		{[]string{"group", "--sql", "q.sql", "--source", kafka, "--checkpoints", "ck", "--sink", "out-{partition}.csv", "--late-sink", "late-{partition}.txt"},
			"volga: group: --late-sink late-{partition}.txt: " + use},
	} {
		code, stdout, stderr := cli(t, context.Background(), dir, "", tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("volga %s: exit %d, stdout %q, stderr:\n %q\nwant exit %d and\n %q", strings.Join(tc.args, " "), code, stdout, stderr, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ck")); err == nil {
		t.Error("group created its checkpoint directory before refusing its command line")
	}
}

// TestRunLateSinkStdoutTwice: late rows and output rows both to standard
// output would interleave two CSV tables; refused as a usage error.
func TestRunLateSinkStdoutTwice(t *testing.T) {
	late := "user_id,ts,amount\nu1,2024-01-01T00:00:00Z,10\nu1,2024-01-01T01:00:00Z,5\nu1,2024-01-01T00:10:00Z,20\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", late)
	code, stdout, stderr := cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--batch-size", "1", "--late-sink", "-")
	want := "volga: run: --late-sink - and the output would both go to standard output; give --sink or --late-sink a file\n"
	if code != exitUsage || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", code, stdout, stderr, exitUsage, want)
	}
	// With the output in a file, late rows may go to standard output.
	code, stdout, _ = cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--batch-size", "1", "--sink", "out.csv", "--late-sink", "-")
	if want := "user_id,ts,amount\nu1,2024-01-01T00:10:00Z,20\n"; code != exitOK || stdout != want {
		t.Errorf("--sink out.csv --late-sink -: exit %d, stdout %q; want 0 and %q", code, stdout, want)
	}
}

// TestHelpFlagOnEveryCommand: --help and -h after any command print its
// usage with exit status 0, help and version included.
func TestHelpFlagOnEveryCommand(t *testing.T) {
	for _, c := range commands() {
		_, want, _ := cli(t, context.Background(), t.TempDir(), "", "help", c.name)
		if !strings.HasPrefix(want, "usage: volga "+c.name) {
			t.Fatalf("volga help %s: %q", c.name, want)
		}
		for _, flag := range []string{"--help", "-h"} {
			code, stdout, stderr := cli(t, context.Background(), t.TempDir(), "", c.name, flag)
			if code != exitOK || stderr != "" || stdout != want {
				t.Errorf("volga %s %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and what volga help %s prints:\n%s", c.name, flag, code, stderr, stdout, c.name, want)
			}
		}
	}
}

// TestCheckExamplesZero: --examples 0 lists no difference, only the
// counts (CheckOptions reads 0 as its default of 10).
func TestCheckExamplesZero(t *testing.T) {
	served := `{"key":{"user_id":"u1"},"at":"2024-01-01T02:00:00Z","watermark":"+inf","features":{"spend_1h":4.6,"n_1h":2,"max_1h":3}}` + "\n"
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "log.jsonl", served)
	want := `INCONSISTENT: 1 lookup checked; feature values: 2 matched, 1 mismatched, 0 missing, 0 extra
largest relative difference: 0.0217 (spend_1h, key {"user_id":"u1"} at 2024-01-01T02:00:00Z: served 4.6, recomputed 4.5)
first 0 of 1 differences:
`
	code, stdout, stderr := cli(t, context.Background(), dir, "", "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "log.jsonl", "--examples", "0")
	if code != exitFailure || stderr != "" || stdout != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 1 and:\n%s", code, stderr, stdout, want)
	}

	// The help says what 0 does, and what X is.
	_, help, _ := cli(t, context.Background(), dir, "", "help", "check")
	for _, line := range []string{
		"  -examples N\n    \thow many differences to list (N; 0: only the counts) (default 10)\n",
		"  -tolerance X\n    \tlargest relative difference X between two numbers that still match (0: exact) (default 1e-09)\n",
	} {
		if !strings.Contains(help, line) {
			t.Errorf("volga help check lacks %q:\n%s", line, help)
		}
	}
}

// TestServeInterruptedWhileIngesting: serve stopped by a signal before
// its file is read never served: exit 130, as doc.go says, not the 0 of a
// server stopped.
func TestServeInterruptedWhileIngesting(t *testing.T) {
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, stdout, stderr := cli(t, ctx, dir, "", "serve", "--sql", "q.sql", "--source", "tx=tx.csv", "--listen", "127.0.0.1:0")
	if !strings.HasSuffix(stderr, "\nvolga: interrupted\n") || code != exitInterrupted || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and \"volga: interrupted\" last", code, stdout, stderr, exitInterrupted)
	}
}
