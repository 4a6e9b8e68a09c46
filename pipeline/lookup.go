package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/values"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/window"
)

// ErrNotRunning is returned by Live.Lookup before the pipeline has
// started: until every window task of the run is up, whichever task the
// key belongs to.
var ErrNotRunning = errors.New("volga: lookup before the pipeline started")

// ErrCandidateKey is returned by Live.Lookup for a candidate row whose key
// columns hold other values than the lookup's key: inserted, the row would
// belong to another key's frames.
var ErrCandidateKey = errors.New("volga: the candidate row's key differs from the lookup key")

// ErrCandidate is matched (errors.Is) by Live.Lookup's errors about the
// candidate row itself: a column the source does not have, a value its
// column cannot hold, or an expression of the query (WHERE, a computed
// column) that fails on the row, as a CAST of text that is not a number.
// The lookup's key and time are not at fault.
var ErrCandidate = errors.New("volga: candidate row")

// ErrNoLookup is returned by Live.Lookup for a pipeline without sliding
// windows (a stateless or tumble/hop query).
var ErrNoLookup = errors.New("volga: this pipeline has no sliding-window features to look up")

// Live is the queryable state of a running or finished pipeline: request
// mode. Pass it in RunOptions.Live; Lookup is then safe to call from any
// goroutine, during the run and after it.
type Live struct {
	mu  sync.RWMutex
	c   *Compiled
	ops [][]*window.Operator // [stage][task]
	// groups are the tumble/hop operators, [stage][task] (for their
	// stats only: they answer no lookups).
	groups [][]*window.GroupOperator
	// missing counts the sliding-window tasks not registered yet: until
	// every one is, lookups get ErrNotRunning (rather than answers for
	// the keys of some tasks and ErrNotRunning for the others).
	missing int
	// Per stage, computed once: the key columns' names and types, and a
	// pool of result builders (a lookup takes one set and gives it back).
	keyNames [][]string
	keyTypes [][]arrow.DataType
	// keys is c.LookupKeys(), computed once.
	keys []string
	// scratch pools *lookupScratch: what one lookup needs, reused.
	scratch sync.Pool
	// rows pools the *FeatureRow through which Lookup goes.
	rows sync.Pool
	// outPos[s][i] is the position in names (and LookupResult.Values) of
	// stage s's result column i.
	outPos [][]int
	// names are the feature names, shared by every result.
	names []string
	// canErr is c.CanLookup(), computed once.
	canErr error
	obs    Observer // told of each lookup; see setObserver
}

// LookupResult holds the features of one key at one time.
type LookupResult struct {
	// Names are the feature names (the aggregate items of the query, in
	// SELECT order; shared between results: do not modify) and Values
	// their values as sink.Value gives them: int64, float64, string,
	// bool, time.Time, nil for NULL, []any for lists (topn_frequency's
	// entries are map[string]any structs with "value" and "count"),
	// map[string]any for structs and []sink.MapEntry, in ascending key
	// order, for maps (the _cate aggregates).
	Names  []string
	Values []any
	// Watermark is the event time (ms) up to which the state is complete;
	// rows newer than it may not be counted yet.
	Watermark int64
}

// Feature returns the value of the named feature and whether it exists.
func (r LookupResult) Feature(name string) (any, bool) {
	for i, n := range r.Names {
		if strings.EqualFold(n, name) {
			return r.Values[i], true
		}
	}
	return nil, false
}

