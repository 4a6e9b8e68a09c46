package source

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowStage holds columns of a Clustered input (or part) row-major, in
// output order: row i is data[i*stride : (i+1)*stride], each column at
// an offset of its own, its values as wide as in Arrow (a string of up to
// 7 bytes in 8 bytes, of up to 15 in 16, its length in the last byte),
// and a bit a row for each column with NULLs.
//
// The rows are placed in output order once, as the input is ordered, in
// one pass over each input column in input order: a row's values land in
// one or two cache lines, written where a gather of the Arrow columns in
// output order would read each value of each column from wherever it is
// (ml-3's 5 M events: four columns, four cache misses a row, about 200
// ns; see BENCHMARKS.md). Each batch of Read then reads the stage
// sequentially.
type rowStage struct {
	stride int
	data   []byte
	cols   []rowCol
}

// rowCol is a column of a rowStage.
type rowCol struct {
	field int // index in the schema
	dt    arrow.DataType
	off   int     // its offset in a row
	kind  rowKind // how it is held
	width int     // bytes in a row
	// null is the offset of its byte of null bits in a row and mask its
	// bit; mask 0: the column has no NULLs.
	null int
	mask byte
}

type rowKind uint8

const (
	rowFixed rowKind = iota // a fixed-width value
	rowStr1                 // a string of up to 7 bytes, 8 bytes, its length in the last
	rowStr2                 // a string of up to 15 bytes, 16 bytes, its length in the last
)

// planRows returns a stage for the columns of schema that recs can hold
// row-major (not skip): fixed-width numbers, times and durations, and
// strings and binaries of 32-bit offsets none longer than 15 bytes; rest
// are the other columns, which Read gathers. A nil stage: no column can.
// The stage's rows take about what the columns take in recs (at most
// twice, for strings of a byte or two): the columns lie widest first, so
// each value is aligned to its width, and a row is a multiple of 8 bytes.
func planRows(schema *arrow.Schema, recs []arrow.RecordBatch, skip int) (st *rowStage, rest []int) {
	var cols []rowCol
	for f := range schema.NumFields() {
		if f == skip {
			continue
		}
		col := rowCol{field: f, dt: schema.Field(f).Type}
		switch col.dt.ID() {
		case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32,
			arrow.INT64, arrow.UINT64, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
			arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
			arrow.DURATION, arrow.INTERVAL_MONTHS:
			col.kind, col.width = rowFixed, col.dt.(arrow.FixedWidthDataType).BitWidth()/8
		case arrow.STRING, arrow.BINARY:
			switch m := maxValueLen(recs, f); {
			case m <= 7:
				col.kind, col.width = rowStr1, 8
			case m <= 15:
				col.kind, col.width = rowStr2, 16
			default:
				rest = append(rest, f)
				continue
			}
		default:
			rest = append(rest, f)
			continue
		}
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		return nil, rest
	}
	// Widest first (stable: schema order among equals).
	slices.SortStableFunc(cols, func(a, b rowCol) int { return b.width - a.width })
	st = &rowStage{cols: cols}
	for j := range cols {
		cols[j].off = st.stride
		st.stride += cols[j].width
	}
	bits := 0
	for j := range cols {
		for _, r := range recs {
			if r.Column(cols[j].field).NullN() > 0 {
				cols[j].null = st.stride + bits/8
				cols[j].mask = 1 << (bits % 8)
				bits++
				break
			}
		}
	}
	st.stride += (bits + 7) / 8
	st.stride = (st.stride + 7) &^ 7
	return st, rest
}

// alloc makes room for n rows, zeroed, 8-byte aligned.
func (st *rowStage) alloc(n int) {
	words := make([]uint64, n*st.stride/8)
	st.data = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
}

// maxValueLen returns the length of the longest value of column f of
// recs, strings or binaries of 32-bit offsets.
func maxValueLen(recs []arrow.RecordBatch, f int) int {
	m := int32(0)
	for _, r := range recs {
		d := r.Column(f).Data()
		if d.Len() == 0 {
			continue
		}
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+d.Len()+1]
		prev := offs[0]
		for _, o := range offs[1:] {
			m = max(m, o-prev)
			prev = o
		}
	}
	return int(m)
}

// put writes the rows of rec to the rows dest of the stage (row r of rec
// to row dest[r]).
func (st *rowStage) put(rec arrow.RecordBatch, dest []int32) {
	for _, col := range st.cols {
		d := rec.Column(col.field).Data()
		off, n := d.Offset(), d.Len()
		if n == 0 {
			continue
		}
		vals := d.Buffers()[1].Bytes()
		switch col.kind {
		case rowFixed:
			switch col.width {
			case 1:
				putFixed(st.data, st.stride, col.off, dest, vals[off:off+n])
			case 2:
				putFixed(st.data, st.stride, col.off, dest, arrow.Uint16Traits.CastFromBytes(vals)[off:off+n])
			case 4:
				putFixed(st.data, st.stride, col.off, dest, arrow.Uint32Traits.CastFromBytes(vals)[off:off+n])
			default:
				putFixed(st.data, st.stride, col.off, dest, arrow.Uint64Traits.CastFromBytes(vals)[off:off+n])
			}
		default:
			offs := arrow.Int32Traits.CastFromBytes(vals)[off : off+n+1]
			var data []byte
			if b := d.Buffers()[2]; b != nil {
				data = b.Bytes()
			}
			putStrings(st.data, st.stride, col.off, col.kind == rowStr2, dest, offs, data)
		}
		if col.mask == 0 || d.NullN() == 0 {
			continue
		}
		valid := d.Buffers()[0].Bytes()
		for r, p := range dest {
			if !bitutil.BitIsSet(valid, off+r) {
				row := st.data[int(p)*st.stride : int(p+1)*st.stride]
				row[col.null] |= col.mask
				// A NULL string is empty (its bytes, if any, are not
				// copied); a NULL number keeps the bytes under it.
				if col.kind != rowFixed {
					clear(row[col.off : col.off+col.width])
				}
			}
		}
	}
}

