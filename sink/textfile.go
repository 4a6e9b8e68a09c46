package sink

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/volga-go/volga/internal/textcodec"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// copyChunk is how many bytes a publication copies per write (tests lower
// it to cut appends in the middle).
var copyChunk = 1 << 20

// textFile is the file target of a CSV or JSON-lines sink created by
// CreateCSV or CreateJSONL. It is the io.Writer under the sink's buffer.
//
// Rows go to the staging file current-<token> (stager.token). Without
// checkpoints, Close renames it over the target; until then the target
// keeps what it held, so a run that fails (Abandon) leaves it as it was.
// With checkpoints, the target is emptied at the first Commit;
// PrepareCommit(e) fsyncs it and renames it to epoch-<e>-<token>;
// Commit(e) appends the staged files of epochs <= e to the target in
// order, fsyncs the target and removes them.
// The state of epoch e records the target length holding exactly the
// output of epochs <= e and, for every staged epoch, its offset in the
// target, size and CRC-32C, so Recover can truncate the target to a known
// boundary and re-append exactly what a crash left out.
type textFile struct {
	stager
	target *os.File // opened read-write at creation, never truncated before the sink publishes

	created bool // the target did not exist before openTextFile made it
	started bool // the first Write, PrepareCommit, Close or Recover happened
	emptied bool // the target was truncated for this run, or restored by Recover
	ckpt    bool // PrepareCommit or Recover was called: checkpoint mode
	last    uint64
	hasLast bool

	cur    *os.File // staging file of the open epoch; nil until its first byte
	curN   int64
	curCRC uint32
	// zip compresses the output (a target named .gz or .zst), nil for
	// none; zw is the compressor of the open epoch's staging file, each
	// epoch (or the whole run, without checkpoints) a complete gzip
	// member or zstd frame, which concatenated make one valid stream.
	zip *textcodec.Codec
	zw  io.WriteCloser

	length  int64        // target length once every prepared epoch is published
	pending []stagedText // prepared epochs not yet published, in order
	copyBuf []byte
}

// textState is the checkpoint state of a text file sink.
type textState struct {
	Format string       `json:"format"`
	Epoch  uint64       `json:"epoch"`
	Len    int64        `json:"len"` // target length holding exactly the epochs <= Epoch
	Staged []stagedText `json:"staged,omitempty"`
}

// stagedText is one prepared, unpublished epoch.
type stagedText struct {
	Epoch uint64 `json:"epoch"`
	Token string `json:"token,omitempty"` // of the instance that staged it (stager.token)
	Off   int64  `json:"off"`             // where it goes in the target
	Size  int64  `json:"size"`
	CRC   uint32 `json:"crc"` // CRC-32C (Castagnoli)
}

const textStateFormat = "volga-text/1"

func openTextFile(p string) (*textFile, error) {
	_, serr := os.Lstat(p)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	created := errors.Is(serr, fs.ErrNotExist)
	return &textFile{stager: stager{path: p, dir: stagingDir(p), parentDirty: serr != nil}, target: f, created: created, zip: textcodec.Of(p)}, nil
}

// start begins a run from scratch: leftovers of an earlier run are
// removed from the staging directory. The target is left as it is until
// the sink publishes (empty).
func (f *textFile) start() error {
	if f.started {
		return nil
	}
	f.started = true
	return f.clean(nil)
}

// empty truncates the target, once per run: the output of a run started
// from scratch replaces what the target held (as os.Create would).
func (f *textFile) empty() error {
	if f.emptied {
		return nil
	}
	if err := f.target.Truncate(0); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	f.emptied = true
	return f.step("truncate target")
}

