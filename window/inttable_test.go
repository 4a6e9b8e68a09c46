package window

import (
	"math/rand/v2"
	"testing"
)

// TestIntTableMatchesMap: random puts (new keys and overwrites) and gets,
// over dense, strided and random keys, answer as a Go map does.
func TestIntTableMatchesMap(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var tab intTable
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
				tab.put(k, id)
				ref[k] = id
				continue
			}
			got, ok := tab.get(k)
			want, wok := ref[k]
			if ok != wok || got != want {
				t.Fatalf("seed %d: get(%d) = %d, %v; want %d, %v", seed, k, got, ok, want, wok)
			}
		}
		if tab.len() != len(ref) {
			t.Fatalf("seed %d: %d keys, want %d", seed, tab.len(), len(ref))
		}
		for k, want := range ref {
			if got, ok := tab.get(k); !ok || got != want {
				t.Fatalf("seed %d: get(%d) = %d, %v; want %d", seed, k, got, ok, want)
			}
		}
	}
}

// BenchmarkKeyIntern: interning a batch's int64 keys (100 000 distinct,
// already seen) through intTable and through a Go map.
func BenchmarkKeyIntern(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]int64, 1<<16)
	for i := range keys {
		keys[i] = rng.Int64N(100_000)
	}
	var tab intTable
	m := map[int64]int32{}
	for k := range int64(100_000) {
		tab.put(k, int32(k))
		m[k] = int32(k)
	}
	b.Run("intTable", func(b *testing.B) {
		var sum int32
		for b.Loop() {
			for _, k := range keys {
				id, _ := tab.get(k)
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

// BenchmarkKeyIndexRenumber renumbers a key index of int64 keys when
// forgetting keys: 320 000 keys (session ids, consecutive), of which
// every other one stays. Filling the new table from the old one's slots
// without reserving its size first took about 1 000 times as long.
func BenchmarkKeyIndexRenumber(b *testing.B) {
	const keys = 320_000
	newID := make([]int32, keys)
	live := int32(0)
	for i := range newID {
		newID[i] = -1
		if i%2 == 0 {
			newID[i] = live
			live++
		}
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		k := newKeyIndex([]int{0})
		for i := range keys {
			k.ints.put(int64(1_000_000+i), int32(i))
		}
		b.StartTimer()
		k.renumber(newID, live)
		if k.ints.len() != int(live) {
			b.Fatalf("%d keys after renumbering, want %d", k.ints.len(), live)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(live), "ns/key")
}
