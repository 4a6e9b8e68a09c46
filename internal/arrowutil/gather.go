package arrowutil

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/prefetch"
)

// Seg is a run of consecutive rows [Start, End) of source Src.
type Seg struct {
	Src        int32
	Start, End int32
}

// AppendSegs appends to segs the rows idx of source src, consecutive rows
// merged into one run.
func AppendSegs(segs []Seg, src int32, idx []int32) []Seg {
	for _, i := range idx {
		if k := len(segs) - 1; k >= 0 && segs[k].Src == src && segs[k].End == i {
			segs[k].End++
			continue
		}
		segs = append(segs, Seg{Src: src, Start: i, End: i + 1})
	}
	return segs
}

// AppendSeg appends row row of source src to segs, merged into the last
// run when it continues it.
func AppendSeg(segs []Seg, src, row int32) []Seg {
	if k := len(segs) - 1; k >= 0 && segs[k].Src == src && segs[k].End == row {
		segs[k].End++
		return segs
	}
	return append(segs, Seg{Src: src, Start: row, End: row + 1})
}

func segRows(segs []Seg) int {
	n := 0
	for _, s := range segs {
		n += int(s.End - s.Start)
	}
	return n
}

// Gather returns the rows segs of srcs (arrays of type dt), in order, as
// one array. Unlike compute's Take it sizes every buffer (including the
// children of lists, maps and structs, and string data) before copying, and
// copies each run and each list's contents with one move. Types it does not
// handle natively are concatenated and taken.
func Gather(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, segs []Seg) (arrow.Array, error) {
	if !gatherable(dt) {
		return gatherFallback(mem, srcs, segs)
	}
	ds := make([]arrow.ArrayData, len(srcs))
	for i, s := range srcs {
		ds[i] = s.Data()
	}
	d := gatherData(mem, dt, ds, segs, segRows(segs), scattered(segs, len(ds)))
	defer d.Release()
	return array.MakeFromData(d), nil
}

// GatherRecord returns the rows segs of recs (batches of schema) as one
// batch.
func GatherRecord(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, segs []Seg) (arrow.RecordBatch, error) {
	return GatherColumns(mem, schema, recs, nil, segs)
}

// GatherColumns returns the rows segs of the columns cols of recs as one
// batch of schema, whose k-th field is column cols[k] of recs (nil cols:
// every column, schema being that of recs). Columns left out are not
// copied at all.
func GatherColumns(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, cols []int, segs []Seg) (arrow.RecordBatch, error) {
	n := segRows(segs)
	out := make([]arrow.Array, 0, schema.NumFields())
	srcs := make([]arrow.Array, len(recs))
	for k := 0; k < schema.NumFields(); k++ {
		c := k
		if cols != nil {
			c = cols[k]
		}
		for j, r := range recs {
			srcs[j] = r.Column(c)
		}
		a, err := Gather(mem, schema.Field(k).Type, srcs, segs)
		if err != nil {
			ReleaseAll(out)
			return nil, err
		}
		out = append(out, a)
	}
	defer ReleaseAll(out)
	return array.NewRecordBatch(schema, out, int64(n)), nil
}

func gatherable(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.BooleanType, *arrow.NullType:
		return true
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		return true
	case *arrow.ListType:
		return gatherable(t.Elem())
	case *arrow.MapType:
		return gatherable(t.Elem()) // the struct of key and item
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !gatherable(f.Type) {
				return false
			}
		}
		return true
	case arrow.FixedWidthDataType:
		if _, ok := dt.(*arrow.DictionaryType); ok {
			return false
		}
		if _, ok := dt.(*arrow.FixedSizeListType); ok {
			return false
		}
		return t.BitWidth() >= 8 && t.BitWidth()%8 == 0
	}
	return false
}

