package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/window"
)

// Merging results onto the input.
//
// A batch run with several tasks of one sliding-window stage sends every
// prepared batch whole to each task, which takes its own rows of it
// (window.Operator.PushRows). Each input row gives exactly one output row:
// the row's own columns followed by its results. So rather than have every
// task copy its rows, gather its output into arrival order and have the
// merger interleave the tasks' output, the reader hands the prepared
// batches to the merger too, the tasks hand it only their results
// (window.Operator.AdvanceResults, in sequence order), and the merger
// writes each input batch with its columns as they are (zero-copy slices)
// and the results of its rows gathered once from the tasks' result arrays.

// When every result type can be written in place (window.Scatterable:
// fixed-width numbers and times, as the standard aggregates give), the
// reader also gives each batch a window.Dest, which it sends with the
// batch to the merger and the tasks: each task writes the results of its
// rows into it as it releases them (window.Operator.PushRowsTo) and
// reports only how many rows of the batch it has done (Results.Done), and
// the merger writes a batch with the Dest's columns once every row is
// done. Results are computed key by key: written in place, each goes
// once from the task's result array to its row, in parallel over the
// tasks, where a gather on the merger read every row out of cache.

// resultMerging reports whether the run merges results onto its input
// (see above): a batch run of one sliding-window stage over several tasks,
// without checkpoints (whose merger state is the tasks' whole output).
func (r *runner) resultMerging() bool {
	if r.opt.Mode != Batch || r.n < 2 || len(r.c.stages) != 1 || r.checkpointing() {
		return false
	}
	st := r.c.stages[0]
	ok := st.group == nil && st.out.NumFields() == st.in.NumFields()+len(st.cfg.ResultNames)
	if ok {
		resultMergeRuns.Add(1)
	}
	return ok
}

// resultMergeRuns counts the runs that merged results onto their input
// (for tests), and destRuns those whose results were written in place.
var resultMergeRuns, destRuns atomic.Int64

// resultsInPlace lets runs write results in place (a variable for
// benchmarks of the gather it replaces).
var resultsInPlace = true

// destTypes returns the result types of the first stage when every one
// can be written in place, else nil.
func (r *runner) destTypes() []arrow.DataType {
	if !resultsInPlace {
		return nil
	}
	st := r.c.stages[0]
	nIn := st.in.NumFields()
	types := make([]arrow.DataType, 0, st.out.NumFields()-nIn)
	for k := nIn; k < st.out.NumFields(); k++ {
		dt := st.out.Field(k).Type
		if !window.Scatterable(dt) {
			return nil
		}
		types = append(types, dt)
	}
	if len(types) == 0 {
		return nil
	}
	destRuns.Add(1)
	return types
}

// resMerger writes input batches with their rows' results (see above).
type resMerger struct {
	mem    memory.Allocator
	seqCol int
	nIn    int // input columns; output column nIn+a is aggregate a
	proj   []int
	out    *arrow.Schema
	// inputs are the input batches not yet written, in order; the rows of
	// inputs[0] before pos are.
	inputs []arrow.RecordBatch
	pos    int
	// inPlace: results are written in place; dests are then the inputs'
	// Dests, and acc what the tasks reported of each.
	inPlace bool
	dests   []*window.Dest
	acc     map[*window.Dest]*destAcc
	// queue holds, per task, the results received and not yet written;
	// the rows of queue[t][0] before at[t] are.
	queue [][]*resEntry
	at    []int
	ended []bool
	// rows counts result rows received; merged their number at the last
	// merge.
	rows, merged int64

	// scratch of a merge: the sources of the gather (chunks of results)
	// of generation gen, and the Results written out.
	srcs []resSrc
	gen  uint64
	done []*window.Results
	segs []arrowutil.Seg
}

// resSrc is a chunk of a task's results: a source of the gather.
type resSrc struct {
	r *window.Results
	c int32
}

// resEntry is a task's Results queued, with its chunks' source indexes
// in the gather of generation gen (-1: not a source yet).
type resEntry struct {
	r   *window.Results
	gen uint64
	src []int32
}

// sources returns e's chunk-to-source table of the current gather.
func (e *resEntry) sources(gen uint64) []int32 {
	if e.gen != gen {
		e.gen = gen
		for c := range e.src {
			e.src[c] = -1
		}
	}
	return e.src
}

