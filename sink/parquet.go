package sink

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
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
	fileRows int64 // ParquetDir without checkpoints: rows per file
	// plain are the columns written without dictionary encoding, and
	// planned is set once they were chosen (see plainColumns).
	plain   []string
	planned bool
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

// Key-value metadata of a Parquet file written under checkpoints: the run
// that wrote it, the last epoch it includes, and the cumulative row count
// at each epoch with rows (JSON [[epoch,rows],...]). Recover uses them to
// tell how much of the output the file already holds.
const (
	metaRun     = "volga.run"
	metaThrough = "volga.epoch"
	metaEpochs  = "volga.epochs"
)

// Parquet writes batches to one Parquet file, keeping the Arrow types (the
// Arrow schema is stored in the file, so timestamps keep their unit and
// time zone). Rows are buffered into row groups of the configured size.
//
// The file is written whole: rows go to a staging directory next to it
// (.<name>.volga) and the file appears, atomically (a rename), at Close.
// Until then a file already at the path is left as it is.
//
// Under checkpoints the sink is exactly once, but a Parquet file cannot be
// appended to, so the output becomes visible as a whole at the end of the
// input: each epoch is staged as its own Parquet file (PrepareCommit),
// Commit marks it committed (it is kept until the final file holds it),
// and Close writes the final file from the committed epochs. Recover keeps
// the staged epochs up to the restored one and deletes later ones; if the
// final file was already written it is kept, or cut back to the restored
// epoch, and Close adds the replayed epochs to it. A restart after a
// completed run therefore leaves the finished file as it is. Close reads
// the staged epochs back, so under checkpoints the output is written
// twice, and the staging directory holds the whole output until the end
// of the input. For an endless stream use [ParquetDir], which publishes
// a file per epoch.
type Parquet struct {
	stager
	schema *arrow.Schema // given, or that of the first batch
	opts   parquetOptions
	direct bool // the target is not a regular file: written in place

	file    *os.File            // the file fw writes
	fw      *pqarrow.FileWriter // writer of the open epoch, nil before its first batch
	curRows int64

	started bool // the first Write, PrepareCommit, Close or Recover happened
	ckpt    bool // PrepareCommit or Recover was called
	last    uint64
	hasLast bool
	run     string // identifies the run (kept by Recover) in the state and the file

	base      *pqTarget // what the target holds of this run; nil if nothing
	committed []pqPart  // staged epochs after base, committed
	prepared  []pqPart  // staged epochs not committed
	through   uint64    // highest epoch committed
	// first is the first epoch prepared; final is set once an epoch is
	// committed (or restored by Recover): only then does Close write the
	// file.
	first uint64
	final bool

	closed bool
	err    error // sticky
}

// pqPart is a staged epoch.
type pqPart struct {
	Epoch uint64 `json:"epoch"`
	Token string `json:"token,omitempty"` // of the instance that staged it (stager.token)
	Rows  int64  `json:"rows"`
	Size  int64  `json:"size"`
}

// pqTarget describes a final file of the run: it holds the epochs <=
// Through; Epochs lists the cumulative row count at each epoch with rows.
type pqTarget struct {
	Through uint64
	Epochs  [][2]int64
}

func (t *pqTarget) rows() int64 {
	if t == nil || len(t.Epochs) == 0 {
		return 0
	}
	return t.Epochs[len(t.Epochs)-1][1]
}

// rowsAt returns the rows of the epochs <= e.
func (t *pqTarget) rowsAt(e uint64) int64 {
	n := int64(0)
	for _, p := range t.Epochs {
		if uint64(p[0]) > e {
			break
		}
		n = p[1]
	}
	return n
}

// parquetState is the checkpoint state of a Parquet sink.
type parquetState struct {
	Format string `json:"format"`
	Run    string `json:"run"`
	Epoch  uint64 `json:"epoch"`
	// The target holds the epochs <= BaseEpoch of the run, BaseRows rows.
	BaseEpoch uint64 `json:"base_epoch,omitempty"`
	BaseRows  int64  `json:"base_rows,omitempty"`
	// Parts are the staged epochs after BaseEpoch, up to Epoch, with rows.
	Parts []pqPart `json:"parts,omitempty"`
}