func gatherFallback(mem memory.Allocator, srcs []arrow.Array, segs []Seg) (arrow.Array, error) {
	starts := make([]int32, len(srcs)+1)
	for i, s := range srcs {
		starts[i+1] = starts[i] + int32(s.Len())
	}
	idx := make([]int32, 0, segRows(segs))
	for _, s := range segs {
		for r := s.Start; r < s.End; r++ {
			idx = append(idx, starts[s.Src]+r)
		}
	}
	all, err := array.Concatenate(srcs, mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	ia := indexArray(mem, idx)
	defer ia.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	return compute.TakeArrayOpts(ctx, all, ia, compute.TakeOptions{BoundsCheck: false})
}

func newBuf(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// gatherValidity returns the validity bitmap of the gathered rows (nil
// when none is null) and the null count.
func gatherValidity(mem memory.Allocator, ds []arrow.ArrayData, segs []Seg, n int) (*memory.Buffer, int) {
	any := false
	for _, d := range ds {
		if mayHaveNulls(d) {
			any = true
			break
		}
	}
	if !any {
		return nil, 0
	}
	buf := newBuf(mem, int(bitutil.BytesForBits(int64(n))))
	out := buf.Bytes()
	clear(out)
	bms := make([][]byte, len(ds)) // nil: no NULLs
	offs := make([]int, len(ds))
	for i, d := range ds {
		if mayHaveNulls(d) {
			bms[i], offs[i] = d.Buffers()[0].Bytes(), d.Offset()
		}
	}
	pos, nulls := 0, 0
	for _, s := range segs {
		bm := bms[s.Src]
		if bm == nil {
			for r := s.Start; r < s.End; r++ {
				out[pos>>3] |= 1 << (pos & 7)
				pos++
			}
			continue
		}
		off := offs[s.Src]
		for r := s.Start; r < s.End; r++ {
			if i := off + int(r); bm[i>>3]&(1<<(i&7)) != 0 {
				out[pos>>3] |= 1 << (pos & 7)
			} else {
				nulls++
			}
			pos++
		}
	}
	return buf, nulls
}

// mayHaveNulls reports whether d may hold NULLs (the null count of a
// slice is unknown until computed).
func mayHaveNulls(d arrow.ArrayData) bool {
	n := d.NullN()
	if n < 0 {
		return len(d.Buffers()) > 0 && d.Buffers()[0] != nil
	}
	return n > 0
}

func bytesOf(b *memory.Buffer) []byte {
	if b == nil {
		return nil
	}
	return b.Bytes()
}

func castI32(b []byte) []int32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func castI64(b []byte) []int64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), len(b)/8)
}

func gatherData(mem memory.Allocator, dt arrow.DataType, ds []arrow.ArrayData, segs []Seg, n int, pf bool) arrow.ArrayData {
	if dt.ID() == arrow.NULL {
		return array.NewData(dt, n, []*memory.Buffer{nil}, nil, n, 0)
	}
	valid, nulls := gatherValidity(mem, ds, segs, n)
	if valid != nil {
		defer valid.Release()
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		buf := newBuf(mem, int(bitutil.BytesForBits(int64(n))))
		defer buf.Release()
		out := buf.Bytes()
		clear(out)
		bms := make([][]byte, len(ds))
		offs := make([]int, len(ds))
		for i, d := range ds {
			if d.Len() > 0 {
				bms[i], offs[i] = d.Buffers()[1].Bytes(), d.Offset()
			}
		}
		pos := 0
		for _, s := range segs {
			bm, off := bms[s.Src], offs[s.Src]
			for r := s.Start; r < s.End; r++ {
				if bitutil.BitIsSet(bm, off+int(r)) {
					bitutil.SetBit(out, pos)
				}
				pos++
			}
		}
		return array.NewData(dt, n, []*memory.Buffer{valid, buf}, nil, nulls, 0)
	case *arrow.StringType, *arrow.BinaryType:
		return gatherVar(mem, dt, ds, segs, n, valid, nulls, castI32, pf)
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		return gatherVar(mem, dt, ds, segs, n, valid, nulls, castI64, pf)
	case *arrow.ListType:
		return gatherList(mem, dt, t.Elem(), ds, segs, n, valid, nulls, pf)
	case *arrow.MapType:
		return gatherList(mem, dt, t.Elem(), ds, segs, n, valid, nulls, pf)
	case *arrow.StructType:
		children := make([]arrow.ArrayData, len(t.Fields()))
		// A struct's children are indexed by the struct's physical row.
		csegs := make([]Seg, len(segs))
		for k, s := range segs {
			off := int32(ds[s.Src].Offset())
			csegs[k] = Seg{Src: s.Src, Start: s.Start + off, End: s.End + off}
		}
		cds := make([]arrow.ArrayData, len(ds))
		for i, f := range t.Fields() {
			for k, d := range ds {
				cds[k] = d.Children()[i]
			}
			children[i] = gatherData(mem, f.Type, cds, csegs, n, pf)
		}
		defer func() {
			for _, c := range children {
				c.Release()
			}
		}()
		return array.NewData(dt, n, []*memory.Buffer{valid}, children, nulls, 0)
	case arrow.FixedWidthDataType:
		w := t.BitWidth() / 8
		buf := newBuf(mem, n*w)
		defer buf.Release()
		out := buf.Bytes()
		switch w {
		case 8:
			gatherWords(ds, segs, out, castI64, pf)
		case 4:
			gatherWords(ds, segs, out, castI32, pf)
		default:
			vals := make([][]byte, len(ds))
			for i, d := range ds {
				if d.Len() > 0 {
					vals[i] = d.Buffers()[1].Bytes()[d.Offset()*w:]
				}
			}
			pos := 0
			for _, s := range segs {
				pos += copy(out[pos:], vals[s.Src][int(s.Start)*w:int(s.End)*w])
			}
		}
		return array.NewData(dt, n, []*memory.Buffer{valid, buf}, nil, nulls, 0)
	}
	panic(fmt.Sprintf("arrowutil: gather of %s", dt))
}

