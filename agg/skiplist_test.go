package agg

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSkiplist(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newSkiplist(func(a, b int) bool { return a < b })
	var ref []int
	for step := range 20000 {
		if len(ref) > 0 && rng.IntN(2) == 0 {
			v := ref[rng.IntN(len(ref))]
			if !s.Delete(v) {
				t.Fatalf("step %d: Delete(%d) found nothing", step, v)
			}
			i := slices.Index(ref, v)
			ref = slices.Delete(ref, i, i+1)
		} else {
			v := rng.IntN(300)
			s.Insert(v)
			i, _ := slices.BinarySearch(ref, v+1)
			ref = slices.Insert(ref, i, v)
		}
		if s.Delete(-1) {
			t.Fatal("deleted an absent element")
		}
		if s.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(ref))
		}
		if len(ref) > 0 {
			i := rng.IntN(len(ref))
			if got := s.At(i); got != ref[i] {
				t.Fatalf("step %d: At(%d) = %d, want %d", step, i, got, ref[i])
			}
		}
		if step%1000 == 0 {
			var all []int
			s.Each(func(v int) bool { all = append(all, v); return true })
			if !slices.Equal(all, ref) {
				t.Fatalf("step %d: contents differ", step)
			}
		}
		if step == 10000 {
			s.Reset()
			ref = ref[:0]
		}
	}
}
