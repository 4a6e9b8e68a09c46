package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/inttable"
)

// Clustered is a bounded source that returns the rows of another one
// clustered by some of its columns: every row with given values of them
// before any row with other values, the keys in the order of their first
// rows, and each key's rows in their order in the input. This is the
// order a batch run promised input clustered by key (volga.WithClusteredBy)
// works through key by key, dropping each key's state once the input has
// moved on; volga.WithClusterInput sets both up.
//
// The first Read reads the whole input and keeps it in memory (the
// columns the pipeline uses, when the input can leave the others out:
// Clustered is a Projector when the input is one) and places its rows in
// output order, row-major for the columns that allow it (numbers, and
// strings of up to 15 bytes; the others are gathered a batch at a time);
// each Read then copies the next rows out in that order. So memory holds
// the input, where a batch run over input in time order holds every
// key's windows and rows waiting for their results: the better trade
// when frames are long against the input's span and the state per key is
// large (ml-3, 30-day frames with per-value tables over 5 M events of a
// month: 9.1 s and 2.1 GB of peak RSS in time order, 3.6-5.1 s and
// 0.85 GB clustered by user on 2026-12-02; see BENCHMARKS.md).
//
// An input larger than ClusteredMemory (or WithSpill's bound) is spilled
// instead: written to ClusteredSpillParts files parted by key (Arrow IPC
// streams), then clustered a part at a time, so that memory holds about
// a part. The keys then come part by part, each part's in the order of
// their first rows. Spilling costs about three times the time of
// ordering in memory (BenchmarkClusteredFeatures4: 424 against 141 ns a
// row, 2026-12-02).
//
// Clustered does not implement Seeker: runs with checkpoints refuse it.
type Clustered struct {
	in         Source
	cols       []string
	keys       []int // indexes of cols
	batch      int
	mem        memory.Allocator
	schema     *arrow.Schema
	spillDir   string
	spillBytes int64

	started, closed bool
	err             error // of the load, returned by every Read after
	// recs are the batches of the input (or of the part) being returned,
	// n their rows and next the first of them not returned yet. Their
	// columns come out of three places: the key column, when it is a
	// single column of 8-byte values, rebuilt from its runs (key); the
	// columns a rowStage can hold, placed in it in output order (st); and
	// the rest, gathered from recs through order (batch<<32 | row, in
	// output order; segs is Read's scratch). recs and order are nil once
	// every column is in key or st.
	recs  []arrow.RecordBatch
	n     int
	next  int
	key   *keyRuns
	st    *rowStage
	rest  []int
	restS *arrow.Schema
	order []uint64
	segs  []arrowutil.Seg
	// spill holds the parts of a spilled input; nil when it fits.
	spill *spill
	// g numbers the keys of recs as load reads them, and groups holds the
	// key number of each of their rows, so that order0 need not read
	// them again; both nil once the input spills (order0 then numbers
	// each part's keys itself).
	g      *grouper
	groups []int32
}

// keyRuns is the key column of the output in runs: run k (a key, in
// output order) ends at row ends[k] of order and has value vals[k], or
// NULL when k is null.
type keyRuns struct {
	col  int // the key column
	ends []int32
	vals []int64
	null int32 // -1: no NULL key
	run  int   // the run of row next
}

// ClusteredMemory is how many bytes of input a Clustered source holds in
// memory before it spills (see WithSpill). Ordering what it holds takes
// up to about as much again for a moment: the rows placed in output
// order before the batches they came from are let go.
const ClusteredMemory = 1 << 30

// ClusteredSpillParts is the number of parts a spilled input is split
// into by key.
const ClusteredSpillParts = 64

// NewClustered returns the rows of in, a bounded source, clustered by the
// columns cols (see Clustered), in batches of ClusteredBatchRows rows
// unless WithBatchSize sets another size (the only option that applies).
// A name not in in's schema, or a column whose values cannot be told
// apart as keys (floats, lists, maps, structs, unions, dictionaries), is
// an error. Clustered owns in and closes it.
func NewClustered(in Source, cols []string, opts ...Option) (*Clustered, error) {
	if in == nil {
		return nil, errors.New("source: clustered: nil input")
	}
	if len(cols) == 0 {
		return nil, errors.New("source: clustered: no columns to cluster by")
	}
	if _, err := keyIndexes(in.Schema(), cols); err != nil {
		return nil, err
	}
	o := newOptions(append([]Option{WithBatchSize(ClusteredBatchRows)}, opts...))
	if !o.spillBytesSet {
		o.spillBytes = ClusteredMemory
	}
	return &Clustered{in: in, cols: cols, batch: o.batchSize, mem: o.mem, schema: in.Schema(),
		spillDir: o.spillDir, spillBytes: o.spillBytes}, nil
}

