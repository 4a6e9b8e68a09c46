package main

import (
	"runtime"
	"testing"
)

// TestSelfPeakRSS: the child's own peak RSS covers memory it touched (64
// MiB here), on Linux; elsewhere it is 0 and the parent uses rusage.
func TestSelfPeakRSS(t *testing.T) {
	before := selfPeakRSSKB()
	if runtime.GOOS != "linux" {
		if before != 0 {
			t.Fatalf("selfPeakRSSKB = %d off Linux", before)
		}
		return
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	after := selfPeakRSSKB()
	runtime.KeepAlive(buf)
	if after < 64<<10 || after < before {
		t.Fatalf("peak RSS %d KiB after touching 64 MiB (%d before)", after, before)
	}
}