const parquetStateFormat = "volga-parquet/1"

// NewParquet returns a Parquet sink for the file at path. With a non-nil
// schema every batch must match it and a run without rows still writes a
// file with that schema; with a nil schema the schema is that of the first
// batch, and no file is written if no batch ever arrives. A path that
// exists and is not a regular file is written in place, as a stream, and
// takes no part in checkpoints.
func NewParquet(path string, schema *arrow.Schema, opts ...Option) (*Parquet, error) {
	p := &Parquet{opts: parquetOptions{rowGroup: DefaultRowGroupSize, codec: compress.Codecs.Snappy}}
	for _, o := range opts {
		o(&p.opts)
	}
	target, ok := resolveTarget(path)
	p.path, p.dir, p.direct = target, stagingDir(target), !ok
	// The file is created at the first batch or at the end: say now, not
	// after the run, that its directory is missing (as CreateCSV does).
	dir := filepath.Dir(target)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("sink: parquet %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("sink: parquet %s: %s is not a directory", path, dir)
	}
	if schema != nil {
		if p.direct {
			if err := p.open(schema); err != nil {
				return nil, err
			}
		} else if err := p.opts.checkSchema(p.path, schema); err != nil {
			return nil, err
		}
		p.schema = schema
	}
	return p, nil
}

// props are the writer properties of the options (both Parquet sinks).
func (o parquetOptions) props() (*parquet.WriterProperties, pqarrow.ArrowWriterProperties) {
	wp := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(o.rowGroup),
		parquet.WithCompression(o.codec),
	}
	for _, name := range o.plain {
		wp = append(wp, parquet.WithDictionaryFor(name, false))
	}
	return parquet.NewWriterProperties(wp...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
}

// plan chooses, from the first batch a sink writes, the columns to write
// without dictionary encoding (plainColumns); later files of the sink
// keep the choice.
func (o *parquetOptions) plan(rec arrow.RecordBatch) {
	if !o.planned {
		o.plain, o.planned = plainColumns(rec, o.rowGroup), true
	}
}

// planRows is how many rows of a batch plainColumns reads, and
// planMinRows the fewest it judges from.
const (
	planRows    = 16 << 10
	planMinRows = 1 << 10
)

// plainColumns returns the top-level columns of rec of fixed-width
// numbers or times better written plain than with a dictionary, judged
// from the distinct values of the first planRows rows. A row group of
// rowGroup rows holds about estimateDistinct of them; dictionary encoding
// hashes every value and stores that many values plus an index of
// ceil(log2(distinct)) bits a row, and parquet-go gives the dictionary up
// (after hashing) once it outgrows DefaultDictionaryPageSizeLimit. A
// column goes plain when its dictionary would outgrow the page, or would
// save less than a quarter of the plain values' bytes: ids, times and
// most measures, whose dictionaries made writing features-4's output 5x
// slower than writing it plain, for files no smaller. Columns of few
// distinct values keep their dictionary. A batch of fewer than
// planMinRows rows tells nothing: every column keeps it.
func plainColumns(rec arrow.RecordBatch, rowGroup int64) []string {
	n := min(int(rec.NumRows()), planRows)
	if n < planMinRows {
		return nil
	}
	var plain []string
	seen := make(map[uint64]struct{}, n)
	for i, f := range rec.Schema().Fields() {
		fw, ok := f.Type.(arrow.FixedWidthDataType)
		w := 0
		if ok {
			w = fw.BitWidth() / 8
		}
		if w != 1 && w != 2 && w != 4 && w != 8 {
			continue // booleans, decimals, nested and variable-width types
		}
		d := rec.Column(i).Data()
		buf := d.Buffers()[1]
		if buf == nil {
			continue
		}
		vals := buf.Bytes()[d.Offset()*w:]
		clear(seen)
		for r := range n {
			var v uint64
			for k := range w {
				v |= uint64(vals[r*w+k]) << (8 * k)
			}
			seen[v] = struct{}{}
		}
		distinct := estimateDistinct(len(seen), n, rowGroup)
		dictBytes := distinct*float64(w) + float64(rowGroup)*math.Ceil(math.Log2(max(distinct, 2)))/8
		plainBytes := float64(rowGroup) * float64(w)
		if distinct*float64(w) >= float64(parquet.DefaultDictionaryPageSizeLimit) || dictBytes >= plainBytes*3/4 {
			plain = append(plain, f.Name)
		}
	}
	return plain
}