func newResMerger(r *runner, st *stage, proj []int, out *arrow.Schema) *resMerger {
	return &resMerger{mem: r.opt.Mem, seqCol: st.seqCol, nIn: st.in.NumFields(), proj: proj, out: out,
		queue: make([][]*resEntry, r.n), at: make([]int, r.n), ended: make([]bool, r.n), inPlace: r.resTypes != nil}
}

// destAcc is what the tasks reported done of a batch's Dest: rows, and
// the rows with a NULL result, by aggregate.
type destAcc struct {
	rows  int
	nulls [][]int32
}

// accOf returns d's accumulated reports.
func (m *resMerger) accOf(d *window.Dest) *destAcc {
	if m.acc == nil {
		m.acc = map[*window.Dest]*destAcc{}
	}
	a := m.acc[d]
	if a == nil {
		a = &destAcc{}
		m.acc[d] = a
	}
	return a
}

// input takes an input batch (the merger's reference) and its Dest (nil
// when results are not written in place).
func (m *resMerger) input(rec arrow.RecordBatch, dst *window.Dest) {
	m.inputs = append(m.inputs, rec)
	if m.inPlace {
		m.dests = append(m.dests, dst)
		m.accOf(dst)
	}
}

// results takes task t's next results.
func (m *resMerger) results(t int, res *window.Results) {
	for _, d := range res.Done {
		a := m.accOf(d.Dest)
		a.rows += d.Rows
		if d.Nulls != nil {
			if a.nulls == nil {
				a.nulls = make([][]int32, len(d.Nulls))
			}
			for k, rows := range d.Nulls {
				a.nulls[k] = append(a.nulls[k], rows...)
			}
		}
	}
	if res.Len() == 0 {
		res.Release()
		return
	}
	m.queue[t] = append(m.queue[t], &resEntry{r: res, gen: m.gen - 1, src: make([]int32, len(res.Cols))})
	m.rows += int64(res.Len())
}

// end notes that task t has sent all its results.
func (m *resMerger) end(t int) { m.ended[t] = true }

func (m *resMerger) allEnded() bool {
	for _, e := range m.ended {
		if !e {
			return false
		}
	}
	return true
}

// maybeMerge merges once mergeChunk result rows have come since the last
// merge, so that written batches stay large, and once every task has
// ended.
func (m *resMerger) maybeMerge(emit func(arrow.RecordBatch) error) error {
	if m.allEnded() {
		if err := m.merge(emit); err != nil {
			return err
		}
		if len(m.inputs) > 0 {
			return fmt.Errorf("volga: internal error: %d input rows got no results from the window tasks", m.unwritten())
		}
		for t, q := range m.queue {
			if len(q) > 0 {
				return fmt.Errorf("volga: internal error: window task %d sent results of rows not in the input (sequence %d)", t, q[0].r.Seq[m.at[t]])
			}
		}
		return nil
	}
	if !m.inPlace && m.rows < m.merged+int64(mergeChunk) {
		return nil
	}
	m.merged = m.rows
	return m.merge(emit)
}

func (m *resMerger) unwritten() int64 {
	n := -int64(m.pos)
	for _, rec := range m.inputs {
		n += rec.NumRows()
	}
	return n
}

// merge writes the input rows whose results have all come, in order, in
// batches of at most mergeChunk rows that do not span input batches.
func (m *resMerger) merge(emit func(arrow.RecordBatch) error) error {
	if m.inPlace {
		return m.mergeDests(emit)
	}
	for len(m.inputs) > 0 {
		in := m.inputs[0]
		seq := in.Column(m.seqCol).(*array.Int64).Int64Values()
		start := m.pos
		end := min(len(seq), start+mergeChunk)
		waiting := false
		for m.pos < end {
			s := seq[m.pos]
			t := -1
			for u, q := range m.queue {
				if len(q) > 0 && q[0].r.Seq[m.at[u]] == s {
					t = u
					break
				}
			}
			if t < 0 {
				waiting = true
				break
			}
			// The run of rows of task t that come next.
			e, k := m.queue[t][0], m.at[t]
			r, tab := e.r, e.sources(m.gen)
			for m.pos < end && k < r.Len() && r.Seq[k] == seq[m.pos] {
				c := r.Chunk[k]
				si := tab[c]
				if si < 0 {
					si = int32(len(m.srcs))
					tab[c] = si
					m.srcs = append(m.srcs, resSrc{r, c})
				}
				m.segs = arrowutil.AppendSeg(m.segs, si, r.Row[k])
				k++
				m.pos++
			}
			m.at[t] = k
			if k == r.Len() {
				m.done = append(m.done, r)
				m.queue[t] = m.queue[t][1:]
				m.at[t] = 0
			}
		}
		if err := m.flush(in, start, m.pos, emit); err != nil {
			return err
		}
		if m.pos == len(seq) {
			in.Release()
			m.inputs = m.inputs[1:]
			m.pos = 0
		}
		if waiting {
			return nil
		}
	}
	return nil
}

