package window_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// rdSchema is the input of the randomized reference tests: keys of every
// kind (int64 with its extremes, uint64 at and above 2^63, strings with
// the empty one, NULL in each), the event time, values, the arrival
// sequence.
var rdSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ki", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ku", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "ks", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "kb", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "kt", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tag", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "probe", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
}, nil)

var (
	rdTsCol    = rdSchema.FieldIndices("ts")[0]
	rdSeqCol   = rdSchema.FieldIndices("seq")[0]
	rdProbeCol = rdSchema.FieldIndices("probe")[0]
	rdArgCols  = []string{"amount", "price", "category", "flag", "tag", "score"}
	rdKeySets  = [][]string{{"ki"}, {"ku"}, {"ks"}, {"ku", "ks"}, {"ki", "ku", "ks"}, {}, {"kb"}, {"kt"}, {"kb", "kt", "ks"}}
	rdKeyVals  = map[string][]any{
		"ki": {int64(math.MinInt64), int64(-1), int64(0), int64(7), int64(math.MaxInt64), nil},
		"ku": {uint64(0), uint64(1) << 63, uint64(1)<<63 + 5, uint64(math.MaxUint64), nil},
		"ks": {"", "a", "a\x00", "ä", nil},
		"kb": {true, false, nil},
		"kt": {int64(-1), int64(0), int64(1_700_000_000_123_456), nil},
	}
)

// rdEvents generates n events in event-time order (row i's seq is its
// arrival position once shuffled): ties in event time, keys taking turns
// (some quiet for long spells, then back), NULLs everywhere.
func rdEvents(rng *rand.Rand, n int, step int64, churn float64) *testutil.Table {
	t := &testutil.Table{Schema: rdSchema}
	ts := int64(1_700_000_000_000)
	maybe := func(v any) any {
		if rng.IntN(7) == 0 {
			return nil
		}
		return v
	}
	pick := func(col string, phase int) any {
		if rng.Float64() < churn {
			// Keys of the phase: many, each seen for a while only (half
			// of them back two phases later).
			p := int64(phase - phase%2*2*rng.IntN(2))
			x := p*10 + rng.Int64N(4)
			switch col {
			case "ki":
				return -x
			case "ku":
				return uint64(1)<<63 + uint64(x)
			case "kb":
				return x%2 == 0
			case "kt":
				return x * 1000
			default:
				return fmt.Sprint("p", x)
			}
		}
		vals := rdKeyVals[col]
		// Keys take turns by phase: half of them only in even phases.
		k := rng.IntN(len(vals))
		if phase%2 == 1 && k%2 == 0 {
			k = (k + 1) % len(vals)
		}
		return vals[k]
	}
	for i := range n {
		switch r := rng.IntN(10); {
		case i == 0 || r < 3: // a tie
		case r < 9:
			ts += step * int64(rng.IntN(6))
		default:
			ts += step * int64(10+rng.IntN(40)) // a long quiet spell
		}
		phase := i / max(n/8, 1)
		t.Rows = append(t.Rows, []any{
			int64(i), pick("ki", phase), pick("ku", phase), pick("ks", phase), pick("kb", phase), pick("kt", phase), ts,
			maybe(int64(rng.IntN(251) - 50)),
			maybe(float64(rng.IntN(200_001)-50_000) / 100),
			maybe([]string{"food", "fuel", "travel", "Food"}[rng.IntN(4)]),
			maybe(rng.IntN(5) < 2), maybe(int64(rng.IntN(8))), maybe(float64(rng.IntN(13)-2) / 2),
			rng.IntN(6) == 0,
			int64(0),
		})
	}
	return t
}

// rdCase is one random configuration of the operator.
type rdCase struct {
	keys      []string
	frames    []testutil.Frame
	aggs      [][]testutil.Agg
	lateness  int64
	retention int64
	batch     bool
	store     bool
	budget    int64
	pageRows  int
	restore   float64 // probability of a checkpoint and restore per step
	forgetMin int
	tileMin   int
	tileSize  int64
	chunkRows int
	// probes flags some rows as probes (Config.ProbeCol), strict
	// probes (Config.StrictProbes) see only the events before them.
	probes, strict bool
	// sel pushes the rows with PushRows, among junk rows of other keys
	// left out; results takes the results by AdvanceResults.
	sel, results bool
	// dest pushes with PushRowsTo, the results written into a Dest per
	// batch (results only, and only when every result is Scatterable).
	dest bool
}

