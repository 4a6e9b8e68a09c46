package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/textcodec"
	"github.com/volga-go/volga/internal/textrow"
)

// ErrClosed is returned by Read after Close.
var ErrClosed = errors.New("source: closed")

// ErrNotSeekable is returned by Seek when the source reads from an
// io.Reader that cannot seek.
var ErrNotSeekable = errors.New("source: input is not seekable")

// position locates the next unread row of a text input.
type position struct {
	offset int64 // byte offset
	line   int64 // 1-based line number
}

const positionVersion = 1

func (p position) encode() []byte {
	b := make([]byte, 17)
	b[0] = positionVersion
	binary.BigEndian.PutUint64(b[1:], uint64(p.offset))
	binary.BigEndian.PutUint64(b[9:], uint64(p.line))
	return b
}

func decodePosition(b []byte) (position, error) {
	if len(b) != 17 || b[0] != positionVersion {
		return position{}, fmt.Errorf("source: invalid position (%d bytes)", len(b))
	}
	p := position{offset: int64(binary.BigEndian.Uint64(b[1:])), line: int64(binary.BigEndian.Uint64(b[9:]))}
	if p.offset < 0 || p.line < 1 {
		return position{}, errors.New("source: invalid position")
	}
	return p, nil
}

// textSource is the part the CSV and JSON-lines sources share: the
// schema, the column decoders, the batch builder, dead-letter accounting
// and the read loop.
type textSource struct {
	name   string
	opts   options
	in     io.Reader // the input at its start
	file   io.Closer // the file the constructor opened, closed by Close
	schema *arrow.Schema
	cols   []*textrow.Column
	bld    *array.RecordBuilder
	dead   int64
	// sampled is the number of rows the schema was inferred from, 0 when
	// it was given (WithSchema).
	sampled int
	// notes explain, by column, a column inferred as utf8 because of a few
	// values among many of another type (textrow.Mix.Note).
	notes  map[string]string
	pos    position // after the last row consumed
	start  position // of the first data row
	done   bool
	closed bool
	// newest is the greatest value of the WithTimeOrder column read
	// (seen: there is one), for LowerBound.
	newest int64
	seen   bool
	// orderErr is the broken WithTimeOrder promise found in the batch
	// Read returned last, cut before the row that broke it: the next Read
	// returns it.
	orderErr error
	// starts holds, with WithTimeOrder, the position of each row of the
	// batch being built, so that a batch cut before the row that broke
	// the promise leaves Position at that row.
	starts []position

	// step consumes one input row: it appends it to the builders and
	// returns true, reports a dead letter and returns false, or returns
	// io.EOF at the end of the input.
	step func() (bool, error)
}

func (t *textSource) init(schema *arrow.Schema) error {
	if err := checkTimeOrder(t.name, schema, t.opts.timeOrder); err != nil {
		return err
	}
	t.schema = schema
	t.bld = array.NewRecordBuilder(t.opts.mem, schema)
	t.cols = make([]*textrow.Column, schema.NumFields())
	for i, f := range schema.Fields() {
		c, ok := textrow.NewColumn(f, t.bld.Field(i))
		if !ok {
			t.bld.Release()
			return fmt.Errorf("source: column %q: type %s is not supported by text sources", f.Name, f.Type)
		}
		t.cols[i] = c
	}
	return nil
}

// appendPending appends the decoded row to the builders.
func (t *textSource) appendPending() {
	for _, c := range t.cols {
		c.Append()
	}
}

// deadLetter counts a rejected row and hands a copy of it to the handler.
func (t *textSource) deadLetter(raw []byte, line int64, reason string) {
	t.dead++
	if t.opts.deadLetter != nil {
		t.opts.deadLetter(DeadLetter{Source: t.name, Offset: line, Raw: slices.Clone(raw), Reason: reason})
	}
}

// reason words a row's decoding error for its dead letter. A decimal in
// a column inferred as integer says so: the sample the schema was inferred
// from was too small to show that the column holds decimals.
func (t *textSource) reason(err error) string {
	var ve *textrow.ValueError
	if t.sampled > 0 && errors.As(err, &ve) && arrow.IsInteger(ve.Type.ID()) {
		if _, perr := strconv.ParseFloat(ve.Value, 64); perr == nil {
			return fmt.Sprintf("%v (%s was inferred from the first %d rows; give the schema with WithSchema or sample more rows with WithSampleRows)", err, ve.Type, t.sampled)
		}
	}
	return err.Error()
}

// SampledRows returns how many rows the schema was inferred from, and
// false when it was given (WithSchema). Zero rows infer every column as
// utf8: an error about a column's type then comes from the input, not
// from the query.
func (t *textSource) SampledRows() (int, bool) {
	return t.sampled, t.opts.schema == nil
}

