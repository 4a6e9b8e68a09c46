package agg

import (
	"encoding/binary"
	"slices"
)

// freqSlot is a distinct value with its multiplicity.
type freqSlot[K comparable] struct {
	k K
	n int64
}

// freqIndex counts the multiplicities of distinct values like bag, with
// the counts in slots addressed by stable int32 numbers: a value already
// present costs one map lookup per change (bag costs a lookup and an
// assignment), and callers can keep pointer-free orders of slot numbers.
// Slots of vanished values are recycled.
type freqIndex[K comparable] struct {
	idx   map[K]int32
	slots []freqSlot[K]
	free  []int32
	total int64
}

// add changes the multiplicity of k by delta (clamped at 0) and returns
// its slot and its old and new multiplicities. When the new one is 0 the
// slot is released (its key kept until it is reused, for the caller).
func (f *freqIndex[K]) add(k K, delta int64) (int32, int64, int64) {
	s, ok := f.idx[k]
	if !ok {
		if delta <= 0 {
			return -1, 0, 0
		}
		if f.idx == nil {
			f.idx = make(map[K]int32)
		}
		if n := len(f.free); n > 0 {
			s = f.free[n-1]
			f.free = f.free[:n-1]
			f.slots[s] = freqSlot[K]{k: k}
		} else {
			s = int32(len(f.slots))
			f.slots = append(f.slots, freqSlot[K]{k: k})
		}
		f.idx[k] = s
	}
	e := &f.slots[s]
	old := e.n
	n := max(old+delta, 0)
	e.n = n
	f.total += n - old
	if n == 0 {
		delete(f.idx, k)
		f.free = append(f.free, s)
	}
	return s, old, n
}

// len is the number of distinct values.
func (f *freqIndex[K]) len() int { return len(f.idx) }

func (f *freqIndex[K]) reset() {
	clear(f.idx)
	clear(f.slots) // let the GC have the keys
	f.slots = f.slots[:0]
	f.free = f.free[:0]
	f.total = 0
}

// each calls fn for every distinct value with its multiplicity, in no
// particular order.
func (f *freqIndex[K]) each(fn func(k K, n int64)) {
	for _, s := range f.idx {
		e := &f.slots[s]
		fn(e.k, e.n)
	}
}

// appendBinary encodes the values as (key, count) pairs in key order: the
// encoding of bag.appendBinary.
func (f *freqIndex[K]) appendBinary(out []byte, ops *valueOps[K], cmp func(a, b K) int) []byte {
	live := make([]int32, 0, len(f.idx))
	for _, s := range f.idx {
		live = append(live, s)
	}
	slices.SortFunc(live, func(a, b int32) int { return cmp(f.slots[a].k, f.slots[b].k) })
	out = binary.AppendUvarint(out, uint64(len(live)))
	for _, s := range live {
		out = ops.enc(out, f.slots[s].k)
		out = binary.AppendVarint(out, f.slots[s].n)
	}
	return out
}
