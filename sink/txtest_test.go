package sink

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Every file sink takes part in checkpoints.
var (
	_ Committer = (*CSV)(nil)
	_ Committer = (*JSONL)(nil)
	_ Committer = (*Parquet)(nil)
)

// txSink is a transactional sink with the test hooks.
type txSink interface {
	Sink
	Committer
	setHook(func(step string) error)
	abandon()
}

func (c *CSV) setHook(h func(string) error)     { c.t.tx.hook = h }
func (c *CSV) abandon()                         { c.t.tx.abandon() }
func (j *JSONL) setHook(h func(string) error)   { j.t.tx.hook = h }
func (j *JSONL) abandon()                       { j.t.tx.abandon() }
func (p *Parquet) setHook(h func(string) error) { p.hook = h }
func (p *Parquet) abandon() {
	if p.file != nil {
		p.file.Close()
	}
}

var errCrash = errors.New("simulated crash")

var crashAll = flag.Bool("sink.crashall", false, "crash tests: restart from every checkpoint and crash every restart at every step, after every crash point")

// crasher counts steps (file-system steps inside the sink, calls outside)
// and fails the step number at (never when at is 0).
type crasher struct{ n, at int }

func (c *crasher) step(string) error {
	c.n++
	if c.n == c.at {
		return errCrash
	}
	return nil
}

// txKind describes one file sink for the shared tests.
type txKind struct {
	name string
	file string
	open func(path string) (txSink, error)
	// read returns the published output at path as text.
	read func(t *testing.T, path string) string
	// whole: the output appears at Close only, as a whole.
	whole bool
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readParquet renders the stored schema and the rows of the Parquet file
// at path as text.
func readParquet(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	schema, err := storedSchema(rdr)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var sb strings.Builder
	sb.WriteString(schema.String() + "\n")
	tr := array.NewTableReader(tbl, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			for c := range int(rec.NumCols()) {
				sb.WriteString(FormatValue(rec.Column(c), i) + "|")
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

var textKinds = []txKind{
	{"csv", "out.csv", func(p string) (txSink, error) { return CreateCSV(p) }, readText, false},
	{"jsonl", "out.jsonl", func(p string) (txSink, error) { return CreateJSONL(p) }, readText, false},
	{"csv.gz", "out.csv.gz", func(p string) (txSink, error) { return CreateCSV(p) }, readPacked, false},
	{"jsonl.zst", "out.jsonl.zst", func(p string) (txSink, error) { return CreateJSONL(p) }, readPacked, false},
}

// readPacked is readText for a compressed file: its text, decompressed
// when it starts as gzip or zstd does (a file the sink has not published
// to yet keeps what it held).
func readPacked(t *testing.T, path string) string {
	t.Helper()
	raw := readText(t, path)
	var r io.ReadCloser
	switch {
	case strings.HasPrefix(raw, "\x1f\x8b"):
		zr, err := gzip.NewReader(strings.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr
	case strings.HasPrefix(raw, "\x28\xb5\x2f\xfd"):
		zr, err := zstd.NewReader(strings.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr.IOReadCloser()
	default:
		return raw
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: not one valid compressed stream: %v", path, err)
	}
	return string(b)
}

var parquetKind = txKind{"parquet", "out.parquet", func(p string) (txSink, error) {
	return NewParquet(p, nil, WithRowGroupSize(4))
}, readParquet, true}

var txSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// txBatch returns n rows whose ids start at first; names need CSV quoting.
// txBatches returns n batches of 3 rows each, batch i's ids from 10*i;
// the caller releases them (arrowutil.ReleaseAll).
func txBatches(mem memory.Allocator, n int) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		out[i] = txBatch(mem, 10*i, 3)
	}
	return out
}

func txBatch(mem memory.Allocator, first, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, txSchema)
	defer b.Release()
	for i := range n {
		id := first + i
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		if id%5 == 4 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d, \"q\"", id))
		}
	}
	return b.NewRecordBatch()
}

// txPlan is a run: the row counts of the batches of epochs 1..N, and the
// epochs whose checkpoint fails (no Commit follows their PrepareCommit).
type txPlan struct {
	epochs [][]int
	failed map[uint64]bool
}

var defaultPlan = txPlan{
	epochs: [][]int{{3, 2}, {1}, {}, {4}, {0, 2}, {2, 3}},
	failed: map[uint64]bool{2: true, 5: true},
}

// batches builds the batches of the plan; ids are unique over the run.
func (p txPlan) batches(mem memory.Allocator) [][]arrow.RecordBatch {
	out := make([][]arrow.RecordBatch, len(p.epochs))
	id := 0
	for e, sizes := range p.epochs {
		for _, n := range sizes {
			out[e] = append(out[e], txBatch(mem, id, n))
			id += n
		}
	}
	return out
}

