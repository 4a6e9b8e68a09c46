package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/textcodec"
)

// Parquet reads Parquet files in order. The schema is that of the first
// file; every other file must have the same column names and types.
// Column types are kept as stored (timestamps of any unit stay as they
// are), as arrow-go's pqarrow reads them. It implements Source, Seeker
// (the position is a file index and a row offset in it) and Projector
// (WithColumns, Project: only the columns asked for are decoded).
//
// Top-level columns of fixed-width primitive types (integers, floats,
// timestamps, dates, times, booleans; required or optional) are decoded
// straight into Arrow buffers (parquet_direct.go, parquet_pages.go);
// every other column (strings, nested, decimals, ...) through pqarrow.
// The batches are the same either way.
//
// Row groups are decoded ahead of Read by a few goroutines (WithDecoders),
// each row group by one of them; Read hands out their rows in file order,
// in batches of the batch size that run across row groups (only a file's
// end cuts a batch short), exactly as one sequential reader would.
type Parquet struct {
	bucket     io.Closer // OpenURL's, closed by Close
	paths      []string
	opts       options
	schema     *arrow.Schema // the columns decoded (Schema)
	fileSchema *arrow.Schema // every column of the first file
	fields     []int         // the columns decoded: indices into fileSchema, nil for all
	started    bool          // Read was called: Project is refused
	first      *pqFile       // file 0, opened by the constructor, until a decoding run takes it
	idx        int           // file of the next row Read returns
	row        int64         // rows of file idx already returned
	closed     bool
	// bounds caches the row-group statistics LowerBound reads
	// (parquet_bound.go).
	bounds *pqBounds
	err    error // a decoding error, returned by every later Read until Seek

	run *pqRun // decoding ahead; nil before the first Read and after Seek
	// queue holds decoded batches not yet (fully) returned, in order; off
	// rows of queue[0] have been returned.
	queue []pqChunk
	off   int64
}

// pqFile is one open Parquet file.
type pqFile struct {
	f    *file.Reader
	fr   *pqarrow.FileReader
	plan *pqPlan // how its decoded columns are decoded, set by produce
}

func (f *pqFile) close() { f.f.Close() }

// pqChunk is a decoded batch of file file.
type pqChunk struct {
	rec  arrow.RecordBatch
	file int
}

// pqUnit is the decoding of one row group (from row skip on): its batches
// arrive on out, which is closed once it is done; err, set before, tells
// why it stopped early.
type pqUnit struct {
	file int
	out  chan arrow.RecordBatch
	err  error
}

type pqJob struct {
	u    *pqUnit
	pf   *pqFile
	path string
	rg   int
	skip int64
}

// pqRun is one decoding run from a position: a producer listing the row
// groups in order and decoder goroutines decoding them, each into its own
// unit.
type pqRun struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	units chan *pqUnit // in file order, read by Read
	cur   *pqUnit      // the unit Read takes batches from

	mu    sync.Mutex
	files map[int]*pqFile      // open files, closed by Read once passed
	live  map[*pqUnit]struct{} // units not yet drained by Read
}

const (
	// pqDecodeRows is the least number of rows a decoder decodes at once
	// (Read cuts them into batches of the batch size without copying):
	// fewer, larger decoding calls (44 k instead of 74 k allocations for
	// 2 M features-4 rows).
	pqDecodeRows = 1 << 16
	// pqAheadRows bounds the rows a decoder holds ahead for one row group
	// besides the batch it is decoding: with two decoders, 1 << 17 held
	// about 90 MB more at peak on features-4 (5 M events) than 1 << 16.
	pqAheadRows = 1 << 16
)

// decodeRows is the number of rows decoded at once.
func (p *Parquet) decodeRows() int {
	return max(p.opts.batchSize, pqDecodeRows)
}

// NewParquet opens Parquet files to be read in order with the default
// options.
func NewParquet(paths ...string) (*Parquet, error) {
	return NewParquetFiles(paths)
}

