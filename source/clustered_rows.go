package source

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowStage holds columns of a Clustered input (or part) row-major, in
// output order: row i is words[i*w : (i+1)*w], each column one word (a
// fixed-width value, or a string of up to 7 bytes) or two (a string of up
// to 15 bytes), and a word of null bits when a column has NULLs.
//
// The rows are placed in output order once, as the input is ordered, in
// one pass over each input column in input order: a row's words land in
// one cache line, written where a gather of the Arrow columns in output
// order would read each value of each column from wherever it is (ml-3's
// 5 M events: four columns, four cache misses a row, about 200 ns; see
// BENCHMARKS.md). Each batch of Read then reads the stage sequentially.
type rowStage struct {
	w     int
	words []uint64
	cols  []rowCol
	nulls int // the word of null bits; -1: no column has NULLs
}

// rowCol is a column of a rowStage.
type rowCol struct {
	field int // index in the schema
	dt    arrow.DataType
	word  int     // its (first) word in a row
	kind  rowKind // how it is held
	width int     // rowFixed: bytes of a value
	bit   uint64  // its bit in the null word; 0: no NULLs
}

type rowKind uint8

const (
	rowFixed rowKind = iota // a fixed-width value, zero-extended
	rowStr1                 // a string of up to 7 bytes; its length in the top byte
	rowStr2                 // a string of up to 15 bytes in two words; its length in the second's top byte
)

// rowStageMaxCols bounds the columns of a stage (one null word).
const rowStageMaxCols = 64

// planRows returns a stage for the columns of schema that recs can hold
// row-major (not skip, and at most rowStageMaxCols): fixed-width
// numbers, times and durations, and strings and binaries of 32-bit offsets
// none longer than 15 bytes; rest are the other columns, which Read
// gathers. A nil stage: no column can.
func planRows(schema *arrow.Schema, recs []arrow.RecordBatch, skip int) (st *rowStage, rest []int) {
	st = &rowStage{nulls: -1}
	anyNulls := false
	for f := range schema.NumFields() {
		if f == skip {
			continue
		}
		col := rowCol{field: f, dt: schema.Field(f).Type, word: st.w}
		ok := len(st.cols) < rowStageMaxCols
		if ok {
			switch col.dt.ID() {
			case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32,
				arrow.INT64, arrow.UINT64, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
				arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
				arrow.DURATION, arrow.INTERVAL_MONTHS:
				col.kind, col.width = rowFixed, col.dt.(arrow.FixedWidthDataType).BitWidth()/8
			case arrow.STRING, arrow.BINARY:
				switch m := maxValueLen(recs, f); {
				case m <= 7:
					col.kind = rowStr1
				case m <= 15:
					col.kind = rowStr2
				default:
					ok = false
				}
			default:
				ok = false
			}
		}
		if !ok {
			rest = append(rest, f)
			continue
		}
		for _, r := range recs {
			if r.Column(f).NullN() > 0 {
				col.bit = 1 << len(st.cols)
				anyNulls = true
				break
			}
		}
		st.w++
		if col.kind == rowStr2 {
			st.w++
		}
		st.cols = append(st.cols, col)
	}
	if len(st.cols) == 0 {
		return nil, rest
	}
	if anyNulls {
		st.nulls = st.w
		st.w++
	}
	return st, rest
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
				putFixed(st.words, st.w, col.word, dest, arrow.Uint8Traits.CastFromBytes(vals)[off:off+n])
			case 2:
				putFixed(st.words, st.w, col.word, dest, arrow.Uint16Traits.CastFromBytes(vals)[off:off+n])
			case 4:
				putFixed(st.words, st.w, col.word, dest, arrow.Uint32Traits.CastFromBytes(vals)[off:off+n])
			default:
				putFixed(st.words, st.w, col.word, dest, arrow.Uint64Traits.CastFromBytes(vals)[off:off+n])
			}
		default:
			offs := arrow.Int32Traits.CastFromBytes(vals)[off : off+n+1]
			var data []byte
			if b := d.Buffers()[2]; b != nil {
				data = b.Bytes()
			}
			putStrings(st.words, st.w, col.word, col.kind == rowStr2, dest, offs, data)
		}
		if col.bit == 0 || d.NullN() == 0 {
			continue
		}
		valid := d.Buffers()[0].Bytes()
		for r, p := range dest {
			if !bitutil.BitIsSet(valid, off+r) {
				row := st.words[int(p)*st.w : int(p+1)*st.w]
				row[st.nulls] |= col.bit
				row[col.word] = 0
				if col.kind == rowStr2 {
					row[col.word+1] = 0
				}
			}
		}
	}
}