// InferenceNote explains why column was inferred as utf8 when most of
// the values sampled are of another type: the line of the first value
// that is not (`line 4 holds "abc", where 999 of the 1000 values sampled
// are int64`); "" when the schema was given or there is nothing to say.
func (t *textSource) InferenceNote(column string) string { return t.notes[column] }

// Schema returns the schema of the batches.
func (t *textSource) Schema() *arrow.Schema { return t.schema }

// DeadLetters returns how many rows were rejected so far.
func (t *textSource) DeadLetters() int64 { return t.dead }

func (t *textSource) read(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if t.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if t.orderErr != nil {
		return nil, t.orderErr
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("source: %s: internal error: %v", t.name, r)
		}
	}()
	n := 0
	t.starts = t.starts[:0]
	for iter := 0; n < t.opts.batchSize && !t.done; iter++ {
		if iter&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				if n == 0 {
					return nil, err
				}
				// The rows consumed so far go out now: the position is
				// past them, and a checkpoint taken after this Read
				// must not skip them. The next Read reports ctx.Err().
				break
			}
		}
		at := t.pos
		ok, err := t.step()
		if err == io.EOF {
			t.done = true
			break
		}
		if err != nil {
			return nil, err
		}
		if ok {
			n++
			if t.opts.timeOrder != "" {
				t.starts = append(t.starts, at)
			}
		}
	}
	if n == 0 {
		return nil, io.EOF
	}
	if len(t.cols) == 0 {
		// No columns (objects without keys): only the row count.
		return array.NewRecordBatch(t.schema, nil, int64(n)), nil
	}
	rec = t.bld.NewRecordBatch()
	if t.opts.timeOrder != "" {
		if cut, err := t.observeOrder(rec); err != nil {
			// The rows before the one that broke the promise go out; this
			// Read or the next reports it, and so does every Read after
			// until Seek. Position is at that row, not past the rows
			// read after it, which Read does not return: a checkpoint
			// taken now must not skip them.
			t.pos, t.done, t.orderErr = t.starts[cut], false, err
			if cut == 0 {
				rec.Release()
				return nil, err
			}
			head := rec.NewSlice(0, int64(cut))
			rec.Release()
			return head, nil
		}
	}
	return rec, nil
}

// reset discards any partly built batch before a Seek.
func (t *textSource) reset() {
	t.orderErr = nil
	rec := t.bld.NewRecordBatch()
	rec.Release()
	t.done = false
	t.seen = false // the rows before the new position are not known
}

// closeInput releases the builders and closes the file the constructor
// opened, once.
func (t *textSource) closeInput() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.bld.Release()
	if t.file != nil {
		return t.file.Close()
	}
	return nil
}

// seekInput moves the input to pos, a position from Position, for Seek:
// it rejects a closed source, an invalid position and an input that is
// not an io.Seeker, moves a position before the first data row to that
// row, and discards the partly built batch. The caller restarts reading
// at the returned position.
func (t *textSource) seekInput(pos []byte) (position, error) {
	if t.closed {
		return position{}, ErrClosed
	}
	p, err := decodePosition(pos)
	if err != nil {
		return position{}, err
	}
	if p.offset < t.start.offset {
		p = t.start
	}
	s, ok := t.in.(io.Seeker)
	if !ok {
		return position{}, ErrNotSeekable
	}
	if _, err := s.Seek(p.offset, io.SeekStart); err != nil {
		return position{}, fmt.Errorf("source: %s: %w", t.name, err)
	}
	t.reset()
	t.pos = p
	return p, nil
}

// openText opens the file at path and builds a text source over it with
// build; a file compressed with gzip (.gz) or zstd (.zst) is read as the
// text it holds; the source is named after the path unless WithName names it. The
// source's Close closes the file.
func openText[S interface{ text() *textSource }](path string, opts []Option, build func(io.Reader, options) (S, error)) (S, error) {
	var zero S
	o := newOptions(opts)
	var f io.ReadCloser
	var err error
	if c := textcodec.Of(path); c != nil {
		f, err = openDecompressor(o.files(), path, c)
	} else {
		f, err = o.files().open(path)
	}
	if err != nil {
		return zero, fmt.Errorf("source: %w", err)
	}
	if o.name == "" {
		o.name = o.nameBase + path
	}
	s, err := build(f, o)
	if err != nil {
		f.Close()
		return zero, err
	}
	s.text().file = f
	return s, nil
}

// readerOptions are the options of a text source over a caller's reader.
func readerOptions(opts []Option) options {
	o := newOptions(opts)
	if o.name == "" {
		o.name = "reader"
	}
	return o
}

// text gives openText the shared part of the source it built.
func (t *textSource) text() *textSource { return t }

// Position returns the position of the next row Read would return.
func (t *textSource) Position() ([]byte, error) { return t.pos.encode(), nil }