// NewParquetFiles opens Parquet files to be read in order. WithBatchSize,
// WithAllocator, WithDecoders and WithColumns apply; the other options are
// ignored.
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
	o := newOptions(opts)
	if paths, err = expandPaths(o.files(), paths, "parquet", []string{".parquet"}); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, errors.New("source: NewParquet needs at least one file")
	}
	p = &Parquet{paths: paths, opts: o}
	if p.opts.decoders <= 0 {
		p.opts.decoders = min(runtime.GOMAXPROCS(0), 4)
	}
	f, err := p.open(0)
	if err != nil {
		return nil, err
	}
	if len(p.opts.columns) > 0 {
		fields, err := projectFields(p.fileSchema, nil, p.opts.columns)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("source: parquet %s: WithColumns: %w", paths[0], err)
		}
		p.fields, p.schema = fields, projectSchema(p.fileSchema, fields)
	}
	p.first = f
	return p, nil
}

// open opens file i, checking its columns against the source's schema
// (which the first file opened sets).
func (p *Parquet) open(i int) (pf *pqFile, err error) {
	osf, err := p.opts.files().openRandom(p.paths[i])
	if err != nil {
		return nil, fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	defer func() {
		if r := recover(); r != nil {
			// A damaged file can make the reader panic: the file is ours
			// to close.
			osf.Close()
			pf, err = nil, fmt.Errorf("source: parquet %s: %v", p.paths[i], r)
		}
	}()
	props := pqReadProps()
	if p.opts.files().remote() {
		// Each read is a request: a column chunk in one, not in
		// pieces of the page buffer's size.
		props.BufferedStreamEnabled = false
	}
	f, err := file.NewParquetReader(osf, file.WithReadProps(props))
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: int64(p.decodeRows())}, p.opts.mem)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	s, err := fr.Schema()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	if p.fileSchema == nil {
		p.fileSchema, p.schema = s, s
	} else if err := sameColumns(p.fileSchema, s); err != nil {
		f.Close()
		return nil, fmt.Errorf("source: parquet %s: %w", p.paths[i], err)
	}
	return &pqFile{f: f, fr: fr}, nil
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

// Schema returns the schema of the first file, or of the columns
// WithColumns or Project kept.
func (p *Parquet) Schema() *arrow.Schema { return p.schema }

// start starts decoding from the current position.
func (p *Parquet) start() {
	run := &pqRun{
		stop:  make(chan struct{}),
		units: make(chan *pqUnit, p.opts.decoders),
		files: map[int]*pqFile{},
		live:  map[*pqUnit]struct{}{},
	}
	work := make(chan pqJob)
	first := p.first
	p.first = nil
	run.wg.Add(1 + p.opts.decoders)
	idx, row := p.idx, p.row
	go func() {
		defer run.wg.Done()
		defer close(work)
		defer close(run.units)
		p.produce(run, work, first, idx, row)
	}()
	for range p.opts.decoders {
		go func() {
			defer run.wg.Done()
			for j := range work {
				p.decode(run, j)
			}
		}()
	}
	p.run = run
}

// produce lists the row groups from row row of file idx on, in order,
// opening the files as it goes: each becomes a unit, queued for Read and
// handed to a decoder. first, when not nil, is file 0 already open.
func (p *Parquet) produce(run *pqRun, work chan<- pqJob, first *pqFile, idx int, row int64) {
	skip := row
	for i := idx; i < len(p.paths); i++ {
		pf := first
		first = nil
		if i != 0 || pf == nil {
			if pf != nil {
				pf.close()
				pf = nil
			}
			var err error
			if pf, err = p.open(i); err != nil {
				u := &pqUnit{file: i, out: make(chan arrow.RecordBatch), err: err}
				close(u.out)
				select {
				case run.units <- u:
				case <-run.stop:
				}
				return
			}
		}
		pf.plan = p.plan(pf)
		run.mu.Lock()
		run.files[i] = pf
		run.mu.Unlock()
		for g := range pf.f.NumRowGroups() {
			n := pf.f.MetaData().RowGroup(g).NumRows()
			if skip >= n {
				skip -= n
				continue
			}
			u := &pqUnit{file: i, out: make(chan arrow.RecordBatch, max(1, pqAheadRows/p.decodeRows()))}
			run.mu.Lock()
			run.live[u] = struct{}{}
			run.mu.Unlock()
			// Queued for Read first, then handed to a decoder: decoders
			// take units in order, so the unit Read waits for always has
			// a decoder or gets the next free one.
			select {
			case run.units <- u:
			case <-run.stop:
				close(u.out)
				return
			}
			select {
			case work <- pqJob{u: u, pf: pf, path: p.paths[i], rg: g, skip: skip}:
			case <-run.stop:
				close(u.out)
				return
			}
			skip = 0
		}
		skip = 0
	}
	if first != nil {
		first.close()
	}
}

