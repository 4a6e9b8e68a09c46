package prefetch

import (
	"testing"
	"unsafe"
)

// TestPrefetchChangesNothing prefetches live, nil and odd addresses: a
// prefetch must neither fault nor change memory.
func TestPrefetchChangesNothing(t *testing.T) {
	buf := make([]byte, 1000)
	for i := range buf {
		buf[i] = byte(i)
	}
	Of(&buf[0])
	Of(&buf[999])
	Of[int](nil)
	Lines(unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	Lines(nil, 128)
	x := struct{ a, b int64 }{1, 2}
	Of(&x)
	Object(&x)
	Object[struct{ a, b int64 }](nil)
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed to %d", i, buf[i])
		}
	}
	if x.a != 1 || x.b != 2 {
		t.Fatalf("struct changed: %+v", x)
	}
}

func BenchmarkPrefetch(b *testing.B) {
	buf := make([]int64, 1<<20)
	for i := range b.N {
		Of(&buf[(i*4099)&(len(buf)-1)])
	}
}
