package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/volga-go/volga/internal/mempool"
)

// Page-by-page decoding of 4- and 8-byte columns.
//
// parquet/file's column chunk readers decode dictionary pages through
// the same lazy dictionary as pqarrow (dictConverter.ensure, arrow-go
// v18.8.0): each run of up to 1024 indices that reaches past the values
// converted so far appends to the dictionary, and for a dictionary whose
// indices rise (row ids, sorted timestamps: a new value every row) the
// slice grows, and is copied, nearly once per 1024 rows, about half of
// the decoding CPU of such a column. pqPages reads the pages itself: the
// dictionary page once, whole, then the RLE/bit-packed indices of every
// data page looked up in it, and PLAIN pages copied. It takes the column
// chunks whose encodings are PLAIN and dictionary (RLE_DICTIONARY,
// PLAIN_DICTIONARY) with RLE definition levels, which is what arrow-go,
// parquet-mr, pyarrow and DuckDB write by default; others (delta,
// byte-stream-split) stay with the column chunk readers.

// pqReadProps returns the reader properties of the files: column chunks
// read through a 64 KiB buffer (large reads, pages, go straight into the
// page reader's buffers) instead of read whole into a new buffer each,
// and the page readers' buffers (compressed page, page, dictionary page:
// up to a page size each, for every column chunk) reused.
func pqReadProps() *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(pqPagePool)
	props.BufferedStreamEnabled = true
	props.BufferSize = 64 << 10
	return props
}

// pqPagePool allocates the page readers' buffers, which they free when
// closed, at the end of each column chunk: pooled, the next chunk reuses
// them.
var pqPagePool = mempool.Shared

// pqColumn decodes the rows of one column of a row group.
type pqColumn interface {
	// skip skips rows rows.
	skip(rows int64) error
	// read decodes the next n rows.
	read(n int64, mem memory.Allocator) (arrow.Array, error)
	close()
}

// pagesFit reports whether pqPages decodes a column chunk.
func pagesFit(cc *metadata.ColumnChunkMetaData) bool {
	encs := cc.Encodings()
	if len(encs) == 0 {
		return false
	}
	for _, e := range encs {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE:
		default:
			return false
		}
	}
	return true
}

// newPages returns the page decoder of column c of row group rg, of
// Arrow type dt.
func newPages(rg *file.RowGroupReader, c pqCol, dt arrow.DataType) (pqColumn, error) {
	pr, err := rg.GetColumnPageReader(c.leaf)
	if err != nil {
		return nil, err
	}
	switch c.kind {
	case pqInt32, pqFloat32:
		return newFixedPages[uint32](pr, c, dt), nil
	case pqInt64, pqFloat64:
		return newFixedPages[uint64](pr, c, dt), nil
	case pqBytes:
		return newBytesPages(pr, c, dt), nil
	}
	pr.Close()
	return nil, fmt.Errorf("no page decoding of %s", dt)
}

// pqPageIter walks the data pages of a column chunk: their definition
// levels and encoded values. onDict takes the dictionary page.
type pqPageIter struct {
	pr       file.PageReader
	optional bool // definition levels of width 1 precede the values
	dt       arrow.DataType
	onDict   func(data []byte, n int) error
	hasDict  bool // the dictionary page was read

	// The current data page.
	left   int         // levels (rows) not yet decoded
	defs   hybridRLE   // its definition levels (optional)
	isDict bool        // its values are dictionary indices
	idx    hybridRLE   // the indices (isDict)
	plain  []byte      // the PLAIN values not yet decoded (!isDict)
	buf    [1024]int32 // levels or indices being decoded

	rowDefs []int16 // definition levels of the rows being read
}

// pqPages decodes a column chunk of 4-byte (uint32) or 8-byte (uint64)
// values page by page; the values are copied bit for bit.
type pqPages[T uint32 | uint64] struct {
	pqPageIter
	dict []T // the dictionary page's values
}

func (r *pqPages[T]) close() {
	r.pr.Close()
	if r.dict != nil {
		putDict(r.dict)
		r.dict = nil
	}
}