func putFixed[T uint8 | uint16 | uint32 | uint64](words []uint64, w, word int, dest []int32, vals []T) {
	vals = vals[:len(dest)]
	for r, p := range dest {
		words[int(p)*w+word] = uint64(vals[r])
	}
}

// putStrings writes the strings offs of data: each in one word, or two
// when two.
func putStrings(words []uint64, w, word int, two bool, dest []int32, offs []int32, data []byte) {
	offs = offs[:len(dest)+1]
	for r, p := range dest {
		s := data[offs[r]:offs[r+1]]
		i := int(p)*w + word
		n := uint64(len(s))
		if !two {
			words[i] = loadWord(s) | n<<56
			continue
		}
		if len(s) <= 8 {
			words[i], words[i+1] = loadWord(s), n<<56
		} else {
			words[i], words[i+1] = binary.LittleEndian.Uint64(s), loadWord(s[8:])|n<<56
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
	rows := st.words[from*st.w : to*st.w]
	for _, col := range st.cols {
		var valid *memory.Buffer
		nulls := 0
		if col.bit != 0 {
			valid, nulls = st.validity(mem, rows, col.bit, n)
		}
		var bufs []*memory.Buffer
		switch col.kind {
		case rowFixed:
			b := memory.NewResizableBuffer(mem)
			b.Resize(n * col.width)
			out := b.Bytes()
			switch col.width {
			case 1:
				getFixed(arrow.Uint8Traits.CastFromBytes(out), rows, st.w, col.word)
			case 2:
				getFixed(arrow.Uint16Traits.CastFromBytes(out), rows, st.w, col.word)
			case 4:
				getFixed(arrow.Uint32Traits.CastFromBytes(out), rows, st.w, col.word)
			default:
				getFixed(arrow.Uint64Traits.CastFromBytes(out), rows, st.w, col.word)
			}
			bufs = []*memory.Buffer{valid, b}
		default:
			bufs = getStrings(mem, rows, st.w, col.word, col.kind == rowStr2, n)
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

func getFixed[T uint8 | uint16 | uint32 | uint64](out []T, rows []uint64, w, word int) {
	for i := range out {
		out[i] = T(rows[i*w+word])
	}
}

// getStrings returns the buffers of a string or binary array of the rows
// (the first, for the validity bitmap, nil).
func getStrings(mem memory.Allocator, rows []uint64, w, word int, two bool, n int) []*memory.Buffer {
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(4 * (n + 1))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())[:n+1]
	lenWord := word
	if two {
		lenWord++
	}
	total := int32(0)
	for i := range n {
		offs[i] = total
		total += int32(rows[i*w+lenWord] >> 56)
	}
	offs[n] = total
	// Each string is written a whole word or two at a time: the bytes
	// beyond its length are overwritten by the next string's, or are
	// past the end (the slack of 16 bytes).
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(total) + 16)
	data := db.Bytes()
	for i := range n {
		o := offs[i]
		binary.LittleEndian.PutUint64(data[o:], rows[i*w+word])
		if two {
			binary.LittleEndian.PutUint64(data[o+8:], rows[i*w+word+1])
		}
	}
	db.ResizeNoShrink(int(total))
	return []*memory.Buffer{nil, ob, db}
}

// validity returns the validity bitmap of the column of null bit bit in
// rows (nil when none of them is NULL), and its number of NULLs.
func (st *rowStage) validity(mem memory.Allocator, rows []uint64, bit uint64, n int) (*memory.Buffer, int) {
	nulls := 0
	for i := range n {
		if rows[i*st.w+st.nulls]&bit != 0 {
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
		bitutil.SetBitTo(bm, i, rows[i*st.w+st.nulls]&bit == 0)
	}
	return b, nulls
}