// Write appends p to the staging file of the open epoch.
func (f *textFile) Write(p []byte) (int, error) {
	if f.cur == nil {
		if err := f.mkdir(); err != nil {
			return 0, err
		}
		c, err := os.OpenFile(f.current(""), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return 0, fmt.Errorf("sink: %w", err)
		}
		f.cur, f.curN, f.curCRC = c, 0, 0
	}
	var n int
	var err error
	if f.zip != nil {
		if f.zw == nil {
			if f.zw, err = f.zip.NewWriter(curWriter{f}); err != nil {
				return 0, fmt.Errorf("sink: %w", err)
			}
		}
		n, err = f.zw.Write(p)
	} else {
		n, err = f.writeCur(p)
	}
	if err != nil {
		return n, fmt.Errorf("sink: %w", err)
	}
	return n, f.step("write current")
}

// writeCur appends bytes of the file, compressed if it is, to the
// staging file of the open epoch.
func (f *textFile) writeCur(p []byte) (int, error) {
	n, err := f.cur.Write(p)
	f.curN += int64(n)
	f.curCRC = crc32.Update(f.curCRC, castagnoli, p[:n])
	return n, err
}

// curWriter is the staging file of the open epoch under its compressor.
type curWriter struct{ f *textFile }

func (w curWriter) Write(p []byte) (int, error) { return w.f.writeCur(p) }

