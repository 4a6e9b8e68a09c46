package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Child binaries.
//
// Each engine runs in a child process so that its peak RSS is its own.
// This command links DuckDB (cgo), and every process of it maps and
// initialises DuckDB's library at start: about 24 MB of RSS before any
// work (37 MB against 61 MB for a features-4 run of 1 000 events), which
// a program embedding volga would not have. So the engines other than
// DuckDB run in a build of this command without DuckDB (-tags
// volgaonly), made once per run with go build from this command's source
// directory (the build cache makes it a few seconds after the first);
// -child-binary self runs every engine in this executable, as before.

// childBinaries picks and, when needed, builds the executables engines
// run in.
type childBinaries struct {
	mode     string // "auto" or "self"
	self     string
	volga    string // the volga-only build, once made
	tmp      string
	buildErr error
}

// forEngine returns the executable to run engine in and its label for the
// result line ("" for this executable).
func (b *childBinaries) forEngine(engine string) (path, label string, err error) {
	if b.self == "" {
		if b.self, err = os.Executable(); err != nil {
			return "", "", err
		}
	}
	if engine == "duckdb" || b.mode == "self" || !withDuckDB {
		return b.self, "", nil
	}
	if b.volga == "" && b.buildErr == nil {
		b.volga, b.buildErr = b.build()
		if b.buildErr != nil {
			fmt.Fprintf(os.Stderr, "bench: cannot build the volga-only child (%v); running engines in this executable, DuckDB's library included in their RSS\n", b.buildErr)
		}
	}
	if b.buildErr != nil {
		return b.self, "self", nil
	}
	return b.volga, "volga-only", nil
}

// build builds this command with -tags volgaonly into a temporary
// directory.
func (b *childBinaries) build() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("source directory unknown")
	}
	dir := filepath.Dir(file)
	if _, err := os.Stat(filepath.Join(dir, "volgaonly.go")); err != nil {
		return "", fmt.Errorf("source directory %s not found: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "volga-bench-child")
	if err != nil {
		return "", err
	}
	b.tmp = tmp
	out := filepath.Join(tmp, "bench-volgaonly")
	cmd := exec.Command("go", "build", "-tags", "volgaonly", "-o", out, ".")
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags volgaonly: %w: %s", err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// cleanup removes the volga-only build.
func (b *childBinaries) cleanup() {
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}