// decode decodes one row group into its unit.
func (p *Parquet) decode(run *pqRun, j pqJob) {
	u := j.u
	defer close(u.out)
	defer func() {
		if r := recover(); r != nil {
			u.err = fmt.Errorf("source: parquet %s: %v", j.path, r)
		}
	}()
	if err := p.decodeGroup(run, j); err != nil {
		u.err = fmt.Errorf("source: parquet %s: %w", j.path, err)
	}
}

// halt stops the decoding run, if any, and releases what it decoded
// ahead and every file it opened.
func (p *Parquet) halt() {
	run := p.run
	if run == nil {
		return
	}
	p.run = nil
	close(run.stop)
	run.wg.Wait()
	// Every goroutine has exited: what the channels hold is all there is.
	for u := range run.live {
	drain:
		for {
			select {
			case rec, ok := <-u.out:
				if !ok {
					break drain
				}
				rec.Release()
			default:
				break drain
			}
		}
	}
	for _, f := range run.files {
		f.close()
	}
	for _, c := range p.queue {
		c.rec.Release()
	}
	p.queue, p.off = nil, 0
}

// next appends the next decoded batch to the queue; io.EOF after the last.
func (p *Parquet) next(ctx context.Context) error {
	run := p.run
	for {
		if run.cur == nil {
			select {
			case u, ok := <-run.units:
				if !ok {
					return io.EOF
				}
				run.cur = u
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		select {
		case rec, ok := <-run.cur.out:
			if ok {
				p.queue = append(p.queue, pqChunk{rec: rec, file: run.cur.file})
				return nil
			}
			u := run.cur
			run.cur = nil
			run.mu.Lock()
			delete(run.live, u)
			run.mu.Unlock()
			if u.err != nil {
				return u.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Read returns the next batch, or io.EOF after the last file.
func (p *Parquet) Read(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if p.closed {
		return nil, ErrClosed
	}
	p.started = true
	if p.err != nil {
		return nil, p.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.idx >= len(p.paths) {
		return nil, io.EOF
	}
	if p.run == nil {
		p.start()
	}
	// Gather at least a batch's rows of one file (the file of the first
	// queued batch); a cancelled ctx leaves them queued for the next Read.
	size := int64(p.opts.batchSize)
	for {
		var have int64
		for k, c := range p.queue {
			if c.file != p.queue[0].file {
				break
			}
			have += c.rec.NumRows()
			if k == 0 {
				have -= p.off
			}
		}
		if have >= size || len(p.queue) > 0 && p.queue[len(p.queue)-1].file != p.queue[0].file {
			break
		}
		err := p.next(ctx)
		if err == io.EOF {
			if len(p.queue) > 0 {
				break
			}
			p.halt()
			p.idx, p.row = len(p.paths), 0
			return nil, io.EOF
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, err // the queue stays for the next Read
			}
			// The rows before the error first; the error at the next Read.
			p.err = err
			if len(p.queue) > 0 {
				break
			}
			return nil, err
		}
	}
	file := p.queue[0].file
	if file != p.idx {
		p.idx, p.row = file, 0
		p.run.closeBefore(file)
	}
	// Cut the batch from the queue: a slice of one decoded batch, or, at
	// a row group's end, the rows of two or more copied together.
	var parts []arrow.RecordBatch
	need := size
	for need > 0 && len(p.queue) > 0 && p.queue[0].file == file {
		c := p.queue[0].rec
		n := c.NumRows() - p.off
		take := min(n, need)
		if p.off == 0 && take == n {
			parts = append(parts, c)
			p.queue = p.queue[1:]
		} else {
			parts = append(parts, c.NewSlice(p.off, p.off+take))
			p.off += take
			if p.off == c.NumRows() {
				c.Release()
				p.queue, p.off = p.queue[1:], 0
			}
		}
		need -= take
	}
	rec = parts[0]
	if len(parts) > 1 {
		rec, err = arrowutil.Concat(p.opts.mem, p.schema, parts)
		arrowutil.ReleaseAll(parts)
		if err != nil {
			p.err = fmt.Errorf("source: parquet %s: %w", p.paths[file], err)
			return nil, p.err
		}
	}
	p.row += rec.NumRows()
	return rec, nil
}

// closeBefore closes the files before file i: Read has passed them, and
// every decoder is done with them.
func (run *pqRun) closeBefore(i int) {
	run.mu.Lock()
	defer run.mu.Unlock()
	for k, f := range run.files {
		if k < i {
			f.close()
			delete(run.files, k)
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
	if i < 0 || i > len(p.paths) || row < 0 {
		return fmt.Errorf("source: parquet position (%d, %d) out of range", i, row)
	}
	if i == len(p.paths) {
		row = 0
	}
	p.halt()
	p.err = nil
	if i < len(p.paths) {
		if p.first == nil && i == 0 {
			if p.first, err = p.open(0); err != nil {
				return err
			}
		}
		var n int64
		if i == 0 {
			n = p.first.f.NumRows()
		} else {
			f, err := p.open(i)
			if err != nil {
				return err
			}
			n = f.f.NumRows()
			f.close()
		}
		if row > n {
			return fmt.Errorf("source: parquet %s: seek to row %d: the file has %d rows", p.paths[i], row, n)
		}
	}
	p.idx, p.row = i, row
	return nil
}

// Close stops decoding and closes the files.
func (p *Parquet) Close() error {
	if !p.closed {
		p.closed = true
		p.halt()
		if p.first != nil {
			p.first.close()
			p.first = nil
		}
		if p.bucket != nil {
			return p.bucket.Close()
		}
	}
	return nil
}

// expandPaths replaces directories and glob patterns among paths by the
// files they stand for: a directory's files with one of the extensions
// exts (any case) in name order, leaving out names that start with "." or
// "_", and a glob pattern's matches in name order (see NewParquetFiles).
// kind names the format in errors.
func expandPaths(files fileSystem, paths []string, kind string, exts []string) ([]string, error) {
	var out []string
	for _, path := range paths {
		fi, err := files.stat(path)
		switch {
		case err == nil && fi.IsDir():
			ents, err := files.readDir(path)
			if err != nil {
				return nil, fmt.Errorf("source: %s %s: %w", kind, path, err)
			}
			n := len(out)
			for _, e := range ents {
				name := e.Name()
				if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || !hasExt(name, exts) {
					continue
				}
				if !files.isFileEntry(path, e) {
					continue
				}
				out = append(out, files.join(path, name))
			}
			if len(out) == n {
				return nil, fmt.Errorf("source: %s %s: no %s files in the directory", kind, path, strings.Join(exts, ", "))
			}
		case err != nil && strings.ContainsAny(path, "*?["):
			matches, err := files.glob(path)
			if err != nil {
				return nil, fmt.Errorf("source: %s %s: %w", kind, path, err)
			}
			n := len(out)
			out = append(out, files.filesOf(matches)...)
			if len(out) == n {
				return nil, fmt.Errorf("source: %s %s: no file matches", kind, path)
			}
		case err != nil:
			return nil, fmt.Errorf("source: %s %s: %w", kind, path, err)
		case !files.isFile(fi):
			return nil, fmt.Errorf("source: %s %s: not a regular file", kind, path)
		default:
			// Checked here once, as the files of directories and
			// patterns are by their listings.
			out = append(out, path)
		}
	}
	return out, nil
}

// hasExt reports whether name ends in one of exts, in any case; for the
// extensions of a text format, also before a compression's (".csv.gz").
func hasExt(name string, exts []string) bool {
	ext := filepath.Ext(name)
	if !slices.ContainsFunc(exts, func(e string) bool { return strings.EqualFold(e, ".parquet") }) {
		ext = textcodec.FormatExt(name)
	}
	for _, e := range exts {
		if strings.EqualFold(ext, e) {
			return true
		}
	}
	return false
}