// mergeDests writes, in order, the input batches whose rows are all done,
// each with its Dest's columns.
func (m *resMerger) mergeDests(emit func(arrow.RecordBatch) error) error {
	for len(m.inputs) > 0 {
		in, d := m.inputs[0], m.dests[0]
		a := m.acc[d]
		if a.rows < d.Rows() {
			return nil
		}
		if a.rows > d.Rows() {
			return fmt.Errorf("volga: internal error: window tasks reported %d rows done of a batch of %d", a.rows, d.Rows())
		}
		res := d.Arrays(a.nulls)
		cols := make([]arrow.Array, len(m.proj))
		for k, col := range m.proj {
			if col < m.nIn {
				cols[k] = in.Column(col)
			} else {
				cols[k] = res[col-m.nIn]
			}
		}
		rec := array.NewRecordBatch(m.out, cols, in.NumRows())
		arrowutil.ReleaseAll(res)
		in.Release()
		delete(m.acc, d)
		m.inputs, m.dests = m.inputs[1:], m.dests[1:]
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// flush writes rows [start, end) of in with their results (m.segs).
func (m *resMerger) flush(in arrow.RecordBatch, start, end int, emit func(arrow.RecordBatch) error) error {
	defer func() {
		for _, r := range m.done {
			r.Release()
		}
		m.done, m.segs, m.srcs = m.done[:0], m.segs[:0], m.srcs[:0]
		m.gen++
	}()
	if end == start {
		return nil
	}
	cols := make([]arrow.Array, len(m.proj))
	defer func() { arrowutil.ReleaseAll(cols) }()
	var res []int // output columns that are results
	for k, col := range m.proj {
		if col < m.nIn {
			cols[k] = array.NewSlice(in.Column(col), int64(start), int64(end))
		} else {
			res = append(res, k)
		}
	}
	gather := func(k int) error {
		a := m.proj[k] - m.nIn
		arrs := make([]arrow.Array, len(m.srcs))
		for i, s := range m.srcs {
			arrs[i] = s.r.Cols[s.c][a]
		}
		g, err := arrowutil.Gather(m.mem, m.out.Field(k).Type, arrs, m.segs)
		cols[k] = g
		return err
	}
	// Results come out of key order, so gathering them misses the cache
	// row after row, alone on the merger's goroutine: several result
	// columns of a large flush are gathered side by side (list and map
	// results of ml-3 were 20 % of its CPU here, and the merger its
	// bottleneck).
	if len(res) > 1 && end-start >= parallelGatherRows {
		errs := make([]error, len(res))
		var wg sync.WaitGroup
		for i, k := range res[1:] {
			wg.Go(func() { errs[i+1] = gather(k) })
		}
		errs[0] = gather(res[0])
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	} else {
		for _, k := range res {
			if err := gather(k); err != nil {
				return err
			}
		}
	}
	return emit(array.NewRecordBatch(m.out, cols, int64(end-start)))
}

// parallelGatherRows is the least number of rows a flush gathers its
// result columns for in parallel.
const parallelGatherRows = 4096

// release lets go of everything held (the run ended or failed).
func (m *resMerger) release() {
	arrowutil.ReleaseAll(m.inputs)
	m.inputs, m.dests, m.acc = nil, nil, nil
	for t, q := range m.queue {
		for _, e := range q {
			e.r.Release()
		}
		m.queue[t] = nil
	}
	for _, r := range m.done {
		r.Release()
	}
	m.done = nil
}