// putFixed writes vals[r] at offset off of row dest[r] of data.
func putFixed[T uint8 | uint16 | uint32 | uint64](data []byte, stride, off int, dest []int32, vals []T) {
	vals = vals[:len(dest)]
	size := int(unsafe.Sizeof(T(0)))
	for r, p := range dest {
		b := data[int(p)*stride+off:][:size]
		*(*T)(unsafe.Pointer(unsafe.SliceData(b))) = vals[r]
	}
}

// putStrings writes the strings offs of data at offset off of rows dest:
// in 8 bytes, or 16 when two.
func putStrings(rows []byte, stride, off int, two bool, dest []int32, offs []int32, data []byte) {
	offs = offs[:len(dest)+1]
	for r, p := range dest {
		s := data[offs[r]:offs[r+1]]
		b := rows[int(p)*stride+off:]
		n := uint64(len(s))
		if !two {
			binary.LittleEndian.PutUint64(b, loadWord(s)|n<<56)
			continue
		}
		if len(s) <= 8 {
			binary.LittleEndian.PutUint64(b, loadWord(s))
			binary.LittleEndian.PutUint64(b[8:], n<<56)
		} else {
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(s))
			binary.LittleEndian.PutUint64(b[8:], loadWord(s[8:])|n<<56)
		}
	}
}

// loadWord returns the first up to 8 bytes of s, little-endian, the bytes
// beyond len(s) zero.
func loadWord(s []byte) uint64 {
	if len(s) >= 8 {
		return binary.LittleEndian.Uint64(s)
	}
	if cap(s) >= 8 {
		return binary.LittleEndian.Uint64(s[:8]) & (1<<(8*len(s)) - 1)
	}
	var x uint64
	for i, c := range s {
		x |= uint64(c) << (8 * i)
	}
	return x
}

// columns sets cols[f] for each column f of the stage to its rows from
// to to, from buffers of mem.
func (st *rowStage) columns(mem memory.Allocator, from, to int, cols []arrow.Array) {
	n := to - from
	rows := st.data[from*st.stride : to*st.stride]
	for _, col := range st.cols {
		var valid *memory.Buffer
		nulls := 0
		if col.mask != 0 {
			valid, nulls = st.validity(mem, rows, col, n)
		}
		var bufs []*memory.Buffer
		switch col.kind {
		case rowFixed:
			b := memory.NewResizableBuffer(mem)
			b.Resize(n * col.width)
			out := b.Bytes()
			switch col.width {
			case 1:
				getFixed(out[:n], rows, st.stride, col.off)
			case 2:
				getFixed(arrow.Uint16Traits.CastFromBytes(out)[:n], rows, st.stride, col.off)
			case 4:
				getFixed(arrow.Uint32Traits.CastFromBytes(out)[:n], rows, st.stride, col.off)
			default:
				getFixed(arrow.Uint64Traits.CastFromBytes(out)[:n], rows, st.stride, col.off)
			}
			bufs = []*memory.Buffer{valid, b}
		default:
			bufs = getStrings(mem, rows, st.stride, col.off, col.kind == rowStr2, n)
			bufs[0] = valid
		}
		d := array.NewData(col.dt, n, bufs, nil, nulls, 0)
		cols[col.field] = array.MakeFromData(d)
		d.Release()
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}
}

// getFixed sets out[i] to the value at offset off of row i of rows.
func getFixed[T uint8 | uint16 | uint32 | uint64](out []T, rows []byte, stride, off int) {
	size := int(unsafe.Sizeof(T(0)))
	for i := range out {
		b := rows[i*stride+off:][:size]
		out[i] = *(*T)(unsafe.Pointer(unsafe.SliceData(b)))
	}
}

// getStrings returns the buffers of a string or binary array of the
// strings at offset off of rows (the first, for the validity bitmap,
// nil).
func getStrings(mem memory.Allocator, rows []byte, stride, off int, two bool, n int) []*memory.Buffer {
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(4 * (n + 1))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())[:n+1]
	last := off + 7 // the length byte
	if two {
		last += 8
	}
	total := int32(0)
	for i := range n {
		offs[i] = total
		total += int32(rows[i*stride+last])
	}
	offs[n] = total
	// Each string is written 8 or 16 bytes at a time: the bytes beyond its
	// length are overwritten by the next string's, or are past the end
	// (the slack of 16 bytes).
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(total) + 16)
	data := db.Bytes()
	for i := range n {
		o := offs[i]
		b := rows[i*stride+off:]
		binary.LittleEndian.PutUint64(data[o:], binary.LittleEndian.Uint64(b))
		if two {
			binary.LittleEndian.PutUint64(data[o+8:], binary.LittleEndian.Uint64(b[8:]))
		}
	}
	db.ResizeNoShrink(int(total))
	return []*memory.Buffer{nil, ob, db}
}

// validity returns the validity bitmap of col in rows (nil when none of
// them is NULL), and its number of NULLs.
func (st *rowStage) validity(mem memory.Allocator, rows []byte, col rowCol, n int) (*memory.Buffer, int) {
	nulls := 0
	for i := range n {
		if rows[i*st.stride+col.null]&col.mask != 0 {
			nulls++
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(n))))
	bm := b.Bytes()
	for i := range n {
		bitutil.SetBitTo(bm, i, rows[i*st.stride+col.null]&col.mask == 0)
	}
	return b, nulls
}
