package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// A batch run of one sliding-window stage sends every prepared batch whole
// to each task, which takes its own rows of it (window.Operator.PushRows;
// a single task takes them all). Each input row gives exactly one output row:
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
// tasks, where a gather on the merger read every row out of cache. With
// one task this spares it gathering its output rows into arrival order
// (features-4 at parallelism 1: 12 % less time).

// resultMerging reports whether the run merges results onto its input
// (see above): a batch run of one sliding-window stage,
// unless it resumes a checkpoint whose merger merged whole rows (taken by
// an earlier version), which it then resumes the same way.
func (r *runner) resultMerging() bool {
	if r.opt.Mode != Batch || len(r.c.stages) != 1 || !resultMergingOn {
		return false
	}
	if r.ck != nil && r.ck.restored != nil {
		if _, ok := r.ck.restored[partResults]; !ok {
			return false
		}
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
// benchmarks of the gather it replaces), and resultMergingOn merge results
// onto the input (for tests of checkpoints taken without).
var resultsInPlace, resultMergingOn = true, true

// destTypes returns the result types of the first stage when every one
// can be written in place, else nil. Runs with checkpoints gather their
// results: rows done in place are not in a form a checkpoint can save.
func (r *runner) destTypes() []arrow.DataType {
	if !resultsInPlace || r.checkpointing() {
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
	// inSchema is the layout of the input batches, full the stage's
	// output (input columns, then results): what checkpoints save.
	inSchema, full *arrow.Schema
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
	return &resMerger{mem: r.opt.Mem, seqCol: st.seqCol, nIn: st.in.NumFields(), proj: proj, out: out, inSchema: st.in, full: st.out,
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
			wg.Go(func() {
				defer recoverAs("the merger's gather", nil, &errs[i+1])
				errs[i+1] = gather(k)
			})
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

// Checkpoints of a result merger.
//
// At an aligned barrier the merger has every input batch the reader sent
// before it, and every result the tasks released before it; the rows of
// those batches not yet written are either among those results or still
// waiting in a task (whose part of the checkpoint has them). So the
// merger's part is the unwritten input rows, and per task the results it
// sent that are not written yet (sequence numbers and result columns),
// which a resumed merger takes back as they were. Results written in
// place (window.Dest) have no such form: runs with checkpoints gather
// them (destTypes).

// resMergerState is the JSON header of a result merger's part.
type resMergerState struct {
	Kind  string `json:"kind"`
	Tasks int    `json:"tasks"`
}

// resMergerKind tells a result merger's part from an output merger's.
const resMergerKind = "results"

// resultSchema is the layout in which a checkpoint saves a task's
// results: the sequence number, then the result columns.
func (m *resMerger) resultSchema() *arrow.Schema {
	fields := []arrow.Field{{Name: seqColName, Type: arrow.PrimitiveTypes.Int64}}
	for k := m.nIn; k < m.full.NumFields(); k++ {
		fields = append(fields, m.full.Field(k))
	}
	return arrow.NewSchema(fields, nil)
}

// checkpoint returns the merger's part of a checkpoint (see above).
func (m *resMerger) checkpoint() (_ []byte, err error) {
	if m.inPlace {
		return nil, errors.New("volga: internal error: a checkpoint of results written in place")
	}
	var keep []arrow.RecordBatch
	defer func() {
		arrowutil.ReleaseAll(keep)
	}()
	inputs := make([]arrow.RecordBatch, 0, len(m.inputs))
	for k, in := range m.inputs {
		if k == 0 && m.pos > 0 {
			in = in.NewSlice(int64(m.pos), in.NumRows())
			keep = append(keep, in)
		}
		inputs = append(inputs, in)
	}
	rschema := m.resultSchema()
	groups := make([][]arrow.RecordBatch, len(m.queue))
	for t, q := range m.queue {
		for k, e := range q {
			from := 0
			if k == 0 {
				from = m.at[t]
			}
			rec, err := m.savedResults(rschema, e.r, from)
			if err != nil {
				return nil, err
			}
			keep = append(keep, rec)
			groups[t] = append(groups[t], rec)
		}
	}
	js, err := json.Marshal(resMergerState{Kind: resMergerKind, Tasks: len(m.queue)})
	if err != nil {
		return nil, err
	}
	in, err := encodeBatches(m.inSchema, [][]arrow.RecordBatch{inputs})
	if err != nil {
		return nil, err
	}
	res, err := encodeBatches(rschema, groups)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, b := range [][]byte{js, in, res} {
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// savedResults gathers rows from.. of r into one batch of the layout
// rschema.
func (m *resMerger) savedResults(rschema *arrow.Schema, r *window.Results, from int) (arrow.RecordBatch, error) {
	n := r.Len() - from
	segs := make([]arrowutil.Seg, 0, n)
	for k := from; k < r.Len(); k++ {
		segs = arrowutil.AppendSeg(segs, r.Chunk[k], r.Row[k])
	}
	cols := make([]arrow.Array, rschema.NumFields())
	defer arrowutil.ReleaseAll(cols)
	b := array.NewInt64Builder(m.mem)
	b.AppendValues(r.Seq[from:], nil)
	cols[0] = b.NewArray()
	b.Release()
	arrs := make([]arrow.Array, len(r.Cols))
	for a := 1; a < len(cols); a++ {
		for c := range r.Cols {
			arrs[c] = r.Cols[c][a-1]
		}
		g, err := arrowutil.Gather(m.mem, rschema.Field(a).Type, arrs, segs)
		if err != nil {
			return nil, err
		}
		cols[a] = g
	}
	return array.NewRecordBatch(rschema, cols, int64(n)), nil
}

// restore takes back the state a checkpoint saved (see checkpoint).
func (m *resMerger) restore(data []byte) (err error) {
	var parts [3][]byte
	for i := range parts {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			return errors.New("volga: checkpoint: results merger part is damaged")
		}
		parts[i], data = data[k:k+int(n)], data[k+int(n):]
	}
	var st resMergerState
	if err := json.Unmarshal(parts[0], &st); err != nil {
		return fmt.Errorf("volga: checkpoint: results merger part: %w", err)
	}
	if st.Kind != resMergerKind || st.Tasks != len(m.queue) {
		return fmt.Errorf("volga: checkpoint: results merger part is of kind %q with %d tasks, want %q with %d", st.Kind, st.Tasks, resMergerKind, len(m.queue))
	}
	in, err := decodeBatches(m.mem, m.inSchema, parts[1])
	if err != nil {
		return fmt.Errorf("volga: checkpoint: results merger part: input rows: %w", err)
	}
	res, err := decodeBatches(m.mem, m.resultSchema(), parts[2])
	if err != nil {
		for _, g := range in {
			arrowutil.ReleaseAll(g)
		}
		return fmt.Errorf("volga: checkpoint: results merger part: results: %w", err)
	}
	defer func() {
		for _, g := range res {
			arrowutil.ReleaseAll(g)
		}
	}()
	if len(in) != 1 || len(res) != len(m.queue) {
		for _, g := range in {
			arrowutil.ReleaseAll(g)
		}
		return fmt.Errorf("volga: checkpoint: results merger part has %d input groups and %d result groups, want 1 and %d", len(in), len(res), len(m.queue))
	}
	m.inputs = in[0]
	m.pos = 0
	for t, g := range res {
		for _, rec := range g {
			m.results(t, restoredResults(rec))
		}
	}
	return nil
}

// restoredResults makes a task's Results of a batch saved by savedResults
// (which keeps its own reference to it).
func restoredResults(rec arrow.RecordBatch) *window.Results {
	n := int(rec.NumRows())
	r := &window.Results{
		Seq:   slices.Clone(rec.Column(0).(*array.Int64).Int64Values()),
		Chunk: make([]int32, n),
		Row:   make([]int32, n),
		Cols:  [][]arrow.Array{make([]arrow.Array, rec.NumCols()-1)},
	}
	for k := range r.Row {
		r.Row[k] = int32(k)
	}
	for a := range r.Cols[0] {
		col := rec.Column(a + 1)
		col.Retain()
		r.Cols[0][a] = col
	}
	return r
}
