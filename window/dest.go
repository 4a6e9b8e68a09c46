package window

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Dest holds the result columns of one input batch that several
// operators share (PushRowsTo): each writes the results of its own rows
// in place, at the rows' positions in the batch, and AdvanceResults then
// reports only how many rows of the batch are done (Results.Done). The
// caller, which has the batch, adds the results to it once every row is
// done (Arrays), without gathering them back into arrival order: the
// results are computed key by key, and gathering them row by row from
// the operators' result arrays read out of cache for every row.
//
// Operators write distinct rows of a Dest concurrently; nothing else
// touches it until the caller has learnt, through Results.Done, that
// every row is done. Its buffers are Go memory, so that an operator
// still writing after a failed run never writes into a released buffer.
type Dest struct {
	n     int
	types []arrow.DataType
	// vals holds per aggregate n values of its type's width, allocated
	// by the first operator to write (alloc): from the read of a batch
	// to the release of its rows, a batch run holds millions of rows.
	once sync.Once
	vals [][]byte
}

// Scatterable reports whether results of type dt can be written in place
// (Dest): fixed-width types of 1, 2, 4 or 8 bytes (integers, floats,
// timestamps, dates, durations).
func Scatterable(dt arrow.DataType) bool {
	return scatterWidth(dt) > 0
}

func scatterWidth(dt arrow.DataType) int {
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok {
		return 0
	}
	switch dt.(type) {
	case *arrow.DictionaryType, *arrow.BooleanType, *arrow.FixedSizeListType, *arrow.NullType:
		return 0
	}
	switch w := fw.BitWidth(); w {
	case 8, 16, 32, 64:
		return w / 8
	}
	return 0
}

// NewDest returns the Dest of a batch of rows rows whose results have
// types types (in Config.ResultNames order). Every type must be
// Scatterable.
func NewDest(types []arrow.DataType, rows int) (*Dest, error) {
	for _, dt := range types {
		if scatterWidth(dt) == 0 {
			return nil, fmt.Errorf("window: results of type %s cannot be written in place", dt)
		}
	}
	return &Dest{n: rows, types: types}, nil
}

// alloc allocates d's buffers, once.
func (d *Dest) alloc() {
	d.once.Do(func() {
		d.vals = make([][]byte, len(d.types))
		for a, dt := range d.types {
			w := scatterWidth(dt)
			// Allocated as words: 8-byte aligned for every width.
			words := make([]uint64, (d.n*w+7)/8)
			if len(words) > 0 {
				d.vals[a] = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), d.n*w)
			}
		}
	})
}

// fits returns an error unless d is a Dest for rec with results types.
func (d *Dest) fits(rec arrow.RecordBatch, types []arrow.DataType) error {
	if d.n != int(rec.NumRows()) {
		return fmt.Errorf("window: PushRowsTo: a Dest of %d rows for a batch of %d", d.n, rec.NumRows())
	}
	if len(d.types) != len(types) {
		return fmt.Errorf("window: PushRowsTo: a Dest of %d results for an operator of %d", len(d.types), len(types))
	}
	for a, dt := range types {
		if !arrow.TypeEqual(dt, d.types[a]) {
			return fmt.Errorf("window: PushRowsTo: result %d of the Dest is %s, of the operator %s", a, d.types[a], dt)
		}
	}
	return nil
}

// Rows is the number of rows of the batch.
func (d *Dest) Rows() int { return d.n }

// Arrays returns the result columns of the batch, once every row is done.
// nulls[a] lists the rows whose result of aggregate a is NULL (nil: none);
// Done.Nulls of the batch's Done entries, concatenated, give them. The
// arrays share the Dest's buffers; the caller releases them.
func (d *Dest) Arrays(nulls [][]int32) []arrow.Array {
	d.alloc() // a batch of no rows
	out := make([]arrow.Array, len(d.types))
	for a, dt := range d.types {
		var bm *memory.Buffer
		nn := 0
		if a < len(nulls) && len(nulls[a]) > 0 {
			bits := make([]byte, bitutil.BytesForBits(int64(d.n)))
			bitutil.SetBitsTo(bits, 0, int64(d.n), true)
			for _, r := range nulls[a] {
				bitutil.ClearBit(bits, int(r))
			}
			nn = len(nulls[a])
			bm = memory.NewBufferBytes(bits)
		}
		data := array.NewData(dt, d.n, []*memory.Buffer{bm, memory.NewBufferBytes(d.vals[a])}, nil, nn, 0)
		out[a] = array.MakeFromData(data)
		data.Release()
	}
	return out
}

