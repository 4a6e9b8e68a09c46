package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/textrow"
)

// jsonRow is one line read ahead of Read (while sampling for inference).
type jsonRow struct {
	line string
	num  int64
	end  position
	bad  string // why the line is not a JSON text: "" when it is one
}

// JSONL reads JSON lines: one JSON object per line. It implements Source
// and Seeker. See NewJSONL.
type JSONL struct {
	textSource
	br    *bufio.Reader
	next  position // of the next line in br
	buf   []byte
	dec   *textrow.Decoder
	ahead []jsonRow
}

// NewJSONL opens the JSON-lines file at path (compressed with gzip when
// it ends in .gz, with zstd in .zst, as for NewCSV) (one object per line; blank
// lines are skipped, and so is a UTF-8 byte order mark at the start). The schema is inferred from the first rows (see
// WithSampleRows) unless WithSchema gives it: the columns are the keys in
// the order first seen; integral numbers are int64, other numbers float64
// (a column mixing both is float64), true/false are bool, strings holding
// date-times (RFC 3339, or 2006-01-02 15:04:05[.fff], read as UTC) are
// timestamp[ms, UTC], other strings, nested
// objects and arrays (kept as their JSON text) and any other mix are
// string. null or a missing key is NULL. Keys first seen after the sample
// are ignored.
//
// Lines that are not a JSON object (or not valid UTF-8, which JSON text
// must be) or whose values do not decode against the schema go to the
// dead-letter function with their line number and reason, and reading
// continues. The returned source must be closed.
func NewJSONL(path string, opts ...Option) (*JSONL, error) {
	return openText(path, opts, newJSONL)
}

// NewJSONLReader is NewJSONL over an io.Reader. Seek works when r is also
// an io.Seeker and reading starts at its offset 0; Close does not close r.
func NewJSONLReader(r io.Reader, opts ...Option) (*JSONL, error) {
	return newJSONL(r, readerOptions(opts))
}

func newJSONL(r io.Reader, o options) (j *JSONL, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("source: %s: internal error: %v", o.name, p)
		}
	}()
	j = &JSONL{}
	j.name, j.opts, j.in = o.name, o, r
	j.step = j.stepRow
	j.restart(position{offset: 0, line: 1})
	if bom, _ := j.br.Peek(len(utf8BOM)); string(bom) == utf8BOM {
		j.br.Discard(len(bom))
		j.next.offset += int64(len(bom))
	}
	j.start = j.next
	j.pos = j.start

	schema := o.schema
	if schema == nil {
		if schema, err = j.infer(); err != nil {
			return nil, err
		}
		j.sampled = len(j.ahead)
	}
	if err := j.init(schema); err != nil {
		return nil, err
	}
	j.dec = textrow.NewDecoder(j.cols)
	return j, nil
}

func (j *JSONL) restart(at position) {
	j.br = bufio.NewReaderSize(j.in, 64<<10)
	j.next = at
}

// readLine returns the next non-blank line, its line number and the
// position after it.
func (j *JSONL) readLine() ([]byte, int64, error) {
	for {
		j.buf = j.buf[:0]
		for {
			chunk, err := j.br.ReadSlice('\n')
			j.buf = append(j.buf, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(j.buf) == 0 {
					return nil, 0, io.EOF
				}
				break
			}
			if err != nil {
				return nil, 0, fmt.Errorf("source: %s: %w", j.name, err)
			}
			break
		}
		num := j.next.line
		j.next.offset += int64(len(j.buf))
		if len(j.buf) > 0 && j.buf[len(j.buf)-1] == '\n' {
			j.next.line++
		}
		line := bytes.TrimSpace(j.buf)
		if len(line) > 0 {
			return line, num, nil
		}
	}
}

// infer reads up to sampleRows lines ahead and derives the schema.
func (j *JSONL) infer() (*arrow.Schema, error) {
	var in textrow.Inference
	for len(j.ahead) < j.opts.sampleRows {
		line, num, err := j.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		row := jsonRow{line: string(line), num: num, end: j.next, bad: badJSON(line)}
		j.ahead = append(j.ahead, row)
		if row.bad == "" {
			in.ObjectAt(row.line, num)
		}
	}
	j.notes = in.Notes()
	return in.Schema(), nil
}

func (j *JSONL) stepRow() (bool, error) {
	var row jsonRow
	if len(j.ahead) > 0 {
		row = j.ahead[0]
		j.ahead[0] = jsonRow{}
		j.ahead = j.ahead[1:]
	} else {
		line, num, err := j.readLine()
		if err != nil {
			return false, err
		}
		// One string per line: every value below is a substring of it.
		row = jsonRow{line: string(line), num: num, end: j.next, bad: badJSON(line)}
	}
	j.pos = row.end
	if row.bad != "" {
		j.deadLetter([]byte(row.line), row.num, row.bad)
		return false, nil
	}
	if err := j.dec.Decode(row.line); err != nil {
		j.deadLetter([]byte(row.line), row.num, j.reason(err))
		return false, nil
	}
	j.appendPending()
	return true, nil
}

// badJSON returns why line is not a JSON text, or "": it is not valid
// JSON, or it is not UTF-8, which JSON text must be (RFC 8259) and Arrow
// strings must be too. encoding/json takes invalid UTF-8 inside strings,
// which would pass it on unchanged, or replaced by U+FFFD in a string
// with escapes; the Kafka source rejects such records too.
func badJSON(line []byte) string {
	if !json.Valid(line) {
		return textrow.ErrInvalidJSON.Error()
	}
	if !utf8.Valid(line) {
		return "invalid UTF-8"
	}
	return ""
}

// Read returns the next batch of at most the batch size rows, or io.EOF.
func (j *JSONL) Read(ctx context.Context) (arrow.RecordBatch, error) { return j.read(ctx) }

// Seek moves to a position returned by Position: the next Read returns
// the row that followed it. Reading from an io.Reader that is not an
// io.Seeker returns ErrNotSeekable.
func (j *JSONL) Seek(pos []byte) error {
	p, err := j.seekInput(pos)
	if err != nil {
		return err
	}
	j.ahead = nil
	j.restart(p)
	return nil
}

// Close releases the source and closes the file NewJSONL opened.
func (j *JSONL) Close() error {
	j.ahead = nil
	return j.closeInput()
}