func (c rdCase) String() string {
	var fs []string
	for _, f := range c.frames {
		fs = append(fs, f.SQL())
	}
	return fmt.Sprintf("keys %v frames [%s] lateness %d retention %d batch %v store %v budget %d page %d restore %.2f forget %d tileMin %d tile %d chunk %d probes %v strict %v sel %v results %v dest %v",
		c.keys, strings.Join(fs, "; "), c.lateness, c.retention, c.batch, c.store, c.budget, c.pageRows, c.restore, c.forgetMin, c.tileMin, c.tileSize, c.chunkRows, c.probes, c.strict, c.sel, c.results, c.dest)
}

// rdFrame draws a frame in units of step ms.
func rdFrame(rng *rand.Rand, step int64) testutil.Frame {
	var f testutil.Frame
	switch rng.IntN(8) {
	case 0:
		f.Rows, f.Preceding = true, int64(rng.IntN(5))
	case 1:
		f.Unbounded = true
		if rng.IntN(3) == 0 {
			f.EndPreceding = step * int64(1+rng.IntN(4))
		}
	default:
		f.Preceding = step * int64(rng.IntN(30))
		if rng.IntN(4) == 0 {
			f.Preceding += int64(rng.IntN(int(step)))
		}
		if rng.IntN(4) == 0 && f.Preceding > 0 {
			f.EndPreceding = 1 + rng.Int64N(f.Preceding)
		}
	}
	f.ExcludeCurrent = rng.IntN(3) == 0
	return f
}