// Dictionaries are up to a dictionary page's size (1 MiB by default) per
// column chunk: they are reused, not allocated for every row group.
var dictPools [2]sync.Pool // of *[]uint32 and *[]uint64

func dictPool[T uint32 | uint64]() *sync.Pool {
	var zero T
	return &dictPools[unsafe.Sizeof(zero)/8]
}

// getDict returns a slice of n values from the pool.
func getDict[T uint32 | uint64](n int) []T {
	if p, ok := dictPool[T]().Get().(*[]T); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]T, n)
}

func putDict[T uint32 | uint64](d []T) {
	dictPool[T]().Put(&d)
}

func newFixedPages[T uint32 | uint64](pr file.PageReader, c pqCol, dt arrow.DataType) *pqPages[T] {
	r := &pqPages[T]{pqPageIter: pqPageIter{pr: pr, optional: c.optional, dt: dt}}
	r.onDict = func(data []byte, n int) error {
		var zero T
		width := int(unsafe.Sizeof(zero))
		if len(data) < n*width {
			return fmt.Errorf("dictionary page of %d bytes for %d values", len(data), n)
		}
		r.dict = getDict[T](n)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r.dict))), n*width), data)
		return nil
	}
	return r
}

// nextPage moves to the next data page with rows.
func (r *pqPageIter) nextPage() error {
	for r.pr.Next() {
		var (
			enc   parquet.Encoding
			nvals int
			data  []byte
		)
		switch pg := r.pr.Page().(type) {
		case *file.DictionaryPage:
			if e := parquet.Encoding(pg.Encoding()); e != parquet.Encodings.Plain && e != parquet.Encodings.PlainDict {
				return fmt.Errorf("dictionary page of encoding %s", e)
			}
			if r.hasDict {
				return errors.New("two dictionary pages in a column chunk")
			}
			n := int(pg.NumValues())
			if n < 0 {
				return fmt.Errorf("dictionary page of %d values", n)
			}
			if err := r.onDict(pg.Data(), n); err != nil {
				return err
			}
			r.hasDict = true
			continue
		case *file.DataPageV1:
			enc, nvals, data = parquet.Encoding(pg.Encoding()), int(pg.NumValues()), pg.Data()
			if r.optional {
				if e := pg.DefinitionLevelEncoding(); e != parquet.Encodings.RLE {
					return fmt.Errorf("definition levels of encoding %s", e)
				}
				if len(data) < 4 {
					return errors.New("data page too short for its definition levels")
				}
				n := int(binary.LittleEndian.Uint32(data))
				if n < 0 || 4+n > len(data) {
					return fmt.Errorf("definition levels of %d bytes in a page of %d", n, len(data))
				}
				r.defs.reset(data[4:4+n], 1)
				data = data[4+n:]
			}
		case *file.DataPageV2:
			enc, nvals, data = parquet.Encoding(pg.Encoding()), int(pg.NumValues()), pg.Data()
			rl, dl := int(pg.RepetitionLevelByteLen()), int(pg.DefinitionLevelByteLen())
			if rl < 0 || dl < 0 || rl+dl > len(data) {
				return fmt.Errorf("levels of %d and %d bytes in a page of %d", rl, dl, len(data))
			}
			if r.optional {
				r.defs.reset(data[rl:rl+dl], 1)
			}
			data = data[rl+dl:]
		default:
			continue // index pages
		}
		if nvals < 0 {
			return fmt.Errorf("data page of %d values", nvals)
		}
		switch enc {
		case parquet.Encodings.Plain:
			r.isDict, r.plain = false, data
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if !r.hasDict {
				return errors.New("dictionary-encoded data page without a dictionary page")
			}
			r.isDict = true
			if len(data) == 0 {
				r.idx.reset(nil, 0)
			} else {
				if data[0] > 32 {
					return fmt.Errorf("dictionary indices of %d bits", data[0])
				}
				r.idx.reset(data[1:], uint(data[0]))
			}
		default:
			return fmt.Errorf("data page of encoding %s", enc)
		}
		r.left = nvals
		if nvals > 0 {
			return nil
		}
	}
	if err := r.pr.Err(); err != nil {
		return err
	}
	return errors.New("fewer rows than the row group has")
}

