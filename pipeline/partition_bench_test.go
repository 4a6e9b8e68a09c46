package pipeline

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// Micro-benchmarks of the reader-to-task split and of the output merger on
// features-4-like batches (BENCHMARKS.md): per-row costs are reported as
// ns/row and allocs/row besides the usual per-op figures.

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "merchant", Type: arrow.BinaryTypes.String},
	{Name: "__seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "r0", Type: arrow.PrimitiveTypes.Float64},
	{Name: "r1", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// benchBatch returns rows events with sequence numbers seq(i).
func benchBatch(rng *rand.Rand, rows int, seq func(int) int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(seq(i))
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(100_000))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(30 * 86_400_000))
		b.Field(3).(*array.Float64Builder).Append(rng.Float64() * 100)
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("merchant-%d", rng.IntN(1000)))
		b.Field(5).(*array.Int64Builder).Append(seq(i))
		b.Field(6).(*array.Float64Builder).Append(rng.Float64())
		b.Field(7).(*array.Int64Builder).Append(rng.Int64N(50))
	}
	return b.NewRecordBatch()
}

func perRow(b *testing.B, rows int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

// BenchmarkHashRows: partition hashes of a 4096-row batch's key columns
// (a single int64 key hashes values straight from the column).
func BenchmarkHashRows(b *testing.B) {
	const rows = 4096
	rec := benchBatch(rand.New(rand.NewPCG(1, 2)), rows, func(i int) int64 { return int64(i) })
	defer rec.Release()
	for _, c := range []struct {
		name string
		cols []int
	}{{"int64", []int{1}}, {"string", []int{4}}, {"int64+string", []int{1, 4}}} {
		cols := make([]arrow.Array, len(c.cols))
		for j, k := range c.cols {
			cols[j] = rec.Column(k)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var h keyHasher
			for b.Loop() {
				h.hashRows(cols, rows)
			}
			perRow(b, rows)
		})
	}
}

// BenchmarkOwnRows: what one of two tasks does with a 4096-row batch the
// reader sent whole: hash the user_id keys and copy its own rows.
func BenchmarkOwnRows(b *testing.B) {
	const rows = 4096
	rec := benchBatch(rand.New(rand.NewPCG(1, 2)), rows, func(i int) int64 { return int64(i) })
	defer rec.Release()
	b.ReportAllocs()
	var h keyHasher
	for b.Loop() {
		own, err := ownRows(memory.DefaultAllocator, &h, rec, []int{1}, 0, 2)
		if err != nil {
			b.Fatal(err)
		}
		own.Release()
	}
	perRow(b, rows)
	b.ReportMetric(float64(testing.AllocsPerRun(10, func() {
		own, _ := ownRows(memory.DefaultAllocator, &h, rec, []int{1}, 0, 2)
		own.Release()
	}))/rows, "allocs/row")
}

// BenchmarkOwnRowsOf: what each of n tasks of a batch run does with a
// 4096-row batch the reader shares with them all: find the rows of its own
// keys (a row list, no copy).
func BenchmarkOwnRowsOf(b *testing.B) {
	const rows = 4096
	rec := benchBatch(rand.New(rand.NewPCG(1, 2)), rows, func(i int) int64 { return int64(i) })
	defer rec.Release()
	for _, n := range []int{2, 3, 4} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var h keyHasher
			for b.Loop() {
				ownRowsOf(&h, rec, []int{1}, 0, n)
			}
			perRow(b, rows)
		})
	}
}

// BenchmarkSplit: a batch split over two tasks at once (the split between
// stages).
func BenchmarkSplit(b *testing.B) {
	const rows = 4096
	rec := benchBatch(rand.New(rand.NewPCG(1, 2)), rows, func(i int) int64 { return int64(i) })
	defer rec.Release()
	r := &runner{opt: RunOptions{Mem: memory.DefaultAllocator}}
	b.ReportAllocs()
	for b.Loop() {
		parts, err := r.split(rec, []int{1}, 2)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range parts {
			p.Release()
		}
	}
	perRow(b, rows)
}