// rdAggs are the aggregates the cases draw from.
var rdAggs = []testutil.Agg{
	{Func: "count"}, {Func: "count", Arg: "category"},
	{Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"}, {Func: "avg", Arg: "amount"},
	{Func: "min", Arg: "amount"}, {Func: "max", Arg: "price"}, {Func: "min", Arg: "category"}, {Func: "max", Arg: "category"},
	{Func: "var_samp", Arg: "amount"}, {Func: "stddev_pop", Arg: "price"},
	{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "category"}, {Func: "first_value", Arg: "price"},
	{Func: "count_distinct", Arg: "category"}, {Func: "count_distinct", Arg: "amount"},
	// ML-oriented ones.
	{Func: "top", Arg: "amount", Param: int64(3)}, {Func: "top", Arg: "category", Param: int64(2)},
	{Func: "topn_frequency", Arg: "category", Param: int64(3)}, {Func: "topn_frequency", Arg: "score", Param: int64(2)},
	{Func: "top1_ratio", Arg: "tag"},
	{Func: "count_where", Cond: "flag"}, {Func: "sum_where", Arg: "price", Cond: "flag"}, {Func: "max_where", Arg: "category", Cond: "flag"},
	{Func: "sum_cate", Arg: "amount", Cate: "tag"}, {Func: "min_cate", Arg: "category", Cate: "tag"},
	{Func: "avg_cate_where", Arg: "score", Cond: "flag", Cate: "category"},
	{Func: "ew_avg", Arg: "price", Param: 0.3}, {Func: "drawdown", Arg: "score"},
	{Func: "approx_percentile", Arg: "price", Param: 0.5}, {Func: "approx_count_distinct", Arg: "tag"},
}

func rdDraw(rng *rand.Rand, step int64) rdCase {
	c := rdCase{keys: rdKeySets[rng.IntN(len(rdKeySets))]}
	for range 1 + rng.IntN(4) {
		c.frames = append(c.frames, rdFrame(rng, step))
		var aggs []testutil.Agg
		for _, k := range rng.Perm(len(rdAggs))[:1+rng.IntN(6)] {
			aggs = append(aggs, rdAggs[k])
		}
		c.aggs = append(c.aggs, aggs)
	}
	bounded := !slices.ContainsFunc(c.frames, func(f testutil.Frame) bool { return f.Unbounded })
	c.batch = rng.IntN(4) == 0
	if bounded && rng.IntN(3) == 0 {
		c.lateness = step * int64(1+rng.IntN(10))
	}
	if rng.IntN(4) == 0 {
		c.retention = step * int64(1+rng.IntN(20))
	}
	c.store = rng.IntN(2) == 0
	if c.store {
		if rng.IntN(2) == 0 {
			c.budget = []int64{1, 2000, 20_000}[rng.IntN(3)]
		}
		c.restore = []float64{0, 0.1, 0.3}[rng.IntN(3)]
		if rng.IntN(2) == 0 {
			// Row paging: a long RANGE frame ending at the current
			// row, no lateness, no retention.
			c.pageRows = 1 + rng.IntN(6)
			c.lateness, c.retention = 0, 0
			c.frames[0] = testutil.Frame{Preceding: step * int64(20+rng.IntN(100)), ExcludeCurrent: rng.IntN(2) == 0}
			c.keys = rdKeySets[rng.IntN(3)]
		}
	}
	if rng.IntN(2) == 0 {
		c.forgetMin = 1 + rng.IntN(3)
	}
	c.tileMin = []int{0, 1, 4, -1}[rng.IntN(4)]
	if rng.IntN(3) == 0 {
		c.tileSize = []int64{1, step / 2, step, 3 * step}[rng.IntN(4)]
	}
	if rng.IntN(3) == 0 {
		c.chunkRows = 1 + rng.IntN(8)
	}
	c.sel, c.results = rng.IntN(3) == 0, rng.IntN(3) == 0
	c.dest = c.results && rng.IntN(2) == 0
	if c.pageRows == 0 && rng.IntN(4) == 0 {
		// Probes (backfill spines), late ones within the lateness too.
		c.probes, c.strict = true, rng.IntN(2) == 0
	}
	return c
}

func (c rdCase) config(t *testing.T, st statestore.Store) window.Config {
	t.Helper()
	cfg := window.Config{TsCol: rdTsCol, SeqCol: rdSeqCol, AllowedLateness: c.lateness, BatchOrder: c.batch,
		Retention: c.retention, TileMinRows: c.tileMin, TileSize: c.tileSize, StrictProbes: c.strict}
	if c.probes {
		cfg.ProbeCol = rdProbeCol
	}
	for _, k := range c.keys {
		cfg.KeyCols = append(cfg.KeyCols, rdSchema.FieldIndices(k)[0])
	}
	for _, a := range rdArgCols {
		cfg.ArgCols = append(cfg.ArgCols, rdSchema.FieldIndices(a)[0])
	}
	for fi, f := range c.frames {
		spec := window.Spec{Frame: window.Frame{Rows: f.Rows, Unbounded: f.Unbounded, Preceding: f.Preceding,
			EndPreceding: f.EndPreceding, ExcludeCurrent: f.ExcludeCurrent}}
		for _, a := range c.aggs[fi] {
			col := func(name string) agg.Arg {
				return agg.Arg{Type: rdSchema.Field(rdSchema.FieldIndices(name)[0]).Type, Col: slices.Index(rdArgCols, name)}
			}
			args := []agg.Arg{{Star: true, Col: -1}}
			if a.Arg != "" {
				args[0] = col(a.Arg)
			}
			if a.Cond != "" {
				args = append(args, col(a.Cond))
			}
			if a.Cate != "" {
				args = append(args, col(a.Cate))
			}
			switch p := a.Param.(type) {
			case int64:
				args = append(args, agg.Arg{IsConst: true, Const: p, Col: -1, Type: arrow.PrimitiveTypes.Int64})
			case float64:
				args = append(args, agg.Arg{IsConst: true, Const: p, Col: -1, Type: arrow.PrimitiveTypes.Float64})
			}
			fn, err := agg.Bind(a.Func, args)
			if err != nil {
				t.Fatal(err)
			}
			spec.Aggs = append(spec.Aggs, fn)
			cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("%s over %d", a.SQL(), fi))
		}
		cfg.Windows = append(cfg.Windows, spec)
	}
	if st != nil {
		cfg.Store, cfg.MemoryBudget, cfg.PageRows = st, c.budget, c.pageRows
		if cfg.PageRows > 0 && window.CanPage(cfg) != nil {
			cfg.PageRows = 0
		}
	}
	return cfg
}

// rdRun drives one case over one arrival order and checks every emitted
// row and lookup against the brute-force reference.
type rdRun struct {
	t    *testing.T
	c    rdCase
	tab  *testutil.Table // rows in arrival order; seq = row index
	rng  *rand.Rand
	op   *window.Operator
	st   statestore.Store
	cfg  window.Config
	wm   int64
	done []bool // emitted
	// accepted lists the rows accepted so far (not dropped late), in
	// arrival order.
	accepted []int
	lookups  int
	restores int
	// sum adds up the stats of the operators before a restore.
	sum window.Stats
	// dests tracks the Dests of batches pushed with PushRowsTo; snap
	// holds, for rows released into one and not checked yet, how many
	// accepted rows there were at their release.
	dests map[*window.Dest]*rdDest
	snap  map[int]int
	// states are the lookup states reused by LookupWith.
	states [][]agg.State
}

