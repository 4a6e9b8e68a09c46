package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkOutput checks that dir holds at name what it held before a failed
// command (earlier; "" for no file) and nothing staged.
func checkOutput(t *testing.T, dir, name, earlier, what string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case earlier == "" && !os.IsNotExist(err):
		t.Errorf("%s: left %s of %d bytes (%.60q; %v), want none", what, name, len(b), b, err)
	case earlier != "" && string(b) != earlier:
		t.Errorf("%s: %s holds %d bytes (%.60q; %v), want what it held before", what, name, len(b), b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "."+name+".volga")); !os.IsNotExist(err) {
		t.Errorf("%s: staging directory of %s left behind (%v)", what, name, err)
	}
}

// TestFailedRunLeavesSinkFile: a batch run interrupted without
// checkpoints, a run whose --late-sink cannot be created and a backfill
// that fails part way leave the --sink file as it was before (or no file
// where there was none), never an empty or partial one.
func TestFailedRunLeavesSinkFile(t *testing.T) {
	const earlier = "earlier output\n"
	for _, out := range []string{"out.csv", "out.jsonl", "out.parquet"} {
		for _, before := range []string{"", earlier} {
			what := out
			if before != "" {
				what += " over an earlier file"
			}
			kv := []string{"q.sql", equivSQL, "tx.csv", randomTx(2000)}
			if before != "" {
				kv = append(kv, out, before)
			}

			dir := files(t, kv...)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			code, _, stderr := cli(t, ctx, dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--batch-size", "10", "--sink", out)
			if code != exitInterrupted {
				t.Errorf("%s: interrupted batch run: exit %d, stderr %q", what, code, stderr)
			}
			checkOutput(t, dir, out, before, "interrupted batch run into "+what)

			dir = files(t, kv...)
			code, _, stderr = cli(t, context.Background(), dir, "", "run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream",
				"--sink", out, "--late-sink", filepath.Join("missing", "late.csv"))
			if code != exitFailure || !strings.Contains(stderr, "late.csv") {
				t.Errorf("%s: run with a --late-sink in a missing directory: exit %d, stderr %q", what, code, stderr)
			}
			checkOutput(t, dir, out, before, "run with a bad --late-sink into "+what)

			// The spine is not in time order as --time-order 0s promises:
			// the backfill stops part way.
			dir = files(t, append(kv, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV)...)
			code, _, stderr = cli(t, context.Background(), dir, "", "backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv",
				"--sink", out, "--time-order", "0s")
			if code != exitFailure || !strings.Contains(stderr, "(--time-order)") {
				t.Errorf("%s: backfill over a spine out of order: exit %d, stderr %q", what, code, stderr)
			}
			checkOutput(t, dir, out, before, "failed backfill into "+what)
		}
	}
}

// TestOutputOverInputRefused: an output file that is an input file (by
// any spelling of its path, or through a symbolic link) or another
// output is refused before anything is read or written: the output
// replaces its file, so the input would be lost.
func TestOutputOverInputRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "tx.csv"},
			"volga: run: --sink tx.csv is the file of --source tx: the output would replace the input; write it elsewhere"},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "./sub/../tx.csv"},
			"volga: run: --sink ./sub/../tx.csv is the file of --source tx: the output would replace the input; write it elsewhere"},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", "link.csv"},
			"volga: run: --sink link.csv is the file of --source tx: the output would replace the input; write it elsewhere"},
		{[]string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--mode", "stream", "--sink", "out.csv", "--late-sink", "out.csv"},
			"volga: run: --late-sink and --sink name the same file out.csv: each would overwrite the other's rows"},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "spine.csv"},
			"volga: backfill: --sink spine.csv is the file of --spine: the output would replace the input; write it elsewhere"},
		{[]string{"backfill", "--sql", "q.sql", "--source", "tx=tx.csv", "--spine", "spine.csv", "--sink", "tx.csv"},
			"volga: backfill: --sink tx.csv is the file of --source tx: the output would replace the input; write it elsewhere"},
	} {
		dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV, "spine.csv", spineCSV)
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("tx.csv", filepath.Join(dir, "link.csv")); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := cli(t, context.Background(), dir, "", tc.args...)
		if code != exitUsage || stderr != tc.want+"\n" || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want %d, %q", tc.args, code, stderr, stdout, exitUsage, tc.want)
		}
		if got := readFile(t, filepath.Join(dir, "tx.csv")); got != txCSV {
			t.Errorf("%v: tx.csv changed:\n%s", tc.args, got)
		}
		if got := readFile(t, filepath.Join(dir, "spine.csv")); got != spineCSV {
			t.Errorf("%v: spine.csv changed:\n%s", tc.args, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "out.csv")); !os.IsNotExist(err) {
			t.Errorf("%v: out.csv was created (%v)", tc.args, err)
		}
	}
}
