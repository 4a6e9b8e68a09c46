package testutil

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// RecordingAllocator is Go's allocator (a memory.Allocator) remembering
// every buffer it gave, so that a test can tell whether an array holds
// one of them (Gave). It is safe for concurrent use.
type RecordingAllocator struct {
	mu   sync.Mutex
	bufs map[unsafe.Pointer]bool
}

func (a *RecordingAllocator) note(b []byte) []byte {
	if cap(b) > 0 {
		a.mu.Lock()
		if a.bufs == nil {
			a.bufs = map[unsafe.Pointer]bool{}
		}
		a.bufs[unsafe.Pointer(unsafe.SliceData(b))] = true
		a.mu.Unlock()
	}
	return b
}

// Allocate returns n zero bytes, remembered.
func (a *RecordingAllocator) Allocate(n int) []byte { return a.note(make([]byte, n)) }

// Reallocate returns a copy of b resized to n bytes, remembered.
func (a *RecordingAllocator) Reallocate(n int, b []byte) []byte {
	nb := make([]byte, n)
	copy(nb, b)
	return a.note(nb)
}

// Free does nothing: the buffers stay remembered.
func (a *RecordingAllocator) Free([]byte) {}

// Len is the number of buffers given.
func (a *RecordingAllocator) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.bufs)
}

// Gave reports whether a buffer of d, or of its children, is one a gave.
func (a *RecordingAllocator) Gave(d arrow.ArrayData) bool {
	a.mu.Lock()
	for _, b := range d.Buffers() {
		if b != nil && b.Len() > 0 && a.bufs[unsafe.Pointer(unsafe.SliceData(b.Bytes()))] {
			a.mu.Unlock()
			return true
		}
	}
	a.mu.Unlock()
	return slices.ContainsFunc(d.Children(), a.Gave)
}
