package source

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// TextFiles reads several CSV or several JSON-lines files one after the
// other, as one source: the rows of the first file, then those of the
// second, and so on. It implements Source, Seeker and LowerBounder. See
// NewCSVFiles and NewJSONLFiles.
type TextFiles struct {
	bucket io.Closer // OpenURL's, closed by Close
	paths  []string
	// nameBase prefixes the paths naming the files (OpenURL's).
	nameBase string
	kind     string // "csv" or "json-lines", for errors
	open     func(path string, opts []Option) (textFile, error)
	opts     []Option // the caller's
	// later are the options of the files after the first: the caller's,
	// then the first file's schema.
	later  []Option
	schema *arrow.Schema

	cur textFile // file idx, nil before it is opened and after Close
	idx int      // the file read now; len(paths) once all are read
	// deadBefore counts the dead letters of the files before idx.
	deadBefore int64
	// sampled and notes are the inference (SampledRows, InferenceNote)
	// of file inferFrom, the file the schema was inferred from (-1 when
	// it was given), kept after it is closed.
	sampled   int
	notes     map[string]string
	inferFrom int
	// newest and seen carry the WithTimeOrder column's greatest value
	// from one file to the next, so that the promise and the bound span
	// the files.
	newest int64
	seen   bool
	closed bool
}

// textFile is what TextFiles needs of the source of one file.
type textFile interface {
	Source
	Seeker
	text() *textSource
}

var (
	_ Seeker       = (*TextFiles)(nil)
	_ LowerBounder = (*TextFiles)(nil)
)

// NewCSVFiles opens CSV files to be read one after the other as one
// source, with the options of NewCSV. The schema is inferred from the
// first rows of the first file that has rows (of the first file when
// none has) unless WithSchema gives it, and every file is read with it:
// each file has its own header, which must hold the schema's columns (in
// any order; other columns are left out). A file without even a header
// (no bytes, or blank lines) has no rows. A row that does not decode
// against the schema is a dead letter, named after its file and line.
//
// A path that is a directory stands for the .csv files in it, in name
// order, leaving out names that start with "." or "_"; a path that does
// not exist and holds a glob pattern (filepath.Match syntax, such as
// "events/2024-*.csv") stands for the files it matches, in name order.
// The list is taken when the source is opened; positions (Seek) count
// files in it. Every file must exist when the source is opened, and is
// opened when reading reaches it. Each file's rows are named after its
// path in dead letters and errors; WithName is ignored.
//
// WithTimeOrder promises the order across the files: the first rows of a
// file may be no more than the lateness below the greatest value of the
// files before it.
func NewCSVFiles(paths []string, opts ...Option) (*TextFiles, error) {
	return newTextFiles(paths, opts, "csv", []string{".csv"}, func(path string, opts []Option) (textFile, error) {
		return NewCSV(path, opts...)
	})
}

// NewJSONLFiles opens JSON-lines files to be read one after the other as
// one source, with the options of NewJSONL; a directory stands for its
// .jsonl, .ndjson and .json files. Otherwise it is NewCSVFiles for JSON
// lines: the schema comes from the first file with rows (or WithSchema)
// and every file is read with it (keys not in it are ignored, missing
// keys are NULL).
func NewJSONLFiles(paths []string, opts ...Option) (*TextFiles, error) {
	return newTextFiles(paths, opts, "json-lines", []string{".jsonl", ".ndjson", ".json"}, func(path string, opts []Option) (textFile, error) {
		return NewJSONL(path, opts...)
	})
}

