package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/textrow"
)

// csvRow is one record read ahead of Read (while sampling for inference).
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
	path string // "" when reading from a caller's io.Reader
	br   *bufio.Reader
	next position // of the next byte in br
	eof  bool     // br has no more bytes
	// again holds whole lines read from br to be read again before it:
	// those after the first line of a record of several lines that did
	// not parse.
	again  []byte
	rec    []byte // the record being read, as written
	buf    []byte // its field values, quotes undone
	ends   []int  // the end of each field value in buf
	fields []string
	header []string
	index  []int // for each schema field, its column in the file
	ahead  []csvRow
}

// NewCSV opens the CSV file at path (compressed with gzip when it ends in
// .gz, with zstd in .zst: Seek then reads the text again from its start up
// to the position). The first line is the header; the
// schema is inferred from the first rows (see WithSampleRows) unless
// WithSchema gives it:
//
//   - integers are int64, decimals float64 (a column mixing both is
//     float64, and NaN or Inf among numbers are float64 too), true/false
//     (any case) are bool, date-times (RFC 3339, or 2006-01-02
//     15:04:05[.fff] as pandas writes them, read as UTC) are
//     timestamp[ms, UTC],
//     everything else, and any other mix, is string;
//   - an empty field, quoted or not, is NULL, and a column with only
//     NULLs is string.
//
// The text is RFC 4180: fields separated by commas, records by \n or
// \r\n, a field in double quotes may hold commas, quotes (doubled) and
// line breaks, which are kept as written (\r\n included). Blank lines are
// skipped and a UTF-8 byte order mark before the header is dropped.
//
// Rows that do not decode against the schema (a bad number, a wrong field
// count, a broken quote, a string column's field that is not valid UTF-8,
// a time a timestamp[ns] column cannot hold) go to the dead-letter
// function with their line number and reason, and reading continues. A
// record of several lines that does not parse (a broken quote, a wrong
// field count), most often a quote left open that would run on to the
// next stray quote or the end of the input, is a dead letter of its
// first line only, and reading goes on at its second line, so that
// the rows after it are not lost. The returned source must be closed.
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
	c.restart(position{offset: 0, line: 1})
	if bom, _ := c.br.Peek(len(utf8BOM)); string(bom) == utf8BOM {
		c.br.Discard(len(bom))
		c.next.offset += int64(len(bom))
	}

	hdr, err := c.readRow()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("source: %s: %w", o.name, errNoHeader)
		}
		return nil, err
	}
	if hdr.reason != "" {
		return nil, fmt.Errorf("source: %s: reading the header: line %d: %s", o.name, hdr.line, hdr.reason)
	}
	c.header = slices.Clone(hdr.fields)
	byName := make(map[string]int, len(c.header))
	for i, h := range c.header {
		if h == "" {
			c.header[i] = fmt.Sprintf("column_%d", i+1)
		}
		if _, dup := byName[c.header[i]]; dup {
			return nil, fmt.Errorf("source: %s: duplicate column %q in the header", c.name, c.header[i])
		}
		byName[c.header[i]] = i
	}
	c.start = hdr.end
	c.pos = c.start

	schema := o.schema
	if schema == nil {
		if schema, err = c.infer(); err != nil {
			return nil, err
		}
		c.sampled = len(c.ahead)
	}
	if err := c.mapColumns(schema, byName); err != nil {
		return nil, err
	}
	if err := c.init(schema); err != nil {
		return nil, err
	}
	return c, nil
}

// errNoHeader is the error of an input without even a header: nothing
// but blank lines, or no bytes at all. TextFiles reads such a file as one
// without rows.
var errNoHeader = errors.New("empty input, a CSV header was expected")

// utf8BOM is the byte order mark some editors write at the start of a
// UTF-8 file.
const utf8BOM = "\ufeff"

// Dead-letter reasons of a broken quote, in encoding/csv's words.
var (
	errCSVQuote     = csv.ErrQuote.Error()     // a quote inside a quoted field, not doubled
	errCSVBareQuote = csv.ErrBareQuote.Error() // a quote inside a field that does not start with one
)

func (c *CSV) restart(at position) {
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.in, 64<<10)
	} else {
		c.br.Reset(c.in)
	}
	c.next, c.eof, c.again = at, false, c.again[:0]
}

// readLine appends the next physical line, its \n included, to c.rec. It
// returns false at the end of the input.
func (c *CSV) readLine() (bool, error) {
	n := len(c.rec)
	if len(c.again) > 0 {
		l := len(c.again)
		if i := bytes.IndexByte(c.again, '\n'); i >= 0 {
			l = i + 1
		}
		c.rec = append(c.rec, c.again[:l]...)
		c.again = c.again[l:]
	}
	for !c.eof && len(c.rec) == n {
		chunk, err := c.br.ReadSlice('\n')
		c.rec = append(c.rec, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			c.eof = true
			break
		}
		if err != nil {
			return false, fmt.Errorf("source: %s: %w", c.name, err)
		}
		break
	}
	c.next.offset += int64(len(c.rec) - n)
	if len(c.rec) > n && c.rec[len(c.rec)-1] == '\n' {
		c.next.line++
	}
	return len(c.rec) > n, nil
}

