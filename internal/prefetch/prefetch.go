package prefetch

import "unsafe"

// Of prefetches the cache line of *p (nothing for nil).
func Of[T any](p *T) {
	if p != nil {
		addr(uintptr(unsafe.Pointer(p)))
	}
}

// Object prefetches every cache line of *p (nothing for nil).
func Object[T any](p *T) {
	var zero T
	Lines(unsafe.Pointer(p), unsafe.Sizeof(zero))
}

// Lines prefetches the cache lines of the n bytes from p. The bytes need
// not all belong to p's object: the addresses are only hints, computed as
// integers and never dereferenced.
func Lines(p unsafe.Pointer, n uintptr) {
	if p == nil {
		return
	}
	base := uintptr(p)
	for off := uintptr(0); off < n; off += 64 {
		addr(base + off)
	}
}