func newTextFiles(paths []string, opts []Option, kind string, exts []string, open func(string, []Option) (textFile, error)) (*TextFiles, error) {
	o := newOptions(opts)
	files := o.files()
	paths, err := expandPaths(files, paths, kind, exts)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("source: %s files: no file given", kind)
	}
	t := &TextFiles{paths: paths, nameBase: o.nameBase, kind: kind, open: open, opts: opts, inferFrom: -1}
	t.schema, t.later = o.schema, opts
	if o.schema == nil {
		if err := t.infer(); err != nil {
			return nil, err
		}
		t.later = append(append([]Option(nil), opts...), WithSchema(t.schema))
	}
	// The first file with a header is read first.
	for t.idx < len(t.paths) {
		f, err := t.openFile(t.idx)
		if errors.Is(err, errNoHeader) {
			t.idx++
			continue
		}
		if err != nil {
			return nil, err
		}
		t.cur = f
		break
	}
	return t, nil
}

// infer sets the schema, inferred from the first rows of the first file
// that has rows (of the first file with a header when none has): the
// first file may hold none, as a part a sink wrote for a checkpoint
// interval without output, and every column would then be a string (or,
// in JSON lines, there would be no columns at all).
func (t *TextFiles) infer() error {
	noOrder := func(o *options) { o.timeOrder = "" } // checked against the schema inferred
	var first error
	for i := range t.paths {
		f, err := t.open(t.paths[i], append(append([]Option(nil), t.opts...), noOrder, WithName(t.nameBase+t.paths[i])))
		if errors.Is(err, errNoHeader) {
			first = cmp.Or(first, err)
			continue
		}
		if err != nil {
			return err
		}
		tx := f.text()
		rows := tx.sampled
		if t.schema == nil || rows > 0 {
			t.schema, t.sampled, t.notes, t.inferFrom = tx.schema, tx.sampled, tx.notes, i
		}
		if err := f.Close(); err != nil {
			return err
		}
		if rows > 0 {
			break
		}
	}
	if t.schema == nil {
		return first
	}
	return checkTimeOrder(t.nameBase+t.paths[t.inferFrom], t.schema, newOptions(t.opts).timeOrder)
}

// openFile opens file i, named after its path: the file the schema was
// inferred from as it was then, the others with the schema.
func (t *TextFiles) openFile(i int) (textFile, error) {
	opts := t.later
	if i == t.inferFrom {
		opts = t.opts
	}
	opts = append(append([]Option(nil), opts...), WithName(t.nameBase+t.paths[i]))
	f, err := t.open(t.paths[i], opts)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Files returns the paths of the files, in the order they are read.
func (t *TextFiles) Files() []string { return append([]string(nil), t.paths...) }

// Schema returns the schema of the rows: the first file's, inferred or
// given with WithSchema.
func (t *TextFiles) Schema() *arrow.Schema { return t.schema }

// Read returns the next batch of at most the batch size rows, from one
// file, or io.EOF after the last file's last row.
func (t *TextFiles) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if t.closed {
		return nil, ErrClosed
	}
	for t.idx < len(t.paths) {
		if t.cur == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			f, err := t.openFile(t.idx)
			if errors.Is(err, errNoHeader) {
				t.idx++ // a file without rows
				continue
			}
			if err != nil {
				return nil, err
			}
			t.cur = f
			t.carryOrder()
		}
		rec, err := t.cur.Read(ctx)
		if err != io.EOF {
			if rec != nil {
				t.noteOrder()
			}
			return rec, err
		}
		t.noteOrder()
		if t.idx == len(t.paths)-1 {
			// The last file stays open at its end: Position and
			// LowerBound read it.
			return nil, io.EOF
		}
		if err := t.closeCur(); err != nil {
			return nil, err
		}
		t.idx++
	}
	return nil, io.EOF
}

// carryOrder hands the greatest WithTimeOrder value of the files before
// to the file just opened, which checks its rows against it.
func (t *TextFiles) carryOrder() {
	if tx := t.cur.text(); t.seen {
		tx.newest, tx.seen = t.newest, true
	}
}

// noteOrder takes the greatest WithTimeOrder value from the file read.
func (t *TextFiles) noteOrder() {
	if tx := t.cur.text(); tx.seen {
		t.newest, t.seen = tx.newest, true
	}
}

