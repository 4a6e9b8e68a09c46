package pipeline

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/volga-go/volga/watermark"
)

// boundOf is a LowerBounder that reports a bound set by the test.
type boundOf struct{ b int64 }

func (s *boundOf) LowerBound(string) (int64, bool) { return s.b, true }

// maxPrefixWatermark is the brute-force answer batchTimes must give: the
// greatest w below bound such that the rows of ts at or below w are a
// prefix of ts. Only bound-1 and a time just below one of ts can be the
// greatest.
func maxPrefixWatermark(ts []int64, bound int64) int64 {
	cands := []int64{bound - 1}
	for _, t := range ts {
		if t-1 < bound-1 {
			cands = append(cands, t-1)
		}
	}
	slices.Sort(cands)
	for i := len(cands) - 1; i >= 0; i-- {
		w := cands[i]
		prefix := true
		for j, seenAbove := 0, false; j < len(ts); j++ {
			if ts[j] > w {
				seenAbove = true
			} else if seenAbove {
				prefix = false
				break
			}
		}
		if prefix {
			return w
		}
	}
	return math.MinInt64
}

// TestBatchTimesPrefixWatermark: over inputs in order, with local
// disorder, in blocks each out of order, and out of order throughout,
// read in batches with the source's bound the least time still to come
// (or lower), each watermark batchTimes gives is the greatest time below
// the bound whose rows so far are a prefix of the input (brute force), and
// it gives none when that does not move on.
func TestBatchTimesPrefixWatermark(t *testing.T) {
	shapes := map[string]func(r *rand.Rand, n int) []int64{
		"ordered": func(r *rand.Rand, n int) []int64 {
			ts := make([]int64, n)
			for i := range ts {
				ts[i] = int64(i/3) * 10
			}
			return ts
		},
		"local disorder": func(r *rand.Rand, n int) []int64 {
			ts := make([]int64, n)
			for i := range ts {
				ts[i] = int64(i)*10 - r.Int64N(60)
			}
			return ts
		},
		"blocks reversed": func(r *rand.Rand, n int) []int64 {
			ts := make([]int64, n)
			for i := range ts {
				ts[i] = int64(i/8)*100 + int64(8-i%8)*10
			}
			return ts
		},
		"random": func(r *rand.Rand, n int) []int64 {
			ts := make([]int64, n)
			for i := range ts {
				ts[i] = r.Int64N(int64(n) * 10)
			}
			return ts
		},
	}
	for name, shape := range shapes {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 11))
			ts := shape(r, 200)
			src := &boundOf{b: math.MinInt64}
			bt := newBatchTimes(src, "ts", true)
			last := int64(math.MinInt64)
			for read := 0; read < len(ts); {
				n := 1 + r.IntN(20)
				batch := ts[read:min(read+n, len(ts))]
				seqs := make([]int64, len(batch))
				for i := range seqs {
					seqs[i] = int64(read + i)
				}
				read += len(batch)
				if err := bt.observe(batch, seqs); err != nil {
					t.Fatalf("%s, seed %d: %v", name, seed, err)
				}
				bound := int64(math.MaxInt64)
				if read < len(ts) {
					bound = slices.Min(ts[read:]) - r.Int64N(3)*r.Int64N(50)
					bound = max(bound, src.b) // a source's bound never goes back
				}
				src.b = bound
				got := bt.watermark()
				if bound == math.MaxInt64 {
					if got != watermark.None {
						t.Fatalf("%s, seed %d: watermark %d at the end of the input, want none", name, seed, got)
					}
					continue
				}
				want := maxPrefixWatermark(ts[:read], bound)
				if want < last {
					t.Fatalf("%s, seed %d: brute force went back from %d to %d", name, seed, last, want)
				}
				if want == last {
					want = watermark.None
				} else {
					last = want
				}
				if got != want {
					t.Fatalf("%s, seed %d, %d rows read, bound %d: watermark %d, want %d (times %v)", name, seed, read, bound, got, want, ts[:read])
				}
				if got != watermark.None {
					first := slices.IndexFunc(ts[:read], func(t int64) bool { return t > got })
					if first < 0 {
						first = read
					}
					if sb := bt.seqBound(); sb != int64(first) {
						t.Fatalf("%s, seed %d, watermark %d: first row out of the prefix %d, want %d", name, seed, got, sb, first)
					}
				}
			}
			if name == "ordered" && len(bt.gaps) != 0 {
				t.Fatalf("ordered input left gaps %v", bt.gaps)
			}
		}
	}
}