func (l *Live) start(c *Compiled, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c = c
	l.canErr = c.CanLookup()
	l.ops = make([][]*window.Operator, len(c.stages))
	l.groups = make([][]*window.GroupOperator, len(c.stages))
	l.keyNames = make([][]string, len(c.stages))
	l.keyTypes = make([][]arrow.DataType, len(c.stages))
	l.outPos = make([][]int, len(c.stages))
	l.keys = c.LookupKeys()
	l.missing = 0
	for s, st := range c.stages {
		l.ops[s] = make([]*window.Operator, n)
		l.groups[s] = make([]*window.GroupOperator, n)
		if st.group == nil {
			l.missing += n
		}
		for _, col := range st.cfg.KeyCols {
			f := c.prep.Field(col)
			l.keyNames[s] = append(l.keyNames[s], f.Name)
			l.keyTypes[s] = append(l.keyTypes[s], f.Type)
		}
	}
	l.names = nil
	pos := make([]int, len(c.Plan.Items)) // item -> position in names
	for k, it := range c.Plan.Items {
		if it.Agg != nil {
			pos[k] = len(l.names)
			l.names = append(l.names, it.Name)
		}
	}
	for s, st := range c.stages {
		for _, item := range st.items {
			l.outPos[s] = append(l.outPos[s], pos[item])
		}
	}
	stages := c.stages
	l.scratch.New = func() any {
		sc := &lookupScratch{stages: make([]stageScratch, len(stages))}
		for s, st := range stages {
			ss := &sc.stages[s]
			ss.vals = make([]any, len(st.cfg.KeyCols))
			ss.states = make([][]agg.State, len(st.cfg.Windows))
			for w, spec := range st.cfg.Windows {
				for _, f := range spec.Aggs {
					ss.bld = append(ss.bld, array.NewBuilder(memory.DefaultAllocator, f.ResultType()))
					ss.states[w] = append(ss.states[w], f.NewState())
				}
			}
		}
		return sc
	}
}

// lookupScratch is what one lookup needs, kept in a pool so that a lookup
// allocates little more than its result.
type lookupScratch struct {
	buf    []byte // the encoded key
	stages []stageScratch
}

type stageScratch struct {
	vals   []any           // key values, by key column
	bld    []array.Builder // one per result column, empty between lookups
	states [][]agg.State   // [window][aggregate], see window.Operator.LookupWith
}

func (l *Live) register(stage, task int, op *window.Operator) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ops[stage][task] == nil {
		l.missing--
	}
	l.ops[stage][task] = op
}

// registerGroup makes a tumble/hop operator's stats part of WindowStats.
func (l *Live) registerGroup(stage, task int, op *window.GroupOperator) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups[stage][task] = op
}

// Ready reports whether Lookup answers: nil once every sliding-window
// task of the run has started (from then on, also after the run),
// ErrNotRunning before, and the reason for a pipeline that never
// answers lookups (ErrNoLookup, an UNBOUNDED PRECEDING frame). It is
// cheap and safe to call from any goroutine, as a readiness probe.
func (l *Live) Ready() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	switch {
	case l.c == nil || l.missing > 0:
		return ErrNotRunning
	case l.canErr != nil:
		return l.canErr
	}
	return nil
}

// KeyColumns returns the key columns a lookup must give: the union of the
// PARTITION BY columns of the query's windows.
func (l *Live) KeyColumns() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.c == nil {
		return nil
	}
	return l.c.LookupKeys()
}

// CanLookup reports why the pipeline cannot serve lookups: ErrNoLookup
// without sliding windows, window.ErrUnboundedLookup (wrapped, naming the
// window and its features) with an UNBOUNDED PRECEDING frame; nil when it
// can.
func (c *Compiled) CanLookup() error {
	if len(c.stages) == 0 || c.stages[0].group != nil {
		return ErrNoLookup
	}
	for _, it := range c.Plan.Items {
		if it.Agg == nil || it.Agg.Window == nil || !it.Agg.Window.Frame.Unbounded {
			continue
		}
		w := it.Agg.Window
		var feats []string
		for _, o := range c.Plan.Items {
			if o.Agg != nil && o.Agg.Window == w {
				feats = append(feats, o.Name)
			}
		}
		name := "OVER (...)"
		if w.Name != "" {
			name = w.Name
		}
		return fmt.Errorf("%w: window %s (%s) of feature(s) %s", window.ErrUnboundedLookup, name, w.Frame, strings.Join(feats, ", "))
	}
	for _, st := range c.stages {
		for _, w := range st.cfg.Windows {
			if w.Frame.Unbounded {
				return window.ErrUnboundedLookup
			}
		}
	}
	return nil
}