// Rows gathered out of key order (pf: see scattered) miss the caches run
// after run, first on their offsets, then on their values. The loops over
// runs then prefetch the place of the run ahead runs on while they copy
// the current one, so that the misses overlap instead of waiting one
// after the other (BenchmarkGatherML3 release/list, 65 536 rows at random
// from two sources of 1 M, four alternating runs of 2 s: 120-158 CPU ns a
// row without, 114-129 with).
// Plain loads of the rows ahead (touching them) were slower than nothing:
// a load holds the CPU's reorder window, a prefetch does not. Runs read
// in order (a merge of sources read front to back) are left alone: there
// the prefetches cost 10-15 % and find the lines on their way already.
const ahead = 16

// scattered reports whether segs read their nsrc sources out of order:
// whether more than a quarter of the runs do not start where the
// previous run of their source ended.
func scattered(segs []Seg, nsrc int) bool {
	if len(segs) < 4*ahead {
		return false
	}
	end := make([]int32, nsrc)
	jumps := 0
	for _, s := range segs {
		if s.Start != end[s.Src] {
			jumps++
		}
		end[s.Src] = s.End
	}
	return 4*jumps > len(segs)
}

// prefetchRow prefetches v[i] (nothing when out of range).
func prefetchRow[T any](v []T, i int) {
	if uint(i) < uint(len(v)) {
		prefetch.Of(&v[i])
	}
}

// gatherWords gathers the values buffers of fixed-width arrays of 4- or
// 8-byte values into out, run by run (single rows without a copy call).
func gatherWords[T int32 | int64](ds []arrow.ArrayData, segs []Seg, out []byte, cast func([]byte) []T, pf bool) {
	vals := make([][]T, len(ds))
	for i, d := range ds {
		if d.Len() > 0 {
			vals[i] = cast(d.Buffers()[1].Bytes())[d.Offset():]
		}
	}
	o := cast(out)
	pos := 0
	for k, s := range segs {
		if pf && k+ahead < len(segs) {
			a := segs[k+ahead]
			prefetchRow(vals[a.Src], int(a.Start))
		}
		v := vals[s.Src]
		if s.End-s.Start == 1 {
			o[pos] = v[s.Start]
			pos++
			continue
		}
		pos += copy(o[pos:], v[s.Start:s.End])
	}
}

