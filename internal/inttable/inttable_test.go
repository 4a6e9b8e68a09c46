package inttable

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTableMatchesMap: random puts (new keys and overwrites) and gets, over dense, strided and random keys, answer as a Go map does;
// All yields exactly the map's entries.
func TestTableMatchesMap(t *testing.T) {
	for seed := range uint64(9) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var tab Table
		ref := map[int64]int32{}
		key := func() int64 {
			switch seed % 3 {
			case 0:
				return rng.Int64N(5000) // dense
			case 1:
				return rng.Int64N(5000) << 20 // strided
			}
			return int64(rng.Uint64()) // anywhere, negatives too
		}
		for op := range 40_000 {
			k := key()
			if rng.IntN(3) == 0 {
				id := int32(op)
				tab.Put(k, id)
				ref[k] = id
				continue
			}
			got, ok := tab.Get(k)
			want, wok := ref[k]
			if ok != wok || got != want {
				t.Fatalf("seed %d: Get(%d) = %d, %v; want %d, %v", seed, k, got, ok, want, wok)
			}
		}
		if tab.Len() != len(ref) {
			t.Fatalf("seed %d: %d keys, want %d", seed, tab.Len(), len(ref))
		}
		seen := map[int64]int32{}
		for k, id := range tab.All() {
			if _, dup := seen[k]; dup {
				t.Fatalf("seed %d: All yields %d twice", seed, k)
			}
			seen[k] = id
		}
		if fmt.Sprint(seen) != fmt.Sprint(ref) {
			t.Fatalf("seed %d: All yields %d entries unlike the map's %d", seed, len(seen), len(ref))
		}
	}
}

// TestEmptyAndStop: an empty table finds nothing and yields nothing; All
// stops when its consumer does.
func TestEmptyAndStop(t *testing.T) {
	var tab Table
	if id, ok := tab.Get(0); ok || id != 0 {
		t.Fatalf("empty Get(0) = %d, %v", id, ok)
	}
	for range tab.All() {
		t.Fatal("empty table yields a key")
	}
	for k := range int64(100) {
		tab.Put(k, int32(k))
	}
	n := 0
	for range tab.All() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("All went on to %d keys after a break at 3", n)
	}
}

// TestReserve: a reserved table takes n keys without growing, and keeps
// what it held.
func TestReserve(t *testing.T) {
	var tab Table
	tab.Put(-7, 3)
	tab.Reserve(1000)
	size := len(tab.slots)
	if size != HalfFullSize(1000, 64) || size < 2*1001 {
		t.Fatalf("Reserve(1000): %d slots, want %d", size, HalfFullSize(1000, 64))
	}
	if id, ok := tab.Get(-7); !ok || id != 3 {
		t.Fatalf("after Reserve Get(-7) = %d, %v; want 3, true", id, ok)
	}
	for k := range int64(999) {
		tab.Put(k*1_000_003, int32(k))
	}
	if len(tab.slots) != size {
		t.Fatalf("grew from %d to %d slots within its reservation", size, len(tab.slots))
	}
	tab.Reserve(10) // never shrinks
	if len(tab.slots) != size {
		t.Fatalf("Reserve(10) resized %d slots to %d", size, len(tab.slots))
	}
}

// TestHashHelpers: HalfFullSize is the least power of two, from least,
// above twice n; Home stays within the table for every shift.
func TestHashHelpers(t *testing.T) {
	for _, c := range []struct{ n, least, want int }{
		{0, 16, 16}, {7, 16, 16}, {8, 16, 32}, {31, 64, 64}, {32, 64, 128}, {1000, 64, 2048},
	} {
		if got := HalfFullSize(c.n, c.least); got != c.want {
			t.Errorf("HalfFullSize(%d, %d) = %d, want %d", c.n, c.least, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for size := 2; size <= 1<<24; size *= 2 {
		shift := Shift(size)
		for range 1000 {
			if h := Home(rng.Uint64(), shift); h < 0 || h >= size {
				t.Fatalf("Home with Shift(%d) = %d, outside the table", size, h)
			}
		}
	}
}

// BenchmarkGet: looking up int64 keys (100 000 distinct, all present)
// through a Table and through a Go map.
func BenchmarkGet(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]int64, 1<<16)
	for i := range keys {
		keys[i] = rng.Int64N(100_000)
	}
	var tab Table
	m := map[int64]int32{}
	for k := range int64(100_000) {
		tab.Put(k, int32(k))
		m[k] = int32(k)
	}
	b.Run("Table", func(b *testing.B) {
		var sum int32
		for b.Loop() {
			for _, k := range keys {
				id, _ := tab.Get(k)
				sum += id
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(keys)), "ns/key")
		_ = sum
	})
	b.Run("map", func(b *testing.B) {
		var sum int32
		for b.Loop() {
			for _, k := range keys {
				sum += m[k]
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(keys)), "ns/key")
		_ = sum
	})
}
