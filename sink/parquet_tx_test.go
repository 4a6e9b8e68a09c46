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
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/volga-go/volga/internal/arrowutil"
)

// TestParquetSinkCheckpoints walks the engine's sequence of calls: the
// file appears whole at Close with the committed epochs only; a restart
// after the run leaves it as it is, one from an older checkpoint cuts it
// back at once.
func TestParquetSinkCheckpoints(t *testing.T) {
	ctx := context.Background()
	k := parquetKind
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 6)
	defer arrowutil.ReleaseAll(b)
	expect := func(recs ...arrow.RecordBatch) string { return expectText(t, k, recs...) }

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
	st1 := mustPrepare(t, s, 1)
	mustCommit(t, s, 1)
	mustWrite(t, s, b[1])
	mustPrepare(t, s, 2) // its checkpoint fails
	mustWrite(t, s, b[2])
	st3 := mustPrepare(t, s, 3)
	mustCommit(t, s, 3)
	mustCommit(t, s, 3)
	if got, _ := os.ReadFile(path); string(got) != "old output\n" {
		t.Fatalf("the file changed before Close: %q", got)
	}
	mustWrite(t, s, b[3])
	st4 := mustPrepare(t, s, 4) // its checkpoint fails too
	mustWrite(t, s, b[4])       // dropped by Close
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, path, expect(b[0], b[1], b[2]), "after Close")
	stagedEpoch(t, stagingDir(path), 4, parquetExt) // prepared epoch 4 kept
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := rdr.MetaData().KeyValueMetadata().FindValue(metaEpochs); v == nil || *v != "[[1,3],[2,6],[3,9]]" {
		t.Errorf("%s = %v", metaEpochs, v)
	}
	rdr.Close()

	// The restart from epoch 4 adds the prepared epoch 4 to the file.
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
	full := expect(b[0], b[1], b[2], b[3])
	checkFile(t, k, path, full, "after Recover(4) and Close")
	if _, err := os.Stat(stagingDir(path)); !os.IsNotExist(err) {
		t.Fatalf("staging directory left: %v", err)
	}
	done, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A restart after the completed run does not touch the file.
	s, err = k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 4, st4); err != nil {
		t.Fatal(err)
	}
	mustPrepare(t, s, 5)
	mustCommit(t, s, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, done) {
		t.Fatal("a restart without rows rewrote the finished file")
	}

	// A restart from epoch 3 (4 found corrupt) cuts the file back at once.
	s, err = k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 3, st3); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, path, expect(b[0], b[1], b[2]), "after Recover(3)")
	mustWrite(t, s, b[5])
	mustPrepare(t, s, 4)
	mustCommit(t, s, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, path, expect(b[0], b[1], b[2], b[5]), "after the replay from 3")

	// And one from epoch 1.
	s, err = k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 1, st1); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, path, expect(b[0]), "after Recover(1)")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, path, expect(b[0]), "after Recover(1) and Close")
}

// TestParquetSinkSchemaNoRows: with a schema, a checkpointed run without
// rows writes an empty file, as a run without checkpoints does.
func TestParquetSinkSchemaNoRows(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "empty.parquet")
		s, err := NewParquet(path, txSchema)
		if err != nil {
			t.Fatal(err)
		}
		if ckpt {
			mustPrepare(t, s, 1)
			mustCommit(t, s, 1)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := readParquet(t, path), txSchema.String()+"\n"; got != want {
			t.Fatalf("checkpoints %v: got %q want %q", ckpt, got, want)
		}
	}
}