// estimateDistinct estimates how many distinct values rows rows hold when
// a sample of n of them holds d, taking the values as drawn uniformly from
// a population of P: n draws show P(1 - e^(-n/P)) distinct values, solved
// for P (all distinct: as many as rows).
func estimateDistinct(d, n int, rows int64) float64 {
	if d >= n {
		return float64(rows)
	}
	seen := func(p float64, k float64) float64 { return p * -math.Expm1(-k/p) }
	lo, hi := float64(d), 1e18
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if seen(mid, float64(n)) < float64(d) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return min(seen(lo, float64(rows)), float64(rows))
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// checkSchema fails if pqarrow cannot write schema with the options;
// path names the output in the error, and the error names the first
// column pqarrow refuses (a type Parquet cannot hold, such as a duration
// or a string view) and its type.
func (o parquetOptions) checkSchema(path string, schema *arrow.Schema) error {
	err := o.tryWriter(schema)
	if err == nil {
		return nil
	}
	for _, f := range schema.Fields() {
		if ferr := o.tryWriter(arrow.NewSchema([]arrow.Field{f}, nil)); ferr != nil {
			return fmt.Errorf("sink: parquet %s: column %q of type %s: %w", path, f.Name, f.Type, ferr)
		}
	}
	return fmt.Errorf("sink: parquet %s: %w", path, err)
}

// tryWriter makes and closes a pqarrow writer of schema with the options,
// writing nowhere.
func (o parquetOptions) tryWriter(schema *arrow.Schema) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	props, aprops := o.props()
	fw, err := pqarrow.NewFileWriter(schema, discard{}, props, aprops)
	if err != nil {
		return err
	}
	return fw.Close()
}

// syncedFile syncs before it closes, so that pqarrow's Close makes the file
// durable; without checkpoints it does not, as before there were
// checkpoints.
type syncedFile struct {
	*os.File
	p *Parquet
}

func (f syncedFile) Close() error {
	if !f.p.ckpt {
		return f.File.Close()
	}
	if err := syncFile(f.File); err != nil {
		f.File.Close()
		return err
	}
	if err := f.p.step("sync " + filepath.Base(f.Name())); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// newWriter creates the file at path and a writer of schema over it.
func (p *Parquet) newWriter(path string, schema *arrow.Schema) (f *os.File, fw *pqarrow.FileWriter, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	f, err = os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("sink: %w", err)
	}
	props, aprops := p.opts.props()
	var w interface {
		Write([]byte) (int, error)
		Close() error
	} = f
	if !p.direct {
		w = syncedFile{f, p}
	}
	fw, err = pqarrow.NewFileWriter(schema, w, props, aprops)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, nil, fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	return f, fw, nil
}

// open starts the writer of the open epoch: the staging file current-<token>
// (or the target itself when it is written in place).
func (p *Parquet) open(schema *arrow.Schema) error {
	path := p.path
	if !p.direct {
		if err := p.mkdir(); err != nil {
			return err
		}
		path = p.current(parquetExt)
	}
	f, fw, err := p.newWriter(path, schema)
	if err != nil {
		return err
	}
	p.file, p.fw, p.curRows = f, fw, 0
	return nil
}

// closeWriter writes the footer of the open epoch's file and closes it.
func (p *Parquet) closeWriter() (err error) {
	fw := p.fw
	p.fw, p.file = nil, nil
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
	}()
	// The pqarrow writer closes the file it was given.
	if err := fw.Close(); err != nil {
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	return nil
}

