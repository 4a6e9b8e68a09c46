package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/jsonvalue"
	"github.com/volga-go/volga/internal/textcodec"
)

// textWriter is what the CSV and JSON-lines sinks share: a buffered
// writer over a caller's io.Writer, a file written directly, or a
// transactional file target (textFile).
type textWriter struct {
	w      *bufio.Writer
	file   *os.File       // a file written directly, or nil
	zw     io.WriteCloser // the compressor over file, or nil
	tx     *textFile      // the target of CreateCSV or CreateJSONL, or nil
	buf    []byte         // scratch for one value
	line   []byte         // scratch for one row
	schema *arrow.Schema
	header bool // the CSV header is in the output (written or recovered)
	closed bool
	err    error // sticky write error
}

func newTextWriter(w io.Writer, f *os.File) textWriter {
	return textWriter{w: bufio.NewWriterSize(w, 64<<10), file: f}
}

// createText returns the writer of a file sink: transactional over the
// file at path, or direct when path is not a regular file (see
// resolveTarget).
func createText(path string) (textWriter, error) {
	p, ok := resolveTarget(path)
	if !ok {
		f, err := os.Create(path)
		if err != nil {
			return textWriter{}, fmt.Errorf("sink: %w", err)
		}
		if c := textcodec.Of(path); c != nil {
			zw, err := c.NewWriter(f)
			if err != nil {
				f.Close()
				return textWriter{}, fmt.Errorf("sink: %w", err)
			}
			t := newTextWriter(zw, f)
			t.zw = zw
			return t, nil
		}
		return newTextWriter(f, f), nil
	}
	tx, err := openTextFile(p)
	if err != nil {
		return textWriter{}, err
	}
	t := newTextWriter(tx, nil)
	t.tx = tx
	return t, nil
}

// begin checks the state before a batch and pins the schema of the first
// one: later batches must have the same column names.
func (t *textWriter) begin(ctx context.Context, rec arrow.RecordBatch) (first bool, err error) {
	if t.closed {
		return false, errors.New("sink: write after Close")
	}
	if t.err != nil {
		return false, t.err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if t.tx != nil && !t.tx.started {
		if err := t.tx.start(); err != nil {
			t.err = err
			return false, err
		}
	}
	if t.schema == nil {
		t.schema = rec.Schema()
		return true, nil
	}
	s := rec.Schema()
	if s.NumFields() != t.schema.NumFields() {
		return false, fmt.Errorf("sink: batch has %d columns, the first had %d", s.NumFields(), t.schema.NumFields())
	}
	for i := range s.NumFields() {
		if s.Field(i).Name != t.schema.Field(i).Name {
			return false, fmt.Errorf("sink: column %d is %q, the first batch had %q", i, s.Field(i).Name, t.schema.Field(i).Name)
		}
	}
	return false, nil
}

func (t *textWriter) write(p []byte) error {
	if _, err := t.w.Write(p); err != nil {
		t.err = err
		return err
	}
	return nil
}

// Flush writes buffered output to the underlying writer.
func (t *textWriter) flush() error {
	if t.err != nil {
		return t.err
	}
	if err := t.w.Flush(); err != nil {
		t.err = err
		return err
	}
	return nil
}

// errAbandoned is what a file sink's close is told when it is abandoned.
var errAbandoned = errors.New("sink: abandoned")

func (t *textWriter) close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	if t.tx != nil {
		return errors.Join(t.err, t.tx.close(t.w, t.err))
	}
	err := t.flush()
	if t.zw != nil {
		err = errors.Join(err, t.zw.Close())
	}
	if t.file != nil {
		if t.err == nil {
			if serr := t.file.Sync(); !errors.Is(serr, syscall.EINVAL) { // a device such as /dev/null
				err = errors.Join(err, serr)
			}
		}
		err = errors.Join(err, t.file.Close())
	}
	return err
}

// abandon ends the writer of a run that failed: a file sink publishes
// nothing (see textFile.close); the other writers flush, as Close does,
// since what they wrote cannot be taken back.
func (t *textWriter) abandon() error {
	if t.closed || t.tx == nil {
		return t.close()
	}
	t.closed = true
	return t.tx.close(t.w, errAbandoned)
}

var errClosed = errors.New("sink: closed")