// Done reports rows of a batch whose results an operator wrote into the
// batch's Dest.
type Done struct {
	Dest *Dest
	Rows int
	// Nulls[a] lists the rows (of the batch) among them whose result of
	// aggregate a is NULL; nil when there are none.
	Nulls [][]int32
}

// scattered writes the results of released rows whose batches have a
// Dest into those Dests, chunk by chunk as advance finishes them (while
// they are in cache), and then gives the Done of each such batch.
type scattered struct {
	lo    int32
	dests []*Dest // by batch - lo; nil for a batch without a Dest
	// pos[k] is the batch (from lo) and the batch row of released row k
	// (batch<<32 | row), -1 for a row whose batch has no Dest.
	pos    []int64
	counts []int       // rows by batch - lo
	nulls  [][][]int32 // [batch - lo][aggregate]: rows with a NULL result
	rows   int         // rows with a Dest
	done   []Done
	ids    []int32 // the batch of each Done
}

// hasDest reports whether batch id's rows went to a Dest.
func (s *scattered) hasDest(id int32) bool { return s != nil && s.dests[id-s.lo] != nil }

// all reports whether every released row has a Dest.
func (s *scattered) all() bool { return s != nil && s.rows == len(s.pos) }

// newScattered returns the scattered of the released rows rel, nil when
// no batch of theirs has a Dest.
func (o *Operator) newScattered(rel []pendRow) *scattered {
	if len(rel) == 0 {
		return nil
	}
	lo, hi := batchRange(rel)
	nb := int(hi-lo) + 1
	dests := make([]*Dest, nb)
	any := false
	for b := range dests {
		if hb := o.held.get(lo + int32(b)); hb != nil && hb.dst != nil {
			dests[b] = hb.dst
			hb.dst.alloc()
			any = true
		}
	}
	if !any {
		return nil
	}
	o.scPos = resize(o.scPos, len(rel))
	sc := &scattered{lo: lo, dests: dests, pos: o.scPos, counts: make([]int, nb), nulls: make([][][]int32, nb)}
	for k, p := range rel {
		b := p.batch - lo
		if dests[b] == nil {
			sc.pos[k] = -1
			continue
		}
		sc.pos[k] = int64(b)<<32 | int64(o.held.get(p.batch).recRow(p.row))
		sc.counts[b]++
	}
	for _, n := range sc.counts {
		sc.rows += n
	}
	return sc
}

// chunk writes the results cols (one array per aggregate) of the released
// rows from start on.
func (sc *scattered) chunk(start int, cols []arrow.Array) {
	for a, src := range cols {
		ps := sc.pos[start : start+src.Len()]
		switch scatterWidth(src.DataType()) {
		case 8:
			scatterWords[uint64](ps, src, sc.dests, a)
		case 4:
			scatterWords[uint32](ps, src, sc.dests, a)
		case 2:
			scatterWords[uint16](ps, src, sc.dests, a)
		case 1:
			scatterWords[uint8](ps, src, sc.dests, a)
		}
		if src.NullN() == 0 {
			continue
		}
		for i, p := range ps {
			if p >= 0 && src.IsNull(i) {
				b := p >> 32
				if sc.nulls[b] == nil {
					sc.nulls[b] = make([][]int32, len(cols))
				}
				sc.nulls[b][a] = append(sc.nulls[b][a], int32(p))
			}
		}
	}
}

// finish gives the Done of each batch with a Dest.
func (sc *scattered) finish() {
	for b, n := range sc.counts {
		if n == 0 {
			continue
		}
		sc.done = append(sc.done, Done{Dest: sc.dests[b], Rows: n, Nulls: sc.nulls[b]})
		sc.ids = append(sc.ids, sc.lo+int32(b))
	}
}

// consumeScattered notes the rows of sc as emitted.
func (o *Operator) consumeScattered(sc *scattered) {
	for i, id := range sc.ids {
		o.consume(id, sc.done[i].Rows)
	}
}

// scatterWords writes the values of src (a result chunk) to the rows pos
// of dests' columns a (pos: batch<<32 | row; -1 for none).
func scatterWords[T uint8 | uint16 | uint32 | uint64](pos []int64, src arrow.Array, dests []*Dest, a int) {
	d := src.Data()
	buf := d.Buffers()[1]
	if buf == nil || src.Len() == 0 {
		return
	}
	var z T
	sz := int(unsafe.Sizeof(z))
	vals := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), buf.Len()/sz)[d.Offset():]
	outs := make([][]T, len(dests))
	for b, dst := range dests {
		if dst != nil && dst.n > 0 {
			outs[b] = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(dst.vals[a]))), dst.n)
		}
	}
	for i, p := range pos {
		if p < 0 {
			continue
		}
		outs[p>>32][int32(p)] = vals[i]
	}
}