// closeCur closes the file read now, adding its dead letters to the
// count.
func (t *TextFiles) closeCur() error {
	if t.cur == nil {
		return nil
	}
	t.deadBefore += t.cur.text().dead
	err := t.cur.Close()
	t.cur = nil
	return err
}

// DeadLetters returns how many rows were rejected so far, in every file.
func (t *TextFiles) DeadLetters() int64 {
	n := t.deadBefore
	if t.cur != nil {
		n += t.cur.text().dead
	}
	return n
}

// SampledRows returns how many rows of the first file with rows the
// schema was inferred from, and false when it was given (WithSchema).
func (t *TextFiles) SampledRows() (int, bool) {
	return t.sampled, newOptions(t.opts).schema == nil
}

// InferenceNote explains why column was inferred as utf8 when most of
// the values sampled (see SampledRows) are of another type, as the CSV and
// JSONL sources' InferenceNote does; "" when there is nothing to say.
func (t *TextFiles) InferenceNote(column string) string { return t.notes[column] }

// LowerBound implements LowerBounder for the column WithTimeOrder
// promised is in order across the files: the greatest value read so far
// minus the lateness, or math.MaxInt64 once the last file is read.
func (t *TextFiles) LowerBound(col string) (int64, bool) {
	if !t.closed && t.cur == nil && t.idx >= len(t.paths) {
		// Every file is read (the last ones had no header).
		order := newOptions(t.opts).timeOrder
		if order != "" && strings.EqualFold(col, order) {
			return math.MaxInt64, true
		}
		return 0, false
	}
	if t.closed || t.cur == nil {
		return 0, false
	}
	tx := t.cur.text()
	if tx.done && t.idx < len(t.paths)-1 {
		// This file is read, the next ones are not: the greatest value
		// read bounds them.
		return tx.boundRead(col)
	}
	return tx.LowerBound(col)
}

// textFilesPositionVersion heads a TextFiles position, which is the
// file's index and the position within it.
const textFilesPositionVersion = 2

// Position returns the position of the next row Read would return.
func (t *TextFiles) Position() ([]byte, error) {
	b := make([]byte, 9, 9+17)
	b[0] = textFilesPositionVersion
	binary.BigEndian.PutUint64(b[1:], uint64(t.idx))
	var inner []byte
	if t.cur != nil {
		var err error
		if inner, err = t.cur.Position(); err != nil {
			return nil, err
		}
	}
	return append(b, inner...), nil
}

// Seek moves to a position returned by Position: the file it names is
// opened and read from there.
func (t *TextFiles) Seek(pos []byte) error {
	if t.closed {
		return ErrClosed
	}
	if len(pos) < 9 || pos[0] != textFilesPositionVersion {
		return fmt.Errorf("source: invalid %s files position (%d bytes)", t.kind, len(pos))
	}
	i := binary.BigEndian.Uint64(pos[1:])
	inner := pos[9:]
	if i > uint64(len(t.paths)) || i == uint64(len(t.paths)) && len(inner) > 0 {
		return fmt.Errorf("source: %s files position names file %d; there are %d", t.kind, i, len(t.paths))
	}
	if err := t.closeCur(); err != nil {
		return err
	}
	// The rows before the position are not known.
	t.newest, t.seen = 0, false
	if i == uint64(len(t.paths)) {
		// The end, after files without rows.
		t.idx = int(i)
		return nil
	}
	f, err := t.openFile(int(i))
	if errors.Is(err, errNoHeader) && len(inner) == 0 {
		t.idx = int(i) // a file without rows: Read goes on to the next
		return nil
	}
	if err != nil {
		return err
	}
	if len(inner) > 0 {
		if err := f.Seek(inner); err != nil {
			f.Close()
			return err
		}
	}
	t.cur, t.idx = f, int(i)
	return nil
}

// Close closes the file read now.
func (t *TextFiles) Close() error {
	if t.closed {
		return nil
	}
	err := t.closeCur()
	t.closed = true
	if t.bucket != nil {
		if berr := t.bucket.Close(); err == nil {
			err = berr
		}
	}
	return err
}
