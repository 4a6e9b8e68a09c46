package main

import (
	"context"
	"strings"
	"testing"
)

// TestCheckSkipsBadLogLines: one line of the log that is not a lookup (a
// logged error response, a last line cut short when the logger was
// killed) stopped volga check with nothing compared. Such lines are now
// dead letters, the other lookups are checked, and the exit status is 1
// because not every line could be.
func TestCheckSkipsBadLogLines(t *testing.T) {
	log := `{"key":{"user_id":"u1"},"at":"2024-01-01T02:00:00Z","watermark":"+inf","features":{"spend_1h":4.5,"n_1h":2,"max_1h":3}}
{"error":"unknown key column \"user\"; the key columns are user_id"}
{"key":{"user_id":"u2"},"at":"2024-01-01T01:20:00Z","watermark":"+inf","features":{"spend_1h":7,"n_1h":1,"max_1h":7}}
{"key":{"user_id":"u2"},"at":"2024-01-0`
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "log.jsonl", log, "good.jsonl", strings.Split(log, "\n")[0]+"\n"+strings.Split(log, "\n")[2]+"\n")
	for _, src := range []struct{ flag, stdin, name string }{{"log.jsonl", "", "log.jsonl"}, {"-", log, "-"}} {
		code, stdout, stderr := cli(t, context.Background(), dir, src.stdin, "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", src.flag)
		wantOut := "consistent: 2 lookups checked; feature values: 6 matched, 0 mismatched, 0 missing, 0 extra\n"
		lines := strings.Split(stderr, "\n")
		if code != exitFailure || !strings.HasPrefix(stdout, wantOut) || len(lines) != 4 ||
			!strings.HasPrefix(lines[0], "volga: dead letter: "+src.name+":2: a logged error response (") ||
			!strings.HasPrefix(lines[1], "volga: dead letter: "+src.name+":4: ") ||
			lines[2] != "volga: 2 log lines skipped: not lookups; the other 2 checked" {
			t.Errorf("--log %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, %q and lines 2 and 4 reported", src.flag, code, stdout, stderr, exitFailure, wantOut)
		}
	}
	// Without the bad lines: exit 0, nothing on standard error.
	code, stdout, stderr := cli(t, context.Background(), dir, "", "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "good.jsonl")
	if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "consistent: 2 lookups checked; feature values: 6 matched") {
		t.Errorf("good log: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// A missing log names the flag.
	code, _, stderr = cli(t, context.Background(), dir, "", "check", "--sql", "q.sql", "--source", "tx=tx.csv", "--log", "nope.jsonl")
	if want := "volga: --log: open nope.jsonl: no such file or directory\n"; code != exitFailure || stderr != want {
		t.Errorf("missing log: exit %d, stderr %q; want %d, %q", code, stderr, exitFailure, want)
	}
}
