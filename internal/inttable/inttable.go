package inttable

import (
	"iter"
	"math/bits"
)

// Table maps int64 keys to non-negative int32 ids. The zero value is an
// empty table ready for use. It is not safe for concurrent use.
type Table struct {
	slots []slot
	n     int
	shift uint // 64 - log2(len(slots))
}

// slot holds a key and its id + 1; id 0 marks an empty slot.
type slot struct {
	key int64
	id  int32
}

// Home is the home slot of key in a table whose size is 2^(64-shift):
// Fibonacci hashing, the top bits of the product, which spread
// consecutive and strided keys alike.
func Home(key uint64, shift uint) int { return int(key * 0x9E3779B97F4A7C15 >> shift) }

// Shift is the shift Home takes for a table of size slots (a power of
// two).
func Shift(size int) uint { return uint(64 - bits.Len(uint(size-1))) }

// HalfFullSize is the number of slots (a power of two, at least least,
// which must be a power of two) of an open-addressing table holding n
// keys at most half full.
func HalfFullSize(n, least int) int {
	size := least
	for size < 2*(n+1) {
		size *= 2
	}
	return size
}

// Get returns the id of key, and whether key is in the table.
func (t *Table) Get(key int64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := Home(uint64(key), t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// Put sets the id of key, new or not. id must be non-negative and below
// math.MaxInt32.
func (t *Table) Put(key int64, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(2*len(t.slots), 64))
	}
	mask := len(t.slots) - 1
	for i := Home(uint64(key), t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = slot{key, id + 1}
			t.n++
			return
		}
		if s.key == key {
			s.id = id + 1
			return
		}
	}
}

// Reserve makes room for n keys without growing. A table filled from
// another one's keys (All) needs it: those come in the order of their
// hashes, whose top bits are a smaller table's homes too, so that filling
// a table that grows on the way piles each stretch of keys onto a few
// homes: quadratic probing, in effect (window's BenchmarkKeyIndexRenumber,
// 160 000 keys kept of 320 000: 803 ms without, 4-5 ms with).
func (t *Table) Reserve(n int) {
	if size := HalfFullSize(n, 64); size > len(t.slots) {
		t.resize(size)
	}
}

// resize moves the keys into a table of size slots (a power of two).
func (t *Table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	t.shift = Shift(size)
	t.n = 0
	for _, s := range old {
		if s.id != 0 {
			t.Put(s.key, s.id-1)
		}
	}
}

// Len is the number of keys.
func (t *Table) Len() int { return t.n }

// All yields the keys and their ids, in no particular order. The table
// must not change during the iteration.
func (t *Table) All() iter.Seq2[int64, int32] {
	return func(yield func(int64, int32) bool) {
		for _, s := range t.slots {
			if s.id != 0 && !yield(s.key, s.id-1) {
				return
			}
		}
	}
}
