package workload

import (
	"hash/fnv"
	"testing"
)

// FuzzHash64 checks that Hash64 is hash/fnv's FNV-1a, so checksums stay
// comparable with those of earlier runs and of the other engines.
func FuzzHash64(f *testing.F) {
	for _, s := range []string{"", "m1", "merchant-0999", "\xff\x00é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := Hash64(s), h.Sum64(); got != want {
			t.Fatalf("Hash64(%q) = %x, want %x", s, got, want)
		}
	})
}