// rdDest is a Dest of a batch and what is known of it: the table rows
// pushed into it (not late) and their positions in the batch, the rows
// done so far and the NULL results.
type rdDest struct {
	rows, pos []int
	done      int
	nulls     [][]int32
}

// addStats adds the counters of s to r.sum.
func (r *rdRun) addStats(s window.Stats) {
	r.sum.LateApplied += s.LateApplied
	r.sum.Evicted += s.Evicted
	r.sum.Loaded += s.Loaded
	r.sum.QuietKeys += s.QuietKeys
	r.sum.ForgottenKeys += s.ForgottenKeys
	r.sum.PagesWritten += s.PagesWritten
	r.sum.PagesRead += s.PagesRead
	r.sum.LookupPages += s.LookupPages
}

func (r *rdRun) newOp() {
	r.t.Helper()
	r.cfg = r.c.config(r.t, r.st)
	op, err := window.New(r.cfg, rdSchema)
	if err != nil {
		r.t.Fatalf("%s: New: %v", r.c, err)
	}
	if r.c.forgetMin > 0 {
		window.SetKeyForgetMin(op, r.c.forgetMin)
	}
	if r.c.chunkRows > 0 {
		window.SetChunkRows(op, r.c.chunkRows)
	}
	r.op = op
}

func (r *rdRun) window(f int) testutil.Window {
	return testutil.Window{Keys: r.c.keys, Time: "ts", Frame: r.c.frames[f]}
}

// check compares emitted rows with the reference over the rows accepted
// so far (late rows applied: those accepted up to the row itself, as the
// rows after it in its batch were not yet).
func (r *rdRun) check(what string, rows [][]any, late bool) {
	r.t.Helper()
	for _, row := range rows {
		i := int(row[rdSeqCol].(int64))
		if r.done[i] {
			r.r().Fatalf("%s: row %d emitted twice", what, i)
		}
		r.done[i] = true
		if !slices.Contains(r.accepted, i) {
			r.r().Fatalf("%s: row %d emitted but not accepted", what, i)
		}
		k := rdSchema.NumFields()
		rows := r.accepted
		if late {
			rows = rows[:slices.Index(rows, i)+1]
		}
		if n, ok := r.snap[i]; ok {
			rows = rows[:n]
			delete(r.snap, i)
		}
		var want [][]any
		if r.isProbe(i) {
			want = r.probeRef(r.events(rows), r.key(i), r.tab.Value(i, "ts").(int64), nil, r.c.strict)
		} else {
			rows = r.events(rows)
			for f := range r.c.frames {
				want = append(want, testutil.EvalAt(r.tab, r.window(f), r.c.aggs[f], rows, i))
			}
		}
		for f := range r.c.frames {
			for a := range want[f] {
				if got := row[k]; !testutil.Equal(got, want[f][a]) {
					r.t.Logf("rows of the key accepted (arrival order): %s", r.keyRows(i))
					r.r().Fatalf("%s (wm %d): row %d (ts %d, key %v, probe %v) %s over %s = %v, want %v",
						what, r.wm, i, r.tab.Value(i, "ts"), r.key(i), r.isProbe(i), r.c.aggs[f][a].SQL(), r.c.frames[f], got, want[f][a])
				}
				k++
			}
		}
	}
}

// isProbe reports whether row i is a probe.
func (r *rdRun) isProbe(i int) bool { return r.c.probes && r.tab.Rows[i][rdProbeCol].(bool) }

// events returns the rows of rows that are not probes.
func (r *rdRun) events(rows []int) []int {
	if !r.c.probes {
		return rows
	}
	var out []int
	for _, i := range rows {
		if !r.isProbe(i) {
			out = append(out, i)
		}
	}
	return out
}