type checkpoint struct {
	epoch uint64
	state []byte
}

// drive plays the epochs after from as the engine does, saving the
// checkpoints it completes in *ckpts, then closes s. step is called after
// every call; an error from anything stops the run (a crash).
func drive(ctx context.Context, s txSink, from uint64, p txPlan, batches [][]arrow.RecordBatch, ckpts *[]checkpoint, step func(string) error) error {
	return driveObserved(ctx, s, from, p, batches, ckpts, step, nil)
}

// driveObserved is drive calling committed after each Commit.
func driveObserved(ctx context.Context, s txSink, from uint64, p txPlan, batches [][]arrow.RecordBatch, ckpts *[]checkpoint, step func(string) error, committed func(uint64)) error {
	for e := from + 1; e <= uint64(len(batches)); e++ {
		for _, b := range batches[e-1] {
			if err := s.Write(ctx, b); err != nil {
				return err
			}
			if err := step("write"); err != nil {
				return err
			}
		}
		state, err := s.PrepareCommit(ctx, e)
		if err != nil {
			return err
		}
		if err := step("prepared"); err != nil {
			return err
		}
		if p.failed[e] {
			continue
		}
		*ckpts = append(*ckpts, checkpoint{e, state})
		if err := step("checkpoint"); err != nil {
			return err
		}
		if err := s.Commit(ctx, e); err != nil {
			return err
		}
		if committed != nil {
			committed(e)
		}
		if err := step("committed"); err != nil {
			return err
		}
	}
	return s.Close()
}

