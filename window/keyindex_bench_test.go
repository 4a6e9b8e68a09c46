package window

import "testing"

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
			k.ints.Put(int64(1_000_000+i), int32(i))
		}
		b.StartTimer()
		k.renumber(newID, live)
		if k.ints.Len() != int(live) {
			b.Fatalf("%d keys after renumbering, want %d", k.ints.Len(), live)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(live), "ns/key")
}