// probeRef returns, by frame, the reference values of a row of key at
// time at over the events rows, the row left out of its own frame unless
// cand (a row whose argument values it takes) is given; strict: over the
// events before at only.
func (r *rdRun) probeRef(rows []int, key []any, at int64, cand []any, strict bool) [][]any {
	probe := make([]any, rdSchema.NumFields())
	probe[0], probe[rdTsCol] = int64(-1), at
	if cand != nil {
		copy(probe[rdTsCol+1:rdProbeCol], cand[rdTsCol+1:rdProbeCol])
	}
	for j, k := range r.c.keys {
		probe[rdSchema.FieldIndices(k)[0]] = key[j]
	}
	tab := &testutil.Table{Schema: rdSchema, Rows: append(slices.Clone(r.tab.Rows), probe)}
	p := len(tab.Rows) - 1
	var out [][]any
	for f := range r.c.frames {
		w := r.window(f)
		w.Frame.ExcludeCurrent = w.Frame.ExcludeCurrent || cand == nil
		rows := append(slices.Clone(rows), p)
		if strict {
			// Before the events at its time: first in arrival, and RANGE
			// frames ending at it end 1 ms before.
			rows = append([]int{p}, rows[:len(rows)-1]...)
			if !w.Frame.Rows && w.Frame.EndPreceding == 0 {
				w.Frame.EndPreceding = 1
			}
		}
		out = append(out, testutil.EvalAt(tab, w, r.c.aggs[f], rows, p))
	}
	return out
}

func (r *rdRun) r() *testing.T { r.t.Logf("case: %s", r.c); return r.t }

// keyRows renders the accepted rows of row i's key: seq, ts, values.
func (r *rdRun) keyRows(i int) string { return r.rowsOf(r.key(i)) }

// rowsOf renders the accepted rows of key: seq, ts, values.
func (r *rdRun) rowsOf(key []any) string {
	var sb strings.Builder
	k := fmt.Sprint(key)
	for _, j := range r.accepted {
		if fmt.Sprint(r.key(j)) == k {
			fmt.Fprintf(&sb, "\n  seq %d ts %d %v", j, r.tab.Value(j, "ts"), r.tab.Rows[j][rdTsCol+1:rdSeqCol])
		}
	}
	return sb.String()
}

func (r *rdRun) key(i int) []any {
	var out []any
	for _, k := range r.c.keys {
		out = append(out, r.tab.Value(i, k))
	}
	return out
}

func (r *rdRun) push(lo, hi int) {
	r.t.Helper()
	vals := make([][]any, 0, hi-lo)
	for i := lo; i < hi; i++ {
		vals = append(vals, r.tab.Rows[i])
		ts := r.tab.Value(i, "ts").(int64)
		if ts > r.wm || r.c.lateness > 0 && ts > r.wm-r.c.lateness {
			r.accepted = append(r.accepted, i)
		}
	}
	var sel []int32
	var pending []int // table rows pushed and not late, by position
	for i := lo; i < hi; i++ {
		if r.tab.Value(i, "ts").(int64) > r.wm {
			pending = append(pending, i)
		}
	}
	if r.c.sel {
		// A junk row (another key, another time) before each row.
		var all [][]any
		for _, v := range vals {
			junk := slices.Clone(v)
			junk[rdTsCol] = int64(42)
			for _, k := range r.c.keys {
				junk[rdSchema.FieldIndices(k)[0]] = rdKeyVals[k][0]
			}
			sel = append(sel, int32(len(all)+1))
			all = append(all, junk, v)
		}
		vals = all
	}
	rec := testutil.BuildRecord(nil, rdSchema, vals)
	defer rec.Release()
	var outs []arrow.RecordBatch
	var late arrow.RecordBatch
	var err error
	switch {
	case r.c.dest && r.useDest():
		if sel == nil {
			for j := range vals {
				sel = append(sel, int32(j))
			}
		}
		dst, derr := window.NewDest(r.op.ResultTypes(), len(vals))
		if derr != nil {
			r.r().Fatal(derr)
		}
		d := &rdDest{}
		for _, j := range sel {
			i := int(vals[j][rdSeqCol].(int64))
			if slices.Contains(pending, i) && i >= lo {
				d.rows, d.pos = append(d.rows, i), append(d.pos, int(j))
			}
		}
		if r.dests == nil {
			r.dests = map[*window.Dest]*rdDest{}
		}
		r.dests[dst] = d
		outs, late, err = r.op.PushRowsTo(rec, sel, dst)
	case r.c.sel:
		outs, late, err = r.op.PushRows(rec, sel)
	default:
		outs, late, err = r.op.Push(rec)
	}
	if err != nil {
		r.r().Fatalf("Push: %v", err)
	}
	defer releaseAll(outs)
	r.check("late row applied", testutil.Rows(outs...), true)
	var lateRows [][]any
	if late != nil {
		lateRows = testutil.Rows(late)
		late.Release()
	}
	nLate := 0
	for i := lo; i < hi; i++ {
		if !slices.Contains(r.accepted, i) {
			nLate++
		}
	}
	if len(lateRows) != nLate {
		r.r().Fatalf("push [%d, %d) at wm %d: %d late rows returned, want %d", lo, hi, r.wm, len(lateRows), nLate)
	}
}