// LookupKeys returns the key columns of a lookup (see Live.KeyColumns).
func (c *Compiled) LookupKeys() []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range c.stages {
		for _, k := range st.keys {
			if !seen[strings.ToLower(k)] {
				seen[strings.ToLower(k)] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// Lookup returns every windowed feature of the query for key as of time
// at: for each window, the aggregate over the key's rows in the frame a
// row at (key, at) would have, without that row (SPEC section 6). key
// maps every key column (see KeyColumns) to its value. row, when not nil,
// is a candidate row (source column -> value) counted in its own frame as
// if it had been ingested, without being stored; a candidate that does not
// pass the query's WHERE clause would have been filtered out, so it counts
// nowhere. The candidate belongs to key: key columns it leaves out take
// key's values, and other values than key's are refused (ErrCandidateKey).
// It happens at at: an event-time column it leaves out takes at, and
// another time (or NULL) is refused (ErrCandidate).
// A key with no rows gets the empty-frame values.
func (l *Live) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (LookupResult, error) {
	f, _ := l.rows.Get().(*FeatureRow)
	if f == nil {
		f = new(FeatureRow)
	}
	defer func() {
		clear(f.vals) // the pool keeps no value of a lookup's
		l.rows.Put(f)
	}()
	if err := l.LookupInto(ctx, f, key, at, row); err != nil {
		return LookupResult{}, err
	}
	return f.Result(), nil
}

// LookupInto is Lookup writing the features into dst, whose memory it
// reuses: once dst has served a lookup of this pipeline, a lookup of
// features that are numbers (or NULL) allocates nothing (the key map is
// the caller's), where Lookup allocates its result and boxes each number
// into an interface value. A server answering many lookups keeps one
// FeatureRow per goroutine: fewer allocations mean fewer GC cycles and
// no assist work charged to the lookups. On an error dst's features are
// left unspecified.
func (l *Live) LookupInto(ctx context.Context, dst *FeatureRow, key map[string]any, at time.Time, row map[string]any) (err error) {
	if dst == nil {
		return errors.New("volga: LookupInto needs a FeatureRow to write into")
	}
	l.mu.RLock()
	obs := l.obs
	c, ops, canErr, missing, keys := l.c, l.ops, l.canErr, l.missing, l.keys
	l.mu.RUnlock()
	if obs != nil {
		defer func(start time.Time) { obs.LookupDone(time.Since(start), err) }(time.Now())
	}
	defer recoverAs("a lookup", nil, &err) // before the observer sees err
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return ErrNotRunning
	}
	if canErr != nil {
		return canErr
	}
	if missing > 0 {
		return ErrNotRunning
	}
	if len(key) != len(keys) {
		// Every key column is looked up below; a key of another size
		// has a column too many (or one twice, in two spellings).
		if err := checkKeyColumns(key, keys); err != nil {
			return err
		}
	}
	var cand arrow.RecordBatch
	if row != nil {
		if err := c.checkCandidateColumns(row); err != nil {
			return err
		}
		// The candidate belongs to the key: key columns it leaves out take
		// the key's values (candidateKey refuses conflicting ones).
		cloned := false
		for _, name := range c.LookupKeys() {
			if _, ok := lookupValue(row, name); ok {
				continue
			}
			if v, ok := lookupValue(key, name); ok {
				if !cloned {
					row, cloned = maps.Clone(row), true
				}
				row[name] = v
			}
		}
		// It happens at the lookup's time, as a row at (key, at) would:
		// an event time it leaves out is at, another one is refused.
		if c.timeIdx >= 0 {
			if v, ok := lookupValue(row, c.TimeColumn); ok {
				if err := c.candidateTime(v, at); err != nil {
					return err
				}
			} else {
				if !cloned {
					row, cloned = maps.Clone(row), true
				}
				row[c.TimeColumn] = at
			}
		}
		var err error
		if cand, err = c.candidate(row); err != nil {
			return err
		}
		if cand != nil {
			defer cand.Release()
		}
	}
	t := at.UnixMilli()
	dst.reset(l.names)
	sc := l.scratch.Get().(*lookupScratch)
	defer l.scratch.Put(sc)
	for s, st := range c.stages {
		ss := &sc.stages[s]
		types := l.keyTypes[s]
		vals := ss.vals
		for j, name := range l.keyNames[s] {
			v, ok := lookupValue(key, name)
			if !ok {
				clear(vals)
				return fmt.Errorf("volga: lookup key has no value for column %q (key columns: %s)", name, strings.Join(c.LookupKeys(), ", "))
			}
			vals[j] = v
		}
		var err error
		sc.buf, err = window.EncodeKeyValues(sc.buf[:0], types, vals)
		if err != nil {
			clear(vals)
			return fmt.Errorf("volga: lookup key: %w", err)
		}
		buf := sc.buf
		if cand != nil {
			if err := candidateKey(row, l.keyNames[s], types, vals, buf); err != nil {
				clear(vals)
				return err
			}
		}
		clear(vals) // do not keep the caller's values alive in the pool
		task := 0
		if n := len(ops[s]); n > 1 {
			task = int(routeHash(types, buf) % uint64(n))
		}
		l.mu.RLock()
		op := ops[s][task]
		l.mu.RUnlock()
		if op == nil {
			return ErrNotRunning
		}
		var candRows *agg.Rows
		if cand != nil {
			candRows = &agg.Rows{Ts: []int64{t}, Cols: op.ArgColumns()}
			for j, pc := range st.cfg.ArgCols {
				candRows.Cols[j].AppendArrow(cand.Column(pc), nil)
			}
		}
		bld := ss.bld
		for _, b := range bld {
			if b.Len() != 0 {
				// Left over by a lookup that panicked half way.
				b.NewArray().Release()
			}
		}
		wm, err := op.LookupWith(buf, t, candRows, bld, ss.states)
		if err != nil {
			// Drop what a failed lookup may have appended.
			for _, b := range bld {
				b.NewArray().Release()
			}
			return fmt.Errorf("volga: lookup of key %s at %s: %w", describeKey(key), at.UTC().Format(time.RFC3339Nano), err)
		}
		dst.watermark = min(dst.watermark, wm)
		for i, b := range bld {
			dst.put(l.outPos[s][i], b)
		}
	}
	return nil
}

// checkKeyColumns refuses a lookup key with a column that is not a key
// column, or a key column given twice (in two spellings: columns match
// case-insensitively). Missing columns are reported by the lookup.
func checkKeyColumns(key map[string]any, keys []string) error {
	seen := make(map[string]string, len(key))
	for name := range key {
		col := ""
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				col = k
				break
			}
		}
		if col == "" {
			return fmt.Errorf("volga: lookup key has unknown column %q; the key columns are %s", name, strings.Join(keys, ", "))
		}
		if other, dup := seen[col]; dup {
			return fmt.Errorf("volga: lookup key gives column %q twice (%q and %q)", col, other, name)
		}
		seen[col] = name
	}
	return nil
}