// start begins a run from scratch: leftovers of an earlier run are
// removed from the staging directory. The target is not touched until
// Close replaces it.
func (p *Parquet) start() error {
	if p.started {
		return nil
	}
	p.started = true
	if p.direct {
		return nil
	}
	var id [8]byte
	rand.Read(id[:])
	p.run = hex.EncodeToString(id[:])
	return p.clean(nil)
}

// Write appends the rows of rec to the current row group.
func (p *Parquet) Write(ctx context.Context, rec arrow.RecordBatch) (err error) {
	if p.closed {
		return errors.New("sink: write after Close")
	}
	if p.err != nil {
		return p.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.start(); err != nil {
		p.err = err
		return err
	}
	if p.schema == nil {
		if err := p.opts.checkSchema(p.path, rec.Schema()); err != nil {
			return err
		}
		p.schema = rec.Schema()
	}
	if !rec.Schema().Equal(p.schema) {
		return fmt.Errorf("sink: parquet %s: batch schema %s does not match %s", p.path, rec.Schema(), p.schema)
	}
	if p.fw == nil {
		p.opts.plan(rec)
		if err := p.open(p.schema); err != nil {
			return err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
		}
		if err != nil {
			p.err = err
		}
	}()
	if err := p.fw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("sink: parquet %s: %w", p.path, err)
	}
	p.curRows += rec.NumRows()
	return nil
}