// ClusteredBatchRows is the default number of rows of a batch of
// Clustered. When each batch's columns were all gathered from rows all
// over the input, at a cost per input batch besides the cost per row,
// ml-3's 5 M events (1 221 input batches) took 2.78-2.80 s in batches of
// 4 096 rows, 2.60-2.64 s in batches of 16 384, for 30 MB more peak RSS
// (2026-12-01); the row stage's columns are now read sequentially, and
// only the columns it cannot hold are gathered so.
const ClusteredBatchRows = 1 << 14

// keyIndexes returns the indexes in schema of the columns names (compared
// without case, as SQL's names are), or an error naming one that is
// missing or cannot be a key.
func keyIndexes(schema *arrow.Schema, names []string) ([]int, error) {
	idx := make([]int, 0, len(names))
	for _, name := range names {
		k := -1
		for i, f := range schema.Fields() {
			if strings.EqualFold(f.Name, name) {
				k = i
				break
			}
		}
		if k < 0 {
			return nil, fmt.Errorf("source: clustered: no column %q in the input (%s)", name, schema)
		}
		if !keyType(schema.Field(k).Type) {
			return nil, fmt.Errorf("source: clustered: column %q is of type %s, whose values cannot be told apart as keys", name, schema.Field(k).Type)
		}
		idx = append(idx, k)
	}
	return idx, nil
}

// keyType reports whether values of type dt can be clustered by.
func keyType(dt arrow.DataType) bool {
	switch dt.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BooleanType:
		return true
	case *arrow.DictionaryType, *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		// Floats: -0 and 0, and NaNs, are equal or not as one looks.
		return false
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	return ok && fw.BitWidth() >= 8 && fw.BitWidth()%8 == 0
}

// Schema returns the input's schema (narrowed by Project).
func (c *Clustered) Schema() *arrow.Schema { return c.schema }

// Project narrows the input to the named columns (see Projector), which
// must include the columns the rows are clustered by. It fails when the
// input cannot leave columns out.
func (c *Clustered) Project(columns []string) error {
	if c.started {
		return errors.New("source: clustered: Project after Read")
	}
	pr, ok := c.in.(Projector)
	if !ok {
		return fmt.Errorf("source: clustered: the input (%T) cannot leave columns out", c.in)
	}
	for _, k := range c.cols {
		found := false
		for _, name := range columns {
			found = found || strings.EqualFold(name, k)
		}
		if !found {
			return fmt.Errorf("source: clustered: Project leaves out %q, which the rows are clustered by", k)
		}
	}
	if err := pr.Project(columns); err != nil {
		return err
	}
	c.schema = c.in.Schema()
	return nil
}