// skip skips rows rows: whole pages without decoding them.
func (r *pqPages[T]) skip(rows int64) error { return r.skipWith(rows, r.read) }

// skipWith skips rows rows: whole pages without decoding them, the rows
// before the position in a page decoded with read and dropped.
func (r *pqPageIter) skipWith(rows int64, read func(int64, memory.Allocator) (arrow.Array, error)) error {
	for rows > 0 {
		if r.left == 0 {
			if err := r.nextPage(); err != nil {
				return err
			}
		}
		if rows >= int64(r.left) {
			rows -= int64(r.left)
			r.left = 0
			continue
		}
		a, err := read(rows, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		a.Release()
		rows = 0
	}
	return nil
}

// read decodes the next n rows.
func (r *pqPages[T]) read(n int64, mem memory.Allocator) (arrow.Array, error) {
	var zero T
	values := memory.NewResizableBuffer(mem)
	values.Resize(int(n) * int(unsafe.Sizeof(zero)))
	vals := arrow.GetData[T](values.Bytes())[:n]
	var defs []int16
	if r.optional {
		if int64(cap(r.rowDefs)) < n {
			r.rowDefs = make([]int16, n)
		}
		defs = r.rowDefs[:n]
	}
	filled, nv := 0, 0
	for filled < int(n) {
		if r.left == 0 {
			if err := r.nextPage(); err != nil {
				values.Release()
				return nil, err
			}
		}
		m := min(int(n)-filled, r.left)
		v := m
		if r.optional {
			var err error
			if v, err = r.readDefs(defs[filled : filled+m]); err != nil {
				values.Release()
				return nil, err
			}
		}
		if err := r.readValues(vals[nv : nv+v]); err != nil {
			values.Release()
			return nil, err
		}
		filled += m
		nv += v
		r.left -= m
	}
	var valid *memory.Buffer
	if nv < int(n) {
		spreadValues(vals, defs, nv)
		valid = validBitmap(defs, mem)
	}
	return fixedArray(r.dt, int(n), valid, values, int(n)-nv), nil
}

// readDefs decodes len(dst) definition levels of the page and returns
// how many are of values (1).
func (r *pqPageIter) readDefs(dst []int16) (int, error) {
	valid := 0
	for len(dst) > 0 {
		buf := r.buf[:min(len(dst), len(r.buf))]
		got := r.defs.read(buf)
		if got < len(buf) {
			return 0, errors.New("data page holds fewer definition levels than values")
		}
		for i, d := range buf {
			if uint32(d) > 1 {
				return 0, fmt.Errorf("definition level %d, the column's maximum is 1", d)
			}
			dst[i] = int16(d)
			valid += int(d)
		}
		dst = dst[len(buf):]
	}
	return valid, nil
}

// readValues decodes the next len(dst) values of the page.
func (r *pqPages[T]) readValues(dst []T) error {
	if !r.isDict {
		var zero T
		nb := len(dst) * int(unsafe.Sizeof(zero))
		if len(r.plain) < nb {
			return errors.New("data page holds fewer values than its definition levels")
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), nb), r.plain)
		r.plain = r.plain[nb:]
		return nil
	}
	dict := r.dict
	for len(dst) > 0 {
		buf := r.buf[:min(len(dst), len(r.buf))]
		got := r.idx.read(buf)
		if got < len(buf) {
			return errors.New("data page holds fewer dictionary indices than values")
		}
		for i, ix := range buf {
			if uint32(ix) >= uint32(len(dict)) {
				return fmt.Errorf("dictionary index %d out of range (%d values)", uint32(ix), len(dict))
			}
			dst[i] = dict[ix]
		}
		dst = dst[len(buf):]
	}
	return nil
}

