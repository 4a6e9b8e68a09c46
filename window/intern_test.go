package window

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestInternerSharesEqualValues(t *testing.T) {
	var in interner
	// Two batches whose values are distinct strings with equal bytes.
	mk := func() []string {
		out := make([]string, 6)
		for i := range out {
			out[i] = fmt.Sprintf("shop-%d", i%3)
		}
		return out
	}
	a, b := mk(), mk()
	null := []bool{false, false, false, false, true, false}
	in.column(a, null, false)
	in.column(b, null, false)
	for i := range a {
		if null[i] {
			continue
		}
		if want := fmt.Sprintf("shop-%d", i%3); a[i] != want || b[i] != want {
			t.Fatalf("row %d: %q, %q, want %q", i, a[i], b[i], want)
		}
		if unsafe.StringData(a[i]) != unsafe.StringData(b[i]) || unsafe.StringData(a[i]) != unsafe.StringData(a[i%3]) {
			t.Errorf("row %d: equal values do not share one copy", i)
		}
	}
	if len(in.m) != 3 {
		t.Errorf("%d values kept, want 3", len(in.m))
	}
	if b[4] != "shop-1" || unsafe.StringData(b[4]) == unsafe.StringData(a[1]) {
		t.Errorf("a NULL row's value was interned: %q", b[4])
	}
}

func TestInternerTurnsOffForUniqueValues(t *testing.T) {
	var in interner
	next := 0
	batch := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("id-%d", next)
			next++
		}
		return out
	}
	null := make([]bool, 4096)
	for len(in.m) < internMax {
		in.column(batch(4096), null, false)
	}
	if in.off {
		t.Fatal("off before the table was tried full")
	}
	for range internTry / 4096 {
		s := batch(4096)
		in.column(s, null, false)
		if s[0] != fmt.Sprintf("id-%d", next-4096) {
			t.Fatalf("value changed: %q", s[0])
		}
	}
	if !in.off || in.m != nil {
		t.Fatalf("still on (off=%v, %d values) after %d rows of new values", in.off, len(in.m), internTry)
	}
	s := batch(10)
	in.column(s, null[:10], false)
	if s[9] != fmt.Sprintf("id-%d", next-1) {
		t.Errorf("value changed after turning off: %q", s[9])
	}
}

func TestInternerStaysOnForRepeatedValues(t *testing.T) {
	var in interner
	null := make([]bool, 1024)
	for round := range 3 * internMax / 1024 {
		s := make([]string, 1024)
		for i := range s {
			// New values until the table is full, then mostly known ones.
			v := round*1024 + i
			if round*1024 >= internMax {
				v = (i * 7) % internMax
				if i%4 == 0 {
					v = internMax + round*1024 + i // a few unknown values
				}
			}
			s[i] = fmt.Sprintf("v%d", v)
		}
		in.column(s, null, false)
	}
	if in.off {
		t.Errorf("turned off although three quarters of the values were known")
	}
	if len(in.m) != internMax {
		t.Errorf("%d values kept, want the cap %d", len(in.m), internMax)
	}
}

func TestInternerBoundsBytes(t *testing.T) {
	var in interner
	long := strings.Repeat("x", 64<<10) // 64 KiB values: the byte bound comes first
	null := make([]bool, 1)
	for i := 0; i < 2*internMaxBytes/len(long); i++ {
		s := []string{fmt.Sprintf("%d-%s", i, long)}
		in.column(s, null, false)
	}
	if in.bytes > internMaxBytes+len(long)+16 {
		t.Errorf("kept %d bytes of values, bound %d", in.bytes, internMaxBytes)
	}
	if got, want := len(in.m), internMaxBytes/len(long); got > want+1 {
		t.Errorf("kept %d values, want at most %d", got, want+1)
	}
}
