package source

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Direct decoding of fixed-width columns.
//
// pqarrow decodes a column through a record reader into builders and then
// transfers their buffers to Arrow arrays; for a top-level column whose
// Arrow type holds its Parquet values bit for bit (pqarrow's
// transferZeroCopy, transferInt and transferBool) the source decodes the
// values itself, straight into the Arrow buffer, as pqarrow would have
// built it: 4- and 8-byte values page by page (pqPages, parquet_pages.go)
// where the column chunk's encodings allow, else, and for booleans, with
// parquet/file's typed column chunk readers. Every other column still goes
// through pqarrow, in the same batches.

// pqKind says how a column is decoded.
type pqKind uint8

const (
	pqArrow   pqKind = iota // by pqarrow
	pqInt32                 // INT32 values, 4-byte Arrow values
	pqInt64                 // INT64 values, 8-byte Arrow values
	pqFloat32               // FLOAT values
	pqFloat64               // DOUBLE values
	pqBool                  // BOOLEAN values, an Arrow bitmap
	pqBytes                 // BYTE_ARRAY values, Arrow string or binary (pqPages only)
)

// pqPlan says how the decoded columns of one file are decoded.
type pqPlan struct {
	cols  []pqCol // one per field of the source's schema
	slow  []int   // the leaf columns pqarrow decodes, in file order
	nslow int     // the fields pqarrow decodes
}

// pqCol is how one field is decoded.
type pqCol struct {
	kind     pqKind
	leaf     int  // its leaf column (kind != pqArrow)
	optional bool // it has definition levels (kind != pqArrow)
	slow     int  // its column in pqarrow's batches (kind == pqArrow)
}

// plan returns how the decoded columns of pf are decoded.
func (p *Parquet) plan(pf *pqFile) *pqPlan {
	fields := p.fields
	if fields == nil {
		fields = make([]int, p.fileSchema.NumFields())
		for i := range fields {
			fields[i] = i
		}
	}
	pl := &pqPlan{cols: make([]pqCol, len(fields))}
	sch := pf.f.MetaData().Schema
	for k, fi := range fields {
		sf := &pf.fr.Manifest.Fields[fi]
		kind := pqArrow
		if len(sf.Children) == 0 && sf.IsLeaf() && arrow.TypeEqual(sf.Field.Type, p.schema.Field(k).Type) {
			kind = directKind(sf.Field.Type, sch.Column(sf.ColIndex))
		}
		if kind == pqBytes && !bytesFit(pf.f, sf.ColIndex) {
			kind = pqArrow
		}
		if kind != pqArrow {
			pl.cols[k] = pqCol{kind: kind, leaf: sf.ColIndex, optional: sch.Column(sf.ColIndex).MaxDefinitionLevel() > 0}
			continue
		}
		pl.cols[k] = pqCol{kind: pqArrow, slow: pl.nslow}
		pl.nslow++
		pl.slow = appendLeaves(pl.slow, sf)
	}
	return pl
}

// appendLeaves appends the leaf columns of sf.
func appendLeaves(dst []int, sf *pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 {
		if sf.IsLeaf() {
			dst = append(dst, sf.ColIndex)
		}
		return dst
	}
	for i := range sf.Children {
		dst = appendLeaves(dst, &sf.Children[i])
	}
	return dst
}

// directKind returns how a top-level leaf column c read as Arrow type dt
// is decoded: directly when pqarrow would use its values bit for bit,
// else pqArrow.
func directKind(dt arrow.DataType, c *schema.Column) pqKind {
	if c.MaxRepetitionLevel() != 0 || c.MaxDefinitionLevel() > 1 {
		return pqArrow
	}
	switch c.PhysicalType() {
	case parquet.Types.Int32:
		switch dt.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
			return pqInt32
		}
	case parquet.Types.Int64:
		switch dt.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIME64:
			return pqInt64
		case arrow.TIMESTAMP:
			// pqarrow refuses seconds.
			if dt.(*arrow.TimestampType).Unit != arrow.Second {
				return pqInt64
			}
		}
	case parquet.Types.Float:
		if dt.ID() == arrow.FLOAT32 {
			return pqFloat32
		}
	case parquet.Types.Double:
		if dt.ID() == arrow.FLOAT64 {
			return pqFloat64
		}
	case parquet.Types.Boolean:
		if dt.ID() == arrow.BOOL {
			return pqBool
		}
	case parquet.Types.ByteArray:
		// pqarrow's transferBinary: the values one after the other,
		// 32-bit offsets.
		if dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY {
			return pqBytes
		}
	}
	return pqArrow
}

// bytesFit reports whether pqPages decodes byte-array column leaf of
// every row group of f (the others decode it through pqarrow).
func bytesFit(f *file.Reader, leaf int) bool {
	if pqNoPages {
		return false
	}
	for g := range f.NumRowGroups() {
		cc, err := f.MetaData().RowGroup(g).ColumnChunk(leaf)
		if err != nil || !pagesFit(cc) {
			return false
		}
	}
	return true
}

