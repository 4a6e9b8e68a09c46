package sink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
)

// expectText returns what a run without checkpoints writes for batches.
func expectText(t *testing.T, k txKind, batches ...arrow.RecordBatch) string {
	t.Helper()
	return noCheckpointRun(t, k, [][]arrow.RecordBatch{batches})
}

func mustWrite(t *testing.T, s Sink, recs ...arrow.RecordBatch) {
	t.Helper()
	for _, r := range recs {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func mustPrepare(t *testing.T, s Committer, epoch uint64) []byte {
	t.Helper()
	st, err := s.PrepareCommit(context.Background(), epoch)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustCommit(t *testing.T, s Committer, epoch uint64) {
	t.Helper()
	if err := s.Commit(context.Background(), epoch); err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, k txKind, path, want, when string) {
	t.Helper()
	if got := k.read(t, path); got != want {
		t.Fatalf("%s: got\n%s\nwant\n%s", when, got, want)
	}
}

// TestTextSinkCheckpoints walks the engine's sequence of calls, with a
// failed checkpoint, and checks what the file shows at each point.
func TestTextSinkCheckpoints(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 6)
	defer arrowutil.ReleaseAll(b)
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, k.file)
			if err := os.WriteFile(path, []byte("old output\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, b[0])
			if f, ok := s.(interface{ Flush() error }); ok {
				if err := f.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			// The file keeps what it held until the sink publishes:
			// a run that fails before leaves it as it was.
			checkFile(t, k, path, "old output\n", "before the first PrepareCommit")
			st1 := mustPrepare(t, s, 1)
			checkFile(t, k, path, "old output\n", "after PrepareCommit(1)")
			mustCommit(t, s, 1)
			checkFile(t, k, path, expectText(t, k, b[0]), "after Commit(1)")

			// The checkpoint of epoch 2 fails: no Commit(2).
			mustWrite(t, s, b[1])
			mustPrepare(t, s, 2)
			checkFile(t, k, path, expectText(t, k, b[0]), "after PrepareCommit(2)")
			mustWrite(t, s, b[2])
			// An empty epoch.
			st3 := mustPrepare(t, s, 3)
			st4 := mustPrepare(t, s, 4)
			checkFile(t, k, path, expectText(t, k, b[0]), "after PrepareCommit(4)")
			mustCommit(t, s, 4)
			all := expectText(t, k, b[0], b[1], b[2])
			checkFile(t, k, path, all, "after Commit(4)")
			mustCommit(t, s, 4)
			mustCommit(t, s, 3)
			checkFile(t, k, path, all, "after Commit(4) again")
			if _, err := s.PrepareCommit(ctx, 4); err == nil {
				t.Fatal("PrepareCommit(4) twice succeeded")
			}
			// Rows after the last PrepareCommit belong to no checkpoint:
			// Close drops them.
			mustWrite(t, s, b[3])
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, all, "after Close")
			if _, err := os.Stat(stagingDir(path)); !os.IsNotExist(err) {
				t.Fatalf("staging directory left: %v", err)
			}

			// A restart after the completed run changes nothing.
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Recover(ctx, 4, st4); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, all, "after Recover(4) and Close")

			// A restart from epoch 3 (4 was found corrupt) keeps the
			// same output: epoch 4 is empty.
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Recover(ctx, 3, st3); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, all, "after Recover(3)")
			s.Close()

			// A restart from epoch 1 cuts the published epochs 2 and 3,
			// and the header is not written again.
			s, err = k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Recover(ctx, 1, st1); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, expectText(t, k, b[0]), "after Recover(1)")
			if err := s.Recover(ctx, 1, st1); err == nil {
				t.Fatal("second Recover succeeded")
			}
			mustWrite(t, s, b[4])
			mustPrepare(t, s, 2)
			mustCommit(t, s, 2)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, expectText(t, k, b[0], b[4]), "after the replay")
		})
	}
}

// TestTextSinkNoCheckpointRows checks that rows staged without any
// checkpoint are published by Close, over the old content.
func TestTextSinkEmptyCheckpointedRun(t *testing.T) {
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), k.file)
			if err := os.WriteFile(path, []byte("old output\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			s, err := k.open(path)
			if err != nil {
				t.Fatal(err)
			}
			st := mustPrepare(t, s, 1)
			// The first Commit replaces the old content.
			checkFile(t, k, path, "old output\n", "after PrepareCommit(1)")
			mustCommit(t, s, 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, k, path, "", "after Close")
			s, _ = k.open(path)
			if err := s.Recover(context.Background(), 1, st); err != nil {
				t.Fatal(err)
			}
			s.Close()
			checkFile(t, k, path, "", "after Recover")
		})
	}
}

