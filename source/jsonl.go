package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// jsonRow is one line read ahead of Read (while sampling for inference).
type jsonRow struct {
	line  string
	num   int64
	end   position
	valid bool
}

// JSONL reads JSON lines: one JSON object per line. It implements Source
// and Seeker. See NewJSONL.
type JSONL struct {
	textSource
	file  *os.File
	in    io.Reader
	br    *bufio.Reader
	next  position // of the next line in br
	buf   []byte
	index map[string]int // key -> schema column
	gen   []uint32       // per column: the row generation it was last set in
	row   uint32
	ahead []jsonRow
}

// NewJSONL opens the JSON-lines file at path (one object per line; blank
// lines are skipped). The schema is inferred from the first rows (see
// WithSampleRows) unless WithSchema gives it: the columns are the keys in
// the order first seen; integral numbers are int64, other numbers float64
// (a column mixing both is float64), true/false are bool, strings holding
// RFC 3339 date-times are timestamp[ms, UTC], other strings, nested
// objects and arrays (kept as their JSON text) and any other mix are
// string. null or a missing key is NULL. Keys first seen after the sample
// are ignored.
//
// Lines that are not a JSON object or whose values do not decode against
// the schema go to the dead-letter function with their line number and
// reason, and reading continues. The returned source must be closed.
func NewJSONL(path string, opts ...Option) (*JSONL, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	o := newOptions(opts)
	if o.name == "" {
		o.name = path
	}
	j, err := newJSONL(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	j.file = f
	return j, nil
}

// NewJSONLReader is NewJSONL over an io.Reader. Seek works when r is also
// an io.Seeker and reading starts at its offset 0; Close does not close r.
func NewJSONLReader(r io.Reader, opts ...Option) (*JSONL, error) {
	o := newOptions(opts)
	if o.name == "" {
		o.name = "reader"
	}
	return newJSONL(r, o)
}

func newJSONL(r io.Reader, o options) (j *JSONL, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("source: %s: internal error: %v", o.name, p)
		}
	}()
	j = &JSONL{in: r}
	j.name, j.opts = o.name, o
	j.step = j.stepRow
	j.start = position{offset: 0, line: 1}
	j.restart(j.start)
	j.pos = j.start

	schema := o.schema
	if schema == nil {
		if schema, err = j.infer(); err != nil {
			return nil, err
		}
	}
	if err := j.init(schema); err != nil {
		return nil, err
	}
	j.index = make(map[string]int, schema.NumFields())
	for i, f := range schema.Fields() {
		j.index[f.Name] = i
	}
	j.gen = make([]uint32, schema.NumFields())
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
	var (
		names []string
		types []inferred
		slot  = map[string]int{}
	)
	for len(j.ahead) < j.opts.sampleRows {
		line, num, err := j.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		row := jsonRow{line: string(line), num: num, end: j.next, valid: json.Valid(line)}
		j.ahead = append(j.ahead, row)
		if !row.valid {
			continue
		}
		_ = scanObject(row.line, func(key string, k valueKind, v string) error {
			i, ok := slot[key]
			if !ok {
				i = len(names)
				slot[key] = i
				names = append(names, key)
				types = append(types, inferUnknown)
			}
			types[i] = types[i].merge(classify(k, v))
			return nil
		})
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: types[i].dataType(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
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
		row = jsonRow{line: string(line), num: num, end: j.next, valid: json.Valid(line)}
	}
	j.pos = row.end
	if !row.valid {
		j.deadLetter([]byte(row.line), row.num, "invalid JSON")
		return false, nil
	}
	j.row++
	if j.row == 0 { // wrapped: clear the generations
		clear(j.gen)
		j.row = 1
	}
	err := scanObject(row.line, func(key string, k valueKind, v string) error {
		i, ok := j.index[key]
		if !ok {
			return nil
		}
		j.gen[i] = j.row
		return j.cols[i].parse(k, v)
	})
	if err != nil {
		j.deadLetter([]byte(row.line), row.num, err.Error())
		return false, nil
	}
	for i, c := range j.cols {
		if j.gen[i] != j.row {
			c.setNull()
		}
	}
	j.appendPending()
	return true, nil
}

// Read returns the next batch of at most the batch size rows, or io.EOF.
func (j *JSONL) Read(ctx context.Context) (arrow.RecordBatch, error) { return j.read(ctx) }

// Seek moves to a position returned by Position: the next Read returns
// the row that followed it. Reading from an io.Reader that is not an
// io.Seeker returns ErrNotSeekable.
func (j *JSONL) Seek(pos []byte) error {
	if j.closed {
		return ErrClosed
	}
	p, err := decodePosition(pos)
	if err != nil {
		return err
	}
	s, ok := j.in.(io.Seeker)
	if !ok {
		return ErrNotSeekable
	}
	if _, err := s.Seek(p.offset, io.SeekStart); err != nil {
		return fmt.Errorf("source: %s: %w", j.name, err)
	}
	j.reset()
	j.ahead = nil
	j.restart(p)
	j.pos = p
	return nil
}

// Close releases the source and closes the file NewJSONL opened.
func (j *JSONL) Close() error {
	if j.closed {
		return nil
	}
	j.close()
	j.ahead = nil
	if j.file != nil {
		return j.file.Close()
	}
	return nil
}

var errNotObject = errors.New("not a JSON object")

// scanObject calls fn for each member of the JSON object s, which must be
// valid JSON (checked by the caller with json.Valid). Values are passed as
// substrings of s, except strings with escapes, which are decoded.
func scanObject(s string, fn func(key string, k valueKind, v string) error) error {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return errNotObject
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return nil
	}
	for i < len(s) {
		key, next, err := scanString(s, i)
		if err != nil {
			return err
		}
		i = skipSpace(s, next)
		i = skipSpace(s, i+1) // ':'
		var (
			k   valueKind
			val string
		)
		switch c := s[i]; {
		case c == '"':
			val, next, err = scanString(s, i)
			if err != nil {
				return err
			}
			k = kindString
		case c == 't':
			k, val, next = kindBool, "true", i+4
		case c == 'f':
			k, val, next = kindBool, "false", i+5
		case c == 'n':
			k, val, next = kindNull, "", i+4
		case c == '{' || c == '[':
			next = skipNested(s, i)
			k, val = kindNested, s[i:next]
		default:
			next = i
			for next < len(s) && strings.IndexByte("+-0123456789.eE", s[next]) >= 0 {
				next++
			}
			k, val = kindNumber, s[i:next]
		}
		if err := fn(key, k, val); err != nil {
			return err
		}
		i = skipSpace(s, next)
		if i >= len(s) || s[i] == '}' {
			return nil
		}
		i = skipSpace(s, i+1) // ','
	}
	return nil
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string literal starting at s[i] == '"' and returns
// its value and the index after the closing quote.
func scanString(s string, i int) (string, int, error) {
	escaped := false
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return s[i+1 : j], j + 1, nil
			}
			var v string
			if err := json.Unmarshal([]byte(s[i:j+1]), &v); err != nil {
				return "", 0, err
			}
			return v, j + 1, nil
		}
	}
	return "", 0, errors.New("unterminated string")
}

// skipNested returns the index after the object or array starting at i.
func skipNested(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			_, next, err := scanString(s, i)
			if err != nil {
				return len(s)
			}
			i = next - 1
		}
	}
	return len(s)
}