// Read returns the next batch in clustered order, or io.EOF after the
// last. The first call reads the whole input; an error reading it is
// returned by that call and every later one.
func (c *Clustered) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if c.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !c.started {
		c.started = true
		if err := c.load(ctx); err != nil {
			c.release()
			c.dropSpill()
			c.err = err
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	for c.next >= c.n {
		c.release()
		if c.spill == nil {
			return nil, io.EOF
		}
		more, err := c.nextPart()
		if err != nil {
			c.err = err
			c.dropSpill()
			return nil, err
		}
		if !more {
			c.dropSpill()
			return nil, io.EOF
		}
	}
	// Turned into columns a batch at a time, as the pipeline goes, on the
	// reader's goroutine: the row stage was filled in output order before
	// the run, the other columns are gathered here (gathered whole before
	// the run, a column at a time in parallel, they cost as much CPU, and
	// the run waited for them).
	end := min(c.n, c.next+c.batch)
	var segs []arrowutil.Seg
	if c.order != nil {
		segs = c.segs[:0]
		for _, p := range c.order[c.next:end] {
			segs = arrowutil.AppendSeg(segs, int32(p>>32), int32(p))
		}
		c.segs = segs
	}
	rec, err := c.gather(segs, c.next, end)
	if err != nil {
		return nil, fmt.Errorf("source: clustered: %w", err)
	}
	c.next = end
	return rec, nil
}

// load reads every batch of the input and orders its rows, or spills
// them to parts and orders the first part.
func (c *Clustered) load(ctx context.Context) error {
	keys, err := keyIndexes(c.schema, c.cols)
	if err != nil {
		return err
	}
	c.keys = keys
	c.g = newGrouper(c.schema, keys)
	c.groups = c.groups[:0]
	var held, rows int64
	for {
		rec, err := c.in.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if !rec.Schema().Equal(c.schema) {
			rec.Release()
			return fmt.Errorf("source: clustered: the input returned a batch of schema %s, want %s", rec.Schema(), c.schema)
		}
		if c.spill != nil {
			err := c.spill.write(rec, keys)
			rec.Release()
			if err != nil {
				return err
			}
			continue
		}
		if len(c.recs) == math.MaxInt32 || rows+rec.NumRows() > math.MaxInt32 {
			rec.Release()
			return errors.New("source: clustered: the input has more than 2^31 rows or batches held in memory; let it spill (WithSpill)")
		}
		c.recs = append(c.recs, rec)
		if c.g != nil {
			c.groups = c.g.appendGroups(c.groups, rec)
		}
		rows += rec.NumRows()
		held += recordBytes(rec)
		if c.spillBytes > 0 && held > c.spillBytes {
			if c.spill, err = newSpill(c.spillDir, c.schema, c.mem); err != nil {
				return err
			}
			for _, r := range c.recs {
				if err := c.spill.write(r, keys); err != nil {
					return err
				}
			}
			c.release()
			c.g, c.groups = nil, nil
		}
	}
	if c.spill == nil {
		return c.order0()
	}
	if err := c.spill.finish(keys); err != nil {
		return err
	}
	return nil
}

// order0 orders the rows of recs: a counting sort by key, stable, the
// keys numbered in the order of their first rows. The rows are placed
// in output order in the row stage (the columns it can hold), or noted
// in order (for the columns gathered), or both.
func (c *Clustered) order0() error {
	g, groups := c.g, c.groups
	c.g, c.groups = nil, nil
	if g == nil {
		g = newGrouper(c.schema, c.keys)
		for _, rec := range c.recs {
			groups = g.appendGroups(groups, rec)
		}
	}
	start := make([]int32, g.n+1)
	for _, k := range groups {
		start[k+1]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	c.n, c.next = len(groups), 0
	skip := -1
	if g.words {
		skip = c.keys[0]
	}
	c.st, c.rest = planRows(c.schema, c.recs, skip)
	if c.st != nil {
		c.st.alloc(c.n)
	}
	c.order = nil
	if len(c.rest) > 0 {
		c.order = make([]uint64, c.n)
		fields := make([]arrow.Field, len(c.rest))
		for j, f := range c.rest {
			fields[j] = c.schema.Field(f)
		}
		c.restS = arrow.NewSchema(fields, nil)
	}
	c.place(groups, start)
	c.key = nil
	if g.words {
		// start[k] is now where key k's rows end.
		c.key = &keyRuns{col: c.keys[0], ends: start[:g.n], vals: g.vals, null: g.null}
	}
	return nil
}

// placeParallelRows is the number of rows from which order0 places the
// rows with two goroutines, each half of the input.
const placeParallelRows = 1 << 16

// place puts the rows of recs, of keys groups, in output order: in the
// row stage and in order. start holds the first row of each key, and
// holds where each key's rows end afterwards. Without gathered columns
// each batch of recs is released once placed.
func (c *Clustered) place(groups []int32, start []int32) {
	release := len(c.rest) == 0
	defer func() {
		if release {
			c.recs = nil
		}
	}()
	if len(groups) < placeParallelRows || len(c.recs) < 2 || runtime.GOMAXPROCS(0) < 2 {
		c.placeRecs(0, len(c.recs), groups, start, release)
		return
	}
	// The first half's rows go where each key's rows start, the second
	// half's after the first half's rows of the key.
	h, rows := 0, 0
	for h < len(c.recs)-1 && rows < len(groups)/2 {
		rows += int(c.recs[h].NumRows())
		h++
	}
	first := slices.Clone(start)
	for _, k := range groups[:rows] {
		start[k]++
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.placeRecs(0, h, groups[:rows], first, release) })
	c.placeRecs(h, len(c.recs), groups[rows:], start, release)
	wg.Wait()
}

// placeRecs places the rows of recs[b0:b1], of keys groups, each at the
// next row of pos of its key.
func (c *Clustered) placeRecs(b0, b1 int, groups []int32, pos []int32, release bool) {
	var dest []int32
	i := 0
	for b := b0; b < b1; b++ {
		rec := c.recs[b]
		n := int(rec.NumRows())
		dest = slices.Grow(dest[:0], n)[:n]
		for r, k := range groups[i : i+n] {
			dest[r] = pos[k]
			pos[k]++
		}
		i += n
		if c.order != nil {
			for r, p := range dest {
				c.order[p] = uint64(b)<<32 | uint64(r)
			}
		}
		if c.st != nil {
			c.st.put(rec, dest)
		}
		if release {
			rec.Release()
			c.recs[b] = nil
		}
	}
}

// gather returns rows from to to of the output, order[from:to] being
// segs: the key column rebuilt from its runs (a column of runs of one
// value each, written in order where a gather would read each row's
// value from wherever it is), the row stage's columns read from it, and
// the rest gathered from recs.
func (c *Clustered) gather(segs []arrowutil.Seg, from, to int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, c.schema.NumFields())
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	if len(c.rest) > 0 {
		rest, err := arrowutil.GatherColumns(c.mem, c.restS, c.recs, c.rest, segs)
		if err != nil {
			return nil, err
		}
		for j, f := range c.rest {
			cols[f] = rest.Column(j)
			cols[f].Retain()
		}
		rest.Release()
	}
	if c.key != nil {
		cols[c.key.col] = c.keyColumn(from, to)
	}
	if c.st != nil {
		c.st.columns(c.mem, from, to, cols)
	}
	return array.NewRecordBatch(c.schema, cols, int64(to-from)), nil
}

