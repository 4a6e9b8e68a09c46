package window

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/arrowutil"
)

// Results are the results of the rows an advance released, without the
// rows' input columns, in arrival (sequence) order: row k has sequence
// number Seq[k], and its value of aggregate a (in Config.ResultNames
// order) is row Row[k] of Cols[Chunk[k]][a].
//
// The rows of batches pushed with a Dest (PushRowsTo) are not among them:
// their results are in the Dests, and Done says how many rows of each
// batch are.
type Results struct {
	Seq        []int64
	Chunk, Row []int32
	Cols       [][]arrow.Array // [chunk][aggregate]
	Done       []Done
}

// Len is the number of rows whose results are in Cols.
func (r *Results) Len() int { return len(r.Seq) }

// Empty reports whether r holds no results at all.
func (r *Results) Empty() bool { return len(r.Seq) == 0 && len(r.Done) == 0 }

// Release releases the result arrays.
func (r *Results) Release() {
	for _, c := range r.Cols {
		arrowutil.ReleaseAll(c)
	}
	r.Cols = nil
}

// AdvanceResults is AdvanceFunc for a caller that keeps the input rows
// itself (several operators sharing input batches through PushRows, and a
// merger of their output that has those batches): it passes emit the
// results of the released rows only, in sequence order whatever
// Config.BatchOrder says, without gathering them into arrival order
// first. The caller then gathers each result once, with the input columns
// of its own batches, where AdvanceFunc's output would be gathered a
// second time. emit owns the Results (releases them, also on error).
func (o *Operator) AdvanceResults(ctx context.Context, wm int64, emit func(*Results) error) error {
	return o.advance(ctx, wm, true, func(rel []pendRow, res *resChunks, sc *scattered) error {
		out := &Results{}
		if !sc.all() {
			out.Cols = res.cols
			res.cols = nil
			n := len(rel)
			if sc != nil {
				n -= sc.rows
			}
			out.Seq = make([]int64, 0, n)
			out.Chunk = make([]int32, 0, n)
			out.Row = make([]int32, 0, n)
			if o.batchesInSeqOrder(rel) {
				o.resultsByBatch(rel, res, out, sc)
			} else {
				o.resultsSorted(rel, res, out, sc)
			}
		}
		if sc != nil {
			sc.finish()
			out.Done = sc.done
			o.consumeScattered(sc)
		}
		return emit(out)
	})
}

// resultsByBatch fills out from rel when batch order is sequence order:
// each row gets a slot by (batch, row), which read in order give the rows
// in sequence without a sort. Rows of the batches of sc are left out.
func (o *Operator) resultsByBatch(rel []pendRow, res *resChunks, out *Results, sc *scattered) {
	lo, hi := batchRange(rel)
	off := make([]int32, hi-lo+2)
	// The batches are looked up once, now: consume below may let one go
	// and, with it, the ids of batches let go before that follow it (the
	// held batches' base moves past them).
	hbs := make([]*heldBatch, hi-lo+1)
	for b := lo; b <= hi; b++ {
		n := 0
		if hb := o.held.get(b); hb != nil {
			hbs[b-lo] = hb
			n = hb.rows()
		}
		off[b-lo+1] = off[b-lo] + int32(n)
	}
	// slot holds (chunk<<32 | row in chunk) + 1; 0 is a row not released.
	slot := make([]int64, off[len(off)-1])
	c := 0
	for k, p := range rel {
		for c+1 < len(res.start) && res.start[c+1] <= k {
			c++
		}
		if sc.hasDest(p.batch) {
			continue
		}
		slot[off[p.batch-lo]+p.row] = int64(c)<<32 | int64(k-res.start[c]) + 1
	}
	for b := lo; b <= hi; b++ {
		hb := hbs[b-lo]
		if hb == nil || sc.hasDest(b) {
			continue
		}
		seq := hb.rec.Column(o.cfg.SeqCol).(*array.Int64).Int64Values()
		n := 0
		for j, v := range slot[off[b-lo]:off[b-lo+1]] {
			if v == 0 {
				continue
			}
			v--
			out.Seq = append(out.Seq, seq[hb.recRow(int32(j))])
			out.Chunk = append(out.Chunk, int32(v>>32))
			out.Row = append(out.Row, int32(v))
			n++
		}
		if n > 0 {
			o.consume(b, n)
		}
	}
}

// resultsSorted fills out from rel by sorting on sequence number. Rows of
// the batches of sc are left out.
func (o *Operator) resultsSorted(rel []pendRow, res *resChunks, out *Results, sc *scattered) {
	perm := make([]int32, 0, len(rel))
	for i, p := range rel {
		if !sc.hasDest(p.batch) {
			perm = append(perm, int32(i))
		}
	}
	slices.SortFunc(perm, func(a, b int32) int { return cmpInt(rel[a].seq, rel[b].seq) })
	counts := map[int32]int{}
	for _, k := range perm {
		c, r := res.at(int(k))
		out.Seq = append(out.Seq, rel[k].seq)
		out.Chunk = append(out.Chunk, c)
		out.Row = append(out.Row, r)
		counts[rel[k].batch]++
	}
	for id, n := range counts {
		o.consume(id, n)
	}
}