// seal ends the compressed stream of the open epoch, writing its end to
// the staging file; nothing when the output is not compressed or the
// epoch wrote nothing.
func (f *textFile) seal() error {
	if f.zw == nil {
		return nil
	}
	zw := f.zw
	f.zw = nil
	if err := zw.Close(); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// closeCurrent syncs and closes the staging file of the open epoch.
func (f *textFile) closeCurrent() error {
	c := f.cur
	f.cur = nil
	if err := syncFile(c); err != nil {
		c.Close()
		return fmt.Errorf("sink: %w", err)
	}
	if err := f.step("sync current"); err != nil {
		c.Close()
		return err
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// prepare ends epoch: the buffered rows are flushed to the staging file,
// which is made durable under the name of the epoch.
func (f *textFile) prepare(w *bufio.Writer, epoch uint64) ([]byte, error) {
	if f.hasLast && epoch <= f.last {
		return nil, fmt.Errorf("sink: PrepareCommit(%d) after epoch %d", epoch, f.last)
	}
	if err := f.start(); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := f.seal(); err != nil {
		return nil, err
	}
	if f.parentDirty {
		// Commit will append to the target: its name must survive a crash.
		if err := syncDir(filepath.Dir(f.path)); err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
		f.parentDirty = false
		if err := f.step("sync target directory"); err != nil {
			return nil, err
		}
	}
	if f.cur != nil {
		size, crc := f.curN, f.curCRC
		if err := f.closeCurrent(); err != nil {
			return nil, err
		}
		if err := os.Rename(f.current(""), f.epochStaged(epoch, f.tok(), "")); err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
		if err := f.step("rename current"); err != nil {
			return nil, err
		}
		if err := syncDir(f.dir); err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
		if err := f.step("sync staging"); err != nil {
			return nil, err
		}
		f.pending = append(f.pending, stagedText{Epoch: epoch, Token: f.tok(), Off: f.length, Size: size, CRC: crc})
		f.length += size
	}
	f.ckpt, f.last, f.hasLast = true, epoch, true
	return json.Marshal(textState{Format: textStateFormat, Epoch: epoch, Len: f.length, Staged: f.pending})
}

// publish appends the staged epochs <= epoch to the target. The first
// publication of a run started from scratch empties the target first.
func (f *textFile) publish(epoch uint64) error {
	truncated := false
	if f.ckpt && !f.emptied {
		if err := f.empty(); err != nil {
			return err
		}
		truncated = true
	}
	n := 0
	for n < len(f.pending) && f.pending[n].Epoch <= epoch {
		n++
	}
	if n == 0 {
		if truncated {
			return f.syncTarget()
		}
		return nil
	}
	size, err := f.targetSize()
	if err != nil {
		return err
	}
	for _, s := range f.pending[:n] {
		if err := f.appendStaged(s, &size); err != nil {
			return err
		}
	}
	if err := f.syncTarget(); err != nil {
		return err
	}
	done := f.pending[:n]
	f.pending = append([]stagedText(nil), f.pending[n:]...)
	for _, s := range done {
		if err := os.Remove(f.epochStaged(s.Epoch, s.Token, "")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sink: %w", err)
		}
		if err := f.step("remove staged"); err != nil {
			return err
		}
	}
	if err := syncDir(f.dir); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return f.step("sync staging")
}

func (f *textFile) targetSize() (int64, error) {
	fi, err := f.target.Stat()
	if err != nil {
		return 0, fmt.Errorf("sink: %w", err)
	}
	return fi.Size(), nil
}

func (f *textFile) syncTarget() error {
	if err := syncFile(f.target); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return f.step("sync target")
}

// appendStaged writes the staged file of s at s.Off in the target, which
// is *size bytes long, first cutting whatever an interrupted earlier
// attempt left after s.Off.
func (f *textFile) appendStaged(s stagedText, size *int64) error {
	if *size < s.Off {
		return fmt.Errorf("sink: %s is %d bytes long, shorter than the %d bytes published before epoch %d", f.path, *size, s.Off, s.Epoch)
	}
	name := f.epochStaged(s.Epoch, s.Token, "")
	src, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	defer src.Close()
	if *size > s.Off {
		if err := f.target.Truncate(s.Off); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		*size = s.Off
		if err := f.step("truncate target"); err != nil {
			return err
		}
	}
	if f.copyBuf == nil {
		f.copyBuf = make([]byte, copyChunk)
	}
	var crc uint32
	off, end := s.Off, s.Off+s.Size
	for off < end {
		n, err := src.Read(f.copyBuf[:min(int64(len(f.copyBuf)), end-off)])
		if n == 0 && err == nil {
			continue
		}
		if n == 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("sink: staged epoch %d of %s: %w", s.Epoch, f.path, err)
		}
		crc = crc32.Update(crc, castagnoli, f.copyBuf[:n])
		if _, err := f.target.WriteAt(f.copyBuf[:n], off); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		off += int64(n)
		*size = off
		if err := f.step("append"); err != nil {
			return err
		}
	}
	if crc != s.CRC {
		err := fmt.Errorf("sink: staged epoch %d of %s does not match its checkpoint (CRC-32C %08x, want %08x)", s.Epoch, f.path, crc, s.CRC)
		if terr := f.target.Truncate(s.Off); terr != nil {
			return errors.Join(err, terr)
		}
		*size = s.Off
		return err
	}
	return nil
}

// recover restores the target to exactly the output of epochs <= epoch
// (see textFile).
func (f *textFile) recover(epoch uint64, state []byte) error {
	if f.started {
		return errors.New("sink: Recover after the sink started")
	}
	var st textState
	if err := json.Unmarshal(state, &st); err != nil || st.Format != textStateFormat {
		return fmt.Errorf("sink: recover %s: not the state of a text file sink (%.40q)", f.path, state)
	}
	if st.Epoch != epoch {
		return fmt.Errorf("sink: recover %s: state of epoch %d given for epoch %d", f.path, st.Epoch, epoch)
	}
	f.started = true
	size, err := f.targetSize()
	if err != nil {
		return err
	}
	// Check everything before changing anything.
	have := make([]bool, len(st.Staged))
	end := int64(0)
	for i, s := range st.Staged {
		if i > 0 && (s.Off != end || s.Epoch <= st.Staged[i-1].Epoch) || s.Epoch > epoch || s.Size < 0 {
			return fmt.Errorf("sink: recover %s: inconsistent state", f.path)
		}
		end = s.Off + s.Size
		fi, err := os.Stat(f.epochStaged(s.Epoch, s.Token, ""))
		switch {
		case err == nil && fi.Size() == s.Size:
			have[i] = true
		case err == nil:
			return fmt.Errorf("sink: recover %s: staged epoch %d has %d bytes, its checkpoint says %d", f.path, s.Epoch, fi.Size(), s.Size)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("sink: %w", err)
		case size < end:
			return fmt.Errorf("sink: recover %s: the output of epoch %d is lost (neither staged nor in the %d-byte target)", f.path, s.Epoch, size)
		}
	}
	if len(st.Staged) > 0 && end != st.Len {
		return fmt.Errorf("sink: recover %s: inconsistent state", f.path)
	}
	for i, s := range st.Staged {
		if !have[i] {
			continue
		}
		if err := f.appendStaged(s, &size); err != nil {
			return err
		}
	}
	if size < st.Len {
		return fmt.Errorf("sink: recover %s: the target has %d bytes, the checkpoint of epoch %d published %d", f.path, size, epoch, st.Len)
	}
	if size > st.Len {
		if err := f.target.Truncate(st.Len); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		if err := f.step("truncate target"); err != nil {
			return err
		}
	}
	if err := f.syncTarget(); err != nil {
		return err
	}
	if err := f.clean(nil); err != nil {
		return err
	}
	f.ckpt, f.last, f.hasLast, f.length, f.emptied = true, epoch, true, st.Len, true
	return nil
}

// close ends the sink. Without checkpoints the staged rows replace the
// target, unless the run failed (failed is not nil: a write error, or
// Abandon): then the staged rows are dropped and the target is left as
// it was, or removed if openTextFile created it. With checkpoints the
// rows written after the last PrepareCommit are dropped (they belong to
// no checkpoint and will be replayed) and prepared epochs stay staged for
// Commit after a restart (Recover).
func (f *textFile) close(w *bufio.Writer, failed error) error {
	var err error
	unpublished := false // publication failed: clean up as for a failed run
	if !f.ckpt && failed == nil {
		published := false
		err = f.start()
		if err == nil {
			err = w.Flush()
		}
		if err == nil {
			err = f.seal()
		}
		switch {
		case err != nil:
		case f.cur != nil:
			err = f.closeCurrent()
			if err == nil {
				err = f.renameOver(f.current(""))
			}
			if err == nil {
				published = true
				err = f.step("rename current")
			}
			if err == nil {
				err = syncDir(filepath.Dir(f.path))
			}
		default:
			err = f.empty() // a run without rows: an empty file (compressed too)
			published = err == nil
			if err == nil {
				err = syncFile(f.target)
			}
		}
		// The rows could not be published (a full disk): nothing is left
		// staged and the target is left as it was, as for a failed run.
		// A crash simulated by a test's hook leaves the files as they are.
		unpublished = err != nil && !published && !f.crashed
	}
	if f.ckpt || failed != nil || unpublished {
		w.Reset(f) // drop the buffered rows
		if f.zw != nil {
			// Its end goes to the staging file removed below.
			_ = f.zw.Close()
			f.zw = nil
		}
		if f.cur != nil {
			err = errors.Join(err, f.cur.Close())
			f.cur = nil
		}
		if rerr := os.Remove(f.current("")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	err = errors.Join(err, f.target.Close())
	if f.cur != nil {
		f.cur.Close()
		f.cur = nil
	}
	if !f.ckpt && (failed != nil || unpublished) && f.created && !f.emptied {
		// Nothing was published to the file made for this run.
		if fi, serr := os.Stat(f.path); serr == nil && fi.Size() == 0 {
			if rerr := os.Remove(f.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("sink: %w", rerr))
			}
		}
	}
	if err == nil || unpublished {
		err = errors.Join(err, f.rmdir())
	}
	return err
}

// abandon closes the files without any other change, as a crash would
// leave them (tests).
func (f *textFile) abandon() {
	if f.cur != nil {
		f.cur.Close()
	}
	f.target.Close()
}
