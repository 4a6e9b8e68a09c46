package pipeline

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
)

// partHeld names the part of a checkpoint holding the late rows a task of
// a later stage holds (lateHold).
func partHeld(stage, task int) string { return fmt.Sprintf("held-%d-%d", stage, task) }

// heldPartEpoch is the epoch of the last checkpoint that took a held
// part (for tests).
var heldPartEpoch atomic.Uint64

// lateHold keeps, in a task of a stage after the first (streaming, with
// allowed lateness), the rows an earlier stage applied late, until they
// can be applied as one task of each stage would apply them.
//
// With one task a stage receives the previous stage's output in its
// order: the rows a watermark w released, w itself, the late rows that
// stage applied while at w (in arrival order), the rows of the next
// watermark, and so on. So it applies each late row with its watermark
// at the row's floor (the sender's watermark when it applied the row):
// after every row on time up to the floor and the earlier late rows, and
// before any row released later. With several tasks the late rows of
// the senders interleave with their watermarks in any order; held here,
// the rows of floor f are applied once every sender has passed f (no
// more can come), in sequence order, with the task moved to f first.
type lateHold struct {
	floors []int64 // ascending, one per group
	recs   [][]arrow.RecordBatch
}

// add holds rec, late rows applied at floor.
func (h *lateHold) add(floor int64, rec arrow.RecordBatch) {
	i, found := slices.BinarySearch(h.floors, floor)
	if !found {
		h.floors = slices.Insert(h.floors, i, floor)
		h.recs = slices.Insert(h.recs, i, nil)
	}
	h.recs[i] = append(h.recs[i], rec)
}

// next returns the lowest floor held and whether there is one.
func (h *lateHold) next() (int64, bool) {
	if len(h.floors) == 0 {
		return 0, false
	}
	return h.floors[0], true
}

// take removes the rows of the lowest floor and returns them as one
// batch in sequence order (seq: the sequence column).
func (h *lateHold) take(mem memory.Allocator, schema *arrow.Schema, seq int) (arrow.RecordBatch, error) {
	recs := h.recs[0]
	h.floors, h.recs = h.floors[1:], h.recs[1:]
	defer arrowutil.ReleaseAll(recs)
	type ref struct {
		seq      int64
		src, row int32
	}
	var refs []ref
	for k, rec := range recs {
		for i, s := range rec.Column(seq).(*array.Int64).Int64Values() {
			refs = append(refs, ref{s, int32(k), int32(i)})
		}
	}
	slices.SortStableFunc(refs, func(a, b ref) int { return cmp64(a.seq, b.seq) })
	segs := make([]arrowutil.Seg, 0, len(refs))
	for _, r := range refs {
		segs = arrowutil.AppendSeg(segs, r.src, r.row)
	}
	return arrowutil.GatherRecord(mem, schema, recs, segs)
}

// discard releases what h holds.
func (h *lateHold) discard() {
	for _, g := range h.recs {
		arrowutil.ReleaseAll(g)
	}
	h.floors, h.recs = nil, nil
}

// heldState is the header of a task's held part: the floor of each group
// of batches in the IPC payload.
type heldState struct {
	Floors []int64 `json:"floors"`
}

// checkpoint encodes what h holds; the rows stay held.
func (h *lateHold) checkpoint(schema *arrow.Schema) ([]byte, error) {
	return encodeStatePart(heldState{Floors: h.floors}, schema, h.recs)
}

// restore replaces what h holds by the rows of a held part.
func (h *lateHold) restore(mem memory.Allocator, schema *arrow.Schema, data []byte) error {
	var st heldState
	groups, err := decodeStatePart(mem, schema, data, &st)
	if err != nil {
		return fmt.Errorf("held part: %w", err)
	}
	if len(groups) != len(st.Floors) || !slices.IsSorted(st.Floors) {
		for _, g := range groups {
			arrowutil.ReleaseAll(g)
		}
		return fmt.Errorf("held part: %d groups of rows for %d floors", len(groups), len(st.Floors))
	}
	h.discard()
	h.floors, h.recs = st.Floors, groups
	return nil
}