// pqBytesPages decodes a column chunk of byte arrays into an Arrow
// string or binary array (32-bit offsets) page by page.
type pqBytesPages struct {
	pqPageIter
	dictData []byte  // the dictionary's values, one after the other
	dictOff  []int32 // value i is dictData[dictOff[i]:dictOff[i+1]]
	perRow   int     // data bytes per row of the last batch read
}

func newBytesPages(pr file.PageReader, c pqCol, dt arrow.DataType) *pqBytesPages {
	r := &pqBytesPages{pqPageIter: pqPageIter{pr: pr, optional: c.optional, dt: dt}}
	r.onDict = func(data []byte, n int) error {
		r.dictData = make([]byte, 0, len(data))
		r.dictOff = make([]int32, 1, n+1)
		for range n {
			if len(data) < 4 {
				return errors.New("dictionary page holds fewer values than it says")
			}
			l := binary.LittleEndian.Uint32(data)
			if uint64(l) > uint64(len(data)-4) {
				return fmt.Errorf("dictionary value of %d bytes in %d", l, len(data)-4)
			}
			r.dictData = append(r.dictData, data[4:4+l]...)
			r.dictOff = append(r.dictOff, int32(len(r.dictData)))
			data = data[4+l:]
		}
		return nil
	}
	return r
}

func (r *pqBytesPages) skip(rows int64) error { return r.skipWith(rows, r.read) }