func (t *textWriter) prepareCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	if t.closed {
		return nil, errClosed
	}
	if t.err != nil {
		return nil, t.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if t.tx == nil {
		return nil, t.flush()
	}
	if t.tx.hasLast && epoch <= t.tx.last {
		return nil, fmt.Errorf("sink: PrepareCommit(%d) after epoch %d", epoch, t.tx.last)
	}
	state, err := t.tx.prepare(t.w, epoch)
	if err != nil {
		t.err = err // the staging is unknown: only a restart (Recover) may go on
	}
	return state, err
}

func (t *textWriter) commit(ctx context.Context, epoch uint64) error {
	if t.closed {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.tx == nil {
		return t.flush()
	}
	return t.tx.publish(epoch)
}

func (t *textWriter) recover(ctx context.Context, epoch uint64, state []byte) error {
	if t.closed {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.tx == nil {
		return nil
	}
	if t.tx.started {
		return errors.New("sink: Recover after the sink started")
	}
	if err := t.tx.recover(epoch, state); err != nil {
		t.err = err
		return err
	}
	t.header = t.tx.length > 0
	return nil
}

// CSV writes batches as comma-separated text: a header row with the column
// names of the first batch, then one line per row with each value rendered
// by FormatValue and quoted as RFC 4180 requires (a list such as 1,2 is
// written "1,2"). NULL, like an empty string, is an empty field (which the
// CSV source reads as NULL); the row of a single column that is empty is
// written "", not as a blank line. Lines end with \n.
type CSV struct{ t textWriter }

// NewCSV returns a CSV sink writing to w. Close flushes but does not close
// w. It is at least once under checkpoints: PrepareCommit and Commit flush,
// and rows written to w cannot be taken back by Recover.
func NewCSV(w io.Writer) *CSV { return &CSV{t: newTextWriter(w, nil)} }

// CreateCSV returns a CSV sink writing to the file at path, which it
// creates if needed. What the file held is replaced by the output of the
// run when the sink publishes it, unless Recover comes first.
//
// The sink is transactional (see the package documentation): rows are
// staged in the directory .<name>.volga next to the file. Without
// checkpoints Close moves them into the file (they are not visible
// before), replacing it whole; Abandon, which the engine calls instead of
// Close when the run fails, drops them and leaves the file as it was (or
// removes it if CreateCSV created it), so a failed run never leaves an
// empty or partial file. With checkpoints the file is emptied at the
// first Commit, the rows of an epoch are appended to it by Commit,
// once the checkpoint of that epoch is complete, and Recover restores the
// file to exactly the output of the restored epoch: exactly once. The header is written once, before the first row published.
// A path ending in .gz or .zst (out.csv.gz) is compressed with gzip or
// zstd, each epoch's rows a complete gzip member or zstd frame (the whole
// output without checkpoints), which the file holds one after the other
// as one valid stream (source.Open reads it back). A
// path that exists and is not a regular file (/dev/stdout, a named pipe)
// is written directly, at least once, like NewCSV.
func CreateCSV(path string) (*CSV, error) {
	t, err := createText(path)
	if err != nil {
		return nil, err
	}
	return &CSV{t: t}, nil
}

// Write appends the rows of rec. The first batch also writes the header
// (unless Recover restored output that has it).
func (c *CSV) Write(ctx context.Context, rec arrow.RecordBatch) error {
	t := &c.t
	first, err := t.begin(ctx, rec)
	if err != nil {
		return err
	}
	if first && !t.header {
		t.header = true
		t.line = t.line[:0]
		for i, f := range rec.Schema().Fields() {
			if i > 0 {
				t.line = append(t.line, ',')
			}
			t.line = appendCSVField(t.line, []byte(f.Name))
		}
		t.line = endCSVLine(t.line)
		if err := t.write(t.line); err != nil {
			return err
		}
	}
	cols := rec.Columns()
	for r := range int(rec.NumRows()) {
		t.line = t.line[:0]
		for i, col := range cols {
			if i > 0 {
				t.line = append(t.line, ',')
			}
			t.buf = AppendText(t.buf[:0], col, r)
			t.line = appendCSVField(t.line, t.buf)
		}
		t.line = endCSVLine(t.line)
		if err := t.write(t.line); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes any buffered rows to the underlying writer.
func (c *CSV) Flush() error { return c.t.flush() }

// Abandon implements [Abandoner]: it ends the sink of a run that failed
// without publishing its rows. A file sink made by CreateCSV drops the
// rows not yet published and leaves the file as it was before the run
// (a file CreateCSV created is removed); under checkpoints it is Close.
// A sink over an io.Writer flushes, as Close does.
func (c *CSV) Abandon() error { return c.t.abandon() }

// Close flushes the output and closes the file if the sink created it. A
// file sink publishes its rows if no checkpoint was taken; under
// checkpoints it drops the rows written after the last PrepareCommit (a
// restart replays them) and keeps prepared, uncommitted epochs staged for
// Recover.
func (c *CSV) Close() error { return c.t.close() }

// PrepareCommit implements Committer: the rows written since the previous
// epoch are synced to the staging file of epoch. The state returned must
// be passed to Recover when restarting from that checkpoint.
func (c *CSV) PrepareCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	return c.t.prepareCommit(ctx, epoch)
}

// Commit implements Committer: the staged rows of every epoch <= epoch are
// appended to the file, which is synced. Calling it again is a no-op.
func (c *CSV) Commit(ctx context.Context, epoch uint64) error { return c.t.commit(ctx, epoch) }

// Recover implements Committer: the file is made to hold exactly the
// output of the epochs <= epoch, finishing an interrupted Commit and
// cutting away later epochs; staged rows of later epochs are deleted.
func (c *CSV) Recover(ctx context.Context, epoch uint64, state []byte) error {
	return c.t.recover(ctx, epoch, state)
}

// endCSVLine ends a CSV line. A line with nothing on it, the row of one
// column whose value is NULL or empty, is written "" so that it is a row
// and not a blank line, which CSV readers skip.
func endCSVLine(line []byte) []byte {
	if len(line) == 0 {
		line = append(line, '"', '"')
	}
	return append(line, '\n')
}

// appendCSVField appends one field, quoted when it contains a comma, a
// quote, a line break, or starts with a space or tab.
func appendCSVField(dst, field []byte) []byte {
	quote := len(field) > 0 && (field[0] == ' ' || field[0] == '\t')
	if !quote {
		for _, c := range field {
			if c == ',' || c == '"' || c == '\n' || c == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	for _, c := range field {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// JSONL writes batches as JSON lines: one object per row, keys in column
// order, values with their real JSON types (see AppendJSON).
type JSONL struct {
	t    textWriter
	keys [][]byte // pre-encoded `"name":` per column
}

// NewJSONL returns a JSON-lines sink writing to w. Close flushes but does
// not close w. It is at least once under checkpoints, like NewCSV.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{t: newTextWriter(w, nil)} }

// CreateJSONL returns a JSON-lines sink writing to the file at path,
// transactional like CreateCSV.
func CreateJSONL(path string) (*JSONL, error) {
	t, err := createText(path)
	if err != nil {
		return nil, err
	}
	return &JSONL{t: t}, nil
}

// Write appends one line per row of rec.
func (j *JSONL) Write(ctx context.Context, rec arrow.RecordBatch) error {
	t := &j.t
	first, err := t.begin(ctx, rec)
	if err != nil {
		return err
	}
	if first {
		for _, f := range rec.Schema().Fields() {
			k := jsonvalue.AppendString(nil, f.Name)
			j.keys = append(j.keys, append(k, ':'))
		}
	}
	cols := rec.Columns()
	for r := range int(rec.NumRows()) {
		t.line = append(t.line[:0], '{')
		for i, col := range cols {
			if i > 0 {
				t.line = append(t.line, ',')
			}
			t.line = append(t.line, j.keys[i]...)
			t.line = AppendJSON(t.line, col, r)
		}
		t.line = append(t.line, '}', '\n')
		if err := t.write(t.line); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes any buffered rows to the underlying writer.
func (j *JSONL) Flush() error { return j.t.flush() }

// Abandon implements [Abandoner]; see CSV.Abandon.
func (j *JSONL) Abandon() error { return j.t.abandon() }

// Close flushes the output and closes the file if the sink created it; see
// CSV.Close.
func (j *JSONL) Close() error { return j.t.close() }

// PrepareCommit implements Committer; see CSV.PrepareCommit.
func (j *JSONL) PrepareCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	return j.t.prepareCommit(ctx, epoch)
}

// Commit implements Committer; see CSV.Commit.
func (j *JSONL) Commit(ctx context.Context, epoch uint64) error { return j.t.commit(ctx, epoch) }

// Recover implements Committer; see CSV.Recover.
func (j *JSONL) Recover(ctx context.Context, epoch uint64, state []byte) error {
	return j.t.recover(ctx, epoch, state)
}