// snapshot copies the files under dir (one level of subdirectories).
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && p != dir {
				rel, _ := filepath.Rel(dir, p)
				out[rel+"/"] = nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func restore(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name := range files {
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(filepath.Join(dir, name), 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range files {
		if strings.HasSuffix(name, "/") {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// noSync makes the crash tests fast: they simulate crashes at each step,
// fsync adds nothing to what they check.
func noSync(t *testing.T) {
	old := syncFile
	syncFile = func(*os.File) error { return nil }
	t.Cleanup(func() { syncFile = old })
}

func smallCopies(t *testing.T, n int) {
	old := copyChunk
	copyChunk = n
	t.Cleanup(func() { copyChunk = old })
}

// cleanRun plays the plan without a crash and returns the output, the
// number of steps and the output visible after each Commit.
func cleanRun(t *testing.T, k txKind, p txPlan, batches [][]arrow.RecordBatch) (string, int, map[uint64]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), k.file)
	s, err := k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &crasher{}
	s.setHook(c.step)
	var ckpts []checkpoint
	visible := map[uint64]string{}
	if err := driveObserved(context.Background(), s, 0, p, batches, &ckpts, c.step, func(e uint64) { visible[e] = k.read(t, path) }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stagingDir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging directory left after a complete run: %v", err)
	}
	return k.read(t, path), c.n, visible
}

// noCheckpointRun writes every batch and closes, without checkpoints.
func noCheckpointRun(t *testing.T, k txKind, batches [][]arrow.RecordBatch) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), k.file)
	s, err := k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range batches {
		for _, b := range ep {
			if err := s.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return k.read(t, path)
}

// restart opens a new sink on the files in dir, recovers it from c (a
// fresh start when c is nil) and plays the rest of the plan; step may
// crash it again. recovered, if not nil, is called after Recover.
func restart(ctx context.Context, k txKind, dir string, c *checkpoint, p txPlan, batches [][]arrow.RecordBatch, step func(string) error, recovered func() error) error {
	s, err := k.open(filepath.Join(dir, k.file))
	if err != nil {
		return err
	}
	s.setHook(step)
	from := uint64(0)
	var ckpts []checkpoint
	if c != nil {
		from = c.epoch
		if err := s.Recover(ctx, c.epoch, c.state); err != nil {
			s.abandon()
			return err
		}
		if recovered != nil {
			if err := recovered(); err != nil {
				s.abandon()
				return err
			}
		}
		if err := step("recovered"); err != nil {
			s.abandon()
			return err
		}
	}
	if err := drive(ctx, s, from, p, batches, &ckpts, step); err != nil {
		s.abandon()
		return err
	}
	return nil
}

// testCrashes crashes a run after every step; for each crash it restarts
// from every checkpoint completed so far (the latest, as the engine does,
// and the earlier ones, as when later checkpoints are found corrupt) and
// from scratch, and checks the output equals the crash-free one. From the
// latest checkpoint it also crashes the restart at every step and
// restarts again.
func testCrashes(t *testing.T, k txKind, p txPlan) {
	// Restart from every checkpoint (not only the latest) after every
	// olderEvery-th crash point; crash the restart too after every
	// nestEvery-th one, and after the last tail ones (in Close).
	olderEvery, nestEvery, tail := 4, 16, 3
	switch {
	case *crashAll:
		olderEvery, nestEvery, tail = 1, 1, 1<<30
	case testing.Short():
		olderEvery, nestEvery, tail = 12, 48, 2
	}
	noSync(t)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	batches := p.batches(mem)
	defer func() {
		for _, ep := range batches {
			for _, b := range ep {
				b.Release()
			}
		}
	}()
	want, steps, visible := cleanRun(t, k, p, batches)
	if got := noCheckpointRun(t, k, batches); got != want {
		t.Fatalf("run without checkpoints:\n%s\nwith checkpoints:\n%s", got, want)
	}
	// upTo[e] is the output of the epochs <= e, what the target may show
	// after Recover(e) (or nothing yet, when the output appears whole).
	upTo := map[uint64]string{}
	for e := range uint64(len(batches)) + 1 {
		upTo[e] = noCheckpointRun(t, k, batches[:e])
		if !k.whole && upTo[e] != visible[e] && !p.failed[e] && e > 0 {
			t.Fatalf("epoch %d: visible after Commit:\n%s\nwant:\n%s", e, visible[e], upTo[e])
		}
	}
	var runs atomic.Int64
	// The crash points run in parallel (they wait on the file system).
	t.Run("crash", func(t *testing.T) {
		for at := 1; at < steps; at++ {
			t.Run(strconv.Itoa(at), func(t *testing.T) {
				t.Parallel()
				runs.Add(int64(crashAt(t, k, p, batches, at, want, steps, upTo, olderEvery, nestEvery, tail)))
			})
		}
	})
	t.Logf("%d steps, %d recoveries checked", steps, runs.Load())
}

// crashAt crashes a run at step at, then restarts it (see testCrashes);
// it returns the number of restarts checked.
func crashAt(t *testing.T, k txKind, p txPlan, batches [][]arrow.RecordBatch, at int, want string, steps int, upTo map[uint64]string, olderEvery, nestEvery, tail int) (runs int) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, k.file)
	s, err := k.open(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &crasher{at: at}
	s.setHook(c.step)
	var ckpts []checkpoint
	if err := drive(ctx, s, 0, p, batches, &ckpts, c.step); !errors.Is(err, errCrash) {
		t.Fatalf("crash at step %d: run ended with %v", at, err)
	}
	s.abandon()
	files := snapshot(t, dir)
	choices := []*checkpoint{nil}
	for i := range ckpts {
		choices = append(choices, &ckpts[i])
	}
	latest := choices[len(choices)-1:]
	restarts := latest
	if at%olderEvery == 0 || at >= steps-tail {
		restarts = choices
	}
	for _, from := range restarts {
		name := "scratch"
		if from != nil {
			name = fmt.Sprintf("epoch %d", from.epoch)
		}
		d := restore(t, files)
		check := func() error {
			got := k.read(t, filepath.Join(d, k.file))
			if got != upTo[from.epoch] && !(k.whole && got == "<missing>") {
				return fmt.Errorf("after Recover:\n%s\nwant:\n%s", got, upTo[from.epoch])
			}
			return nil
		}
		if err := restart(ctx, k, d, from, p, batches, func(string) error { return nil }, check); err != nil {
			t.Fatalf("crash at step %d, restart from %s: %v", at, name, err)
		}
		runs++
		if got := k.read(t, filepath.Join(d, k.file)); got != want {
			t.Fatalf("crash at step %d, restart from %s:\ngot:\n%s\nwant:\n%s", at, name, got, want)
		}
	}
	// Crash the restart at every step.
	nested := latest
	switch {
	case at >= steps-tail:
		nested = choices
	case at%nestEvery != 0:
		nested = nil
	}
	for _, from := range nested {
		for at2 := 1; ; at2++ {
			d := restore(t, files)
			c2 := &crasher{at: at2}
			err := restart(ctx, k, d, from, p, batches, c2.step, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, errCrash) {
				t.Fatalf("crash at step %d then %d: %v", at, at2, err)
			}
			// The second run may have completed checkpoints of its
			// own; from stays valid, restart from it again.
			if err := restart(ctx, k, d, from, p, batches, func(string) error { return nil }, nil); err != nil {
				t.Fatalf("crash at step %d then %d, restart: %v", at, at2, err)
			}
			runs++
			if got := k.read(t, filepath.Join(d, k.file)); got != want {
				t.Fatalf("crash at step %d then %d:\ngot:\n%s\nwant:\n%s", at, at2, got, want)
			}
		}
	}
	return runs
}

func TestTextSinkCrashes(t *testing.T) {
	smallCopies(t, 48)
	for _, k := range textKinds {
		t.Run(k.name, func(t *testing.T) { testCrashes(t, k, defaultPlan) })
	}
}

func TestParquetSinkCrashes(t *testing.T) {
	testCrashes(t, parquetKind, defaultPlan)
}
