package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Parquet reads Parquet files in order through arrow-go's pqarrow. The
// schema is that of the first file; every other file must have the same
// column names and types. Column types are kept as stored (timestamps of
// any unit stay as they are). It implements Source and Seeker (the
// position is a file index and a row offset in it).
type Parquet struct {
	paths  []string
	opts   options
	schema *arrow.Schema
	idx    int   // current file
	row    int64 // rows of the current file already returned
	f      *file.Reader
	rr     pqarrow.RecordReader
	closed bool
}

// NewParquet opens Parquet files to be read in order with the default
// options.
func NewParquet(paths ...string) (*Parquet, error) {
	return NewParquetFiles(paths)
}

// NewParquetFiles opens Parquet files to be read in order. WithBatchSize
// and WithAllocator apply; the other options are ignored.
//
// A path that is a directory stands for the .parquet files in it, in name
// order, leaving out names that start with "." or "_" (staging and
// marker files): the layout of sink.ParquetDir, whose file names sort in
// output order, and of most tools that write a directory of Parquet
// files. A path that does not exist and holds a glob pattern
// (filepath.Match syntax, such as "out/*.parquet") stands for the files
// it matches, in name order. The list of files is taken when the source
// is opened; positions (Seek) count files in that list.
func NewParquetFiles(paths []string, opts ...Option) (p *Parquet, err error) {
	if paths, err = expandParquetPaths(paths); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, errors.New("source: NewParquet needs at least one file")
	}
	p = &Parquet{paths: paths, opts: newOptions(opts)}
	if err := p.open(0); err != nil {
		return nil, err
	}
	return p, nil
}

// open opens file i and makes it current.
func (p *Parquet) open(i int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("source: parquet %s: %v", p.paths[i], r)
		}
	}()
	p.release()
	f, err := file.OpenParquetFile(p.paths[i], false)
	if err != nil {
		return fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: int64(p.opts.batchSize)}, p.opts.mem)
	if err != nil {
		f.Close()
		return fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		f.Close()
		return fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	s := rr.Schema()
	if p.schema == nil {
		p.schema = s
	} else if err := sameColumns(p.schema, s); err != nil {
		rr.Release()
		f.Close()
		return fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	p.f, p.rr, p.idx, p.row = f, rr, i, 0
	return nil
}

func sameColumns(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return fmt.Errorf("has %d columns, the first file has %d", got.NumFields(), want.NumFields())
	}
	for i := range want.NumFields() {
		w, g := want.Field(i), got.Field(i)
		if w.Name != g.Name || !arrow.TypeEqual(w.Type, g.Type) {
			return fmt.Errorf("column %d is %s %s, the first file has %s %s", i, g.Name, g.Type, w.Name, w.Type)
		}
	}
	return nil
}

func (p *Parquet) release() {
	if p.rr != nil {
		p.rr.Release()
		p.rr = nil
	}
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

// Schema returns the schema of the first file.
func (p *Parquet) Schema() *arrow.Schema { return p.schema }

// Read returns the next batch, or io.EOF after the last file.
func (p *Parquet) Read(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if p.closed {
		return nil, ErrClosed
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("source: parquet %s: %v", p.paths[p.idx], r)
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.rr == nil {
			return nil, io.EOF
		}
		if p.rr.Next() {
			rec := p.rr.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			rec.Retain()
			p.row += rec.NumRows()
			if !rec.Schema().Equal(p.schema) {
				// Same columns (checked on open), other metadata: present
				// every batch under the source's schema.
				out := arrowRecord(p.schema, rec)
				rec.Release()
				rec = out
			}
			return rec, nil
		}
		if err := p.rr.Err(); err != nil && err != io.EOF {
			return nil, fmt.Errorf("source: parquet %s: %w", p.paths[p.idx], err)
		}
		if p.idx+1 >= len(p.paths) {
			p.release()
			p.idx = len(p.paths)
			p.row = 0
			return nil, io.EOF
		}
		if err := p.open(p.idx + 1); err != nil {
			return nil, err
		}
	}
}

// Position returns the position of the next row Read would return.
func (p *Parquet) Position() ([]byte, error) {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(p.idx))
	binary.BigEndian.PutUint64(b[8:], uint64(p.row))
	return b, nil
}

// Seek moves to a position returned by Position.
func (p *Parquet) Seek(pos []byte) (err error) {
	if p.closed {
		return ErrClosed
	}
	if len(pos) != 16 {
		return errors.New("source: invalid parquet position")
	}
	i, row := int(binary.BigEndian.Uint64(pos)), int64(binary.BigEndian.Uint64(pos[8:]))
	if i == len(p.paths) {
		p.release()
		p.idx, p.row = i, 0
		return nil
	}
	if i < 0 || i > len(p.paths) || row < 0 {
		return fmt.Errorf("source: parquet position (%d, %d) out of range", i, row)
	}
	if err := p.open(i); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("source: parquet %s: %v", p.paths[i], r)
		}
	}()
	if row > 0 {
		if err := p.rr.SeekToRow(row); err != nil {
			return fmt.Errorf("source: parquet %s: seek to row %d: %w", p.paths[i], row, err)
		}
	}
	p.row = row
	return nil
}

// Close closes the current file.
func (p *Parquet) Close() error {
	if !p.closed {
		p.closed = true
		p.release()
	}
	return nil
}

// expandParquetPaths replaces directories and glob patterns among paths by
// the files they stand for (see NewParquetFiles).
func expandParquetPaths(paths []string) ([]string, error) {
	var out []string
	for _, path := range paths {
		fi, err := os.Stat(path)
		switch {
		case err == nil && fi.IsDir():
			ents, err := os.ReadDir(path)
			if err != nil {
				return nil, fmt.Errorf("source: parquet %s: %w", path, err)
			}
			n := len(out)
			for _, e := range ents {
				name := e.Name()
				if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || !strings.EqualFold(filepath.Ext(name), ".parquet") {
					continue
				}
				if fi, err := os.Stat(filepath.Join(path, name)); err != nil || !fi.Mode().IsRegular() {
					continue
				}
				out = append(out, filepath.Join(path, name))
			}
			if len(out) == n {
				return nil, fmt.Errorf("source: parquet %s: no .parquet files in the directory", path)
			}
		case err != nil && strings.ContainsAny(path, "*?["):
			matches, err := filepath.Glob(path)
			if err != nil {
				return nil, fmt.Errorf("source: parquet %s: %w", path, err)
			}
			n := len(out)
			for _, m := range matches {
				if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
					out = append(out, m)
				}
			}
			if len(out) == n {
				return nil, fmt.Errorf("source: parquet %s: no file matches", path)
			}
		default:
			out = append(out, path)
		}
	}
	return out, nil
}