// BenchmarkMergeAll: the batch-mode merger interleaving the output of two
// tasks (64 batches of 4096 rows each, sequence numbers alternating in
// runs of 1 to 8 rows) into sequence order, gathering every column or
// only those a features-4 output needs (id, user_id, ts, r0, r1), at the
// end or as the batches arrive (drain).
func BenchmarkMergeAll(b *testing.B) {
	const batches, rows = 64, 4096
	rng := rand.New(rand.NewPCG(3, 4))
	// Assign sequence numbers to the two tasks in runs.
	var seqs [2][]int64
	for q := int64(0); len(seqs[0]) < batches*rows || len(seqs[1]) < batches*rows; {
		t := rng.IntN(2)
		for range 1 + rng.IntN(8) {
			if len(seqs[t]) < batches*rows {
				seqs[t] = append(seqs[t], q)
			}
			q++
		}
	}
	var bufs [2][]arrow.RecordBatch
	for t := range bufs {
		for k := range batches {
			s := seqs[t][k*rows : (k+1)*rows]
			bufs[t] = append(bufs[t], benchBatch(rng, rows, func(i int) int64 { return s[i] }))
		}
	}
	defer func() {
		for t := range bufs {
			for _, rec := range bufs[t] {
				rec.Release()
			}
		}
	}()
	all := make([]int, benchSchema.NumFields())
	for i := range all {
		all[i] = i
	}
	for _, c := range []struct {
		name  string
		proj  []int
		drain bool
	}{{"all-columns", all, false}, {"output-columns", []int{0, 1, 2, 6, 7}, false}, {"output-columns-drain", []int{0, 1, 2, 6, 7}, true}} {
		fields := make([]arrow.Field, len(c.proj))
		for k, col := range c.proj {
			fields[k] = benchSchema.Field(col)
		}
		out := arrow.NewSchema(fields, nil)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := &merger{n: 2, seqCol: 5, batch: true, comb: watermark.NewCombiner(2), mem: memory.DefaultAllocator, schema: benchSchema, proj: c.proj, out: out}
				emit := func(rec arrow.RecordBatch) error { rec.Release(); return nil }
				// The tasks' batches arrive alternately; with drain the
				// merger merges as they come, else all at the end.
				for k := range batches {
					for t := range bufs {
						bufs[t][k].Retain()
						m.add(t, bufs[t][k])
						if c.drain {
							if err := m.drain(emit); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				for t := range bufs {
					if err := m.advance(t, watermark.End, emit); err != nil {
						b.Fatal(err)
					}
				}
			}
			perRow(b, 2*batches*rows)
		})
	}
}

// BenchmarkResultMerge: the result merger of a parallel batch run writing
// 262 144 input rows (features-4-like: five input columns and the
// sequence, three of them written, and two result columns) whose results two tasks send in chunks in
// key order (a random permutation of their rows): zero-copy slices of the
// input columns plus one gather of each result column.
func BenchmarkResultMerge(b *testing.B) {
	const rows, batches, chunk = 8192, 32, 1 << 16
	rng := rand.New(rand.NewPCG(5, 6))
	inSchema := arrow.NewSchema(benchSchema.Fields()[:6], nil)
	var inputs []arrow.RecordBatch
	for k := range batches {
		rec := benchBatch(rng, rows, func(i int) int64 { return int64(k*rows + i) })
		inputs = append(inputs, array.NewRecordBatch(inSchema, rec.Columns()[:6], rows))
		rec.Release()
	}
	defer func() {
		for _, rec := range inputs {
			rec.Release()
		}
	}()
	// Deal the rows to two tasks in runs of 1-3 (hash partitioning), and
	// build each task's results in chunks, rows permuted within a chunk.
	var seqs [2][]int64
	for q := 0; q < rows*batches; {
		t := rng.IntN(2)
		for n := 1 + rng.IntN(3); n > 0 && q < rows*batches; n-- {
			seqs[t] = append(seqs[t], int64(q))
			q++
		}
	}
	var tasks [2][]*window.Results
	for t, s := range seqs {
		for lo := 0; lo < len(s); lo += chunk {
			part := s[lo:min(len(s), lo+chunk)]
			perm := rng.Perm(len(part))
			fb := array.NewFloat64Builder(memory.DefaultAllocator)
			ib := array.NewInt64Builder(memory.DefaultAllocator)
			for range part {
				fb.Append(rng.Float64())
				ib.Append(rng.Int64N(50))
			}
			res := &window.Results{Seq: part, Cols: [][]arrow.Array{{fb.NewArray(), ib.NewArray()}}}
			fb.Release()
			ib.Release()
			for j := range part {
				res.Chunk = append(res.Chunk, 0)
				res.Row = append(res.Row, int32(perm[j]))
			}
			tasks[t] = append(tasks[t], res)
		}
	}
	defer func() {
		for _, rs := range tasks {
			for _, r := range rs {
				r.Release()
			}
		}
	}()
	out := arrow.NewSchema([]arrow.Field{inSchema.Field(0), inSchema.Field(1), inSchema.Field(2), benchSchema.Field(6), benchSchema.Field(7)}, nil)
	run := func() {
		m := &resMerger{mem: memory.DefaultAllocator, seqCol: 5, nIn: 6, proj: []int{0, 1, 2, 6, 7}, out: out,
			queue: make([][]*resEntry, 2), at: make([]int, 2), ended: make([]bool, 2)}
		n := 0
		emit := func(rec arrow.RecordBatch) error { n += int(rec.NumRows()); rec.Release(); return nil }
		for _, rec := range inputs {
			rec.Retain()
			m.input(rec, nil)
		}
		for k := 0; k < max(len(tasks[0]), len(tasks[1])); k++ {
			for t := range tasks {
				if k < len(tasks[t]) {
					r := tasks[t][k]
					for _, a := range r.Cols[0] {
						a.Retain()
					}
					m.results(t, &window.Results{Seq: r.Seq, Chunk: r.Chunk, Row: r.Row, Cols: r.Cols})
					if err := m.maybeMerge(emit); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		m.end(0)
		m.end(1)
		if err := m.maybeMerge(emit); err != nil {
			b.Fatal(err)
		}
		if n != rows*batches {
			b.Fatalf("%d rows written, want %d", n, rows*batches)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
	perRow(b, rows*batches)
	b.ReportMetric(testing.AllocsPerRun(1, run)/(rows*batches), "allocs/row")
}
