package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
)

// TestMergerDrainsAsOutputArrives: in batch mode the merger emits rows
// while the tasks' output arrives (drain) and the rest at the end; the
// rows come out in sequence order, each once, whatever the interleaving,
// and only the output columns are gathered.
func TestMergerDrainsAsOutputArrives(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		const n = 3
		want := 3*mergeChunk + rng.IntN(mergeChunk)
		// Deal sequence numbers to the tasks in runs, then cut each
		// task's rows into batches of random sizes.
		var seqs [n][]int64
		q := int64(0)
		for q < int64(want) {
			task := rng.IntN(n)
			if seed%5 == 0 && task == 2 {
				continue // a task with no output at all
			}
			for range 1 + rng.IntN(50) {
				seqs[task] = append(seqs[task], q)
				q++
			}
		}
		total := int(q)
		type delivery struct {
			from int
			rec  arrow.RecordBatch
			end  bool
		}
		var queues [n][]delivery
		for task := range n {
			s := seqs[task]
			for len(s) > 0 {
				k := min(len(s), 1+rng.IntN(9000))
				rng := rand.New(rand.NewPCG(seed, uint64(task)))
				part := s[:k]
				queues[task] = append(queues[task], delivery{from: task, rec: benchBatch(rng, k, func(i int) int64 { return part[i] })})
				s = s[k:]
			}
			queues[task] = append(queues[task], delivery{from: task, end: true})
		}
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		proj := []int{0, 5, 6}
		fields := make([]arrow.Field, len(proj))
		for k, c := range proj {
			fields[k] = benchSchema.Field(c)
		}
		m := &merger{n: n, tsCol: 2, seqCol: 5, batch: true, comb: watermark.NewCombiner(n), mem: mem, schema: benchSchema, proj: proj, out: arrow.NewSchema(fields, nil)}
		var got []int64
		var early int
		ended := 0
		emit := func(rec arrow.RecordBatch) error {
			defer rec.Release()
			if !rec.Schema().Equal(m.out) {
				t.Fatalf("emitted schema %s", rec.Schema())
			}
			if ended < n {
				early += int(rec.NumRows())
			}
			got = append(got, rec.Column(1).(*array.Int64).Int64Values()...)
			return nil
		}
		// Deliver in a random interleaving of the tasks' queues.
		for {
			var live []int
			for task := range n {
				if len(queues[task]) > 0 {
					live = append(live, task)
				}
			}
			if len(live) == 0 {
				break
			}
			task := live[rng.IntN(len(live))]
			d := queues[task][0]
			queues[task] = queues[task][1:]
			if d.end {
				ended++
				if err := m.advance(d.from, watermark.End, emit); err != nil {
					t.Fatal(err)
				}
				continue
			}
			m.add(d.from, d.rec)
			if err := m.drain(emit); err != nil {
				t.Fatal(err)
			}
		}
		m.release()
		mem.AssertSize(t, 0)
		if len(got) != total || !slices.IsSorted(got) || got[0] != 0 || got[len(got)-1] != int64(total-1) {
			t.Fatalf("seed %d: %d rows (want %d), sorted %v", seed, len(got), total, slices.IsSorted(got))
		}
		if seed == 0 && early == 0 {
			t.Fatalf("seed %d: nothing emitted before the end", seed)
		}
	}
}

// TestMerge2MatchesHeap: merging two streams without a heap gives the
// heap's order exactly, ties between the streams included (rows with
// equal times and sequence numbers, told apart by their batch and row),
// and with either stream empty; kmerge of three streams is the heap's.
func TestMerge2MatchesHeap(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		rng := testutil.Rand(seed)
		stream := func(src int32) []rowRef {
			n := rng.IntN(40)
			if rng.IntN(6) == 0 {
				n = 0
			}
			s := make([]rowRef, n)
			ts := int64(0)
			for i := range s {
				ts += int64(rng.IntN(3)) // many equal times
				s[i] = rowRef{ts: ts, seq: int64(rng.IntN(2)), rec: src, row: int32(i)}
			}
			slices.SortStableFunc(s, func(a, b rowRef) int {
				if a.ts != b.ts {
					return cmp64(a.ts, b.ts)
				}
				return cmp64(a.seq, b.seq)
			})
			return s
		}
		byTime := func(a, b rowRef) bool { return a.ts < b.ts || a.ts == b.ts && a.seq < b.seq }
		bySeq := func(a, b rowRef) bool { return a.seq < b.seq }
		for range 300 {
			a, b, c := stream(0), stream(1), stream(2)
			for _, less := range []func(a, b rowRef) bool{byTime, bySeq} {
				if got, want := merge2(nil, a, b, less), kmergeHeap(nil, [][]rowRef{a, b}, less); !slices.Equal(got, want) {
					t.Fatalf("seed %d: merge2\n got %v\nwant %v", seed, got, want)
				}
				// Appended to a buffer holding rows already (as a merger's
				// kept buffer does not, but kmerge promises it).
				prefix := c[:min(len(c), 3):min(len(c), 3)]
				if got, want := kmerge(slices.Clone(prefix), [][]rowRef{a, nil, b}, less), append(slices.Clone(prefix), kmergeHeap(nil, [][]rowRef{a, b}, less)...); !slices.Equal(got, want) {
					t.Fatalf("seed %d: kmerge of two streams and an empty one\n got %v\nwant %v", seed, got, want)
				}
				if got, want := kmerge(nil, [][]rowRef{a, b, c}, less), kmergeHeap(nil, [][]rowRef{a, b, c}, less); !slices.Equal(got, want) {
					t.Fatalf("seed %d: kmerge of three streams\n got %v\nwant %v", seed, got, want)
				}
			}
		}
	}
}
