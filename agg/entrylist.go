package agg

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// NewResultBuilder returns a builder for the results of f: the builder
// of f's own when it has one (a builder its states fill without a
// function call per value), else array.NewBuilder's. Operators that
// append the results of many rows should take their builders here. The
// builder takes f's results only (f's states append to it).
func NewResultBuilder(mem memory.Allocator, f Func) array.Builder {
	if rb, ok := f.(resultBuilderFunc); ok {
		if b := rb.newResultBuilder(mem); b != nil {
			return b
		}
	}
	return array.NewBuilder(mem, f.ResultType())
}

// resultBuilderFunc is a Func with a result builder of its own; nil
// means none for this instance.
type resultBuilderFunc interface {
	newResultBuilder(mem memory.Allocator) array.Builder
}

// entryListBuilder builds arrays of lists of (string or int64, 64-bit
// number) entries in plain slices, copied into mem's buffers once per
// array: list<struct<value: utf8 or int64, count: int64>> (topn_frequency
// of strings or int64s) and map<utf8 or int64, int64 or float64> (*_cate
// of sum, count or avg by string or int64 categories). Arrow's
// builders took about 50 ns an entry (a struct bit, an offset, the bytes
// and the number, each checking its capacity; 1.65 of 11.1 CPU s of ml-3
// for topn_frequency alone), these slices under 10. Rows not yet taken
// by NewArray are in Go's heap, not mem; the slices keep their capacity
// for the next array.
//
// It implements the exported methods of array.Builder on its own storage,
// but for the JSON ones (UnmarshalOne and Unmarshal take a type internal
// to Arrow; UnmarshalJSON and AppendValueFromString return an error). Those
// and the unexported ones, which only Arrow's nested builders call on
// their children and its JSON reader on its own builders, are not
// implemented: it is neither.
type entryListBuilder struct {
	array.Builder // nil: carries the unexported methods of the interface

	mem  memory.Allocator
	dt   arrow.DataType // a *arrow.ListType or *arrow.MapType
	elem *arrow.StructType
	refs atomic.Int64

	// offs[i] is the first entry of row i; offs[rows] the number of
	// entries. nulls are the NULL rows, ascending.
	offs  []int32
	nulls []int32
	// The entries: value i is data[voff[i]:voff[i+1]] (or ints[i] when
	// ints is set), its number words[i] (the bits of a float64 for a
	// float column), NULL when i is in wnulls (ascending).
	voff   []int32
	data   []byte
	ints   []int64
	intKey bool
	words  []uint64
	wnulls []int32
}

// wordResult is a state whose result is one int64 or float64 (as its
// Func's result type says), or NULL: what an entryListBuilder takes as
// a map item without a builder.
type wordResult interface {
	// resultWord returns the result's bits (math.Float64bits of a
	// float), and false for NULL.
	resultWord() (uint64, bool)
}

// entryListType returns the entries' struct type when dt is a list or
// map whose entries entryListBuilder builds: a non-NULL string or int64,
// then an int64 or a float64.
func entryListType(dt arrow.DataType) (*arrow.StructType, bool) {
	var elem arrow.DataType
	switch t := dt.(type) {
	case *arrow.ListType:
		elem = t.Elem()
	case *arrow.MapType:
		elem = t.Elem()
	default:
		return nil, false
	}
	st, ok := elem.(*arrow.StructType)
	if !ok || st.NumFields() != 2 {
		return nil, false
	}
	switch st.Field(1).Type.ID() {
	case arrow.INT64, arrow.FLOAT64:
	default:
		return nil, false
	}
	switch st.Field(0).Type.ID() {
	case arrow.STRING, arrow.INT64:
		return st, true
	}
	return nil, false
}

// entryListBuilderOf returns an entryListBuilder for results of type dt,
// or nil when it cannot build them.
func entryListBuilderOf(mem memory.Allocator, dt arrow.DataType) array.Builder {
	if elem, ok := entryListType(dt); ok {
		return newEntryListBuilder(mem, dt, elem)
	}
	return nil
}

func newEntryListBuilder(mem memory.Allocator, dt arrow.DataType, elem *arrow.StructType) *entryListBuilder {
	b := &entryListBuilder{mem: mem, dt: dt, elem: elem, offs: []int32{0}, voff: []int32{0},
		intKey: elem.Field(0).Type.ID() == arrow.INT64}
	b.refs.Store(1)
	return b
}

// add appends an entry to the current row, which endRow ends: v and the
// number whose bits are w, or NULL unless valid.
func (b *entryListBuilder) add(v string, w uint64, valid bool) {
	if !valid {
		b.wnulls = append(b.wnulls, int32(len(b.words)))
	}
	b.data = append(b.data, v...)
	b.voff = append(b.voff, int32(len(b.data)))
	b.words = append(b.words, w)
}

// addInt is add for int64 values.
func (b *entryListBuilder) addInt(v int64, w uint64, valid bool) {
	if !valid {
		b.wnulls = append(b.wnulls, int32(len(b.words)))
	}
	b.ints = append(b.ints, v)
	b.words = append(b.words, w)
}

// endRow appends a row of the entries added since the last row.
func (b *entryListBuilder) endRow() { b.offs = append(b.offs, int32(len(b.words))) }

// Type returns the list type.
func (b *entryListBuilder) Type() arrow.DataType { return b.dt }

// Retain adds a reference.
func (b *entryListBuilder) Retain() { b.refs.Add(1) }

// Release drops a reference, and the storage with the last.
func (b *entryListBuilder) Release() {
	if b.refs.Add(-1) == 0 {
		b.offs, b.nulls, b.voff, b.data, b.ints, b.words, b.wnulls = nil, nil, nil, nil, nil, nil, nil
	}
}