// read decodes the next n rows.
func (r *pqBytesPages) read(n int64, mem memory.Allocator) (arrow.Array, error) {
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize(int(n+1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())[:n+1]
	offs[0] = 0
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(max(64, int(n)*max(r.perRow, 8)))
	data := dataBuf.Bytes()
	dl := 0 // bytes of data used
	fail := func(err error) (arrow.Array, error) {
		offBuf.Release()
		dataBuf.Release()
		return nil, err
	}
	if int64(cap(r.rowDefs)) < n {
		r.rowDefs = make([]int16, n)
	}
	defs := r.rowDefs[:n]
	filled, nv := 0, 0
	for filled < int(n) {
		if r.left == 0 {
			if err := r.nextPage(); err != nil {
				return fail(err)
			}
		}
		// At most len(r.buf) rows at a time: their indices fit in r.buf.
		m := min(int(n)-filled, r.left, len(r.buf))
		chunk := defs[filled : filled+m]
		v := m
		if r.optional {
			var err error
			if v, err = r.readDefs(chunk); err != nil {
				return fail(err)
			}
		}
		if r.isDict {
			if got := r.idx.read(r.buf[:v]); got < v {
				return fail(errors.New("data page holds fewer dictionary indices than values"))
			}
		}
		k := 0
		for i := range m {
			if !r.optional || chunk[i] > 0 {
				var b []byte
				if r.isDict {
					ix := uint32(r.buf[k])
					if ix >= uint32(len(r.dictOff)-1) {
						return fail(fmt.Errorf("dictionary index %d out of range (%d values)", ix, len(r.dictOff)-1))
					}
					b = r.dictData[r.dictOff[ix]:r.dictOff[ix+1]]
				} else {
					if len(r.plain) < 4 {
						return fail(errors.New("data page holds fewer values than its definition levels"))
					}
					l := binary.LittleEndian.Uint32(r.plain)
					if uint64(l) > uint64(len(r.plain)-4) {
						return fail(fmt.Errorf("value of %d bytes in %d", l, len(r.plain)-4))
					}
					b = r.plain[4 : 4+l]
					r.plain = r.plain[4+l:]
				}
				if dl+len(b) > len(data) {
					if dl+len(b) > math.MaxInt32 {
						return fail(errors.New("more than 2 GiB of values in a batch"))
					}
					dataBuf.Resize(max(2*len(data), dl+len(b)))
					data = dataBuf.Bytes()
				}
				dl += copy(data[dl:], b)
				k++
			}
			offs[filled+i+1] = int32(dl)
		}
		filled += m
		nv += v
		r.left -= m
	}
	dataBuf.ResizeNoShrink(dl)
	r.perRow = dl/int(n) + 1
	var valid *memory.Buffer
	if nv < int(n) {
		valid = validBitmap(defs, mem)
	}
	ad := array.NewData(r.dt, int(n), []*memory.Buffer{valid, offBuf, dataBuf}, nil, int(n)-nv, 0)
	offBuf.Release()
	dataBuf.Release()
	if valid != nil {
		valid.Release()
	}
	a := array.MakeFromData(ad)
	ad.Release()
	return a, nil
}

func (r *pqBytesPages) close() { r.pr.Close() }

// spreadValues moves the nv values packed at the front of vals to the
// rows whose definition level is 1, from the back (below the last null
// row they are in place), and zeroes the null rows.
func spreadValues[T any](vals []T, defs []int16, nv int) {
	var zero T
	k := nv - 1
	for i := len(vals) - 1; i > k; i-- {
		if defs[i] > 0 {
			vals[i] = vals[k]
			k--
		} else {
			vals[i] = zero
		}
	}
}

// hybridRLE decodes Parquet's RLE/bit-packing hybrid encoding (levels
// and dictionary indices) of values of up to 32 bits.
type hybridRLE struct {
	data  []byte
	width uint
	rle   int    // values left in the current RLE run
	val   uint32 // the RLE run's value
	bp    int    // values left in the current bit-packed run
	bits  []byte // the bit-packed run
	bit   uint   // offset of its next value, in bits
}

func (d *hybridRLE) reset(data []byte, width uint) {
	*d = hybridRLE{data: data, width: width}
}

// next starts the next run with values; false at the end of the data.
func (d *hybridRLE) next() bool {
	for len(d.data) > 0 {
		h, n := binary.Uvarint(d.data)
		if n <= 0 || h>>1 > 1<<31 {
			break
		}
		d.data = d.data[n:]
		if h&1 == 1 {
			groups := int(h >> 1)
			nb := groups * int(d.width)
			if nb > len(d.data) {
				nb = len(d.data) // a last run cut short: the values it holds
			}
			d.bp, d.bits, d.bit = groups*8, d.data[:nb], 0
			if d.width > 0 {
				d.bp = min(d.bp, nb*8/int(d.width))
			}
			d.data = d.data[nb:]
			if d.bp > 0 {
				return true
			}
			continue
		}
		nb := int(d.width+7) / 8
		if nb > len(d.data) {
			break
		}
		var v uint32
		for i := nb - 1; i >= 0; i-- {
			v = v<<8 | uint32(d.data[i])
		}
		d.rle, d.val = int(h>>1), v
		d.data = d.data[nb:]
		if d.rle > 0 {
			return true
		}
	}
	d.data = nil
	return false
}

// read decodes up to len(dst) values and returns how many it decoded
// (fewer only at the end of the data).
func (d *hybridRLE) read(dst []int32) int {
	n := 0
	for n < len(dst) {
		switch {
		case d.rle > 0:
			k := min(d.rle, len(dst)-n)
			v := int32(d.val)
			for i := range dst[n : n+k] {
				dst[n+i] = v
			}
			d.rle -= k
			n += k
		case d.bp > 0:
			k := min(d.bp, len(dst)-n)
			d.unpack(dst[n : n+k])
			d.bp -= k
			n += k
		default:
			if !d.next() {
				return n
			}
		}
	}
	return n
}

// unpack decodes len(dst) values of the bit-packed run.
func (d *hybridRLE) unpack(dst []int32) {
	w := d.width
	if w == 0 {
		clear(dst)
		return
	}
	mask := uint64(1)<<w - 1
	bits, bit := d.bits, d.bit
	for i := range dst {
		off := bit >> 3
		var x uint64
		if int(off)+8 <= len(bits) {
			x = binary.LittleEndian.Uint64(bits[off:])
		} else {
			for k := len(bits) - 1; k >= int(off); k-- {
				x = x<<8 | uint64(bits[k])
			}
		}
		dst[i] = int32(uint32(x >> (bit & 7) & mask))
		bit += w
	}
	d.bit = bit
}
