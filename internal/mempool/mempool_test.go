package mempool

import (
	"bytes"
	"testing"
)

// TestPool: buffers come back zeroed and of the asked length,
// Reallocate keeps the contents, sizes outside the pools work too.
func TestPool(t *testing.T) {
	a := &Pool{}
	for _, size := range []int{0, 1, 4095, 4096, 4097, 100_000, 1 << 20} {
		for range 3 {
			b := a.Allocate(size)
			if len(b) != size || bytes.Count(b, []byte{0}) != size {
				t.Fatalf("Allocate(%d): %d bytes, not all zero", size, len(b))
			}
			for i := range b {
				b[i] = byte(i) | 1
			}
			b2 := a.Reallocate(size*2+10, b)
			if len(b2) != size*2+10 || !bytes.Equal(b2[:size], b) && size > 0 {
				t.Fatalf("Reallocate(%d): contents lost", size*2+10)
			}
			for i, v := range b2[size:] {
				if v != 0 {
					t.Fatalf("Reallocate(%d): byte %d of the extension is %d", size*2+10, size+i, v)
				}
			}
			a.Free(b2)
		}
	}
	if c := class(1<<maxShift + 1); c != -1 {
		t.Fatalf("class(64 MiB + 1) = %d", c)
	}
	if c := class(1 << maxShift); 1<<(c+minShift) != 1<<maxShift {
		t.Fatalf("class(64 MiB) = %d", c)
	}
}
