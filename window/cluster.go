package window

import (
	"errors"
	"fmt"
)

// Input clustered by key.
//
// A batch input whose rows come key by key (every row of a key before any
// row of the next: an export sorted by user, say) is far from time order,
// so a batch run would release nothing before its end and hold every row.
// Yet once the input has moved on to another key, the rows of the keys
// before are all there and their results final, whatever their times.
// FinishBefore says so: the caller, which knows where each key's rows
// start, passes the sequence number of the first row of the key still
// being read.

// ErrNotClustered is returned (wrapped) by a push of a row whose key had
// all its rows finished (FinishBefore) before: the input is not clustered
// by key after all.
var ErrNotClustered = errors.New("window: input not clustered by key")

// ErrKeyDropped is returned by Lookup for a key whose state was dropped
// once all its rows were released (FinishBefore with forget).
var ErrKeyDropped = errors.New("window: the key's state was dropped once its rows were out (input clustered by key)")

// FinishBefore tells the operator that the input is clustered by its key
// (or by part of it) and that every row with a sequence number below seq
// has come, with every other row of its key. The next advance (Advance,
// AdvanceFunc or AdvanceResults, at any watermark, the current one
// included) releases each pending row before seq, whatever its time; a
// row of a key so released pushed afterwards is refused with
// ErrNotClustered. With forget, the states of those keys are dropped once
// their rows are released (Lookup then answers ErrKeyDropped for them),
// unless the operator has a Config.Store (whose states are kept, and
// evicted to it with a memory budget). seq never goes back.
func (o *Operator) FinishBefore(seq int64, forget bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if seq <= o.finBelow {
		return
	}
	o.finBelow = seq
	o.forget = forget && o.cfg.Store == nil
	if o.finished == nil {
		o.finished = make([]uint64, 0, 64)
	}
}

// finish notes that key id had all its rows released by FinishBefore, and
// drops its state when the operator forgets such keys.
func (o *Operator) finish(id int32) {
	o.markFinished(id)
	if o.forget {
		o.states[id] = nil
	}
}

// markFinished sets key id's bit in finished.
func (o *Operator) markFinished(id int32) {
	w := int(id >> 6)
	if w >= len(o.finished) {
		o.finished = append(o.finished, make([]uint64, w+1-len(o.finished))...)
	}
	o.finished[w] |= 1 << (id & 63)
}

// isFinished reports whether key id had all its rows released by
// FinishBefore.
func (o *Operator) isFinished(id int32) bool {
	w := int(id >> 6)
	return w < len(o.finished) && o.finished[w]&(1<<(id&63)) != 0
}

// checkUnfinished refuses rows (ids, with their sequence numbers in seq,
// of rows sel) of a key finished before.
func (o *Operator) checkUnfinished(ids []int32, seq []int64, sel []int32) error {
	for j, id := range ids {
		if o.isFinished(id) {
			i := j
			if sel != nil {
				i = int(sel[j])
			}
			return fmt.Errorf("%w: the row with sequence number %d is of a key whose rows all came before row %d", ErrNotClustered, seq[i], o.finBelow)
		}
	}
	return nil
}

// checkFinished makes sure that every key rel (a release) finishes, that
// is has a row before finBelow of, has no row at or after it, released or
// still pending: such a key has rows on both sides of the first row of
// another key (the one FinishBefore named), so the input is not clustered
// by it.
func (o *Operator) checkFinished(rel []pendRow, finBelow int64) error {
	var pending map[int32]int64 // key of a pending row: its sequence number
	if o.pend.n > 0 {
		pending = make(map[int32]int64)
		for _, ch := range o.pend.chunks {
			for _, p := range ch {
				pending[p.key] = p.seq
			}
		}
	}
	for s := 0; s < len(rel); {
		e, before, after := s, false, int64(-1)
		for ; e < len(rel) && rel[e].key == rel[s].key; e++ {
			if rel[e].seq < finBelow {
				before = true
			} else {
				after = rel[e].seq
			}
		}
		if seq, ok := pending[rel[s].key]; ok && after < 0 {
			after = seq
		}
		if before && after >= 0 {
			return fmt.Errorf("%w: the row with sequence number %d is of a key with rows before row %d too, and another key's rows between", ErrNotClustered, after, finBelow)
		}
		s = e
	}
	return nil
}