// TestBatchTimesRestore: a batchTimes resumed from its checkpoint state
// (through JSON, as the reader's part stores it) gives the watermarks the
// uninterrupted one gives; resumed from a checkpoint without that state
// (an earlier version's), it gives none before the end for OVER windows,
// and the bound's for GROUP BY alone.
func TestBatchTimesRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	ts := make([]int64, 400)
	for i := range ts {
		ts[i] = int64(i)*10 - r.Int64N(80)
	}
	src := &boundOf{b: math.MinInt64}
	whole := newBatchTimes(src, "ts", true)
	var resumed, blindOver, blindGroup *batchTimes
	for read := 0; read < len(ts); read += 20 {
		batch := ts[read : read+20]
		seqs := make([]int64, len(batch))
		for i := range seqs {
			seqs[i] = int64(read + i)
		}
		if read == 200 {
			js, err := json.Marshal(whole.state())
			if err != nil {
				t.Fatal(err)
			}
			var st *batchTimesState
			if err := json.Unmarshal(js, &st); err != nil {
				t.Fatal(err)
			}
			resumed = newBatchTimes(src, "ts", true)
			resumed.restore(st)
			blindOver = newBatchTimes(src, "ts", true)
			blindOver.restore(nil)
			blindGroup = newBatchTimes(src, "ts", false)
			blindGroup.restore(nil)
		}
		for _, b := range []*batchTimes{whole, resumed, blindOver, blindGroup} {
			if b != nil {
				if err := b.observe(batch, seqs); err != nil {
					t.Fatal(err)
				}
			}
		}
		src.b = math.MaxInt64
		if read+20 < len(ts) {
			src.b = slices.Min(ts[read+20:])
		}
		want := whole.watermark()
		if resumed == nil {
			continue
		}
		if got := resumed.watermark(); got != want {
			t.Fatalf("%d rows read: resumed watermark %d, uninterrupted %d", read+20, got, want)
		}
		if got := blindOver.watermark(); got != watermark.None {
			t.Fatalf("%d rows read: watermark %d after a checkpoint without times, want none", read+20, got)
		}
		if got, wantGroup := blindGroup.watermark(), src.b-1; src.b != math.MaxInt64 && got != wantGroup {
			t.Fatalf("%d rows read: GROUP BY watermark %d, want the bound's %d", read+20, got, wantGroup)
		}
	}
}

// TestBatchTimesSeqBoundMerged: with more rows newer than all before them
// than it keeps marks for, batchTimes merges marks and its first row out of
// a watermark's prefix is at or before the true one (what the merger may
// rely on), and still moves on.
func TestBatchTimesSeqBoundMerged(t *testing.T) {
	const n = 20000
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = int64(i) * 7
	}
	src := &boundOf{b: math.MinInt64}
	bt := newBatchTimes(src, "ts", true)
	prev := int64(-1)
	for read := 0; read < n; read += 100 {
		seqs := make([]int64, 100)
		for i := range seqs {
			seqs[i] = int64(read + i)
		}
		if err := bt.observe(ts[read:read+100], seqs); err != nil {
			t.Fatal(err)
		}
		if len(bt.marks) > maxMarks {
			t.Fatalf("%d marks kept, at most %d", len(bt.marks), maxMarks)
		}
		if read+100 < 6000 {
			continue // no bound yet: marks pile up past maxMarks
		}
		src.b = ts[read+100-5000]
		wm := bt.watermark()
		if wm == watermark.None {
			continue
		}
		first := int64(slices.IndexFunc(ts, func(t int64) bool { return t > wm }))
		sb := bt.seqBound()
		if sb > first || sb <= prev {
			t.Fatalf("watermark %d: first row out of the prefix %d (before: %d), the true one %d", wm, sb, prev, first)
		}
		prev = sb
	}
	if prev < n/2 {
		t.Fatalf("the first row out of the prefix got only to %d of %d", prev, n)
	}
}