func (r *rdRun) advance(wm int64) {
	r.t.Helper()
	var rows [][]any
	if r.c.results {
		err := r.op.AdvanceResults(context.Background(), wm, func(res *window.Results) error {
			defer res.Release()
			rows = append(rows, r.resultRows(res, wm)...)
			return nil
		})
		if err != nil {
			r.r().Fatalf("AdvanceResults(%d): %v", wm, err)
		}
	} else {
		outs, err := r.op.Advance(context.Background(), wm)
		if err != nil {
			r.r().Fatalf("Advance(%d): %v", wm, err)
		}
		defer releaseAll(outs)
		rows = testutil.Rows(outs...)
	}
	r.wm = max(r.wm, wm)
	r.check("advance", rows, false)
	// Every accepted row at or before wm is out.
	for _, i := range r.accepted {
		if _, inDest := r.snap[i]; r.tab.Value(i, "ts").(int64) <= r.wm && !r.done[i] && !inDest {
			r.r().Fatalf("Advance(%d) did not emit row %d (ts %d)", wm, i, r.tab.Value(i, "ts"))
		}
	}
	if r.c.batch && !r.c.results {
		var seqs []int64
		for _, row := range rows {
			seqs = append(seqs, row[rdSeqCol].(int64))
		}
		if !slices.IsSorted(seqs) {
			r.r().Fatalf("batch order: Advance(%d) emitted seqs %v", wm, seqs)
		}
	}
}

// resultRows turns the results of AdvanceResults into output rows: the
// table's row of each sequence number followed by its results.
func (r *rdRun) resultRows(res *window.Results, wm int64) [][]any {
	r.t.Helper()
	out := r.destRows(res, wm)
	types := r.op.ResultTypes()
	fields := make([]arrow.Field, len(types))
	for i, dt := range types {
		fields[i] = arrow.Field{Name: fmt.Sprint(i), Type: dt, Nullable: true}
	}
	chunks := make([][][]any, len(res.Cols))
	for c, cols := range res.Cols {
		if len(cols) == 0 {
			continue
		}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(cols[0].Len()))
		chunks[c] = testutil.Rows(rec)
		rec.Release()
	}
	if !slices.IsSorted(res.Seq) {
		r.r().Fatalf("AdvanceResults: sequence numbers out of order: %v", res.Seq)
	}
	for k, seq := range res.Seq {
		out = append(out, append(slices.Clone(r.tab.Rows[seq]), chunks[res.Chunk[k]][res.Row[k]]...))
	}
	return out
}

// useDest reports whether every result type of the operator can be
// written into a Dest.
func (r *rdRun) useDest() bool {
	for _, dt := range r.op.ResultTypes() {
		if !window.Scatterable(dt) {
			return false
		}
	}
	return true
}

// destRows notes the rows of Dests that AdvanceResults(wm) reports done
// and returns the rows of the Dests now complete, with their results.
func (r *rdRun) destRows(res *window.Results, wm int64) [][]any {
	r.t.Helper()
	var out [][]any
	for _, dn := range res.Done {
		d := r.dests[dn.Dest]
		if d == nil {
			r.r().Fatalf("AdvanceResults(%d): Done of an unknown Dest", wm)
		}
		// The rows released now: not done before, at or before wm.
		n := 0
		for _, i := range d.rows {
			if _, ok := r.snap[i]; !ok && !r.done[i] && r.tab.Value(i, "ts").(int64) <= wm {
				if r.snap == nil {
					r.snap = map[int]int{}
				}
				r.snap[i] = len(r.accepted)
				n++
			}
		}
		if n != dn.Rows {
			r.r().Fatalf("AdvanceResults(%d): %d rows of a Dest done, want %d", wm, dn.Rows, n)
		}
		d.done += dn.Rows
		for a, nl := range dn.Nulls {
			for len(d.nulls) <= a {
				d.nulls = append(d.nulls, nil)
			}
			d.nulls[a] = append(d.nulls[a], nl...)
		}
		if d.done < len(d.rows) {
			continue
		}
		delete(r.dests, dn.Dest)
		out = append(out, r.destValues(dn.Dest, d, false)...)
	}
	return out
}

