// Package arrowutil holds small Arrow helpers shared by the engine's
// packages: row selection across batches and projections.
package arrowutil

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ReleaseAll releases every element of xs.
func ReleaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		x.Release()
	}
}

func indexArray(mem memory.Allocator, idx []int32) arrow.Array {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.AppendValues(idx, nil)
	return b.NewArray()
}

// TakeArrays returns rows idx of every column (see Gather).
func TakeArrays(mem memory.Allocator, cols []arrow.Array, idx []int32) ([]arrow.Array, error) {
	segs := AppendSegs(make([]Seg, 0, len(idx)), 0, idx)
	out := make([]arrow.Array, 0, len(cols))
	src := make([]arrow.Array, 1)
	for _, c := range cols {
		src[0] = c
		t, err := Gather(mem, c.DataType(), src, segs)
		if err != nil {
			ReleaseAll(out)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Take returns rows idx of rec.
func Take(mem memory.Allocator, rec arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols, err := TakeArrays(mem, rec.Columns(), idx)
	if err != nil {
		return nil, err
	}
	defer ReleaseAll(cols)
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(idx))), nil
}

// Concat concatenates batches of one schema.
func Concat(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, 0, schema.NumFields())
	parts := make([]arrow.Array, len(recs))
	var total int64
	for _, r := range recs {
		total += r.NumRows()
	}
	for c := 0; c < schema.NumFields(); c++ {
		for k, r := range recs {
			parts[k] = r.Column(c)
		}
		cat, err := array.Concatenate(parts, mem)
		if err != nil {
			ReleaseAll(cols)
			return nil, err
		}
		cols = append(cols, cat)
	}
	defer ReleaseAll(cols)
	return array.NewRecordBatch(schema, cols, total), nil
}

// TakeConcat returns rows idx of the concatenation of recs, without
// concatenating them (see Gather).
func TakeConcat(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	starts := make([]int32, len(recs)+1)
	for i, r := range recs {
		starts[i+1] = starts[i] + int32(r.NumRows())
	}
	segs := make([]Seg, 0, len(idx))
	src := 0
	for _, i := range idx {
		if i < starts[src] || i >= starts[src+1] {
			src = sort.Search(len(recs), func(k int) bool { return starts[k+1] > i })
		}
		segs = AppendSeg(segs, int32(src), i-starts[src])
	}
	return GatherColumns(mem, schema, recs, nil, segs)
}

// Select returns the columns idx of rec under schema (zero-copy).
func Select(schema *arrow.Schema, rec arrow.RecordBatch, idx []int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(idx))
	for k, i := range idx {
		cols[k] = rec.Column(i)
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows())
}