// decodeGroup decodes row group j.rg of j.pf from row j.skip on into
// j.u, in batches of decodeRows rows (the last one shorter). It returns
// early, without error, when the run stops.
func (p *Parquet) decodeGroup(run *pqRun, j pqJob) error {
	pl := j.pf.plan
	rg := j.pf.f.RowGroup(j.rg)
	left := rg.NumRows() - j.skip
	readers := make([]pqColumn, len(pl.cols))
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.close()
			}
		}
	}()
	for k, c := range pl.cols {
		if c.kind == pqArrow {
			continue
		}
		var err error
		if readers[k], err = p.columnReader(rg, c, p.schema.Field(k).Type); err != nil {
			return fmt.Errorf("column %s: %w", p.schema.Field(k).Name, err)
		}
		if j.skip > 0 {
			if err := readers[k].skip(j.skip); err != nil {
				return fmt.Errorf("column %s: seek to row %d of row group %d: %w", p.schema.Field(k).Name, j.skip, j.rg, err)
			}
		}
	}
	var rr pqarrow.RecordReader
	if len(pl.slow) > 0 {
		var err error
		if rr, err = j.pf.fr.GetRecordReader(context.Background(), pl.slow, []int{j.rg}); err != nil {
			return p.slowError(pl, err)
		}
		defer rr.Release()
	}
	// pqarrow's SeekToRow (arrow-go v18.8.0) loses rows of list columns
	// (TestParquetDirectSameAsPqarrow found it): its rows before j.skip
	// are decoded and dropped instead. Seeking into a row group is rare
	// (restarts from a position).
	drop := j.skip
	step := int64(p.decodeRows())
	for left > 0 {
		n := min(step, left)
		var slow arrow.RecordBatch
		if rr != nil {
			for slow == nil {
				if !rr.Next() {
					if err := rr.Err(); err != nil && err != io.EOF {
						return p.slowError(pl, err)
					}
					return fmt.Errorf("row group %d: %d rows missing", j.rg, left)
				}
				rec := rr.RecordBatch()
				switch rows := rec.NumRows(); {
				case rows <= drop:
					drop -= rows
				case drop > 0:
					slow = rec.NewSlice(drop, rows)
					drop = 0
				default:
					slow = rec
					slow.Retain()
				}
			}
			if slow.NumRows() > left || int(slow.NumCols()) != pl.nslow {
				slow.Release()
				return fmt.Errorf("row group %d: pqarrow decoded %d columns of %d rows, want %d columns of at most %d", j.rg, slow.NumCols(), slow.NumRows(), pl.nslow, left)
			}
			n = slow.NumRows()
		}
		cols := make([]arrow.Array, len(pl.cols))
		for k, c := range pl.cols {
			if c.kind == pqArrow {
				cols[k] = slow.Column(c.slow)
				cols[k].Retain()
				continue
			}
			a, err := readers[k].read(n, p.opts.mem)
			if err != nil {
				releaseArrays(cols[:k])
				if slow != nil {
					slow.Release()
				}
				return fmt.Errorf("column %s: %w", p.schema.Field(k).Name, err)
			}
			cols[k] = a
		}
		if slow != nil {
			slow.Release()
		}
		rec := array.NewRecordBatch(p.schema, cols, n)
		releaseArrays(cols)
		select {
		case j.u.out <- rec:
		case <-run.stop:
			rec.Release()
			return nil
		}
		left -= n
	}
	return nil
}

// slowError names the columns pqarrow decodes in an error of pqarrow's,
// which does not say which column it is about (an INT96 timestamp out of
// the nanosecond range, a corrupt page).
func (p *Parquet) slowError(pl *pqPlan, err error) error {
	var names []string
	for k, c := range pl.cols {
		if c.kind == pqArrow {
			names = append(names, p.schema.Field(k).Name)
		}
	}
	if len(names) == 1 {
		return fmt.Errorf("column %s: %w", names[0], err)
	}
	return fmt.Errorf("one of the columns %s: %w", strings.Join(names, ", "), err)
}

// columnReader returns the decoder of column c of row group rg, of Arrow
// type dt: pqPages for the encodings it knows, else a column chunk reader.
func (p *Parquet) columnReader(rg *file.RowGroupReader, c pqCol, dt arrow.DataType) (pqColumn, error) {
	if c.kind == pqBytes || c.kind != pqBool && !pqNoPages {
		cc, err := rg.MetaData().ColumnChunk(c.leaf)
		if err != nil {
			return nil, err
		}
		if pagesFit(cc) {
			return newPages(rg, c, dt)
		}
	}
	cr, err := rg.Column(c.leaf)
	if err != nil {
		return nil, err
	}
	return &pqColReader{pqCol: c, cr: cr, dt: dt}, nil
}

// pqNoPages turns pqPages off (tests compare both).
var pqNoPages = false

// pqColReader decodes one column of a row group directly.
type pqColReader struct {
	pqCol
	cr    file.ColumnChunkReader
	dt    arrow.DataType
	defs  []int16 // definition levels of the rows being read
	bools []bool  // values being read (pqBool)
}

