package gen

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func TestArrivalOrder(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 1))
	ts := make([]int64, 5000)
	for i := range ts {
		ts[i] = rng.Int64N(20_000) / 100 * 100 // many duplicates
	}
	slices.Sort(ts)
	bound := 5 * time.Second
	perm := ArrivalOrder(ts, bound, seed)

	seen := make([]bool, len(ts))
	maxSeen := int64(-1 << 62)
	lastOfTS := map[int64]int{}
	moved := 0
	for slot, r := range perm {
		if seen[r] {
			t.Fatalf("seed %d: row %d arrives twice", seed, r)
		}
		seen[r] = true
		if ts[r] <= maxSeen-bound.Milliseconds() {
			t.Fatalf("seed %d: row %d (ts %d) is late: max seen %d, bound %v", seed, r, ts[r], maxSeen, bound)
		}
		maxSeen = max(maxSeen, ts[r])
		if prev, ok := lastOfTS[ts[r]]; ok && prev > r {
			t.Fatalf("seed %d: peers with ts %d arrive out of input order: %d after %d", seed, ts[r], r, prev)
		}
		lastOfTS[ts[r]] = r
		if r != slot {
			moved++
		}
	}
	if moved < len(ts)/2 {
		t.Errorf("seed %d: only %d of %d rows moved: the shuffle is too weak", seed, moved, len(ts))
	}
	if again := ArrivalOrder(ts, bound, seed); !slices.Equal(perm, again) {
		t.Errorf("seed %d: ArrivalOrder is not deterministic", seed)
	}
}

func TestFeatures4ParquetCache(t *testing.T) {
	dir := t.TempDir()
	c := NewFeatures4(10_000, 3)
	path, created, err := EnsureParquet(dir, c)
	if err != nil || !created {
		t.Fatalf("EnsureParquet: created=%v err=%v", created, err)
	}
	st, _ := os.Stat(path)
	if _, created, err := EnsureParquet(dir, c); err != nil || created {
		t.Fatalf("second EnsureParquet regenerated: created=%v err=%v", created, err)
	}
	if st2, _ := os.Stat(path); !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("cached file was rewritten")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(m) > 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
	schema, recs, err := ReadParquet(path, nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range Features4Schema.Fields() {
		if g := schema.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			t.Errorf("column %d round-trips as %s %s, want %s %s", i, g.Name, g.Type, f.Name, f.Type)
		}
	}
	var n int
	prev := arrow.Timestamp(-1)
	for _, rec := range recs {
		ids := rec.Column(0).(*array.Int64)
		tss := rec.Column(2).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if ids.Value(i) != int64(n) {
				t.Fatalf("row %d has id %d", n, ids.Value(i))
			}
			if tss.Value(i) < prev {
				t.Fatalf("row %d: ts goes backwards", n)
			}
			prev = tss.Value(i)
			n++
		}
		rec.Release()
	}
	if n != c.Events {
		t.Errorf("read %d rows, want %d", n, c.Events)
	}
}

func TestArrivalParquet(t *testing.T) {
	dir := t.TempDir()
	c := NewFeatures4(20_000, 5)
	bound := 5 * time.Second
	path, created, err := EnsureArrivalParquet(dir, c, bound)
	if err != nil || !created {
		t.Fatalf("EnsureArrivalParquet: created=%v err=%v", created, err)
	}
	_, recs, err := ReadParquet(path, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, c.Events)
	maxSeen, n, moved := int64(-1<<62), 0, 0
	for _, rec := range recs {
		ids := rec.Column(0).(*array.Int64).Int64Values()
		tss := rec.Column(2).(*array.Timestamp).TimestampValues()
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("id %d arrives twice", id)
			}
			seen[id] = true
			if int64(tss[i]) <= maxSeen-bound.Milliseconds() {
				t.Fatalf("id %d is late", id)
			}
			maxSeen = max(maxSeen, int64(tss[i]))
			if id != int64(n) {
				moved++
			}
			n++
		}
		rec.Release()
	}
	if n != c.Events || moved == 0 {
		t.Errorf("read %d rows (want %d), %d out of log order", n, c.Events, moved)
	}
}