// checkCandidateColumns refuses a candidate row with a column that is not
// a source column (matched case-insensitively), as the HTTP handler does:
// a misspelt column would otherwise make a row with that column NULL.
func (c *Compiled) checkCandidateColumns(row map[string]any) error {
	for name := range row {
		found := false
		for _, f := range c.Source.Fields() {
			if strings.EqualFold(f.Name, name) {
				found = true
				break
			}
		}
		if !found {
			names := make([]string, c.Source.NumFields())
			for i, f := range c.Source.Fields() {
				names[i] = f.Name
			}
			return fmt.Errorf("%w has unknown column %q; the source columns are %s", ErrCandidate, name, strings.Join(names, ", "))
		}
	}
	return nil
}

// candidateKey checks that the key columns the candidate row gives hold
// the lookup key's values (vals, encoded as enc); a column the row leaves
// out takes the key's value.
func candidateKey(row map[string]any, names []string, types []arrow.DataType, vals []any, enc []byte) error {
	cv := make([]any, len(vals))
	given := false
	for j, name := range names {
		cv[j] = vals[j]
		if v, ok := lookupValue(row, name); ok {
			cv[j], given = v, true
		}
	}
	if !given {
		return nil
	}
	got, err := window.EncodeKeyValues(nil, types, cv)
	if err != nil {
		return fmt.Errorf("volga: candidate row: %w", err)
	}
	if string(got) != string(enc) {
		return fmt.Errorf("%w: the row has %s = %v, the key %v", ErrCandidateKey, strings.Join(names, ", "), cv, vals)
	}
	return nil
}

