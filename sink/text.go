package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/jsonvalue"
)

// textWriter is what the CSV and JSON-lines sinks share: a buffered
// writer, optionally over a file the sink opened and must close.
type textWriter struct {
	w      *bufio.Writer
	file   *os.File // nil when writing to a caller's io.Writer
	buf    []byte   // scratch for one value
	line   []byte   // scratch for one row
	schema *arrow.Schema
	closed bool
	err    error // sticky write error
}

func newTextWriter(w io.Writer, f *os.File) textWriter {
	return textWriter{w: bufio.NewWriterSize(w, 64<<10), file: f}
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

func (t *textWriter) close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	err := t.flush()
	if t.file != nil {
		if t.err == nil {
			err = errors.Join(err, t.file.Sync())
		}
		err = errors.Join(err, t.file.Close())
	}
	return err
}

// CSV writes batches as comma-separated text: a header row with the column
// names of the first batch, then one line per row with each value rendered
// by FormatValue and quoted as RFC 4180 requires (a list such as 1,2 is
// written "1,2"). NULL is an empty field. Lines end with \n.
type CSV struct{ t textWriter }

// NewCSV returns a CSV sink writing to w. Close flushes but does not close
// w.
func NewCSV(w io.Writer) *CSV { return &CSV{t: newTextWriter(w, nil)} }

// CreateCSV creates (or truncates) the file at path and returns a CSV sink
// writing to it; Close flushes and closes the file.
func CreateCSV(path string) (*CSV, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	return &CSV{t: newTextWriter(f, f)}, nil
}

// Write appends the rows of rec. The first batch also writes the header.
func (c *CSV) Write(ctx context.Context, rec arrow.RecordBatch) error {
	t := &c.t
	first, err := t.begin(ctx, rec)
	if err != nil {
		return err
	}
	if first {
		t.line = t.line[:0]
		for i, f := range rec.Schema().Fields() {
			if i > 0 {
				t.line = append(t.line, ',')
			}
			t.line = appendCSVField(t.line, []byte(f.Name))
		}
		t.line = append(t.line, '\n')
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
		t.line = append(t.line, '\n')
		if err := t.write(t.line); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes any buffered rows to the underlying writer.
func (c *CSV) Flush() error { return c.t.flush() }

// Close flushes the output and closes the file if the sink created it.
func (c *CSV) Close() error { return c.t.close() }

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
// not close w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{t: newTextWriter(w, nil)} }

// CreateJSONL creates (or truncates) the file at path and returns a
// JSON-lines sink writing to it; Close flushes and closes the file.
func CreateJSONL(path string) (*JSONL, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	return &JSONL{t: newTextWriter(f, f)}, nil
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

// Close flushes the output and closes the file if the sink created it.
func (j *JSONL) Close() error { return j.t.close() }