// PrepareCommit implements Committer: the rows written since the previous
// epoch are written as the staged Parquet file of epoch (footer written,
// file synced). The state returned must be passed to Recover when
// restarting from that checkpoint.
func (p *Parquet) PrepareCommit(ctx context.Context, epoch uint64) (state []byte, err error) {
	if p.closed {
		return nil, errClosed
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.direct {
		return nil, nil
	}
	if p.hasLast && epoch <= p.last {
		return nil, fmt.Errorf("sink: PrepareCommit(%d) after epoch %d", epoch, p.last)
	}
	defer func() {
		if err != nil {
			p.err = err // the staging is unknown: only a restart (Recover) may go on
		}
	}()
	if err := p.start(); err != nil {
		return nil, err
	}
	p.ckpt = true // from now on files are synced
	if p.fw != nil {
		rows := p.curRows
		if err := p.closeWriter(); err != nil {
			return nil, err
		}
		cur := p.current(parquetExt)
		if rows == 0 {
			if err := os.Remove(cur); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
		} else {
			name := p.epochStaged(epoch, p.tok(), parquetExt)
			if err := os.Rename(cur, name); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			if err := p.step("rename current"); err != nil {
				return nil, err
			}
			if err := syncDir(p.dir); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			if err := p.step("sync staging"); err != nil {
				return nil, err
			}
			fi, err := os.Stat(name)
			if err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			p.prepared = append(p.prepared, pqPart{Epoch: epoch, Token: p.tok(), Rows: rows, Size: fi.Size()})
		}
	}
	if !p.hasLast {
		p.first = epoch
	}
	p.last, p.hasLast = epoch, true
	st := parquetState{Format: parquetStateFormat, Run: p.run, Epoch: epoch, BaseRows: p.base.rows()}
	if p.base != nil {
		st.BaseEpoch = p.base.Through
	}
	st.Parts = append(append(st.Parts, p.committed...), p.prepared...)
	return json.Marshal(st)
}

// Commit implements Committer: the staged epochs <= epoch are committed,
// to be written to the file by Close. Nothing is written now: they are
// already durable, nothing but Close removes committed epochs, and
// Recover treats the epochs of the checkpoint it restores as committed.
// Calling it again is a no-op.
func (p *Parquet) Commit(ctx context.Context, epoch uint64) error {
	if p.closed {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n := 0
	for n < len(p.prepared) && p.prepared[n].Epoch <= epoch {
		n++
	}
	p.committed = append(p.committed, p.prepared[:n]...)
	p.prepared = append([]pqPart(nil), p.prepared[n:]...)
	if p.hasLast {
		p.through = max(p.through, min(epoch, p.last))
		p.final = p.final || epoch >= p.first
	}
	return nil
}

// Recover implements Committer: the staged epochs <= epoch are kept as
// committed and the later ones deleted. If the file was already written
// with epochs after epoch (a later checkpoint was skipped), it is cut back
// to the epochs <= epoch at once.
func (p *Parquet) Recover(ctx context.Context, epoch uint64, state []byte) error {
	if p.closed {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.direct {
		return nil
	}
	if p.started {
		return errors.New("sink: Recover after the sink started")
	}
	p.started, p.ckpt = true, true
	if err := p.recover(epoch, state); err != nil {
		p.err = err
		return err
	}
	return nil
}

func (p *Parquet) recover(epoch uint64, state []byte) error {
	var st parquetState
	if err := json.Unmarshal(state, &st); err != nil || st.Format != parquetStateFormat {
		return fmt.Errorf("sink: recover %s: not the state of a Parquet sink (%.40q)", p.path, state)
	}
	if st.Epoch != epoch {
		return fmt.Errorf("sink: recover %s: state of epoch %d given for epoch %d", p.path, st.Epoch, epoch)
	}
	p.run = st.Run // the run goes on: a file written now (cutTarget) is its
	t, err := p.readTarget(st.Run)
	if err != nil {
		return err
	}
	if st.BaseRows > 0 && (t == nil || t.Through < st.BaseEpoch) {
		return fmt.Errorf("sink: recover %s: the file does not hold the %d rows of epochs <= %d it held at the checkpoint of epoch %d", p.path, st.BaseRows, st.BaseEpoch, epoch)
	}
	// Check the file against the state for the epochs it holds.
	through := uint64(0)
	if t != nil {
		through = t.Through
	}
	cum := st.BaseRows
	if t != nil && through >= st.BaseEpoch && t.rowsAt(st.BaseEpoch) != cum {
		return fmt.Errorf("sink: recover %s: the file has %d rows of epochs <= %d, the checkpoint of epoch %d says %d", p.path, t.rowsAt(st.BaseEpoch), st.BaseEpoch, epoch, cum)
	}
	var need []pqPart
	for i, part := range st.Parts {
		if part.Epoch <= st.BaseEpoch || part.Epoch > epoch || i > 0 && part.Epoch <= st.Parts[i-1].Epoch {
			return fmt.Errorf("sink: recover %s: inconsistent state", p.path)
		}
		cum += part.Rows
		if part.Epoch <= through {
			if t.rowsAt(part.Epoch) != cum {
				return fmt.Errorf("sink: recover %s: the file has %d rows of epochs <= %d, the checkpoint of epoch %d says %d", p.path, t.rowsAt(part.Epoch), part.Epoch, epoch, cum)
			}
			continue
		}
		need = append(need, part)
	}
	if t != nil && through >= epoch {
		// The file holds every epoch <= epoch, and maybe later ones.
		if t.rowsAt(epoch) != cum {
			return fmt.Errorf("sink: recover %s: the file has %d rows of epochs <= %d, the checkpoint says %d", p.path, t.rowsAt(epoch), epoch, cum)
		}
		if through > epoch {
			if err := p.cutTarget(t, epoch); err != nil {
				return err
			}
		}
	} else {
		for _, part := range need {
			fi, err := os.Stat(p.epochStaged(part.Epoch, part.Token, parquetExt))
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("sink: recover %s: the output of epoch %d is lost (neither staged nor in the file)", p.path, part.Epoch)
			}
			if err != nil {
				return fmt.Errorf("sink: %w", err)
			}
			if fi.Size() != part.Size {
				return fmt.Errorf("sink: recover %s: staged epoch %d has %d bytes, its checkpoint says %d", p.path, part.Epoch, fi.Size(), part.Size)
			}
		}
		p.committed = need
	}
	keep := map[string]bool{}
	for _, part := range p.committed {
		keep[epochFile(part.Epoch, part.Token, parquetExt)] = true
	}
	if err := p.clean(func(name string) bool { return keep[name] }); err != nil {
		return err
	}
	p.base = t
	p.last, p.hasLast, p.through, p.final = epoch, true, epoch, true
	return nil
}

// readTarget returns what the target holds of run, or nil if it does not
// exist or was not written by run.
func (p *Parquet) readTarget(run string) (*pqTarget, error) {
	rdr, err := file.OpenParquetFile(p.path, false)
	if err != nil {
		return nil, nil // no file, or not a Parquet file: not ours
	}
	defer rdr.Close()
	kv := rdr.MetaData().KeyValueMetadata()
	r, th, ep := kv.FindValue(metaRun), kv.FindValue(metaThrough), kv.FindValue(metaEpochs)
	if r == nil || *r != run || th == nil || ep == nil {
		return nil, nil
	}
	t := &pqTarget{}
	if t.Through, err = strconv.ParseUint(*th, 10, 64); err != nil {
		return nil, fmt.Errorf("sink: recover %s: bad %s metadata %q", p.path, metaThrough, *th)
	}
	if err := json.Unmarshal([]byte(*ep), &t.Epochs); err != nil || t.rows() != rdr.NumRows() {
		return nil, fmt.Errorf("sink: recover %s: bad %s metadata", p.path, metaEpochs)
	}
	return t, nil
}

// cutTarget replaces the target by its rows of the epochs <= epoch.
func (p *Parquet) cutTarget(t *pqTarget, epoch uint64) error {
	cut := &pqTarget{Through: epoch}
	for _, e := range t.Epochs {
		if uint64(e[0]) <= epoch {
			cut.Epochs = append(cut.Epochs, e)
		}
	}
	if err := p.writeFinal(cut, []string{p.path}, []int64{cut.rows()}); err != nil {
		return err
	}
	*t = *cut
	return nil
}

// writeFinal writes the rows of srcs (at most limit[i] rows of srcs[i], all
// if -1) to a temporary file with the metadata of t, and renames it over
// the target.
func (p *Parquet) writeFinal(t *pqTarget, srcs []string, limit []int64) error {
	if err := p.mkdir(); err != nil {
		return err
	}
	schema := p.schema
	if schema == nil {
		var err error
		if schema, err = readSchema(srcs[0]); err != nil {
			return fmt.Errorf("sink: parquet %s: %w", p.path, err)
		}
	}
	tmp := p.staged("final" + parquetExt + tmpSuffix)
	f, fw, err := p.newWriter(tmp, schema)
	if err != nil {
		return err
	}
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("sink: parquet %s: %v", p.path, r)
			}
		}()
		for i, src := range srcs {
			if err := copyParquet(fw, schema, src, limit[i]); err != nil {
				return fmt.Errorf("sink: parquet %s: %w", p.path, err)
			}
		}
		epochs, _ := json.Marshal(t.Epochs)
		for _, kv := range [][2]string{{metaRun, p.run}, {metaThrough, strconv.FormatUint(t.Through, 10)}, {metaEpochs, string(epochs)}} {
			if err := fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return fw.Close()
	}()
	if err != nil {
		fw.Close()
		f.Close()
		return err // the next start or Recover removes tmp
	}
	if err := p.renameOver(tmp); err != nil {
		return err
	}
	if err := p.step("rename final"); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(p.path)); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return p.step("sync target directory")
}

