package window

import (
	"cmp"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
)

// TestGroupByKey: a streaming release's rows, in arrival order, come out
// of groupByKey as a permutation of them with each key's rows together,
// the keys in the order of their first rows and each key's rows in
// (time, rank, sequence) order; arrival lists every place once, each row
// arriving i-th at a place of its key (its own place when its key's rows
// came in time order). Run over several releases of one operator, so
// that the double buffer and the key marks are reused.
func TestGroupByKey(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		const nk = 500
		o := &Operator{states: make([]*keyState, nk)}
		for release := range 20 {
			n := 1 + rng.IntN(2000)
			keys := 1 + rng.IntN(nk)
			rel := make([]pendRow, n)
			for i := range rel {
				rel[i] = pendRow{ts: int64(i/3 + rng.IntN(20)), seq: int64(release*10_000 + i), key: int32(rng.IntN(keys)), batch: int32(i / 100), row: int32(i % 100)}
				if rng.IntN(50) == 0 {
					rel[i].rank = int8(rng.IntN(3) - 1)
				}
			}
			in := slices.Clone(rel)
			out := o.groupByKey(rel)
			if len(out) != n {
				t.Fatalf("seed %d release %d: %d rows out, want %d", seed, release, len(out), n)
			}
			bySeq := func(a, b pendRow) int { return cmp.Compare(a.seq, b.seq) }
			if got := slices.SortedFunc(slices.Values(out), bySeq); !slices.Equal(got, in) {
				t.Fatalf("seed %d release %d: rows out are not the rows in", seed, release)
			}
			var first []int32 // keys by first row
			seen := map[int32]bool{}
			for _, p := range in {
				if !seen[p.key] {
					seen[p.key] = true
					first = append(first, p.key)
				}
			}
			pos := 0
			for _, k := range first {
				var want []pendRow
				for _, p := range in {
					if p.key == k {
						want = append(want, p)
					}
				}
				slices.SortStableFunc(want, cmpTsSeq)
				if got := out[pos : pos+len(want)]; !slices.Equal(got, want) {
					t.Fatalf("seed %d release %d: key %d's rows at %d are %v, want %v", seed, release, k, pos, got, want)
				}
				pos += len(want)
			}
			if len(o.arrival) != n {
				t.Fatalf("seed %d release %d: arrival has %d places, want %d", seed, release, len(o.arrival), n)
			}
			places := slices.Clone(o.arrival)
			slices.Sort(places)
			for i, p := range places {
				if p != int32(i) {
					t.Fatalf("seed %d release %d: arrival is not a permutation of the places", seed, release)
				}
			}
			inOrder := map[int32]bool{} // keys whose rows came in time order
			for _, k := range first {
				var rows []pendRow
				for _, p := range in {
					if p.key == k {
						rows = append(rows, p)
					}
				}
				inOrder[k] = slices.IsSortedFunc(rows, cmpTsSeq)
			}
			for i, p := range in {
				got := out[o.arrival[i]]
				if got.key != p.key {
					t.Fatalf("seed %d release %d: row %d of key %d arrived at a place of key %d", seed, release, i, p.key, got.key)
				}
				if inOrder[p.key] && got != p {
					t.Fatalf("seed %d release %d: row %d (%v) is at a place holding %v", seed, release, i, p, got)
				}
			}
		}
	}
}

// TestSortNearly: sortNearly sorts like slices.SortFunc, over input in
// order but for a few rows nearby (insertion) and over input in no order
// (past its move budget, the fallback).
func TestSortNearly(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		for _, shape := range []string{"nearly", "random", "reversed", "sorted", "empty"} {
			n := rng.IntN(5000)
			if shape == "empty" {
				n = 0
			}
			s := make([]int64, n)
			for i := range s {
				switch shape {
				case "nearly":
					s[i] = int64(i) + rng.Int64N(8)
				case "random":
					s[i] = rng.Int64N(1000)
				case "reversed":
					s[i] = int64(n - i)
				case "sorted":
					s[i] = int64(i)
				}
			}
			want := slices.Clone(s)
			slices.Sort(want)
			sortNearly(s, cmp.Compare[int64])
			if !slices.Equal(s, want) {
				t.Fatalf("seed %d, %s input of %d: not sorted", seed, shape, n)
			}
		}
	}
}
