package sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DefaultFileRows is the number of rows after which a [ParquetDir] without
// checkpoints starts a new file, unless WithFileRows says otherwise.
const DefaultFileRows = 1 << 20

// WithFileRows sets how many rows a [ParquetDir] writes to a file before
// it publishes it and starts the next, when it runs without checkpoints
// (under checkpoints a file holds one epoch). Values below 1 keep the
// default. [NewParquet] ignores it.
func WithFileRows(rows int64) Option {
	return func(o *parquetOptions) {
		if rows > 0 {
			o.fileRows = rows
		}
	}
}

// Names in a ParquetDir's directory. A file published for checkpoint
// epoch E is part-<E:020d>.parquet; a file published without checkpoints
// (before the first PrepareCommit of a run) is part-<0:020d>-<K:010d>.parquet
// for the K-th such file, so that file names sort in output order: the
// files written before the first checkpoint come before those of every
// epoch. The staging directory .volga inside the directory holds the
// epoch being written (current-<token>.parquet) and the prepared epochs
// (epoch-<E:020d>-<token>.parquet; see stager.token).
const (
	dirPartPrefix  = "part-"
	dirStagingName = ".volga"
)

func dirEpochName(epoch uint64) string {
	return fmt.Sprintf("%s%020d%s", dirPartPrefix, epoch, parquetExt)
}
func dirRollName(k uint64) string {
	return fmt.Sprintf("%s%020d-%010d%s", dirPartPrefix, 0, k, parquetExt)
}

// parseDirPart tells whether name is a file a ParquetDir publishes: the
// file of an epoch (roll < 0) or the roll-th file written without
// checkpoints.
func parseDirPart(name string) (epoch uint64, roll int64, ok bool) {
	s, ok := strings.CutPrefix(name, dirPartPrefix)
	if !ok {
		return 0, 0, false
	}
	if s, ok = strings.CutSuffix(s, parquetExt); !ok {
		return 0, 0, false
	}
	digits := func(s string) (uint64, bool) {
		for _, c := range []byte(s) {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		v, err := strconv.ParseUint(s, 10, 64)
		return v, err == nil
	}
	switch len(s) {
	case 20:
		e, ok := digits(s)
		return e, -1, ok
	case 31:
		if s[20] != '-' || s[:20] != strings.Repeat("0", 20) {
			return 0, 0, false
		}
		k, ok := digits(s[21:])
		return 0, int64(k), ok
	}
	return 0, 0, false
}

// ParquetDir writes a directory of Parquet files, for streams: the output
// grows by whole files, each published, complete, by an atomic rename, so
// readers of dir/*.parquet (DuckDB's read_parquet, [source.NewParquetFiles]
// over the directory) see only complete files, and reading the files in
// name order gives the rows in output order. Files keep the Arrow types
// as [Parquet] does.
//
// Under checkpoints the sink is exactly once. The rows of each epoch are
// written to a file in the staging directory dir/.volga; PrepareCommit
// completes and syncs it, and Commit(e), once the checkpoint of e is
// written, renames every staged epoch <= e into the directory as
// part-<epoch:020d>.parquet and syncs the directory. An epoch without
// rows publishes no file. Recover(e) makes the directory hold exactly the
// files of the epochs <= e: it publishes the prepared epochs a crash kept
// from being published and deletes the files of later epochs and what
// is left in the staging directory.
//
// Without checkpoints (the engine calls no Committer method) the sink
// starts a new file every WithFileRows rows (default [DefaultFileRows])
// and publishes each as soon as it is complete, and the last at Close,
// as part-00000000000000000000-<n:010d>.parquet: at least once, a
// restart writes the output again from the start. The sink learns that
// checkpoints are on at the first PrepareCommit (or Recover), so in a
// run started afresh with checkpoints the files filled before the first
// checkpoint are published at once too, with those names (they sort
// before every epoch's file, and checkpoints count them). A crash before
// the first checkpoint completes restarts the run from scratch, which
// replaces them; a reader may have seen them in between. Set WithFileRows
// above the rows written before the first checkpoint to avoid that.
//
// A run that does not resume from a checkpoint (the first Write,
// PrepareCommit or Close comes before any Recover) starts by deleting
// the part-*.parquet files of earlier runs from the directory, as the
// other file sinks replace their file; other files are left alone. The
// directory is created if needed; the staging directory is removed when
// a run ends with nothing staged.
type ParquetDir struct {
	stager // path: the directory; dir: the staging directory
	schema *arrow.Schema
	opts   parquetOptions

	file    *os.File
	fw      *pqarrow.FileWriter
	curRows int64

	started  bool
	ckpt     bool // PrepareCommit or Recover was called
	last     uint64
	hasLast  bool
	run      string
	rolled   uint64   // files published without checkpoints
	prepared []pqPart // staged epochs not yet published

	closed bool
	err    error // sticky
}

// parquetDirState is the checkpoint state of a ParquetDir.
type parquetDirState struct {
	Format string `json:"format"`
	Run    string `json:"run"`
	Epoch  uint64 `json:"epoch"`
	// Rolled is the number of files published before the first
	// checkpoint.
	Rolled uint64 `json:"rolled,omitempty"`
	// Pending are the prepared epochs <= Epoch not yet published when
	// Epoch was prepared.
	Pending []pqPart `json:"pending,omitempty"`
}

const parquetDirStateFormat = "volga-parquet-dir/1"

// NewParquetDir returns a sink writing Parquet files into the directory
// dir (see [ParquetDir]). With a non-nil schema every batch must match it;
// with a nil schema the schema is that of the first batch. Options:
// [WithRowGroupSize], [WithCompression], [WithFileRows].
func NewParquetDir(dir string, schema *arrow.Schema, opts ...Option) (*ParquetDir, error) {
	if dir == "" {
		return nil, errors.New("sink: NewParquetDir needs a directory")
	}
	p := &ParquetDir{opts: parquetOptions{rowGroup: DefaultRowGroupSize, codec: compress.Codecs.Snappy, fileRows: DefaultFileRows}}
	for _, o := range opts {
		o(&p.opts)
	}
	p.path = filepath.Clean(dir)
	p.stager.dir = filepath.Join(p.path, dirStagingName)
	if fi, err := os.Stat(p.path); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("sink: parquet directory %s: not a directory", p.path)
	}
	if schema != nil {
		if err := p.opts.checkSchema(p.path, schema); err != nil {
			return nil, err
		}
		p.schema = schema
	}
	return p, nil
}