// keyColumn returns rows from to to of the key column, from its runs.
func (c *Clustered) keyColumn(from, to int) arrow.Array {
	kr := c.key
	n := to - from
	vb := memory.NewResizableBuffer(c.mem)
	vb.Resize(8 * n)
	defer vb.Release()
	out := arrow.Int64Traits.CastFromBytes(vb.Bytes())[:n]
	var valid *memory.Buffer
	nulls := 0
	for p := from; p < to; {
		for kr.ends[kr.run] <= int32(p) {
			kr.run++
		}
		end := min(int(kr.ends[kr.run]), to)
		if int32(kr.run) == kr.null {
			if valid == nil {
				valid = memory.NewResizableBuffer(c.mem)
				valid.Resize(int(bitutil.BytesForBits(int64(n))))
				bitutil.SetBitsTo(valid.Bytes(), 0, int64(n), true)
				defer valid.Release()
			}
			bitutil.SetBitsTo(valid.Bytes(), int64(p-from), int64(end-p), false)
			clear(out[p-from : end-from])
			nulls += end - p
		} else {
			v := kr.vals[kr.run]
			for i := p - from; i < end-from; i++ {
				out[i] = v
			}
		}
		p = end
	}
	kd := array.NewData(c.schema.Field(kr.col).Type, n, []*memory.Buffer{valid, vb}, nil, nulls, 0)
	defer kd.Release()
	return array.MakeFromData(kd)
}

// nextPart reads the next part of a spilled input with rows, and orders
// them; false when there are no more.
func (c *Clustered) nextPart() (bool, error) {
	for {
		recs, ok, err := c.spill.read()
		if err != nil || !ok {
			return false, err
		}
		if len(recs) > 0 {
			c.recs = recs
			return true, c.order0()
		}
	}
}

// dropSpill removes the spill's files.
func (c *Clustered) dropSpill() {
	if c.spill != nil {
		c.spill.remove()
		c.spill = nil
	}
}

