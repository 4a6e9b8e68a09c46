package source

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/textrow"
)

// recorder keeps the bytes an encoding/csv reader consumed, so that a
// rejected row can be handed on as it was written. Bytes before the last
// row consumed are dropped as reading goes on, so it holds about one row
// plus the csv reader's read-ahead.
type recorder struct {
	r     io.Reader
	buf   []byte
	start int64 // stream offset of buf[0]
	mark  int64 // stream offset of the end of the last row consumed
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// span returns the bytes between two stream offsets.
func (r *recorder) span(from, to int64) []byte {
	return r.buf[from-r.start : to-r.start]
}

// consume returns the bytes from the previous mark to offset and moves
// the mark there. Bytes before the mark are dropped once they are a
// sizeable part of the buffer.
func (r *recorder) consume(offset int64) []byte {
	if d := r.mark - r.start; d >= 32<<10 || d > int64(len(r.buf))/2 {
		n := copy(r.buf, r.buf[d:])
		r.buf = r.buf[:n]
		r.start = r.mark
	}
	raw := r.span(r.mark, offset)
	r.mark = offset
	return raw
}

// csvRow is one row read ahead of Read (while sampling for inference).
type csvRow struct {
	fields []string
	raw    []byte
	line   int64
	reason string
	end    position
}

// CSV reads a comma-separated file with a header row. It implements Source
// and Seeker. See NewCSV.
type CSV struct {
	textSource
	path   string // "" when reading from a caller's io.Reader
	rec    *recorder
	cr     *csv.Reader
	base   position // position where cr started
	line   int64    // line number at the csv reader's offset
	header []string
	index  []int // for each schema field, its column in the file
	ahead  []csvRow
}

// NewCSV opens the CSV file at path. The first line is the header; the
// schema is inferred from the first rows (see WithSampleRows) unless
// WithSchema gives it:
//
//   - integers are int64, decimals float64 (a column mixing both is
//     float64), true/false (any case) are bool, RFC 3339 date-times are
//     timestamp[ms, UTC], everything else, and any other mix, is string;
//   - an empty field is NULL, and a column with only NULLs is string.
//
// Rows that do not decode against the schema (a bad number, a wrong field
// count, a broken quote) go to the dead-letter function with their line
// number and reason, and reading continues. The returned source must be
// closed.
func NewCSV(path string, opts ...Option) (*CSV, error) {
	c, err := openText(path, opts, newCSV)
	if err != nil {
		return nil, err
	}
	c.path = path
	return c, nil
}

// NewCSVReader is NewCSV over an io.Reader. Seek works when r is also an
// io.Seeker and reading starts at its offset 0; Close does not close r.
func NewCSVReader(r io.Reader, opts ...Option) (*CSV, error) {
	return newCSV(r, readerOptions(opts))
}

func newCSV(r io.Reader, o options) (c *CSV, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("source: %s: internal error: %v", o.name, p)
		}
	}()
	c = &CSV{}
	c.name, c.opts, c.in = o.name, o, r
	c.step = c.stepRow
	c.restart(r, position{offset: 0, line: 1})

	hdr, err := c.cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("source: %s: empty input, a CSV header was expected", o.name)
		}
		return nil, fmt.Errorf("source: %s: reading the header: %w", o.name, err)
	}
	c.advance()
	c.header = make([]string, len(hdr))
	copy(c.header, hdr)
	c.header[0] = strings.TrimPrefix(c.header[0], "\ufeff")
	for i, h := range c.header {
		if h == "" {
			c.header[i] = fmt.Sprintf("column_%d", i+1)
		}
	}
	c.start = c.base
	c.start.offset += c.cr.InputOffset()
	c.start.line = c.line
	c.pos = c.start

	schema := o.schema
	if schema == nil {
		if schema, err = c.infer(); err != nil {
			return nil, err
		}
		c.sampled = len(c.ahead)
	}
	if err := c.mapColumns(schema); err != nil {
		return nil, err
	}
	if err := c.init(schema); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *CSV) restart(r io.Reader, at position) {
	c.rec = &recorder{r: r}
	c.cr = csv.NewReader(c.rec)
	c.cr.ReuseRecord = true
	if c.header != nil {
		c.cr.FieldsPerRecord = len(c.header)
	}
	c.base, c.line = at, at.line
}

// advance drops the recorded bytes of rows already consumed and returns
// them, updating the line count.
func (c *CSV) advance() []byte {
	raw := c.rec.consume(c.cr.InputOffset())
	c.line += int64(bytes.Count(raw, []byte{'\n'}))
	return raw
}