// dirFile syncs the file before closing it, so that pqarrow's Close makes
// it durable before it is renamed.
type dirFile struct {
	*os.File
	p *ParquetDir
}

func (f dirFile) Close() error {
	if err := syncFile(f.File); err != nil {
		f.File.Close()
		return err
	}
	if err := f.p.step("sync " + filepath.Base(f.Name())); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// ensureDir creates the output directory if needed, durably.
func (p *ParquetDir) ensureDir() error {
	if _, err := os.Stat(p.path); err == nil {
		return nil
	}
	if err := os.MkdirAll(p.path, 0o777); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if err := syncDir(filepath.Dir(p.path)); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return p.step("mkdir directory")
}

// removeParts deletes the published files for which drop returns true
// and makes the removals durable.
func (p *ParquetDir) removeParts(drop func(epoch uint64, roll int64) bool) error {
	ents, err := os.ReadDir(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	removed := false
	for _, e := range ents {
		epoch, roll, ok := parseDirPart(e.Name())
		if !ok || e.IsDir() || !drop(epoch, roll) {
			continue
		}
		if err := os.Remove(filepath.Join(p.path, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sink: %w", err)
		}
		removed = true
		if err := p.step("remove " + e.Name()); err != nil {
			return err
		}
	}
	if !removed {
		return nil
	}
	if err := syncDir(p.path); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return p.step("sync directory")
}

// start begins a run from scratch: the files of earlier runs and the
// staging directory's leftovers are removed.
func (p *ParquetDir) start() error {
	if p.started {
		return nil
	}
	p.started = true
	var id [8]byte
	rand.Read(id[:])
	p.run = hex.EncodeToString(id[:])
	if err := p.ensureDir(); err != nil {
		return err
	}
	if err := p.removeParts(func(uint64, int64) bool { return true }); err != nil {
		return err
	}
	return p.clean(nil)
}

// open starts the staged file current.parquet.
func (p *ParquetDir) open() (err error) {
	if err := p.mkdir(); err != nil {
		return err
	}
	path := p.current(parquetExt)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	props, aprops := p.opts.props()
	fw, err := pqarrow.NewFileWriter(p.schema, dirFile{f, p}, props, aprops)
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	p.file, p.fw, p.curRows = f, fw, 0
	return nil
}

// closeWriter writes the footer of current.parquet, syncs and closes it.
func (p *ParquetDir) closeWriter() (err error) {
	fw := p.fw
	p.fw, p.file = nil, nil
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	if err := fw.Close(); err != nil {
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	return nil
}

// dropCurrent closes and deletes current.parquet.
func (p *ParquetDir) dropCurrent() error {
	if p.fw == nil {
		return nil
	}
	err := p.closeWriter()
	if rerr := os.Remove(p.current(parquetExt)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("sink: %w", rerr))
	}
	if err != nil {
		return err
	}
	return p.step("remove current")
}

// roll completes current.parquet and publishes it as the next file
// written without checkpoints.
func (p *ParquetDir) roll() error {
	if err := p.closeWriter(); err != nil {
		return err
	}
	if p.rolled >= 1e10 {
		return fmt.Errorf("sink: parquet %s: too many files", p.path)
	}
	if err := os.Rename(p.current(parquetExt), filepath.Join(p.path, dirRollName(p.rolled))); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	p.rolled++
	if err := p.step("publish current"); err != nil {
		return err
	}
	if err := syncDir(p.path); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return p.step("sync directory")
}

// Write adds the rows of rec to the file being written. Without
// checkpoints, a file that reaches WithFileRows rows is published and the
// next one started (a batch may be split between two files).
func (p *ParquetDir) Write(ctx context.Context, rec arrow.RecordBatch) (err error) {
	if p.closed {
		return errors.New("sink: write after Close")
	}
	if p.err != nil {
		return p.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.start(); err != nil {
		p.err = err
		return err
	}
	if p.schema == nil {
		if err := p.opts.checkSchema(p.path, rec.Schema()); err != nil {
			return err
		}
		p.schema = rec.Schema()
	}
	if !rec.Schema().Equal(p.schema) {
		return fmt.Errorf("sink: parquet %s: batch schema %s does not match %s", p.path, rec.Schema(), p.schema)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
		if err != nil {
			p.err = err
		}
	}()
	rows := rec.NumRows()
	for off := int64(0); off < rows; {
		if p.fw == nil {
			p.opts.plan(rec)
			if err := p.open(); err != nil {
				return err
			}
		}
		n := rows - off
		if !p.ckpt && n > p.opts.fileRows-p.curRows {
			n = p.opts.fileRows - p.curRows
		}
		part := rec
		if off > 0 || n < rows {
			part = rec.NewSlice(off, off+n)
		}
		err := p.fw.WriteBuffered(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return fmt.Errorf("sink: parquet %s: %w", p.path, err)
		}
		p.curRows += n
		off += n
		if !p.ckpt && p.curRows >= p.opts.fileRows {
			if err := p.roll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// PrepareCommit implements [Committer]: the rows written since the
// previous epoch become the staged file of epoch (footer written, synced,
// renamed to epoch-<epoch>.parquet in the staging directory).
func (p *ParquetDir) PrepareCommit(ctx context.Context, epoch uint64) (state []byte, err error) {
	if p.closed {
		return nil, errClosed
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.hasLast && epoch <= p.last {
		return nil, fmt.Errorf("sink: PrepareCommit(%d) after epoch %d", epoch, p.last)
	}
	defer func() {
		if err != nil {
			p.err = err // only a restart (Recover) may go on
		}
	}()
	if err := p.start(); err != nil {
		return nil, err
	}
	p.ckpt = true
	if p.fw != nil {
		rows := p.curRows
		if rows == 0 {
			if err := p.dropCurrent(); err != nil {
				return nil, err
			}
		} else {
			if err := p.closeWriter(); err != nil {
				return nil, err
			}
			name := p.epochStaged(epoch, p.tok(), parquetExt)
			if err := os.Rename(p.current(parquetExt), name); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			if err := p.step("rename current"); err != nil {
				return nil, err
			}
			if err := syncDir(p.dir); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			if err := p.step("sync staging"); err != nil {
				return nil, err
			}
			fi, err := os.Stat(name)
			if err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			p.prepared = append(p.prepared, pqPart{Epoch: epoch, Token: p.tok(), Rows: rows, Size: fi.Size()})
		}
	}
	p.last, p.hasLast = epoch, true
	return json.Marshal(parquetDirState{Format: parquetDirStateFormat, Run: p.run, Epoch: epoch, Rolled: p.rolled, Pending: p.prepared})
}

// Commit implements [Committer]: every prepared epoch <= epoch is renamed
// into the directory as part-<epoch:020d>.parquet, then the directory is
// synced. Calling it again is a no-op.
func (p *ParquetDir) Commit(ctx context.Context, epoch uint64) (err error) {
	if p.closed {
		return errClosed
	}
	if p.err != nil {
		return p.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.err = err
		}
	}()
	n := 0
	for n < len(p.prepared) && p.prepared[n].Epoch <= epoch {
		part := p.prepared[n]
		if err := os.Rename(p.epochStaged(part.Epoch, part.Token, parquetExt), filepath.Join(p.path, dirEpochName(part.Epoch))); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		n++
		if err := p.step("publish epoch"); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	p.prepared = append([]pqPart(nil), p.prepared[n:]...)
	if err := syncDir(p.path); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return p.step("sync directory")
}

// Recover implements [Committer]: the prepared epochs <= epoch that a
// crash kept from being published are published, and the files of later
// epochs, the files written before the first checkpoint that the
// checkpoint does not count, and everything staged are deleted.
func (p *ParquetDir) Recover(ctx context.Context, epoch uint64, state []byte) error {
	if p.closed {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.started {
		return errors.New("sink: Recover after the sink started")
	}
	p.started, p.ckpt = true, true
	if err := p.recover(epoch, state); err != nil {
		p.err = err
		return err
	}
	return nil
}

func (p *ParquetDir) recover(epoch uint64, state []byte) error {
	var st parquetDirState
	if err := json.Unmarshal(state, &st); err != nil || st.Format != parquetDirStateFormat {
		return fmt.Errorf("sink: recover %s: not the state of a Parquet directory sink (%.40q)", p.path, state)
	}
	if st.Epoch != epoch {
		return fmt.Errorf("sink: recover %s: state of epoch %d given for epoch %d", p.path, st.Epoch, epoch)
	}
	p.run, p.rolled = st.Run, st.Rolled
	if err := p.ensureDir(); err != nil {
		return err
	}
	published := false
	for i, part := range st.Pending {
		if part.Epoch > epoch || i > 0 && part.Epoch <= st.Pending[i-1].Epoch {
			return fmt.Errorf("sink: recover %s: inconsistent state", p.path)
		}
		target := filepath.Join(p.path, dirEpochName(part.Epoch))
		if fi, err := os.Stat(target); err == nil {
			if fi.Size() != part.Size {
				return fmt.Errorf("sink: recover %s: %s has %d bytes, the checkpoint of epoch %d says %d", p.path, dirEpochName(part.Epoch), fi.Size(), epoch, part.Size)
			}
			continue
		}
		staged := p.epochStaged(part.Epoch, part.Token, parquetExt)
		fi, err := os.Stat(staged)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sink: recover %s: the output of epoch %d is lost (neither staged nor published)", p.path, part.Epoch)
		}
		if err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		if fi.Size() != part.Size {
			return fmt.Errorf("sink: recover %s: staged epoch %d has %d bytes, its checkpoint says %d", p.path, part.Epoch, fi.Size(), part.Size)
		}
		if err := os.Rename(staged, target); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		published = true
		if err := p.step("publish epoch"); err != nil {
			return err
		}
	}
	if published {
		if err := syncDir(p.path); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		if err := p.step("sync directory"); err != nil {
			return err
		}
	}
	for k := range st.Rolled {
		if _, err := os.Stat(filepath.Join(p.path, dirRollName(k))); err != nil {
			return fmt.Errorf("sink: recover %s: %s, written before the first checkpoint, is lost: %w", p.path, dirRollName(k), err)
		}
	}
	if err := p.removeParts(func(e uint64, roll int64) bool {
		if roll >= 0 {
			return uint64(roll) >= st.Rolled
		}
		return e > epoch
	}); err != nil {
		return err
	}
	if err := p.clean(nil); err != nil {
		return err
	}
	p.last, p.hasLast = epoch, true
	return nil
}

// Close ends the sink. Without checkpoints it publishes the file being
// written (if it has rows). Under checkpoints it drops the rows written
// after the last PrepareCommit (a restart replays them); prepared epochs
// not yet committed stay staged for Recover. The staging directory is
// removed if nothing is left in it.
func (p *ParquetDir) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	if p.err != nil {
		p.dropCurrent()
		p.rmdir()
		return p.err
	}
	if !p.ckpt {
		if err := p.start(); err != nil {
			return err
		}
		if p.fw != nil {
			if p.curRows > 0 {
				if err := p.roll(); err != nil {
					return err
				}
			} else if err := p.dropCurrent(); err != nil {
				return err
			}
		}
		return p.rmdir()
	}
	if err := p.dropCurrent(); err != nil {
		return err
	}
	return p.rmdir()
}