// Len returns the number of rows.
func (b *entryListBuilder) Len() int { return len(b.offs) - 1 }

// Cap returns the rows there is room for.
func (b *entryListBuilder) Cap() int { return cap(b.offs) - 1 }

// NullN returns the number of NULL rows.
func (b *entryListBuilder) NullN() int { return len(b.nulls) }

// AppendNull appends a NULL row.
func (b *entryListBuilder) AppendNull() {
	b.nulls = append(b.nulls, int32(b.Len()))
	b.endRow()
}

// AppendNulls appends n NULL rows.
func (b *entryListBuilder) AppendNulls(n int) {
	for range n {
		b.AppendNull()
	}
}

// AppendEmptyValue appends an empty list.
func (b *entryListBuilder) AppendEmptyValue() { b.endRow() }

// AppendEmptyValues appends n empty lists.
func (b *entryListBuilder) AppendEmptyValues(n int) {
	for range n {
		b.endRow()
	}
}

// UnsafeAppendBoolToBitmap appends an empty row, NULL unless valid.
func (b *entryListBuilder) UnsafeAppendBoolToBitmap(valid bool) {
	if valid {
		b.endRow()
	} else {
		b.AppendNull()
	}
}

var errEntryListParse = errors.New("agg: result builders do not parse values")

// AppendValueFromString is not supported: result builders take states'
// results, not text.
func (b *entryListBuilder) AppendValueFromString(string) error { return errEntryListParse }

// UnmarshalJSON is not supported (see AppendValueFromString).
func (b *entryListBuilder) UnmarshalJSON([]byte) error { return errEntryListParse }

// Reserve makes room for n more rows.
func (b *entryListBuilder) Reserve(n int) { b.Resize(b.Len() + n) }

// Resize makes room for n rows in all. Unlike Arrow's builders it never
// drops rows (theirs drop top-level rows but keep the children's).
func (b *entryListBuilder) Resize(n int) {
	b.offs = slices.Grow(b.offs, max(n, b.Len())+1-len(b.offs))
}

// IsNull reports whether row i is NULL.
func (b *entryListBuilder) IsNull(i int) bool {
	_, found := slices.BinarySearch(b.nulls, int32(i))
	return found
}

// SetNull makes row i NULL (its entries stay, unseen). Like Arrow's
// builders it panics for a row it does not hold.
func (b *entryListBuilder) SetNull(i int) {
	if i < 0 || i >= b.Len() {
		panic("agg: entryListBuilder: SetNull of a row out of range")
	}
	if p, found := slices.BinarySearch(b.nulls, int32(i)); !found {
		b.nulls = slices.Insert(b.nulls, p, int32(i))
	}
}

// NewArray returns the rows as an array of mem's buffers and empties the
// builder.
func (b *entryListBuilder) NewArray() arrow.Array {
	rows, n := b.Len(), len(b.words)
	if len(b.data) > math.MaxInt32 {
		// As Arrow's string builder does: 32-bit offsets have wrapped.
		panic("agg: entryListBuilder: over 2 GiB of strings in one array")
	}
	rowValid, wordValid := b.validity(b.nulls, rows), b.validity(b.wnulls, n)
	var vals []*memory.Buffer
	if b.intKey {
		vals = []*memory.Buffer{nil, b.copyOf(arrow.Int64Traits.CastToBytes(b.ints))}
	} else {
		vals = []*memory.Buffer{nil, b.copyOf(arrow.Int32Traits.CastToBytes(b.voff)), b.copyOf(b.data)}
	}
	words, offs := b.copyOf(arrow.Uint64Traits.CastToBytes(b.words)), b.copyOf(arrow.Int32Traits.CastToBytes(b.offs))
	// NewData takes references of its own to buffers and children.
	keys := array.NewData(b.elem.Field(0).Type, n, vals, nil, 0, 0)
	nums := array.NewData(b.elem.Field(1).Type, n, []*memory.Buffer{wordValid, words}, nil, len(b.wnulls), 0)
	entries := array.NewData(b.elem, n, []*memory.Buffer{nil}, []arrow.ArrayData{keys, nums}, 0, 0)
	list := array.NewData(b.dt, rows, []*memory.Buffer{rowValid, offs}, []arrow.ArrayData{entries}, len(b.nulls), 0)
	a := array.MakeFromData(list)
	for _, buf := range append(vals, rowValid, wordValid, words, offs) {
		if buf != nil {
			buf.Release()
		}
	}
	for _, d := range []*array.Data{keys, nums, entries, list} {
		d.Release()
	}
	b.offs, b.nulls, b.voff, b.data, b.ints = b.offs[:1], b.nulls[:0], b.voff[:1], b.data[:0], b.ints[:0]
	b.words, b.wnulls = b.words[:0], b.wnulls[:0]
	return a
}

// validity returns a validity bitmap of n bits in mem, clear at nulls
// (ascending), or nil when there are none.
func (b *entryListBuilder) validity(nulls []int32, n int) *memory.Buffer {
	if len(nulls) == 0 {
		return nil
	}
	buf := memory.NewResizableBuffer(b.mem)
	buf.Resize((n + 7) / 8)
	bitutil.SetBitsTo(buf.Bytes(), 0, int64(n), true)
	for _, i := range nulls {
		bitutil.ClearBit(buf.Bytes(), int(i))
	}
	return buf
}

// copyOf returns a buffer of mem holding a copy of p (one reference,
// the caller's).
func (b *entryListBuilder) copyOf(p []byte) *memory.Buffer {
	buf := memory.NewResizableBuffer(b.mem)
	buf.Resize(len(p))
	copy(buf.Bytes(), p)
	return buf
}