// release lets the batches being returned go.
func (c *Clustered) release() {
	arrowutil.ReleaseAll(c.recs)
	c.recs, c.order, c.segs, c.key, c.st, c.rest = nil, nil, nil, nil, nil, nil
	c.n, c.next = 0, 0
}

// Close releases what Clustered holds and closes the input.
func (c *Clustered) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.release()
	c.dropSpill()
	return c.in.Close()
}

// grouper numbers the distinct keys of rows, from 0 in the order of their
// first rows. One int64-like column or one string column is looked up by
// value; other keys by an encoding of their values.
type grouper struct {
	keys []int
	n    int32
	// Exactly one of ints and strs is used: ints when words.
	ints  inttable.Table
	strs  map[string]int32
	null  int32 // the group of a NULL key (ints and strs); -1: none yet
	buf   []byte
	words bool // keys[0] holds 8-byte values (ints)
	// vals holds the value of each group when words (0 for the NULL
	// group).
	vals []int64
}

func newGrouper(schema *arrow.Schema, keys []int) *grouper {
	g := &grouper{keys: keys, null: -1}
	dt := schema.Field(keys[0]).Type
	fw, fixed := dt.(arrow.FixedWidthDataType)
	switch {
	case len(keys) == 1 && fixed && fw.BitWidth() == 64:
		g.words = true
	default:
		g.strs = make(map[string]int32)
	}
	return g
}

// strGroup returns the group of string key k, numbering it when new.
func (g *grouper) strGroup(k string) int32 {
	if id, ok := g.strs[k]; ok {
		return id
	}
	id := g.n
	g.n++
	g.strs[strings.Clone(k)] = id
	return id
}

// appendGroups appends the group of each row of rec to groups.
func (g *grouper) appendGroups(groups []int32, rec arrow.RecordBatch) []int32 {
	n := int(rec.NumRows())
	col := rec.Column(g.keys[0])
	nullGroup := func() int32 {
		if g.null < 0 {
			g.null = g.n
			g.n++
			if g.words {
				g.vals = append(g.vals, 0)
			}
		}
		return g.null
	}
	switch {
	case g.words:
		d := col.Data()
		vals := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+n]
		nulls := col.NullN() > 0
		for i, v := range vals {
			if nulls && col.IsNull(i) {
				groups = append(groups, nullGroup())
				continue
			}
			id, ok := g.ints.Get(v)
			if !ok {
				id = g.n
				g.n++
				g.ints.Put(v, id)
				g.vals = append(g.vals, v)
			}
			groups = append(groups, id)
		}
	case len(g.keys) == 1 && isString(col):
		s := col.(*array.String)
		for i := range n {
			if s.IsNull(i) {
				groups = append(groups, nullGroup())
				continue
			}
			groups = append(groups, g.strGroup(s.Value(i)))
		}
	default:
		for i := range n {
			b := g.buf[:0]
			for _, k := range g.keys {
				b = appendKeyValue(b, rec.Column(k), i)
			}
			g.buf = b
			id, ok := g.strs[string(b)]
			if !ok {
				id = g.n
				g.n++
				g.strs[string(b)] = id
			}
			groups = append(groups, id)
		}
	}
	return groups
}

func isString(a arrow.Array) bool {
	_, ok := a.(*array.String)
	return ok
}

// appendKeyValue appends an encoding of row i of col to b, which tells
// apart every two values (and NULL) of col's type, and the columns of a
// key from one another.
func appendKeyValue(b []byte, col arrow.Array, i int) []byte {
	if col.IsNull(i) {
		return append(b, 0)
	}
	b = append(b, 1)
	var v []byte
	switch a := col.(type) {
	case *array.String:
		v = []byte(a.Value(i))
	case *array.LargeString:
		v = []byte(a.Value(i))
	case *array.Binary:
		v = a.Value(i)
	case *array.LargeBinary:
		v = a.Value(i)
	case *array.Boolean:
		if a.Value(i) {
			return append(b, 1)
		}
		return append(b, 0)
	default:
		w := col.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
		d := col.Data()
		off := (d.Offset() + i) * w
		return append(b, d.Buffers()[1].Bytes()[off:off+w]...)
	}
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