// candidateTime checks that v, a candidate row's event time, is the
// lookup's time at (in the column's unit).
func (c *Compiled) candidateTime(v any, at time.Time) error {
	f := c.Source.Field(c.timeIdx)
	const how = "a candidate row happens at the lookup time: leave the column out, or give that time"
	if v == nil {
		return fmt.Errorf("%w column %q is NULL; %s", ErrCandidate, f.Name, how)
	}
	tv, err := values.Coerce(v, f.Type)
	if err != nil {
		return fmt.Errorf("%w column %q: %w", ErrCandidate, f.Name, err)
	}
	same := false
	switch x := tv.(type) {
	case time.Time:
		unit := f.Type.(*arrow.TimestampType).Unit
		same = values.Units(x, unit) == values.Units(at, unit)
	case int64:
		same = x == at.UnixMilli()
	}
	if !same {
		return fmt.Errorf("%w column %q is %v, not the lookup time %s; %s", ErrCandidate, f.Name, v, at.UTC().Format(time.RFC3339Nano), how)
	}
	return nil
}

// lookupValue finds a key value by column name, case-insensitively.
func lookupValue(key map[string]any, name string) (any, bool) {
	if v, ok := key[name]; ok {
		return v, true
	}
	for k, v := range key {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// routeHash is keyHasher.hash for a key encoded by EncodeKeyValues.
func routeHash(types []arrow.DataType, enc []byte) uint64 {
	if len(types) == 1 && types[0].ID() == arrow.INT64 {
		if len(enc) == 1 && enc[0] == 0 {
			return 0
		}
		v, _ := binary.Varint(enc[1:])
		return mix64(uint64(v))
	}
	return hashBytes(enc)
}

// candidate turns a candidate row into a one-row batch of the prep layout
// (source columns, event time, sequence, computed columns). It returns nil
// when the row does not pass the query's WHERE clause: inserted, such a
// row is filtered out and counts in no frame, its own included, so the
// lookup is the one without it.
func (c *Compiled) candidate(row map[string]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, c.Source)
	defer b.Release()
	for i, f := range c.Source.Fields() {
		v, _ := lookupValue(row, f.Name)
		if err := values.Append(b.Field(i), v); err != nil {
			return nil, fmt.Errorf("%w column %q: %w", ErrCandidate, f.Name, err)
		}
	}
	src := b.NewRecordBatch()
	defer src.Release()
	if c.where != nil {
		mask, err := c.where.Eval(src)
		if err != nil {
			return nil, fmt.Errorf("%w: evaluating WHERE: %w", ErrCandidate, err)
		}
		m, ok := mask.(*array.Boolean)
		pass := ok && m.IsValid(0) && m.Value(0)
		mask.Release()
		if !pass {
			return nil, nil
		}
	}
	cols := append([]arrow.Array{}, src.Columns()...)
	zero := array.NewInt64Builder(memory.DefaultAllocator)
	zero.Append(0)
	z := zero.NewArray()
	zero.Release()
	defer z.Release()
	cols = append(cols, z, z)
	var owned []arrow.Array
	defer func() { arrowutil.ReleaseAll(owned) }()
	for i, ev := range c.evals {
		a, err := ev.Eval(src)
		if err != nil {
			return nil, fmt.Errorf("%w: evaluating %s: %w", ErrCandidate, c.evalText[i], err)
		}
		owned = append(owned, a)
		cols = append(cols, a)
	}
	return array.NewRecordBatch(c.prep, cols, 1), nil
}

// goValue is the Go value of arr[i] (see sink.Value).
func goValue(arr arrow.Array, i int) any { return sink.Value(arr, i) }

// describeKey renders a lookup key for error messages: col=value pairs,
// sorted by column name.
func describeKey(key map[string]any) string {
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	slices.Sort(names)
	var sb strings.Builder
	for i, n := range names {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s=%v", n, key[n])
	}
	return sb.String()
}
