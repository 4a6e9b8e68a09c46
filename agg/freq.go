package agg

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
)

// freqSlot is a distinct value with its multiplicity.
type freqSlot[K comparable] struct {
	k K
	n int64
}

// freqBucket is a bucket of a freqIndex's hash table: the top 32 bits of
// a value's hash and its slot number plus one (0: the bucket is empty).
type freqBucket struct {
	h uint32
	s int32
}

// freqIndex counts the multiplicities of distinct values like bag, with
// the counts in slots addressed by stable int32 numbers, so that callers
// can keep pointer-free orders of slot numbers. The values are found
// through an open-addressing hash table of 8-byte buckets (linear
// probing, at most 3/4 full, deletion by backward shift): a change hashes
// the value once and reads a few adjacent buckets and one slot, new and
// vanishing values included; the table grows from the buckets alone,
// without hashing the values again. The slots grow with the table, to
// the number of values it can hold (so about 26 bytes a value for string
// values, like a Go map[string]int64). Slots of vanished values are
// recycled.
type freqIndex[K comparable] struct {
	hash  func(K) uint64 // set at the first value
	tab   []freqBucket   // len 0 or a power of two
	shift uint8          // 32 - log2(len(tab))
	live  int            // distinct values (slots with n > 0)
	slots []freqSlot[K]
	// free is the first unused slot plus one (0: none); an unused slot's
	// n is -1 minus the next one's free.
	free  int32
	total int64
}

// freqIndexMin is the number of buckets of a freqIndex's first table.
const freqIndexMin = 4

// freqCap is the number of values a table of n buckets holds.
func freqCap(n int) int { return n - n/4 }

// hashSeed seeds the hashes of the value-keyed aggregates.
var hashSeed = maphash.MakeSeed()

// keyHasher returns the hash function of keys of type K. (The functions
// are package-level: a closure made here would be allocated per call.)
func keyHasher[K comparable]() func(K) uint64 {
	var f any
	switch any((*K)(nil)).(type) {
	case *string:
		f = hashString64
	case *int64:
		f = hashInt64
	case *uint64:
		f = mix64
	}
	if h, ok := f.(func(K) uint64); ok {
		return h
	}
	return hashComparable[K]
}

func hashString64(s string) uint64            { return maphash.String(hashSeed, s) }
func hashInt64(v int64) uint64                { return mix64(uint64(v)) }
func hashComparable[K comparable](k K) uint64 { return maphash.Comparable(hashSeed, k) }

// find returns the bucket of the value k with hash tag h, and its slot
// number, or the empty bucket where it would go and -1.
func (f *freqIndex[K]) find(k K, h uint32) (int, int32) {
	tab, mask := f.tab, len(f.tab)-1
	i := int(h >> f.shift)
	for {
		b := tab[i]
		if b.s == 0 {
			return i, -1
		}
		if b.h == h && f.slots[b.s-1].k == k {
			return i, b.s - 1
		}
		i = (i + 1) & mask
	}
}

// slotOf returns the slot of k, or -1.
func (f *freqIndex[K]) slotOf(k K) int32 {
	if f.live == 0 {
		return -1
	}
	_, s := f.find(k, uint32(f.hash(k)>>32))
	return s
}

// sizeHint makes the first table large enough for n values, if there is
// no table yet.
func (f *freqIndex[K]) sizeHint(n int) {
	if f.tab != nil || n <= freqCap(freqIndexMin) {
		return
	}
	b := freqIndexMin
	for freqCap(b) < n {
		b *= 2
	}
	f.grow(b)
}

// grow makes the table b buckets (or doubles it when b is 0), and the
// slots' capacity what it holds.
func (f *freqIndex[K]) grow(b int) {
	if f.hash == nil {
		f.hash = keyHasher[K]()
	}
	n := max(2*len(f.tab), freqIndexMin, b)
	slots := make([]freqSlot[K], len(f.slots), freqCap(n))
	copy(slots, f.slots)
	f.slots = slots
	old := f.tab
	f.tab = make([]freqBucket, n)
	f.shift = uint8(32 - bits.Len(uint(n-1)))
	mask := n - 1
	for _, b := range old {
		if b.s == 0 {
			continue
		}
		i := int(b.h >> f.shift)
		for f.tab[i].s != 0 {
			i = (i + 1) & mask
		}
		f.tab[i] = b
	}
}

// remove empties bucket i, moving later buckets of the same probe run
// back so that every value stays reachable from its home bucket.
func (f *freqIndex[K]) remove(i int) {
	tab, mask := f.tab, len(f.tab)-1
	for j := (i + 1) & mask; tab[j].s != 0; j = (j + 1) & mask {
		home := int(tab[j].h >> f.shift)
		// The value at j may move to i if i is not before its home
		// bucket along the run, that is if j is at least as far from its
		// home as from i.
		if (j-home)&mask >= (j-i)&mask {
			tab[i] = tab[j]
			i = j
		}
	}
	tab[i] = freqBucket{}
}

// add changes the multiplicity of k by delta (clamped at 0) and returns
// its slot and its old and new multiplicities. When the new one is 0 the
// slot is released (its key kept until it is reused, for the caller).
func (f *freqIndex[K]) add(k K, delta int64) (int32, int64, int64) {
	if f.tab == nil {
		if delta <= 0 {
			return -1, 0, 0
		}
		f.grow(0)
	}
	h := uint32(f.hash(k) >> 32)
	i, s := f.find(k, h)
	if s < 0 {
		if delta <= 0 {
			return -1, 0, 0
		}
		if f.live >= freqCap(len(f.tab)) {
			f.grow(0)
			i, _ = f.find(k, h)
		}
		if f.free > 0 {
			s = f.free - 1
			f.free = int32(-1 - f.slots[s].n)
			f.slots[s] = freqSlot[K]{k: k}
		} else {
			s = int32(len(f.slots))
			f.slots = append(f.slots, freqSlot[K]{k: k})
		}
		f.tab[i] = freqBucket{h: h, s: s + 1}
		f.live++
	}
	e := &f.slots[s]
	old := e.n
	n := max(old+delta, 0)
	e.n = n
	f.total += n - old
	if n == 0 {
		f.remove(i)
		f.live--
		e.n = int64(-1 - f.free)
		f.free = s + 1
	}
	return s, old, n
}

// len is the number of distinct values.
func (f *freqIndex[K]) len() int { return f.live }

func (f *freqIndex[K]) reset() {
	clear(f.tab)
	clear(f.slots) // let the GC have the keys
	f.slots = f.slots[:0]
	f.free = 0
	f.live = 0
	f.total = 0
}

// each calls fn for every distinct value with its multiplicity, in no
// particular order.
func (f *freqIndex[K]) each(fn func(k K, n int64)) {
	for i := range f.slots {
		if e := &f.slots[i]; e.n > 0 {
			fn(e.k, e.n)
		}
	}
}

// appendBinary encodes the values as (key, count) pairs in key order: the
// encoding of bag.appendBinary.
func (f *freqIndex[K]) appendBinary(out []byte, ops *valueOps[K], cmp func(a, b K) int) []byte {
	live := make([]int32, 0, f.live)
	for i := range f.slots {
		if f.slots[i].n > 0 {
			live = append(live, int32(i))
		}
	}
	slices.SortFunc(live, func(a, b int32) int { return cmp(f.slots[a].k, f.slots[b].k) })
	out = binary.AppendUvarint(out, uint64(len(live)))
	for _, s := range live {
		out = ops.enc(out, f.slots[s].k)
		out = binary.AppendVarint(out, f.slots[s].n)
	}
	return out
}