func (r *pqColReader) close() { r.cr.Close() }

// skip skips rows rows.
func (r *pqColReader) skip(rows int64) error {
	s, ok := r.cr.(interface {
		Skip(int64) (int64, error)
	})
	if !ok {
		return fmt.Errorf("no Skip on %T", r.cr)
	}
	_, err := s.Skip(rows)
	return err
}

// read decodes the next n rows.
func (r *pqColReader) read(n int64, mem memory.Allocator) (arrow.Array, error) {
	var defs []int16
	if r.optional {
		if int64(cap(r.defs)) < n {
			r.defs = make([]int16, n)
		}
		defs = r.defs[:n]
	}
	var (
		values, valid *memory.Buffer
		nulls         int
		err           error
	)
	switch r.kind {
	case pqInt32:
		values, valid, nulls, err = readFixed(r.cr.(*file.Int32ColumnChunkReader), n, defs, mem)
	case pqInt64:
		values, valid, nulls, err = readFixed(r.cr.(*file.Int64ColumnChunkReader), n, defs, mem)
	case pqFloat32:
		values, valid, nulls, err = readFixed(r.cr.(*file.Float32ColumnChunkReader), n, defs, mem)
	case pqFloat64:
		values, valid, nulls, err = readFixed(r.cr.(*file.Float64ColumnChunkReader), n, defs, mem)
	case pqBool:
		values, valid, nulls, err = r.readBool(n, defs, mem)
	default:
		err = fmt.Errorf("no direct decoding of %s", r.dt)
	}
	if err != nil {
		return nil, err
	}
	return fixedArray(r.dt, int(n), valid, values, nulls), nil
}

// batchReader is a typed column chunk reader of parquet/file.
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// readFixed reads n rows of fixed-width values into a new buffer, null
// rows zero, with the validity bitmap of the rows when defs (n long: the
// column is optional) is not nil and some are null.
func readFixed[T int32 | int64 | float32 | float64](r batchReader[T], n int64, defs []int16, mem memory.Allocator) (values, valid *memory.Buffer, nulls int, err error) {
	var zero T
	values = memory.NewResizableBuffer(mem)
	values.Resize(int(n) * int(unsafe.Sizeof(zero)))
	vals := arrow.GetData[T](values.Bytes())[:n]
	total, read, err := r.ReadBatch(n, vals, defs, nil)
	if err == nil && total != n {
		err = fmt.Errorf("%d rows decoded, want %d", total, n)
	}
	if err != nil {
		values.Release()
		return nil, nil, 0, err
	}
	if defs == nil || int64(read) == n {
		return values, nil, 0, nil
	}
	spreadValues(vals, defs, read)
	return values, validBitmap(defs, mem), int(n) - read, nil
}

// readBool reads n rows of booleans into a new bitmap, null rows false.
func (r *pqColReader) readBool(n int64, defs []int16, mem memory.Allocator) (values, valid *memory.Buffer, nulls int, err error) {
	if int64(cap(r.bools)) < n {
		r.bools = make([]bool, n)
	}
	vals := r.bools[:n]
	total, read, err := r.cr.(*file.BooleanColumnChunkReader).ReadBatch(n, vals, defs, nil)
	if err == nil && total != n {
		err = fmt.Errorf("%d rows decoded, want %d", total, n)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	values = newBitmap(n, mem)
	bits := values.Bytes()
	if defs == nil || int64(read) == n {
		for i, v := range vals {
			if v {
				bitutil.SetBit(bits, i)
			}
		}
		return values, nil, 0, nil
	}
	k := 0
	for i, d := range defs {
		if d > 0 {
			if vals[k] {
				bitutil.SetBit(bits, i)
			}
			k++
		}
	}
	return values, validBitmap(defs, mem), int(n) - read, nil
}

// newBitmap returns a buffer of n bits, all clear.
func newBitmap(n int64, mem memory.Allocator) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(n)))
	clear(b.Bytes())
	return b
}

// validBitmap returns the validity bitmap of rows with definition levels
// defs (of a top-level column: 1 valid, 0 null).
func validBitmap(defs []int16, mem memory.Allocator) *memory.Buffer {
	b := newBitmap(int64(len(defs)), mem)
	bits := b.Bytes()
	for i, d := range defs {
		if d > 0 {
			bits[i>>3] |= 1 << (i & 7)
		}
	}
	return b
}

// releaseArrays releases every array of as.
func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// fixedArray makes an array of type dt and n values from its validity
// bitmap (nil: no nulls) and values buffer, taking over both references.
func fixedArray(dt arrow.DataType, n int, valid, values *memory.Buffer, nulls int) arrow.Array {
	data := array.NewData(dt, n, []*memory.Buffer{valid, values}, nil, nulls, 0)
	values.Release()
	if valid != nil {
		valid.Release()
	}
	a := array.MakeFromData(data)
	data.Release()
	return a
}
