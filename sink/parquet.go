package sink

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DefaultRowGroupSize is the number of rows per Parquet row group unless
// WithRowGroupSize says otherwise.
const DefaultRowGroupSize = 128 * 1024

// Option configures the Parquet sink.
type Option func(*parquetOptions)

type parquetOptions struct {
	rowGroup int64
	codec    compress.Compression
}

// WithRowGroupSize sets the maximum number of rows per row group. Values
// below 1 keep the default.
func WithRowGroupSize(rows int64) Option {
	return func(o *parquetOptions) {
		if rows > 0 {
			o.rowGroup = rows
		}
	}
}

// WithCompression sets the column compression codec (default Snappy).
func WithCompression(c compress.Compression) Option {
	return func(o *parquetOptions) { o.codec = c }
}

// Parquet writes batches to one Parquet file, keeping the Arrow types (the
// Arrow schema is stored in the file, so timestamps keep their unit and
// time zone). Rows are buffered into row groups of the configured size.
type Parquet struct {
	path   string
	schema *arrow.Schema
	opts   parquetOptions
	file   *os.File
	fw     *pqarrow.FileWriter
	closed bool
}

// NewParquet returns a Parquet sink for the file at path. With a non-nil
// schema the file is created at once and every batch must match it; with
// a nil schema the file is created from the schema of the first batch, and
// no file is written if no batch ever arrives.
func NewParquet(path string, schema *arrow.Schema, opts ...Option) (*Parquet, error) {
	p := &Parquet{path: path, opts: parquetOptions{rowGroup: DefaultRowGroupSize, codec: compress.Codecs.Snappy}}
	for _, o := range opts {
		o(&p.opts)
	}
	if schema != nil {
		if err := p.open(schema); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Parquet) open(schema *arrow.Schema) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	props := parquet.NewWriterProperties(
		parquet.WithMaxRowGroupLength(p.opts.rowGroup),
		parquet.WithCompression(p.opts.codec),
	)
	fw, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		os.Remove(p.path)
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	p.file, p.fw, p.schema = f, fw, schema
	return nil
}

// Write appends the rows of rec to the current row group.
func (p *Parquet) Write(ctx context.Context, rec arrow.RecordBatch) (err error) {
	if p.closed {
		return errors.New("sink: write after Close")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.fw == nil {
		if err := p.open(rec.Schema()); err != nil {
			return err
		}
	}
	if !rec.Schema().Equal(p.schema) {
		return fmt.Errorf("sink: parquet %s: batch schema %s does not match %s", p.path, rec.Schema(), p.schema)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	if err := p.fw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	return nil
}

// Close writes the file footer and closes the file.
func (p *Parquet) Close() (err error) {
	if p.closed {
		return nil
	}
	p.closed = true
	if p.fw == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	// The pqarrow writer closes the file it was given.
	if err := p.fw.Close(); err != nil {
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	return nil
}