// readRow reads the next record: its fields or, for a record that does
// not parse, the reason. Blank lines before it are skipped. Fields are
// substrings of one string per record; the slice is reused.
func (c *CSV) readRow() (csvRow, error) {
	var start position
	for {
		c.rec, start = c.rec[:0], c.next
		ok, err := c.readLine()
		if err != nil {
			return csvRow{}, err
		}
		if !ok {
			return csvRow{}, io.EOF
		}
		if !lineEnd(c.rec) {
			break
		}
	}
	reason, err := c.split()
	if err != nil {
		return csvRow{}, err
	}
	if reason == "" && c.header != nil && len(c.ends) != len(c.header) {
		reason = fmt.Sprintf("wrong number of fields: got %d, want %d", len(c.ends), len(c.header))
	}
	if nl := bytes.IndexByte(c.rec, '\n'); reason != "" && nl >= 0 && nl < len(c.rec)-1 {
		// A record of several lines that does not parse: most likely a
		// quote left open, which would swallow every line up to the next
		// quote (or the end of the input) into one dead letter. Only its
		// first line is one; the lines after it are read again.
		c.again = append(bytes.Clone(c.rec[nl+1:]), c.again...)
		c.rec = c.rec[:nl+1]
		c.next = position{offset: start.offset + int64(nl+1), line: start.line + 1}
	}
	raw := bytes.TrimSuffix(c.rec, []byte{'\n'})
	raw = bytes.TrimSuffix(raw, []byte{'\r'})
	row := csvRow{raw: raw, line: start.line, reason: reason, end: c.next}
	if reason == "" {
		str := string(c.buf)
		c.fields = c.fields[:0]
		from := 0
		for _, to := range c.ends {
			c.fields = append(c.fields, str[from:to])
			from = to
		}
		row.fields = c.fields
	}
	return row, nil
}

// lineEnd reports whether b is nothing but the end of a line: "", \n,
// \r\n, or \r (at the end of the input).
func lineEnd(b []byte) bool {
	switch len(b) {
	case 0:
		return true
	case 1:
		return b[0] == '\n' || b[0] == '\r'
	case 2:
		return b[0] == '\r' && b[1] == '\n'
	}
	return false
}

// split parses the record in c.rec (one physical line so far) into c.buf
// and c.ends, reading more lines while a quoted field goes on. It returns
// the reason the record does not parse, or "". A record that does not
// parse ends with the line where that is seen, or with the input for an
// unterminated quote.
func (c *CSV) split() (string, error) {
	c.buf, c.ends = c.buf[:0], c.ends[:0]
	rec, i := c.rec, 0
	for {
		if i < len(rec) && rec[i] == '"' {
			i++
			for {
				j := bytes.IndexByte(rec[i:], '"')
				if j < 0 { // the field goes on to the next line
					c.buf = append(c.buf, rec[i:]...)
					i = len(rec)
					ok, err := c.readLine()
					if err != nil {
						return "", err
					}
					if !ok {
						return errCSVQuote, nil
					}
					rec = c.rec
					continue
				}
				c.buf = append(c.buf, rec[i:i+j]...)
				i += j + 1
				if i < len(rec) && rec[i] == '"' {
					c.buf = append(c.buf, '"')
					i++
					continue
				}
				c.ends = append(c.ends, len(c.buf))
				if i < len(rec) && rec[i] == ',' {
					i++
					break
				}
				if lineEnd(rec[i:]) {
					return "", nil
				}
				return errCSVQuote, nil
			}
			continue
		}
		// Unquoted: up to a comma or the end of the line.
		k := i
		for k < len(rec) && rec[k] != ',' && rec[k] != '\n' {
			k++
		}
		field := rec[i:k]
		if k == len(rec) || rec[k] == '\n' {
			field = bytes.TrimSuffix(field, []byte{'\r'})
		}
		if bytes.IndexByte(field, '"') >= 0 {
			return errCSVBareQuote, nil
		}
		c.buf = append(c.buf, field...)
		c.ends = append(c.ends, len(c.buf))
		if k == len(rec) || rec[k] == '\n' {
			return "", nil
		}
		i = k + 1
	}
}

// infer reads up to sampleRows rows ahead and derives the schema, with
// the rules of JSON lines (textrow.Inference) applied to untyped text.
func (c *CSV) infer() (*arrow.Schema, error) {
	var in textrow.Inference
	in.Columns(c.header...)
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
				in.Value(c.header[i], textrow.Text, s, row.line)
			}
			row.fields = slices.Clone(row.fields)
		} else {
			row.fields = nil
		}
		c.ahead = append(c.ahead, row)
	}
	c.notes = in.Notes()
	return in.Schema(), nil
}

// mapColumns finds each field of schema in the header.
func (c *CSV) mapColumns(schema *arrow.Schema, byName map[string]int) error {
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
	c.restart(p)
	return nil
}

// Close releases the source and closes the file NewCSV opened.
func (c *CSV) Close() error {
	c.ahead = nil
	return c.closeInput()
}