// destValues returns the rows of dst (all, or only those released when
// released is set) with their results.
func (r *rdRun) destValues(dst *window.Dest, d *rdDest, released bool) [][]any {
	cols := dst.Arrays(d.nulls)
	types := r.op.ResultTypes()
	fields := make([]arrow.Field, len(types))
	for i, dt := range types {
		fields[i] = arrow.Field{Name: fmt.Sprint(i), Type: dt, Nullable: true}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(dst.Rows()))
	vals := testutil.Rows(rec)
	rec.Release()
	for _, c := range cols {
		c.Release()
	}
	var out [][]any
	for k, i := range d.rows {
		if _, ok := r.snap[i]; ok || !released {
			out = append(out, append(slices.Clone(r.tab.Rows[i]), vals[d.pos[k]]...))
		}
	}
	return out
}

// lookup checks lookups of a few keys at times around the watermark with
// the reference: the rows accepted and released, plus a row at the
// lookup's time, arrived last, left out of its own frame.
func (r *rdRun) lookup() {
	r.t.Helper()
	if slices.ContainsFunc(r.c.frames, func(f testutil.Frame) bool { return f.Unbounded }) || r.wm == watermark.None {
		return
	}
	var released []int
	for _, i := range r.accepted {
		if r.tab.Value(i, "ts").(int64) <= r.wm {
			released = append(released, i)
		}
	}
	types := r.op.KeyTypes()
	for range 3 {
		key := make([]any, len(r.c.keys))
		if len(released) > 0 && r.rng.IntN(4) != 0 {
			key = r.key(released[r.rng.IntN(len(released))])
		} else {
			for j, k := range r.c.keys {
				vals := rdKeyVals[k]
				key[j] = vals[r.rng.IntN(len(vals))]
			}
		}
		at := r.wm - 30*250 + r.rng.Int64N(40*250)
		vals := slices.Clone(key)
		for j, k := range r.c.keys {
			if us, ok := vals[j].(int64); ok && k == "kt" {
				vals[j] = time.UnixMicro(us).UTC() // not epoch ms
			}
		}
		enc, err := window.EncodeKeyValues(nil, types, vals)
		if err != nil {
			r.r().Fatal(err)
		}
		// Half the lookups carry a candidate row (one of the table's
		// rows' values), counted in its own frame.
		var cand []any
		if r.rng.IntN(2) == 0 {
			cand = r.tab.Rows[r.rng.IntN(len(r.tab.Rows))]
		}
		// Half the lookups reuse states (LookupWith) across lookups.
		var states [][]agg.State
		if r.rng.IntN(2) == 0 {
			if r.states == nil {
				r.states = r.op.NewLookupStates()
			}
			states = r.states
		}
		got, err := rdLookup(r.op, enc, at, cand, states)
		// Lookups are served from the watermark on, and with a
		// retention from the newest row released minus it on.
		served := r.wm
		if r.c.retention > 0 {
			newest := watermark.None
			for _, i := range released {
				newest = max(newest, r.tab.Value(i, "ts").(int64))
			}
			if newest != watermark.None {
				served = min(served, newest-r.c.retention)
			}
		}
		if errors.Is(err, window.ErrTooOld) && at < served {
			continue
		}
		if err != nil {
			r.r().Fatalf("Lookup(%v, %d) at wm %d: %v", key, at, r.wm, err)
		}
		r.lookups++
		want := r.probeRef(r.events(released), key, at, cand, false)
		k := 0
		for f := range r.c.frames {
			for a := range want[f] {
				if !testutil.Equal(got[k], want[f][a]) {
					r.t.Logf("rows of the key accepted (arrival order): %s\nstats %+v", r.rowsOf(key), r.op.Stats())
					r.r().Fatalf("Lookup(%v, %d, candidate %v) at wm %d: %s over %s = %v, want %v",
						key, at, cand != nil, r.wm, r.c.aggs[f][a].SQL(), r.c.frames[f], got[k], want[f][a])
				}
				k++
			}
		}
	}
}

