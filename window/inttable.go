package window

import "math/bits"

// intTable maps int64 keys to key ids: open addressing with linear
// probing over one array of (key, id) slots, kept at most half full. A
// lookup of a key not in cache costs one miss, where Go's map reads its
// control word and then the slot (the key index of a single int64
// column, looked up for every input row, was 5 % of features-4's CPU).
type intTable struct {
	slots []intSlot
	n     int
	shift uint // 64 - log2(len(slots))
}

// intSlot holds a key and its id + 1; id 0 marks an empty slot.
type intSlot struct {
	key int64
	id  int32
}

func (t *intTable) home(key int64) int { return fibHome(uint64(key), t.shift) }

// fibHome is the home slot of key in a table whose size is 2^(64-shift):
// Fibonacci hashing, the top bits of the product, which spread
// consecutive and strided keys alike.
func fibHome(key uint64, shift uint) int { return int(key * 0x9E3779B97F4A7C15 >> shift) }

// halfFullSize is the number of slots (a power of two, at least least)
// of an open-addressing table holding n keys at most half full.
func halfFullSize(n, least int) int {
	size := least
	for size < 2*(n+1) {
		size *= 2
	}
	return size
}

// fibShift is the shift fibHome takes for a table of size slots (a power
// of two).
func fibShift(size int) uint { return uint(64 - bits.Len(uint(size-1))) }

// get returns the id of key.
func (t *intTable) get(key int64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// put sets the id of key (new or not).
func (t *intTable) put(key int64, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = intSlot{key, id + 1}
			t.n++
			return
		}
		if s.key == key {
			s.id = id + 1
			return
		}
	}
}

func (t *intTable) grow() { t.resize(max(2*len(t.slots), 64)) }

// reserve makes room for n keys without growing. A table filled from
// another one's slots needs it: those come in the order of their hashes,
// whose top bits are a smaller table's homes too, so that filling a
// table that grows on the way piles each stretch of keys onto a few
// homes: quadratic probing, in effect (BenchmarkKeyIndexRenumber, 160 000
// keys kept of 320 000: 803 ms without, 4-5 ms with).
func (t *intTable) reserve(n int) {
	if size := halfFullSize(n, 64); size > len(t.slots) {
		t.resize(size)
	}
}

// resize moves the keys into a table of size slots (a power of two).
func (t *intTable) resize(size int) {
	old := t.slots
	t.slots = make([]intSlot, size)
	t.shift = fibShift(size)
	t.n = 0
	for _, s := range old {
		if s.id != 0 {
			t.put(s.key, s.id-1)
		}
	}
}

// len is the number of keys.
func (t *intTable) len() int { return t.n }