// readSchema returns the Arrow schema stored in a Parquet file.
func readSchema(path string) (*arrow.Schema, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	return storedSchema(rdr)
}

// storedSchema returns the Arrow schema the writer stored (the schema
// pqarrow derives when reading names list elements and adds field IDs).
func storedSchema(rdr *file.Reader) (*arrow.Schema, error) {
	if v := rdr.MetaData().KeyValueMetadata().FindValue("ARROW:schema"); v != nil {
		b, err := base64.StdEncoding.DecodeString(*v)
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(*v)
		}
		if err == nil {
			if r, err := ipc.NewReader(bytes.NewReader(b)); err == nil {
				defer r.Release()
				return r.Schema(), nil
			}
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	return fr.Schema()
}

// copyParquet writes up to limit rows (all if -1) of the Parquet file src
// to fw, as batches of schema.
func copyParquet(fw *pqarrow.FileWriter, schema *arrow.Schema, src string, limit int64) error {
	rdr, err := file.OpenParquetFile(src, false)
	if err != nil {
		return err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for limit != 0 && rr.Next() {
		rec := rr.RecordBatch()
		if limit > 0 && rec.NumRows() > limit {
			rec = rec.NewSlice(0, limit)
			defer rec.Release()
		}
		out, err := conform(rec, schema)
		if err != nil {
			return err
		}
		err = fw.WriteBuffered(out)
		out.Release()
		if err != nil {
			return err
		}
		if limit > 0 {
			limit -= rec.NumRows()
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	if limit > 0 {
		return fmt.Errorf("%s has fewer rows than expected", src)
	}
	return nil
}

// conform returns rec with the types of schema. What pqarrow reads back
// differs from what was written in names and metadata of nested fields,
// and, for the types Parquet cannot hold as they are, in type: it writes
// timestamp[s] as milliseconds, time32[s] as time32[ms] and date64 as
// date32, and reads them back so. Those values are cast back, exactly
// (SafeCastOptions).
func conform(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	if rec.Schema().Equal(schema) {
		rec.Retain()
		return rec, nil
	}
	if rec.Schema().NumFields() != schema.NumFields() {
		return nil, fmt.Errorf("staged schema %s does not match %s", rec.Schema(), schema)
	}
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, c := range rec.Columns() {
		d, err := retype(c.Data(), schema.Field(i).Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", schema.Field(i).Name, err)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

// retype returns d as data of type t: the same buffers where the types
// differ only in names or metadata of nested fields, the values cast to
// t where a leaf type differs (see conform).
func retype(d arrow.ArrayData, t arrow.DataType) (arrow.ArrayData, error) {
	dt := d.DataType()
	if dt.ID() == arrow.DICTIONARY && t.ID() == arrow.DICTIONARY {
		d.Retain()
		return d, nil
	}
	nt, nested := t.(arrow.NestedType)
	if !nested || dt.ID() != t.ID() {
		if !arrow.TypeEqual(dt, t) {
			return castData(d, t)
		}
		return array.NewData(t, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset()), nil
	}
	fields := nt.Fields()
	children := make([]arrow.ArrayData, 0, len(d.Children()))
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	for i, c := range d.Children() {
		if i >= len(fields) {
			c.Retain()
			children = append(children, c)
			continue
		}
		rc, err := retype(c, fields[i].Type)
		if err != nil {
			return nil, err
		}
		children = append(children, rc)
	}
	return array.NewData(t, d.Len(), d.Buffers(), children, d.NullN(), d.Offset()), nil
}

// castData returns the values of d cast to t, refusing a cast that
// would change a value.
func castData(d arrow.ArrayData, t arrow.DataType) (arrow.ArrayData, error) {
	a := array.MakeFromData(d)
	defer a.Release()
	out, err := compute.CastArray(context.Background(), a, compute.SafeCastOptions(t))
	if err != nil {
		return nil, fmt.Errorf("read back as %s, not %s: %w", d.DataType(), t, err)
	}
	defer out.Release()
	od := out.Data()
	od.Retain()
	return od, nil
}

// Abandon implements [Abandoner]: it ends the sink without writing the
// file. The engine calls it instead of Close when the run fails, or lost
// its checkpoints to another run (a consumer group member the group
// dropped while it ran, pipeline.ErrFenced). Without checkpoints the
// rows are dropped and a file already at the path is left as it is.
// Under checkpoints the file is the resumed run's (or the new owner's) to
// write, from the checkpoint it restores; this instance's open epoch is
// dropped and its prepared and committed epochs stay staged (Recover
// keeps those its checkpoint lists and removes the others). A target
// written in place (not a regular file) is closed as by Close.
func (p *Parquet) Abandon() error {
	if p.closed {
		return nil
	}
	if p.direct {
		return p.Close()
	}
	if !p.ckpt {
		p.closed = true
		var err error
		if p.fw != nil {
			err = p.closeWriter()
			if rerr := os.Remove(p.current(parquetExt)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("sink: %w", rerr))
			}
		}
		if err == nil {
			err = p.rmdir()
		}
		return err
	}
	p.closed = true
	if p.fw == nil {
		return nil
	}
	err := p.closeWriter()
	if rerr := os.Remove(p.current(parquetExt)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// Close ends the sink. Without checkpoints it writes the file footer and
// moves the file into place. Under checkpoints it drops the rows written
// after the last PrepareCommit (a restart replays them) and writes the
// final file from the file already there (if Recover found one of this
// run) and the committed epochs; with no committed epoch the file is left
// as it is. Prepared, uncommitted epochs stay staged for Recover.
func (p *Parquet) Close() (err error) {
	if p.closed {
		return nil
	}
	p.closed = true
	if p.direct {
		if p.fw == nil {
			return nil
		}
		return p.closeWriter()
	}
	if !p.ckpt {
		return p.closePlain()
	}
	if p.fw != nil {
		err := p.closeWriter()
		if rerr := os.Remove(p.current(parquetExt)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			return err
		}
	}
	if !p.final || len(p.committed) == 0 && (p.base != nil || p.schema == nil) {
		return p.rmdir() // no epoch committed: the file is left as it is
	}
	t := &pqTarget{Through: p.through}
	var srcs []string
	var limits []int64
	if p.base != nil {
		t.Epochs = append(t.Epochs, p.base.Epochs...)
		srcs, limits = append(srcs, p.path), append(limits, -1)
	}
	cum := t.rows()
	for _, part := range p.committed {
		cum += part.Rows
		t.Epochs = append(t.Epochs, [2]int64{int64(part.Epoch), cum})
		srcs, limits = append(srcs, p.epochStaged(part.Epoch, part.Token, parquetExt)), append(limits, -1)
	}
	if len(srcs) == 0 && p.schema == nil {
		return p.rmdir()
	}
	if err := p.writeFinal(t, srcs, limits); err != nil {
		return err
	}
	for _, part := range p.committed {
		if err := os.Remove(p.epochStaged(part.Epoch, part.Token, parquetExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sink: %w", err)
		}
		if err := p.step("remove staged"); err != nil {
			return err
		}
	}
	p.committed = nil
	if err := syncDir(p.dir); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if err := p.step("sync staging"); err != nil {
		return err
	}
	return p.rmdir()
}

// closePlain ends a run without checkpoints: the staged file replaces the
// target. Like the sink before checkpoints existed, it does not sync.
func (p *Parquet) closePlain() error {
	if p.err != nil {
		if p.fw != nil {
			p.closeWriter()
			os.Remove(p.current(parquetExt))
		}
		p.rmdir()
		return p.err
	}
	if err := p.start(); err != nil {
		return err
	}
	if p.fw == nil {
		if p.schema == nil {
			return p.rmdir()
		}
		if err := p.open(p.schema); err != nil {
			return err
		}
	}
	if err := p.closeWriter(); err != nil {
		return p.dropPlain(err)
	}
	if err := p.renameOver(p.current(parquetExt)); err != nil {
		return p.dropPlain(err)
	}
	if err := p.step("rename current"); err != nil {
		return err
	}
	return p.rmdir()
}

// dropPlain removes the staged file of a run without checkpoints that
// could not be published (err) and the staging directory, so that a
// failed Close leaves the target as it was and nothing staged.
func (p *Parquet) dropPlain(err error) error {
	if p.crashed {
		return err
	}
	if rerr := os.Remove(p.current(parquetExt)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(err, fmt.Errorf("sink: %w", rerr))
	}
	return errors.Join(err, p.rmdir())
}
