package sink

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/volga-go/volga/internal/arrowutil"
)

var _ Committer = (*ParquetDir)(nil)

func (p *ParquetDir) setHook(h func(string) error) { p.hook = h }
func (p *ParquetDir) abandon() {
	if p.file != nil {
		p.file.Close()
	}
}

// partFiles lists the published files of the directory, in name order.
func partFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, _, ok := parseDirPart(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// readParquetDir renders the rows of the published files of the
// directory at path, in name order, after the schema (the same in every
// file); "" when there are none.
func readParquetDir(t *testing.T, path string) string {
	t.Helper()
	var sb strings.Builder
	schema := ""
	for _, name := range partFiles(t, path) {
		sch, err := readSchema(filepath.Join(path, name))
		if err != nil {
			t.Fatal(err)
		}
		s := sch.String()
		rows, ok := strings.CutPrefix(readParquet(t, filepath.Join(path, name)), s+"\n")
		if !ok || rows == "" {
			t.Fatalf("%s: a published file without rows", name)
		}
		if schema == "" {
			schema = s
			sb.WriteString(s + "\n")
		} else if s != schema {
			t.Fatalf("%s: schema %s, the first file has %s", name, s, schema)
		}
		sb.WriteString(rows)
	}
	return sb.String()
}

func parquetDirKind(fileRows int64) txKind {
	return txKind{"parquetdir", "out", func(p string) (txSink, error) {
		return NewParquetDir(p, nil, WithRowGroupSize(4), WithFileRows(fileRows))
	}, readParquetDir, false}
}

// TestParquetDirCrashes: the crash harness over the directory sink, with
// files rolled every few rows before the first checkpoint (and without
// checkpoints).
func TestParquetDirCrashes(t *testing.T) {
	t.Run("roll4", func(t *testing.T) { testCrashes(t, parquetDirKind(4), defaultPlan) })
	// A first epoch of many rolls, a failed first checkpoint.
	big := txPlan{epochs: [][]int{{3, 9}, {2}, {5}, {}, {1}}, failed: map[uint64]bool{1: true, 3: true}}
	t.Run("bigfirst", func(t *testing.T) { testCrashes(t, parquetDirKind(3), big) })
}

// TestParquetDirCheckpoints walks the engine's calls and checks the files
// of the directory at each point.
func TestParquetDirCheckpoints(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := txBatches(mem, 6)
	defer arrowutil.ReleaseAll(b)
	k := parquetDirKind(DefaultFileRows)
	expect := func(recs ...arrow.RecordBatch) string { return expectText(t, k, recs...) }
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// Files of an earlier run go, other files stay.
	for _, name := range []string{dirEpochName(9), dirRollName(0), "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	files := func(want ...string) {
		t.Helper()
		if got := partFiles(t, dir); !slices.Equal(got, want) {
			t.Fatalf("files %v, want %v", got, want)
		}
	}
	s, err := NewParquetDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, b[0])
	files()
	st1 := mustPrepare(t, s, 1)
	files()
	mustCommit(t, s, 1)
	files(dirEpochName(1))
	mustWrite(t, s, b[1])
	mustPrepare(t, s, 2)        // its checkpoint fails
	st3 := mustPrepare(t, s, 3) // no rows: no file
	files(dirEpochName(1))
	mustCommit(t, s, 3)
	mustCommit(t, s, 3)
	files(dirEpochName(1), dirEpochName(2))
	checkFile(t, k, dir, expect(b[0], b[1]), "after Commit(3)")
	mustWrite(t, s, b[2])
	st4 := mustPrepare(t, s, 4) // its checkpoint fails too
	mustWrite(t, s, b[3])       // dropped by Close
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files(dirEpochName(1), dirEpochName(2))
	stagedEpoch(t, filepath.Join(dir, dirStagingName), 4, parquetExt) // prepared epoch 4 kept
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	// The restart from epoch 4 publishes it.
	s, _ = NewParquetDir(dir, nil)
	if err := s.Recover(ctx, 4, st4); err != nil {
		t.Fatal(err)
	}
	files(dirEpochName(1), dirEpochName(2), dirEpochName(4))
	mustWrite(t, s, b[4])
	mustPrepare(t, s, 5)
	mustCommit(t, s, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files(dirEpochName(1), dirEpochName(2), dirEpochName(4), dirEpochName(5))
	checkFile(t, k, dir, expect(b[0], b[1], b[2], b[4]), "after the run from 4")
	if _, err := os.Stat(filepath.Join(dir, dirStagingName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging directory left: %v", err)
	}

	// A restart from epoch 3 (4 and 5 found corrupt) deletes their files.
	s, _ = NewParquetDir(dir, nil)
	if err := s.Recover(ctx, 3, st3); err != nil {
		t.Fatal(err)
	}
	files(dirEpochName(1), dirEpochName(2))
	mustWrite(t, s, b[5])
	mustPrepare(t, s, 4)
	mustCommit(t, s, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, dir, expect(b[0], b[1], b[5]), "after the replay from 3")

	// And one from epoch 1.
	s, _ = NewParquetDir(dir, nil)
	if err := s.Recover(ctx, 1, st1); err != nil {
		t.Fatal(err)
	}
	files(dirEpochName(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, k, dir, expect(b[0]), "after Recover(1) and Close")

	// A run from scratch replaces the files.
	s, _ = NewParquetDir(dir, nil)
	mustWrite(t, s, b[2])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files(dirRollName(0))
	checkFile(t, k, dir, expect(b[2]), "after a run from scratch")
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestParquetDirRolling: without checkpoints a file is published as soon
// as it holds WithFileRows rows, the last at Close; batches are split.
func TestParquetDirRolling(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	dir := filepath.Join(t.TempDir(), "a", "out")
	s, err := NewParquetDir(dir, txSchema, WithFileRows(4), WithRowGroupSize(3))
	if err != nil {
		t.Fatal(err)
	}
	rows := func(name string) int64 {
		t.Helper()
		rdr, err := file.OpenParquetFile(filepath.Join(dir, name), false)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Close()
		return rdr.NumRows()
	}
	var all []arrow.RecordBatch
	want := [][]string{{}, {dirRollName(0)}, {dirRollName(0)}, {dirRollName(0), dirRollName(1), dirRollName(2)}}
	for i, n := range []int{3, 2, 1, 7} {
		rec := txBatch(mem, len(all)*10, n)
		defer rec.Release()
		all = append(all, rec)
		mustWrite(t, s, rec)
		if got := partFiles(t, dir); !slices.Equal(got, want[i]) && !(len(got) == 0 && len(want[i]) == 0) {
			t.Fatalf("after batch %d: files %v, want %v", i, got, want[i])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names := partFiles(t, dir)
	if !slices.Equal(names, []string{dirRollName(0), dirRollName(1), dirRollName(2), dirRollName(3)}) {
		t.Fatalf("files %v", names)
	}
	for i, n := range []int64{4, 4, 4, 1} {
		if got := rows(names[i]); got != n {
			t.Errorf("%s: %d rows, want %d", names[i], got, n)
		}
	}
	k := parquetDirKind(4)
	checkFile(t, k, dir, expectText(t, k, all...), "after Close")
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Fatalf("%d entries in the directory, want the 4 files", len(ents))
	}

	// No rows: no file.
	empty := filepath.Join(t.TempDir(), "empty")
	s, _ = NewParquetDir(empty, txSchema)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Fatalf("empty run: %v %v", ents, err)
	}
}

// TestParquetDirNames: published names sort in output order.
func TestParquetDirNames(t *testing.T) {
	names := []string{dirRollName(0), dirRollName(1), dirRollName(12), dirRollName(9999999999), dirEpochName(0), dirEpochName(1), dirEpochName(10), dirEpochName(1<<63 + 5)}
	if !slices.IsSorted(names) {
		t.Fatalf("not sorted: %v", names)
	}
	for i, n := range names {
		e, roll, ok := parseDirPart(n)
		if !ok || (i < 4) != (roll >= 0) {
			t.Fatalf("%s: %d %d %v", n, e, roll, ok)
		}
	}
	for _, n := range []string{"part-1.parquet", "part-00000000000000000001-0000000001.parquet", "epoch-00000000000000000001.parquet", "part-0000000000000000000x.parquet"} {
		if _, _, ok := parseDirPart(n); ok {
			t.Errorf("%s parsed", n)
		}
	}
}

// TestParquetDirRecoverErrors: a state that does not match the files is
// an error.
func TestParquetDirRecoverErrors(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := txBatch(mem, 0, 4)
	defer rec.Release()
	setup := func(t *testing.T, fileRows int64) (string, []byte) {
		dir := filepath.Join(t.TempDir(), "out")
		s, _ := NewParquetDir(dir, nil, WithFileRows(fileRows))
		mustWrite(t, s, rec, rec)
		st := mustPrepare(t, s, 1)
		s.abandon()
		return dir, st
	}
	check := func(t *testing.T, dir string, epoch uint64, st []byte) {
		t.Helper()
		s, _ := NewParquetDir(dir, nil)
		if err := s.Recover(ctx, epoch, st); err == nil {
			t.Fatal("Recover succeeded")
		} else {
			t.Log(err)
		}
	}
	t.Run("garbage", func(t *testing.T) {
		dir, _ := setup(t, DefaultFileRows)
		check(t, dir, 1, []byte(`{"format":"volga-parquet/1","epoch":1}`))
	})
	t.Run("other epoch", func(t *testing.T) {
		dir, st := setup(t, DefaultFileRows)
		check(t, dir, 2, st)
	})
	t.Run("staged lost", func(t *testing.T) {
		dir, st := setup(t, DefaultFileRows)
		os.RemoveAll(filepath.Join(dir, dirStagingName))
		check(t, dir, 1, st)
	})
	t.Run("rolled lost", func(t *testing.T) {
		dir, st := setup(t, 3)
		if err := os.Remove(filepath.Join(dir, dirRollName(1))); err != nil {
			t.Fatal(err)
		}
		check(t, dir, 1, st)
	})
}

// TestOpenParquetDir: the paths Open takes for a directory of Parquet
// files.
func TestOpenParquetDir(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Mkdir(filepath.Join(tmp, "spark.parquet"), 0o777); err != nil {
		t.Fatal(err)
	}
	for path, dir := range map[string]string{
		filepath.Join(tmp, "out") + "/":         filepath.Join(tmp, "out"),
		filepath.Join(tmp, "glob", "*.parquet"): filepath.Join(tmp, "glob"),
		filepath.Join(tmp, "spark.parquet"):     filepath.Join(tmp, "spark.parquet"),
		filepath.Join(tmp, "spark.parquet/"):    filepath.Join(tmp, "spark.parquet"),
	} {
		s, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pd, ok := s.(*ParquetDir)
		if !ok || pd.path != dir {
			t.Fatalf("Open(%q) = %T, want a ParquetDir of %s", path, s, dir)
		}
		s.Close()
	}
	s, err := Open(filepath.Join(tmp, "file.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*Parquet); !ok {
		t.Fatalf("Open(file.parquet) = %T", s)
	}
	if _, err := Open(filepath.Join(tmp, "nodir")); err == nil {
		t.Fatal("Open of a path without extension that is not a directory succeeded")
	}
}
