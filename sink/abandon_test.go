package sink

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
)

// TestFileSinksAbandon: a file sink the engine abandons (the run failed)
// without checkpoints publishes nothing: a file already at the path keeps
// what it held, a path where there was none gets no file, and nothing is
// left staged. Under checkpoints the committed output stays (text) or
// stays staged for Recover (Parquet), and a resumed run completes it.
func TestFileSinksAbandon(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 3)
	defer arrowutil.ReleaseAll(b)
	for _, k := range append(textKinds[:len(textKinds):len(textKinds)], parquetKind) {
		t.Run(k.name, func(t *testing.T) {
			staged := func(path string) {
				t.Helper()
				if _, err := os.Stat(stagingDir(path)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("staging directory left behind (stat: %v)", err)
				}
			}
			// A file of an earlier run is left as it was.
			path := filepath.Join(t.TempDir(), k.file)
			if err := os.WriteFile(path, []byte("earlier output\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0], b[1])
			if err := s.(Abandoner).Abandon(); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, path); got != "earlier output\n" {
				t.Fatalf("after Abandon the file holds %q, want the earlier output", got)
			}
			staged(path)
			if err := s.Close(); err != nil {
				t.Fatalf("Close after Abandon: %v", err)
			}
			if got := readText(t, path); got != "earlier output\n" {
				t.Fatalf("after Abandon and Close the file holds %q", got)
			}

			// No file before: none after.
			path = filepath.Join(t.TempDir(), k.file)
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			if err := s.(Abandoner).Abandon(); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, path); got != "<missing>" {
				t.Fatalf("after Abandon a file was left: %q", got)
			}
			staged(path)

			// Abandoned before any row (a run that failed at once).
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.(Abandoner).Abandon(); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, path); got != "<missing>" {
				t.Fatalf("after Abandon a file was left: %q", got)
			}
			staged(path)

			// Under checkpoints: epoch 1 committed, epoch 2 written, then
			// the run fails. Resumed from epoch 1, the output is whole.
			path = filepath.Join(t.TempDir(), k.file)
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			st1 := mustPrepare(t, s, 1)
			mustCommit(t, s, 1)
			mustWrite(t, s, b[1])
			if err := s.(Abandoner).Abandon(); err != nil {
				t.Fatal(err)
			}
			want1 := noCheckpointRun(t, k, [][]arrow.RecordBatch{{b[0]}})
			if k.whole {
				want1 = "<missing>" // the Parquet file is written at the end
			}
			if got := k.read(t, path); got != want1 {
				t.Fatalf("after Abandon under checkpoints: got\n%s\nwant\n%s", got, want1)
			}
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Recover(ctx, 1, st1); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[1], b[2])
			mustPrepare(t, s, 2)
			mustCommit(t, s, 2)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got, want := k.read(t, path), noCheckpointRun(t, k, [][]arrow.RecordBatch{b}); got != want {
				t.Fatalf("resumed run: got\n%s\nwant\n%s", got, want)
			}
			staged(path)
		})
	}
}

// TestTextSinkEmptyRunReplacesFile: a run that succeeds without a row
// still replaces what the file held (by an empty file), as before.
func TestTextSinkEmptyRunReplacesFile(t *testing.T) {
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), k.file)
			if err := os.WriteFile(path, []byte("earlier output\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, path); got != "" {
				t.Fatalf("file holds %q, want it empty", got)
			}
		})
	}
}

// TestTextSinkFailsBeforeFirstCommit: under checkpoints, a file's earlier
// content stays until the run's first Commit: a run whose first
// checkpoint never completes (PrepareCommit, then the run fails) leaves
// it as it was, and a restart from scratch replaces it.
func TestTextSinkFailsBeforeFirstCommit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 2)
	defer arrowutil.ReleaseAll(b)
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), k.file)
			if err := os.WriteFile(path, []byte("earlier output\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			mustPrepare(t, s, 1)
			mustWrite(t, s, b[1])
			if err := s.(Abandoner).Abandon(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, "earlier output\n", "after a run failed before its first Commit")

			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			mustPrepare(t, s, 1)
			mustCommit(t, s, 1)
			mustWrite(t, s, b[1])
			mustPrepare(t, s, 2)
			mustCommit(t, s, 2)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, expectText(t, k, b[0], b[1]), "after the run started again")
		})
	}
}

// TestParquetMissingDirectory: a Parquet sink whose directory does not
// exist fails when it is made, as CreateCSV does, not at its first Write
// after the run computed its output.
func TestParquetMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing", "out.parquet"), filepath.Join(notDir, "out.parquet")} {
		if _, err := NewParquet(path, nil); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("NewParquet(%s): %v", path, err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%s): %v", path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory was created: %v", err)
	}
}

// TestFileSinksFailedPublication: when Close cannot publish the rows of a
// run without checkpoints (a write of the staged file fails: here its
// descriptor is closed under the sink, as a full disk would fail it), it
// returns the error and cleans up as for a failed run: the file keeps
// its earlier content (a file the sink created is removed) and nothing
// is left staged.
func TestFileSinksFailedPublication(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 1)
	defer arrowutil.ReleaseAll(b)
	for _, k := range append(textKinds[:len(textKinds):len(textKinds)], parquetKind) {
		for _, earlier := range []string{"earlier output\n", ""} {
			path := filepath.Join(t.TempDir(), k.file)
			if earlier != "" {
				if err := os.WriteFile(path, []byte(earlier), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			switch s := s.(type) {
			case *CSV:
				mustFlush(t, s)
				s.t.tx.cur.Close()
			case *JSONL:
				mustFlush(t, s)
				s.t.tx.cur.Close()
			case *Parquet:
				s.file.Close()
			}
			if err := s.Close(); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Fatalf("%s: Close: %v, want the error of the closed file", k.name, err)
			}
			want := earlier
			if want == "" {
				want = "<missing>"
			}
			if got := readText(t, path); got != want {
				t.Errorf("%s: after a failed Close the file holds %q, want %q", k.name, got, want)
			}
			if _, err := os.Stat(stagingDir(path)); !errors.Is(err, fs.ErrNotExist) {
				ents, _ := os.ReadDir(stagingDir(path))
				t.Errorf("%s: staging directory left behind (%v, %d entries)", k.name, err, len(ents))
			}
		}
	}
}

func mustFlush(t *testing.T, s interface{ Flush() error }) {
	t.Helper()
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}