// readRow reads one row from the csv reader.
func (c *CSV) readRow() (csvRow, error) {
	fields, err := c.cr.Read()
	if err == io.EOF {
		return csvRow{}, io.EOF
	}
	var pe *csv.ParseError
	if err != nil && !errors.As(err, &pe) {
		return csvRow{}, fmt.Errorf("source: %s: %w", c.name, err)
	}
	raw := bytes.TrimLeft(bytes.TrimRight(c.advance(), "\r\n"), "\r\n")
	row := csvRow{fields: fields, raw: raw}
	row.end = position{offset: c.base.offset + c.cr.InputOffset(), line: c.line}
	switch {
	case pe != nil && errors.Is(pe.Err, csv.ErrFieldCount):
		row.reason = fmt.Sprintf("wrong number of fields: got %d, want %d", len(fields), len(c.header))
		row.line = c.base.line - 1 + int64(pe.StartLine)
	case pe != nil:
		row.reason = pe.Err.Error()
		row.line = c.base.line - 1 + int64(pe.StartLine)
	default:
		l, _ := c.cr.FieldPos(0)
		row.line = c.base.line - 1 + int64(l)
	}
	return row, nil
}

// infer reads up to sampleRows rows ahead and derives the schema.
func (c *CSV) infer() (*arrow.Schema, error) {
	types := make([]textrow.Inferred, len(c.header))
	mixes := make([]textrow.Mix, len(c.header))
	for len(c.ahead) < c.opts.sampleRows {
		row, err := c.readRow()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		row.raw = bytes.Clone(row.raw)
		if row.reason == "" {
			for i, s := range row.fields {
				t := textrow.Classify(textrow.Text, s)
				types[i] = types[i].Merge(t)
				mixes[i].Add(t, s, row.line)
			}
			row.fields = append([]string(nil), row.fields...)
		} else {
			row.fields = nil
		}
		c.ahead = append(c.ahead, row)
	}
	fields := make([]arrow.Field, len(c.header))
	for i, h := range c.header {
		fields[i] = arrow.Field{Name: h, Type: types[i].DataType(), Nullable: true}
		if note := mixes[i].Note(); note != "" {
			if c.notes == nil {
				c.notes = map[string]string{}
			}
			c.notes[h] = note
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

func (c *CSV) mapColumns(schema *arrow.Schema) error {
	byName := make(map[string]int, len(c.header))
	for i, h := range c.header {
		if _, dup := byName[h]; dup {
			return fmt.Errorf("source: %s: duplicate column %q in the header", c.name, h)
		}
		byName[h] = i
	}
	c.index = make([]int, schema.NumFields())
	for j, f := range schema.Fields() {
		i, ok := byName[f.Name]
		if !ok {
			return fmt.Errorf("source: %s: column %q of the schema is not in the header", c.name, f.Name)
		}
		c.index[j] = i
	}
	return nil
}

func (c *CSV) stepRow() (bool, error) {
	var row csvRow
	if len(c.ahead) > 0 {
		row = c.ahead[0]
		c.ahead[0] = csvRow{}
		c.ahead = c.ahead[1:]
	} else {
		var err error
		if row, err = c.readRow(); err != nil {
			return false, err
		}
	}
	c.pos = row.end
	if row.reason != "" {
		c.deadLetter(row.raw, row.line, row.reason)
		return false, nil
	}
	for j, col := range c.cols {
		if err := col.Parse(textrow.Text, row.fields[c.index[j]]); err != nil {
			c.deadLetter(row.raw, row.line, c.reason(err))
			return false, nil
		}
	}
	c.appendPending()
	return true, nil
}

// Read returns the next batch of at most the batch size rows, or io.EOF.
func (c *CSV) Read(ctx context.Context) (arrow.RecordBatch, error) { return c.read(ctx) }

// Seek moves to a position returned by Position: the next Read returns
// the row that followed it. Reading from an io.Reader that is not an
// io.Seeker returns ErrNotSeekable.
func (c *CSV) Seek(pos []byte) error {
	p, err := c.seekInput(pos)
	if err != nil {
		return err
	}
	c.ahead = nil
	c.restart(c.in, p)
	return nil
}

// Close releases the source and closes the file NewCSV opened.
func (c *CSV) Close() error {
	c.ahead = nil
	return c.closeInput()
}