// TestTextSinkRecoverErrors: a state that does not match the files is an
// error, never a silently wrong output.
func TestTextSinkRecoverErrors(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 4)
	defer rec.Release()
	k := textKinds[0]

	// setup runs epoch 1 (committed) and 2 (prepared only) and crashes.
	setup := func(t *testing.T) (path string, st1, st2 []byte) {
		path = filepath.Join(t.TempDir(), k.file)
		s, err := k.open(path)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, rec)
		st1 = mustPrepare(t, s, 1)
		mustCommit(t, s, 1)
		mustWrite(t, s, rec)
		st2 = mustPrepare(t, s, 2)
		s.abandon()
		return path, st1, st2
	}
	recoverErr := func(t *testing.T, path string, epoch uint64, st []byte, want string) {
		t.Helper()
		s, err := k.open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.abandon()
		err = s.Recover(ctx, epoch, st)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Recover: %v, want an error with %q", err, want)
		}
	}
	t.Run("garbage", func(t *testing.T) {
		path, _, _ := setup(t)
		recoverErr(t, path, 1, []byte("{"), "not the state")
		recoverErr(t, path, 1, nil, "not the state")
	})
	t.Run("epoch", func(t *testing.T) {
		path, st1, _ := setup(t)
		recoverErr(t, path, 2, st1, "state of epoch 1")
	})
	t.Run("staged file changed", func(t *testing.T) {
		path, _, st2 := setup(t)
		staged := stagedEpoch(t, stagingDir(path), 2, "")
		b, err := os.ReadFile(staged)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-2] ^= 1
		if err := os.WriteFile(staged, b, 0o666); err != nil {
			t.Fatal(err)
		}
		before := k.read(t, path)
		recoverErr(t, path, 2, st2, "does not match")
		checkFile(t, k, path, before, "after the failed Recover")
	})
	t.Run("staged file lost", func(t *testing.T) {
		path, _, st2 := setup(t)
		if err := os.Remove(stagedEpoch(t, stagingDir(path), 2, "")); err != nil {
			t.Fatal(err)
		}
		recoverErr(t, path, 2, st2, "lost")
	})
	t.Run("target cut", func(t *testing.T) {
		path, st1, _ := setup(t)
		if err := os.Truncate(path, 5); err != nil {
			t.Fatal(err)
		}
		recoverErr(t, path, 1, st1, "lost")
	})
	t.Run("after Write", func(t *testing.T) {
		path, st1, _ := setup(t)
		s, _ := k.open(path)
		defer s.abandon()
		mustWrite(t, s, rec)
		if err := s.Recover(ctx, 1, st1); err == nil {
			t.Fatal("Recover after Write succeeded")
		}
	})
}

// TestTextSinkOverWriter: sinks over an io.Writer are at least once:
// PrepareCommit and Commit flush, Recover does nothing.
func TestTextSinkOverWriter(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 2)
	defer rec.Release()
	var buf bytes.Buffer
	s := NewJSONL(&buf)
	if err := s.Recover(ctx, 3, nil); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, rec)
	if st := mustPrepare(t, s, 4); st != nil {
		t.Fatalf("state %q", st)
	}
	want := "{\"id\":0,\"name\":\"n0, \\\"q\\\"\"}\n{\"id\":1,\"name\":\"n1, \\\"q\\\"\"}\n"
	if buf.String() != want {
		t.Fatalf("after PrepareCommit: %q", buf.String())
	}
	mustCommit(t, s, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTextSinkDevice: a path that is not a regular file is written
// directly.
func TestTextSinkDevice(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 2)
	defer rec.Release()
	s, err := CreateCSV(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if s.t.tx != nil {
		t.Fatal("transactional over a device")
	}
	mustWrite(t, s, rec)
	mustPrepare(t, s, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTextSinkSymlink: a link is followed; the staging directory is next
// to the file it points to.
func TestTextSinkSymlink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 2)
	defer rec.Release()
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "out.csv")
	if err := os.Mkdir(filepath.Dir(real), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	s, err := CreateCSV(link)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, rec)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(link)
	if want := expectText(t, textKinds[0], rec); string(got) != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("link replaced")
	}
}

// TestFileSinksKeepMode: the published file keeps the permissions of the
// file it replaces.
func TestFileSinksKeepMode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 2)
	defer rec.Release()
	for _, k := range append(textKinds, parquetKind) {
		path := filepath.Join(t.TempDir(), k.file)
		if err := os.WriteFile(path, nil, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		s, err := k.open(path)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, rec)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, %v", k.name, fi.Mode(), err)
		}
	}
}
