package mempool

import "sync"

// Buffers of 4 KiB to 64 MiB are pooled, by powers of two; smaller and
// larger ones are Go's.
const (
	minShift = 12
	maxShift = 26
)

// Pool is a memory.Allocator that keeps freed buffers of 4 KiB to 64 MiB
// (by powers of two) for reuse, zeroed again when handed out, as Go's
// allocator does. Its zero value is ready to use; it is safe for
// concurrent use. Buffers a garbage collection finds pooled and unused
// for two cycles are dropped (sync.Pool), so an idle pool holds nothing.
type Pool struct {
	pools [maxShift - minShift + 1]sync.Pool // of *[]byte
}

// Shared is the pool the engine's parts share.
var Shared = &Pool{}

// class returns the pool of the buffers for size bytes (capacity
// 1<<(class+minShift)), or -1 for sizes outside the pools.
func class(size int) int {
	if size < 1<<minShift || size > 1<<maxShift {
		return -1
	}
	shift := minShift
	for 1<<shift < size {
		shift++
	}
	return shift - minShift
}

// Allocate returns size zero bytes.
func (p *Pool) Allocate(size int) []byte {
	c := class(size)
	if c < 0 {
		return make([]byte, size)
	}
	if b, ok := p.pools[c].Get().(*[]byte); ok {
		buf := (*b)[:size]
		clear(buf)
		return buf
	}
	return make([]byte, size, 1<<(c+minShift))
}

// Reallocate returns b resized to size bytes, its contents kept and the
// bytes added zero; b is freed if it had to move.
func (p *Pool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free gives b back to the pool when it came from it (its capacity is
// one of the pool's sizes); b must not be used afterwards.
func (p *Pool) Free(b []byte) {
	if c := class(cap(b)); c >= 0 && cap(b) == 1<<(c+minShift) {
		b = b[:0]
		p.pools[c].Put(&b)
	}
}