// rdLookup looks key up at t, with a candidate row when cand is not nil
// (a row of rdSchema: its argument columns), into states when not nil
// (LookupWith), and returns the values.
func rdLookup(op *window.Operator, key []byte, at int64, cand []any, states [][]agg.State) ([]any, error) {
	var c *agg.Rows
	if cand != nil {
		crec := testutil.BuildRecord(nil, rdSchema, [][]any{cand})
		defer crec.Release()
		c = &agg.Rows{Ts: []int64{at}, Cols: op.ArgColumns()}
		for j, name := range rdArgCols {
			c.Cols[j].AppendArrow(crec.Column(rdSchema.FieldIndices(name)[0]), nil)
		}
	}
	types := op.ResultTypes()
	bld := make([]array.Builder, len(types))
	fields := make([]arrow.Field, len(types))
	for i, dt := range types {
		bld[i] = array.NewBuilder(memory.DefaultAllocator, dt)
		defer bld[i].Release()
		fields[i] = arrow.Field{Name: fmt.Sprint(i), Type: dt, Nullable: true}
	}
	if _, err := op.LookupWith(key, at, c, bld, states); err != nil {
		return nil, err
	}
	cols := make([]arrow.Array, len(bld))
	for i, b := range bld {
		cols[i] = b.NewArray()
		defer cols[i].Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	defer rec.Release()
	return testutil.Rows(rec)[0], nil
}

// restart checkpoints the operator and goes on with a new one restored
// from a copy of the store.
func (r *rdRun) restart() {
	r.t.Helper()
	meta, err := r.op.Checkpoint()
	if err != nil {
		r.r().Fatalf("Checkpoint: %v", err)
	}
	snap := statestore.NewMemory()
	copyStore(r.t, snap, r.st)
	r.addStats(r.op.Stats())
	// Rows released into Dests not complete are checked now; those still
	// pending come back with the restored pending rows, without Dest.
	for dst, d := range r.dests {
		r.check("dest before a restore", r.destValues(dst, d, true), false)
	}
	clear(r.dests)
	r.op.Close()
	r.st = snap
	r.newOp()
	if err := r.op.Restore(meta); err != nil {
		r.r().Fatalf("Restore: %v", err)
	}
	r.restores++
}

// TestOperatorRandomConfigsMatchReference draws random operator
// configurations (frames of every kind with ties and EXCLUDE CURRENT ROW,
// keys of every type, allowed lateness, lookup retention, batch order, a
// store with a memory budget, row paging, checkpoints restored mid-stream,
// quiet keys forgotten, tiles of any size, tiny result chunks) and checks
// every emitted row and lookups at times around the watermark with the
// brute-force reference over the rows accepted so far.
func TestOperatorRandomConfigsMatchReference(t *testing.T) {
	const step = 250
	n := 120
	if testutil.Race {
		n = 30
	}
	for _, seed := range testutil.Seeds(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := testutil.Rand(seed)
			c := rdDraw(rng, step)
			churn := 0.5
			if c.pageRows > 0 {
				churn = 0.1 // keys with many rows in their frames
			}
			events := rdEvents(rng, 60+rng.IntN(300), step, churn)
			bound := int64(step * rng.IntN(12))
			order := testutil.Shuffle(rng, events, "ts", nil, bound)
			// Some rows come late: moved later in arrival.
			if rng.IntN(2) == 0 {
				for range len(order) / 5 {
					i := rng.IntN(len(order))
					j := min(len(order)-1, i+rng.IntN(60))
					v := order[i]
					order = slices.Insert(slices.Delete(order, i, i+1), j, v)
				}
			}
			tab := events.Subset(order)
			for i := range tab.Rows {
				tab.Rows[i] = slices.Clone(tab.Rows[i])
				tab.Rows[i][rdSeqCol] = int64(i)
			}
			r := &rdRun{t: t, c: c, tab: tab, rng: rng, wm: watermark.None, done: make([]bool, len(tab.Rows))}
			if c.store {
				r.st = statestore.NewMemory()
			}
			r.newOp()
			defer func() { r.op.Close() }()
			maxTs := watermark.None
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(12))
				if rng.IntN(8) == 0 {
					hi = lo + 1 // a batch of one row
				}
				r.push(lo, hi)
				if rng.IntN(10) == 0 {
					r.push(hi, hi) // an empty batch
				}
				for i := lo; i < hi; i++ {
					maxTs = max(maxTs, tab.Value(i, "ts").(int64))
				}
				lo = hi
				if rng.IntN(3) != 0 {
					r.advance(maxTs - bound)
				}
				r.lookup()
				if c.store && rng.Float64() < c.restore {
					r.restart()
				}
			}
			r.advance(watermark.End)
			for i, d := range r.done {
				if !d && slices.Contains(r.accepted, i) {
					r.r().Fatalf("row %d never emitted", i)
				}
			}
			r.addStats(r.op.Stats())
			t.Logf("%s: %d rows, %d accepted, %d lookups, %d restores, stats summed %+v", c, len(tab.Rows), len(r.accepted), r.lookups, r.restores, r.sum)
		})
	}
}
