package pipeline

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/window"
)

var resMergeIn = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// resMergeCase builds the input batches of total rows and deals their
// results to n tasks in runs, each task's cut into Results of random
// sizes and chunks: aggregate 0 of row seq is seq/2, aggregate 1 "s<seq>".
func resMergeCase(rng *rand.Rand, mem memory.Allocator, n, total int) (inputs []arrow.RecordBatch, results [][]*window.Results) {
	for lo := 0; lo < total; {
		hi := min(total, lo+1+rng.IntN(3*mergeChunk/2))
		ib := array.NewInt64Builder(mem)
		sb := array.NewInt64Builder(mem)
		for s := lo; s < hi; s++ {
			ib.Append(int64(s) * 7)
			sb.Append(int64(s))
		}
		ids, seqs := ib.NewArray(), sb.NewArray()
		inputs = append(inputs, array.NewRecordBatch(resMergeIn, []arrow.Array{ids, seqs}, int64(hi-lo)))
		ids.Release()
		seqs.Release()
		ib.Release()
		sb.Release()
		lo = hi
	}
	seqs := make([][]int64, n)
	for q := 0; q < total; {
		t := rng.IntN(n)
		for k := 0; k < 1+rng.IntN(40) && q < total; k++ {
			seqs[t] = append(seqs[t], int64(q))
			q++
		}
	}
	results = make([][]*window.Results, n)
	for t, s := range seqs {
		for len(s) > 0 {
			k := min(len(s), 1+rng.IntN(mergeChunk/2))
			part := s[:k]
			s = s[k:]
			// Results in chunks, the rows of a chunk in a shuffled order
			// (the operator's chunks follow keys, not sequence).
			res := &window.Results{Seq: part}
			for lo := 0; lo < k; {
				hi := min(k, lo+1+rng.IntN(5000))
				perm := rng.Perm(hi - lo)
				fb := array.NewFloat64Builder(mem)
				strb := array.NewStringBuilder(mem)
				vals := make([]int64, hi-lo)
				for j, p := range perm {
					vals[p] = part[lo+j]
				}
				for _, v := range vals {
					fb.Append(float64(v) / 2)
					strb.Append(fmt.Sprintf("s%d", v))
				}
				c := int32(len(res.Cols))
				res.Cols = append(res.Cols, []arrow.Array{fb.NewArray(), strb.NewArray()})
				fb.Release()
				strb.Release()
				for j := range hi - lo {
					res.Chunk = append(res.Chunk, c)
					res.Row = append(res.Row, int32(perm[j]))
				}
				lo = hi
			}
			results[t] = append(results[t], res)
		}
	}
	return inputs, results
}

func newTestResMerger(mem memory.Allocator, n int) *resMerger {
	out := arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "half", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	return &resMerger{mem: mem, seqCol: 1, nIn: 2, proj: []int{1, 0, 2, 3}, out: out,
		queue: make([][]*resEntry, n), at: make([]int, n), ended: make([]bool, n)}
}

// TestResMergerWritesInputWithResults: whatever the interleaving of the
// tasks' results, every input row is written once, in order, with its own
// columns and its results; rows go out before the end; nothing leaks.
func TestResMergerWritesInputWithResults(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 11))
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		const n = 3
		total := 2*mergeChunk + rng.IntN(2*mergeChunk)
		if seed == 0 {
			total = 1
		}
		inputs, results := resMergeCase(rng, mem, n, total)
		m := newTestResMerger(mem, n)
		next := int64(0)
		early := 0
		emit := func(rec arrow.RecordBatch) error {
			defer rec.Release()
			if !rec.Schema().Equal(m.out) {
				t.Fatalf("seed %d: schema %s", seed, rec.Schema())
			}
			if !m.allEnded() {
				early += int(rec.NumRows())
			}
			seq := rec.Column(0).(*array.Int64).Int64Values()
			id := rec.Column(1).(*array.Int64).Int64Values()
			half := rec.Column(2).(*array.Float64)
			name := rec.Column(3).(*array.String)
			for i, s := range seq {
				if s != next || id[i] != 7*s || half.Value(i) != float64(s)/2 || name.Value(i) != fmt.Sprintf("s%d", s) {
					t.Fatalf("seed %d: row %d is (%d, %d, %v, %q), want sequence %d", seed, next, s, id[i], half.Value(i), name.Value(i), next)
				}
				next++
			}
			return nil
		}
		// The reader sends a batch before any task can send its results:
		// deliver inputs as far as the results delivered need.
		in := 0
		fed := int64(0)
		feed := func(upTo int64) {
			for fed <= upTo && in < len(inputs) {
				m.input(inputs[in], nil)
				fed += inputs[in].NumRows()
				in++
			}
		}
		for {
			var live []int
			for task := range n {
				if !m.ended[task] {
					live = append(live, task)
				}
			}
			if len(live) == 0 {
				break
			}
			task := live[rng.IntN(len(live))]
			var err error
			if len(results[task]) == 0 {
				m.end(task)
				err = m.maybeMerge(emit)
			} else {
				r := results[task][0]
				results[task] = results[task][1:]
				feed(r.Seq[r.Len()-1])
				m.results(task, r)
				err = m.maybeMerge(emit)
			}
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		if next != int64(total) {
			t.Fatalf("seed %d: %d rows written, want %d", seed, next, total)
		}
		if total > 2*mergeChunk && early == 0 {
			t.Errorf("seed %d: nothing written before the end", seed)
		}
		m.release()
		mem.AssertSize(t, 0)
	}
}

// TestResMergerMissingResults: an input row no task sent results for is
// an error at the end, not a silent loss; everything is let go.
func TestResMergerMissingResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	inputs, results := resMergeCase(rng, mem, 2, 1000)
	m := newTestResMerger(mem, 2)
	for _, rec := range inputs {
		m.input(rec, nil)
	}
	emit := func(rec arrow.RecordBatch) error { rec.Release(); return nil }
	m.results(0, results[0][0]) // task 0's first part only
	for _, rs := range results {
		for _, r := range rs[1:] {
			r.Release()
		}
	}
	for _, r := range results[1][:1] {
		r.Release()
	}
	m.end(0)
	m.end(1)
	err := m.maybeMerge(emit)
	if err == nil || !strings.Contains(err.Error(), "got no results") {
		t.Fatalf("got %v, want an error naming the rows without results", err)
	}
	m.release()
	mem.AssertSize(t, 0)
}