// TestParquetSinkRecoverErrors: a state that does not match the files is
// an error.
func TestParquetSinkRecoverErrors(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 4)
	defer rec.Release()
	k := parquetKind
	setup := func(t *testing.T, close bool) (string, []byte) {
		path := filepath.Join(t.TempDir(), k.file)
		s, err := k.open(path)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, rec)
		st := mustPrepare(t, s, 1)
		mustCommit(t, s, 1)
		if close {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			s.abandon()
		}
		return path, st
	}
	check := func(t *testing.T, path string, epoch uint64, st []byte) {
		t.Helper()
		s, _ := k.open(path)
		defer s.abandon()
		if err := s.Recover(ctx, epoch, st); err == nil {
			t.Fatal("Recover succeeded")
		} else {
			t.Log(err)
		}
	}
	t.Run("garbage", func(t *testing.T) {
		path, _ := setup(t, false)
		check(t, path, 1, []byte(`{"format":"volga-text/1","epoch":1}`))
	})
	t.Run("staged lost", func(t *testing.T) {
		path, st := setup(t, false)
		os.RemoveAll(stagingDir(path))
		check(t, path, 1, st)
	})
	t.Run("file replaced", func(t *testing.T) {
		path, st := setup(t, true)
		s, _ := NewParquet(path, nil)
		mustWrite(t, s, rec)
		s.Close()
		check(t, path, 1, st)
	})
}

// TestFileSinksSync: under checkpoints every file is synced before it is
// renamed or counted on, and the directories after renames.
func TestFileSinksSync(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 4)
	defer rec.Release()
	var synced []string
	old := syncFile
	syncFile = func(f *os.File) error {
		synced = append(synced, untoken(filepath.Base(f.Name())))
		return old(f)
	}
	defer func() { syncFile = old }()
	expect := func(when string, want ...string) {
		t.Helper()
		got := strings.Join(synced, " ")
		if got != strings.Join(want, " ") {
			t.Errorf("%s: synced %s, want %s", when, got, strings.Join(want, " "))
		}
		synced = nil
	}
	for _, k := range append(textKinds, parquetKind) {
		dir := t.TempDir()
		path := filepath.Join(dir, k.file)
		staging := filepath.Base(stagingDir(path))
		cur, dirName := currentName, filepath.Base(dir)
		if k.whole {
			cur = currentName + parquetExt
		}
		s, err := k.open(path)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, rec)
		st := mustPrepare(t, s, 1)
		// The parent directory once the staging directory is created
		// (by Write for Parquet, by the first buffer flush for text).
		expect(k.name+" Write and PrepareCommit", dirName, cur, staging)
		mustCommit(t, s, 1)
		if k.whole {
			expect(k.name + " Commit")
		} else {
			expect(k.name+" Commit", k.file, staging)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if k.whole {
			expect(k.name+" Close", "final.parquet.tmp", dirName, staging)
		} else {
			expect(k.name + " Close")
		}
		// A restart from epoch 0 cuts everything: the Parquet file is
		// rewritten (synced), the text file truncated (synced).
		s, _ = k.open(path)
		if err := s.Recover(context.Background(), 1, st); err != nil {
			t.Fatal(err)
		}
		s.Close()
		synced = nil
	}
}

// TestParquetSinkCloseWithoutCommit: a checkpointed run that ends before
// any epoch is committed (its first checkpoint failed) leaves the file
// already at the path as it is, rather than replacing it by an empty
// one; its prepared epoch stays staged, and a restart from that epoch
// writes it.
func TestParquetSinkCloseWithoutCommit(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 2)
	defer arrowutil.ReleaseAll(b)
	path := filepath.Join(t.TempDir(), parquetKind.file)
	if err := os.WriteFile(path, []byte("old output\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	s, err := parquetKind.open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, b[0])
	st1 := mustPrepare(t, s, 1) // its checkpoint fails: no Commit
	mustWrite(t, s, b[1])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old output\n" {
		t.Fatalf("the file changed with no epoch committed: %.40q", got)
	}
	stagedEpoch(t, stagingDir(path), 1, parquetExt)

	s, err = parquetKind.open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, 1, st1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, parquetKind, path, expectText(t, parquetKind, b[0]), "after Recover(1) and Close")
}