// gatherVar gathers variable-length binary and string arrays with offsets
// of type T (int32, or int64 for the large types), cast from buffer bytes
// by cast; each run of rows copies one run of value bytes.
//
// It works in two passes so that cache misses overlap: the first reads
// every run's offsets (writing the output offsets and noting where each
// run's bytes start), the second copies the bytes from those known
// places. Results gathered out of key order miss the cache on the offsets
// and again on the bytes; read in one loop, each copy had to wait for its
// own offsets first.
func gatherVar[T int32 | int64](mem memory.Allocator, dt arrow.DataType, ds []arrow.ArrayData, segs []Seg, n int, valid *memory.Buffer, nulls int, cast func([]byte) []T, pf bool) arrow.ArrayData {
	offs := make([][]T, len(ds))
	datas := make([][]byte, len(ds))
	for i, d := range ds {
		if d.Len() > 0 {
			offs[i] = cast(d.Buffers()[1].Bytes())[d.Offset():]
		}
		datas[i] = bytesOf(d.Buffers()[2])
	}
	var zero T
	ob := newBuf(mem, (n+1)*int(unsafe.Sizeof(zero)))
	defer ob.Release()
	out := cast(ob.Bytes())
	bases := make([]T, len(segs))
	pos, cur := 0, T(0)
	for k, s := range segs {
		if pf && k+ahead < len(segs) {
			a := segs[k+ahead]
			prefetchRow(offs[a.Src], int(a.Start))
		}
		o := offs[s.Src]
		base := o[s.Start]
		bases[k] = base
		if s.End-s.Start == 1 {
			out[pos] = cur
			pos++
		} else {
			for r := s.Start; r < s.End; r++ {
				out[pos] = cur + o[r] - base
				pos++
			}
		}
		cur += o[s.End] - base
	}
	out[pos] = cur
	db := newBuf(mem, int(cur))
	defer db.Release()
	data := db.Bytes()
	pos = 0
	for k, s := range segs {
		if pf && k+ahead < len(segs) {
			prefetchRow(datas[segs[k+ahead].Src], int(bases[k+ahead]))
		}
		from, to := out[pos], out[pos+int(s.End-s.Start)]
		pos += int(s.End - s.Start)
		base := bases[k]
		copy(data[from:to], datas[s.Src][base:base+to-from])
	}
	return array.NewData(dt, n, []*memory.Buffer{valid, ob, db}, nil, nulls, 0)
}

// gatherList gathers List and Map arrays (int32 offsets and one child):
// each run of rows is one run of the child.
func gatherList(mem memory.Allocator, dt, elem arrow.DataType, ds []arrow.ArrayData, segs []Seg, n int, valid *memory.Buffer, nulls int, pf bool) arrow.ArrayData {
	offs := make([][]int32, len(ds))
	cds := make([]arrow.ArrayData, len(ds))
	for i, d := range ds {
		if d.Len() > 0 {
			offs[i] = castI32(d.Buffers()[1].Bytes())[d.Offset():]
		}
		cds[i] = d.Children()[0]
	}
	ob := newBuf(mem, (n+1)*4)
	defer ob.Release()
	out := castI32(ob.Bytes())
	csegs := make([]Seg, 0, len(segs))
	pos, cur := 0, int32(0)
	for k, s := range segs {
		if pf && k+ahead < len(segs) {
			a := segs[k+ahead]
			prefetchRow(offs[a.Src], int(a.Start))
		}
		o := offs[s.Src]
		base := o[s.Start]
		for r := s.Start; r < s.End; r++ {
			out[pos] = cur + o[r] - base
			pos++
		}
		end := o[s.End]
		if end > base {
			// Offsets index the child's logical rows.
			csegs = AppendSegRun(csegs, s.Src, base, end)
		}
		cur += end - base
	}
	out[pos] = cur
	child := gatherData(mem, elem, cds, csegs, int(cur), pf)
	defer child.Release()
	return array.NewData(dt, n, []*memory.Buffer{valid, ob}, []arrow.ArrayData{child}, nulls, 0)
}

// AppendSegRun appends rows [start, end) of source src to segs, merged
// into the last run when it continues it.
func AppendSegRun(segs []Seg, src, start, end int32) []Seg {
	if k := len(segs) - 1; k >= 0 && segs[k].Src == src && segs[k].End == start {
		segs[k].End = end
		return segs
	}
	return append(segs, Seg{Src: src, Start: start, End: end})
}
