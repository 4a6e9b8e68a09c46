package source

import (
	"io/fs"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	// DefaultBatchSize is the number of rows per batch unless
	// WithBatchSize says otherwise.
	DefaultBatchSize = 4096
	// DefaultSampleRows is the number of rows read to infer a schema
	// unless WithSampleRows says otherwise.
	DefaultSampleRows = 1000
)

// Option configures the file sources (CSV, JSON lines, Parquet). Options
// that do not apply to a format are ignored by it.
type Option func(*options)

type options struct {
	batchSize  int
	sampleRows int
	schema     *arrow.Schema
	deadLetter DeadLetterFunc
	mem        memory.Allocator
	name       string
	decoders   int
	columns    []string // WithColumns; nil: every column
	// timeOrder is the column WithTimeOrder promises is in order, up to
	// lateMs; "" when none.
	timeOrder string
	lateMs    int64
	// spillDir and spillBytes are WithSpill's (Clustered).
	spillDir      string
	spillBytes    int64
	spillBytesSet bool
	// fsys is WithFS's file system; nil: the operating system's files.
	fsys fs.FS
	// nameBase prefixes the paths that name files in errors and dead
	// letters (OpenURL's bucket URL).
	nameBase string
}

func newOptions(opts []Option) options {
	o := options{batchSize: DefaultBatchSize, sampleRows: DefaultSampleRows, mem: memory.DefaultAllocator}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithTimeOrder promises that column col of a CSV or JSON-lines source
// (int64, or a timestamp) is in ascending order up to lateness: no row's
// value is more than lateness below the greatest value of the rows before
// it (0: the column is sorted). The source then knows a lower bound of the
// values still to come (LowerBounder: the greatest value read, in
// milliseconds for a timestamp, minus lateness), with which a batch run
// emits the rows of OVER windows ordered by col as it reads instead of at
// the end of the input, and so runs in memory bounded by its windows. A
// row that breaks the promise stops the run with an error that names its
// time and the bound (results already written are those of the rows
// before it). A column the input does not have, or one neither int64 nor
// a timestamp, fails the open. Parquet sources ignore it: their row
// groups' statistics give the bound.
func WithTimeOrder(col string, lateness time.Duration) Option {
	return func(o *options) {
		o.timeOrder = col
		o.lateMs = max(lateness.Milliseconds(), 0)
	}
}

// WithBatchSize sets the maximum number of rows per batch returned by
// Read. Values below 1 keep the default (4096).
func WithBatchSize(rows int) Option {
	return func(o *options) {
		if rows > 0 {
			o.batchSize = rows
		}
	}
}

// WithSampleRows sets how many data rows are read to infer the schema of
// a CSV or JSON-lines input (default 1000). Values below 1 keep the
// default. Sampled rows are not read twice: they are buffered and returned
// by the first calls to Read.
func WithSampleRows(rows int) Option {
	return func(o *options) {
		if rows > 0 {
			o.sampleRows = rows
		}
	}
}

// WithSchema replaces schema inference: the input is decoded against
// schema. CSV columns and JSON keys are matched to fields by name; every
// field of a CSV schema must appear in the header, a JSON key that is
// missing from a row is NULL. Supported field types: signed and unsigned
// integers, float32/float64, bool, string, large_string, timestamp (any
// unit; RFC 3339 text, 2006-01-02 15:04:05[.fff] read as UTC, or an
// integer in the column's unit) and date32
// (2006-01-02).
func WithSchema(s *arrow.Schema) Option {
	return func(o *options) { o.schema = s }
}

// WithDeadLetter sets the function receiving the rows that cannot be
// decoded. Without it such rows are only counted (see DeadLetters on each
// source).
func WithDeadLetter(f DeadLetterFunc) Option {
	return func(o *options) { o.deadLetter = f }
}

// WithAllocator sets the Arrow memory allocator for the batches built.
func WithAllocator(mem memory.Allocator) Option {
	return func(o *options) {
		if mem != nil {
			o.mem = mem
		}
	}
}

// WithSpill bounds the input a Clustered source holds in memory: once
// the batches it has read hold more than maxBytes (their values, as
// Arrow lays them out), it writes the rows, and every row after, to
// files in a new directory under dir (os.TempDir() when ""), parted by
// key, and clusters them one part at a time, so that memory holds about
// a part (the input over ClusteredSpillParts). The files are removed as
// each part is read, and on Close. maxBytes <= 0 never spills. Without
// the option, Clustered spills beyond ClusteredMemory. Other sources
// ignore it.
func WithSpill(dir string, maxBytes int64) Option {
	return func(o *options) {
		o.spillDir, o.spillBytes, o.spillBytesSet = dir, maxBytes, true
	}
}

// WithName sets the name reported in DeadLetter.Source (default: the file
// path, or "reader" for an io.Reader).
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithDecoders sets how many goroutines decode Parquet row groups ahead of
// Read (default: GOMAXPROCS, at most 4). Read returns the same batches,
// in the same order, whatever the number; decoding merely moves off the
// goroutine that calls Read and, with several row groups, runs on several
// cores. Values below 1 keep the default. The other sources ignore it.
func WithDecoders(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.decoders = n
		}
	}
}
