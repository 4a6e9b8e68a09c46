package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

const probeColName = "__volga_probe"

// ErrSpine is matched (errors.Is) by Backfill's errors about the spine's
// columns: a key or time column it lacks, a column of another type than
// the events' column of that name, or a column named like a feature or
// with a reserved name. The events and the query are not at fault.
var ErrSpine = errors.New("volga: the spine does not fit the query")

// spineError is an error about the spine's columns, matching ErrSpine.
type spineError struct{ msg string }

func (e *spineError) Error() string        { return e.msg }
func (e *spineError) Is(target error) bool { return target == ErrSpine }

func spineErrorf(format string, args ...any) error {
	return &spineError{msg: fmt.Sprintf(format, args...)}
}

// Backfill computes point-in-time training data (SPEC section 6): for each
// row of spine, the plan's windowed features as of that row's time,
// exactly what a lookup at (key, time) would have returned online had
// every event with ts <= time been ingested; with strict, only events with
// ts < time. The spine has the plan's PARTITION BY columns and its ORDER BY
// time column under the same names and types as the events, plus any
// other columns (labels), which are passed through. The output has the
// spine's columns in spine order, then one column per windowed aggregate
// in SELECT order, one row per spine row, in spine order.
//
// It is one sort-merge pass: events and spine rows go through the window
// operators together, the spine rows as probes that are never stored.
// Errors about the spine's columns match ErrSpine.
func Backfill(ctx context.Context, plan *Plan, events, spine source.Source, out sink.Sink, timeColumn string, strict bool, opt RunOptions) (err error) {
	closeOut := true // until Run has out: it closes it
	defer func() {
		if closeOut {
			// A failed backfill abandons out (see Abandoner).
			if cerr := closeSinks(out, nil, err, opt.Logger); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	if plan.Group != nil {
		return errors.New("volga: backfill needs sliding windows (OVER), not GROUP BY tumble/hop")
	}
	if len(plan.Windows) == 0 {
		return errors.New("volga: backfill needs a query with windowed aggregates")
	}
	es, ss := events.Schema(), spine.Schema()
	// The union layout: event columns, spine-only columns, the probe flag.
	fields := append([]arrow.Field{}, es.Fields()...)
	var spineOnly []arrow.Field
	for _, f := range ss.Fields() {
		if strings.HasPrefix(f.Name, "__volga_") {
			return spineErrorf("volga: spine column %q: names starting with __volga_ are reserved", f.Name)
		}
		idx := fieldIndexFold(es, f.Name)
		if idx < 0 {
			spineOnly = append(spineOnly, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
			continue
		}
		if !arrow.TypeEqual(es.Field(idx).Type, f.Type) {
			return spineErrorf("volga: spine column %q has type %s, but the events' column has type %s", f.Name, f.Type, es.Field(idx).Type)
		}
	}
	for i := range fields {
		fields[i].Nullable = true
	}
	fields = append(fields, spineOnly...)
	probeIdx := len(fields)
	fields = append(fields, arrow.Field{Name: probeColName, Type: arrow.FixedWidthTypes.Boolean})
	union := arrow.NewSchema(fields, nil)

	c, err := Compile(plan, union, timeColumn)
	if err != nil {
		return err
	}
	// The spine must carry every key column and the time column.
	need := append(c.LookupKeys(), c.TimeColumn)
	for _, name := range need {
		if fieldIndexFold(ss, name) < 0 {
			return spineErrorf("volga: the spine has no column %q (it needs the key columns %s and the time column %q)", name, strings.Join(c.LookupKeys(), ", "), c.TimeColumn)
		}
	}
	// The output holds the spine's columns and the features: one name
	// for two of them would make a file whose readers keep one (a JSON
	// object's last "s" hides the spine's label s).
	for _, it := range plan.Items {
		if it.Agg != nil && fieldIndexFold(ss, it.Name) >= 0 {
			return spineErrorf("volga: the spine's column %q has the name of a feature of the query; rename the column or give the feature another name (AS ...)", ss.Field(fieldIndexFold(ss, it.Name)).Name)
		}
	}
	for _, st := range c.stages {
		st.cfg.ProbeCol = probeIdx
		st.cfg.StrictProbes = strict
	}
	// Output: the spine's columns, then the features.
	var outIdx []int
	var outFields []arrow.Field
	for _, f := range ss.Fields() {
		outIdx = append(outIdx, fieldIndexFold(union, f.Name))
		outFields = append(outFields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	for k, it := range plan.Items {
		if it.Agg != nil {
			outIdx = append(outIdx, c.outIdx[k])
			outFields = append(outFields, arrow.Field{Name: it.Name, Type: c.Output.Field(k).Type, Nullable: true})
		}
	}
	c.outIdx = outIdx
	c.Output = arrow.NewSchema(outFields, nil)
	c.probeIdx = probeIdx
	opt.Mode = Batch
	mem := opt.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	src := &unionSource{schema: union, parts: []source.Source{events, spine}, mem: mem,
		spineTime: fieldIndexFold(ss, c.TimeColumn), timeName: c.TimeColumn,
		timeNames: []string{es.Field(fieldIndexFold(es, c.TimeColumn)).Name, ss.Field(fieldIndexFold(ss, c.TimeColumn)).Name}}
	src.interleave = interleaveBackfill
	for _, p := range src.parts {
		_, ok := p.(source.LowerBounder)
		src.interleave = src.interleave && ok
	}
	closeOut = false
	return c.Run(ctx, src, out, opt)
}

func fieldIndexFold(s *arrow.Schema, name string) int {
	if idx := s.FieldIndices(name); len(idx) == 1 {
		return idx[0]
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// unionSource reads its parts, laying every batch out in the union
// schema: columns a part lacks are NULL, and the last column flags the
// rows of the last part (the spine) as probes.
//
// When every part bounds the event times it has still to give
// (source.LowerBounder: Parquet row groups, in-memory batches, text files
// promised in time order), it reads next from the part whose bound is
// the lowest, and bounds its own times by the least of theirs: events and
// spine in time order then make an input in time order (or nearly: a
// batch may reach past the other's next rows), which a batch run finishes
// as it reads, in memory bounded by the windows rather than by the
// events. Otherwise it reads the events, then the spine, and every row
// waits for the end. Either way the output is the same: the window
// operators order rows by time, and output keeps spine order.
type unionSource struct {
	schema *arrow.Schema
	parts  []source.Source
	cur    int
	mem    memory.Allocator
	// interleave: read from the part of the lowest bound (see above);
	// timeNames are the time column's name in each part, done the parts
	// that have ended.
	interleave bool
	timeNames  []string
	done       [2]bool
	// spineTime is the index of the time column in the spine's batches
	// (timeName its name), and spineRows the spine rows read so far: a
	// spine row without a time is an error, not a row silently missing
	// from the output.
	spineTime int
	timeName  string
	spineRows int64
}

func (u *unionSource) Schema() *arrow.Schema { return u.schema }

// interleaveBackfill lets backfills read events and spine interleaved
// (a variable for tests of the sequential order).
var interleaveBackfill = true

// next returns the part to read next, len(parts) when all have ended.
func (u *unionSource) next() int {
	for u.cur < len(u.parts) && u.done[u.cur] {
		u.cur++
	}
	if !u.interleave || u.cur >= len(u.parts)-1 {
		return u.cur
	}
	// Both parts are open: the one of the lower bound (the events on a
	// tie, or when a bound is not known).
	eb, eok := u.parts[0].(source.LowerBounder).LowerBound(u.timeNames[0])
	sb, sok := u.parts[1].(source.LowerBounder).LowerBound(u.timeNames[1])
	if eok && sok && sb < eb {
		return 1
	}
	return 0
}

// LowerBound implements source.LowerBounder for the time column when the
// parts are read interleaved: the least of their bounds.
func (u *unionSource) LowerBound(col string) (int64, bool) {
	if !u.interleave || !strings.EqualFold(col, u.timeName) {
		return 0, false
	}
	bound := int64(math.MaxInt64)
	for i, p := range u.parts {
		if u.done[i] {
			continue
		}
		b, ok := p.(source.LowerBounder).LowerBound(u.timeNames[i])
		if !ok {
			return 0, false
		}
		bound = min(bound, b)
	}
	return bound, true
}

func (u *unionSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		k := u.next()
		if k >= len(u.parts) {
			break
		}
		rec, err := u.parts[k].Read(ctx)
		if err == io.EOF {
			u.done[k] = true
			continue
		}
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		if err := checkBatchSchema(u.parts[k].Schema(), rec); err != nil {
			return nil, err
		}
		probe := k == len(u.parts)-1
		if probe {
			if col := rec.Column(u.spineTime); col.NullN() > 0 {
				for i := 0; i < col.Len(); i++ {
					if col.IsNull(i) {
						return nil, fmt.Errorf("volga: backfill: spine row %d has no time (column %q is NULL); every spine row needs one", u.spineRows+int64(i)+1, u.timeName)
					}
				}
			}
			u.spineRows += rec.NumRows()
		}
		return u.layout(rec, probe)
	}
	return nil, io.EOF
}

func (u *unionSource) layout(rec arrow.RecordBatch, probe bool) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, u.schema.NumFields())
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	for i, f := range u.schema.Fields()[:u.schema.NumFields()-1] {
		if j := fieldIndexFold(rec.Schema(), f.Name); j >= 0 {
			cols[i] = rec.Column(j)
			continue
		}
		a := array.MakeArrayOfNull(u.mem, f.Type, n)
		owned = append(owned, a)
		cols[i] = a
	}
	b := array.NewBooleanBuilder(u.mem)
	b.Resize(n)
	for i := 0; i < n; i++ {
		b.UnsafeAppend(probe)
	}
	pa := b.NewArray()
	b.Release()
	owned = append(owned, pa)
	cols[len(cols)-1] = pa
	return array.NewRecordBatch(u.schema, cols, int64(n)), nil
}

func (u *unionSource) Close() error {
	var errs []error
	for _, p := range u.parts {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// probeRows keeps the probe rows of rec (backfill output).
func probeRows(mem memory.Allocator, rec arrow.RecordBatch, col int) (arrow.RecordBatch, error) {
	flags := rec.Column(col).(*array.Boolean)
	keep := make([]int32, 0, flags.Len())
	for i := 0; i < flags.Len(); i++ {
		if flags.Value(i) {
			keep = append(keep, int32(i))
		}
	}
	if len(keep) == flags.Len() {
		rec.Retain()
		return rec, nil
	}
	return arrowutil.Take(mem, rec, keep)
}
