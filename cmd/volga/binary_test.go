package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBinary builds the real command and runs it as a process: the exit
// status and the standard streams must be what scripts see in-process.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the binary with")
	}
	dir := files(t, "q.sql", spendSQL, "tx.csv", txCSV,
		"bad.sql", "SELECT user_id,\n  max(amount) OVER w AS m\nFROM tx\nWINDOW w AS (PARTITION BY user_id ORDER BY nope RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)\n")
	bin := filepath.Join(t.TempDir(), "volga")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrLine string
	}{
		{"ok", []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv"}, 0, spendCSV, ""},
		{"sql error", []string{"run", "--sql", "bad.sql", "--source", "tx=tx.csv"}, 1, "", `volga: bad.sql:4:`},
		{"usage error", []string{"run", "--sql", "q.sql"}, 2, "", `volga: run: missing --source NAME=PATH for the query's table (see 'volga help run')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tc.stdout)
			}
			if tc.stderrLine == "" {
				if stderr.Len() > 0 {
					t.Errorf("stderr = %q, want nothing", stderr.String())
				}
				return
			}
			line, rest, _ := strings.Cut(stderr.String(), "\n")
			if rest != "" || !strings.HasPrefix(line, tc.stderrLine) {
				t.Errorf("stderr = %q, want one line starting with %q", stderr.String(), tc.stderrLine)
			}
		})
	}
}
