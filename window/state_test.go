package window_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// ckptAggs mixes standard and ML aggregates: retractable ones, merge-only
// ones (min, max, first/last_value, top, drawdown, ew_avg, the _cate of
// min/max) and the sketches.
var ckptAggs = []testutil.Agg{
	{Func: "count"}, {Func: "count", Arg: "category"},
	{Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"}, {Func: "avg", Arg: "price"},
	{Func: "min", Arg: "amount"}, {Func: "max", Arg: "price"}, {Func: "min", Arg: "category"},
	{Func: "var_samp", Arg: "price"}, {Func: "stddev_pop", Arg: "amount"},
	{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "category"},
	{Func: "count_distinct", Arg: "category"},
	{Func: "top", Arg: "amount", Param: int64(3)},
	{Func: "topn_frequency", Arg: "category", Param: int64(3)},
	{Func: "top1_ratio", Arg: "tag"},
	{Func: "sum_where", Arg: "price", Cond: "flag"},
	{Func: "min_where", Arg: "price", Cond: "flag"},
	{Func: "max_cate", Arg: "score", Cate: "flag"},
	{Func: "avg_cate_where", Arg: "score", Cond: "flag", Cate: "tag"},
	{Func: "ew_avg", Arg: "price", Param: 0.3},
	{Func: "drawdown", Arg: "score"},
	{Func: "approx_percentile", Arg: "price", Param: 0.5},
	{Func: "approx_count_distinct", Arg: "tag"},
}

// ckptConfig is the operator configuration of the checkpoint tests.
func ckptConfig(t testing.TB, keys []string, frames []testutil.Frame, aggs []testutil.Agg, lateness int64, batchOrder bool) window.Config {
	t.Helper()
	cfg := window.Config{TsCol: mlTsCol, SeqCol: mlSeqCol, AllowedLateness: lateness, BatchOrder: batchOrder}
	for _, k := range keys {
		cfg.KeyCols = append(cfg.KeyCols, mlSchema.FieldIndices(k)[0])
	}
	for _, c := range mlArgCols {
		cfg.ArgCols = append(cfg.ArgCols, mlSchema.FieldIndices(c)[0])
	}
	for _, f := range frames {
		spec := window.Spec{Frame: window.Frame{Rows: f.Rows, Unbounded: f.Unbounded, Preceding: f.Preceding,
			EndPreceding: f.EndPreceding, ExcludeCurrent: f.ExcludeCurrent}}
		for _, a := range aggs {
			spec.Aggs = append(spec.Aggs, bindML(t, a))
			cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("%s over %s", a.SQL(), f))
		}
		cfg.Windows = append(cfg.Windows, spec)
	}
	return cfg
}

// step is one move of a run: push rows [lo, hi) of the table, then, when
// wm is not None, advance the watermark; ckpt checkpoints before it.
type step struct {
	lo, hi int
	wm     int64
	ckpt   bool
}

// ckptSteps cuts the table into pushes with watermarks = newest event time
// - bound after some of them, and checkpoints at random points.
func ckptSteps(rng *rand.Rand, tab *testutil.Table, bound int64, ckptRate float64) []step {
	var out []step
	maxTs, wm := watermark.None, watermark.None
	for lo := 0; lo < len(tab.Rows); {
		hi := min(len(tab.Rows), lo+1+rng.IntN(25))
		for i := lo; i < hi; i++ {
			maxTs = max(maxTs, tab.Value(i, "ts").(int64))
		}
		s := step{lo: lo, hi: hi, wm: watermark.None, ckpt: rng.Float64() < ckptRate}
		if rng.IntN(3) != 0 && maxTs-bound > wm {
			wm = maxTs - bound
			s.wm = wm
		}
		out = append(out, s)
		lo = hi
	}
	out = append(out, step{wm: watermark.End, ckpt: rng.Float64() < 0.5})
	// Short inputs (the race detector's third) may draw none: one in
	// the middle then.
	if ckptRate > 0 && !slices.ContainsFunc(out, func(s step) bool { return s.ckpt }) {
		out[len(out)/2].ckpt = true
	}
	return out
}

// ckptInput makes the events of a checkpoint test and their arrival:
// shuffled within the bound, or with late rows (bounded frames only, as
// lateness needs) when lateness is set.
func ckptInput(rng *rand.Rand, keys []string, lateness, bound int64) ([]testutil.Frame, *testutil.Table) {
	events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400)))
	if lateness > 0 {
		return boundedFrames(), lateArrival(rng, events, bound)
	}
	return testutil.Frames, arrival(rng, events, keys, bound)
}

// render turns output rows into text: floats print in the shortest form
// that reads back to the same bits, so equal text is equal values.
func render(tag string, rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = tag + fmt.Sprint(r)
	}
	return out
}

// ckptRun drives an operator through steps and returns everything it
// emitted. mk makes the operator on a store (nil: none); with a store,
// every ckpt step checkpoints, copies the store as the pipeline's backup
// would, and continues on a new operator restored from the copy.
type ckptRun struct {
	t     *testing.T
	cfg   window.Config
	store func() statestore.Store // a fresh empty store; nil: no store
	// budget is the MemoryBudget of operators with a store.
	budget int64
	// noSweep turns the operators' sweep of quiet keys off.
	noSweep bool
	// forgetMin, when > 0, is the least number of parked keys the
	// operators forget at once (window.SetKeyForgetMin).
	forgetMin int
	// sameOp checkpoints the operator and goes on with it, without a
	// restore, at every step; everyStep checkpoints it at every step too,
	// and restores at the steps that say so.
	sameOp, everyStep bool
	// stats of the last operator, at the end of the run.
	stats    window.Stats
	restores int
	// quiet, evicted, loaded and forgotten sum the QuietKeys, Evicted,
	// Loaded and ForgottenKeys of every operator of the run.
	quiet, evicted, loaded, forgotten int64
	// gone is the most keys out of memory (Keys - ResidentKeys) after
	// any step.
	gone int
	// storeKeys is the number of key states in the store at the end
	// (with a store, after a last checkpoint).
	storeKeys int
}

func (c *ckptRun) newOp(st statestore.Store) *window.Operator {
	c.t.Helper()
	cfg := c.cfg
	cfg.Store = st
	if st != nil {
		cfg.MemoryBudget = c.budget
	}
	op, err := window.New(cfg, mlSchema)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.noSweep {
		window.DisableQuietSweep(op)
	}
	if c.forgetMin > 0 {
		window.SetKeyForgetMin(op, c.forgetMin)
	}
	return op
}

func copyStore(t testing.TB, dst, src statestore.Store) {
	t.Helper()
	err := src.Scan(nil, func(k, v []byte) error { return dst.Set(k, v) })
	if err != nil {
		t.Fatal(err)
	}
}

func (c *ckptRun) run(tab *testutil.Table, steps []step) []string {
	t := c.t
	t.Helper()
	var st statestore.Store
	if c.store != nil {
		st = c.store()
	}
	op := c.newOp(st)
	defer func() { op.Close() }()
	var out []string
	for _, s := range steps {
		if c.everyStep && !s.ckpt && st != nil {
			if _, err := op.Checkpoint(); err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
		}
		if (s.ckpt || c.sameOp) && st != nil {
			meta, err := op.Checkpoint()
			if err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
			if c.sameOp {
				out = append(out, stepOut(t, op, tab, s)...)
				st := op.Stats()
				c.gone = max(c.gone, st.Keys-st.ResidentKeys)
				continue
			}
			ost := op.Stats()
			c.quiet += ost.QuietKeys
			c.evicted += ost.Evicted
			c.loaded += ost.Loaded
			c.forgotten += ost.ForgottenKeys
			snap := c.store()
			copyStore(t, snap, st)
			op.Close()
			// Writes after the checkpoint must not leak into it: the
			// old store gets scribbled on.
			_ = st.Set([]byte("k/junk"), []byte("junk"))
			st = snap
			op = c.newOp(st)
			if err := op.Restore(meta); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			c.restores++
		}
		out = append(out, stepOut(t, op, tab, s)...)
		st := op.Stats()
		c.gone = max(c.gone, st.Keys-st.ResidentKeys)
	}
	if st != nil {
		if _, err := op.Checkpoint(); err != nil {
			t.Fatalf("Checkpoint: %v", err)
		}
		err := st.Scan([]byte("k/"), func(k, v []byte) error { c.storeKeys++; return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	c.stats = op.Stats()
	c.quiet += c.stats.QuietKeys
	c.evicted += c.stats.Evicted
	c.loaded += c.stats.Loaded
	c.forgotten += c.stats.ForgottenKeys
	return out
}

func diffOutputs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: output row %d differs:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
	t.Fatalf("%s: %d output rows, want %d", what, len(got), len(want))
}

func memStore() statestore.Store { return statestore.NewMemory() }

// ckptVariant is a configuration of the checkpoint tests: the keys, the
// allowed lateness, batch output order, the memory budget of runs with a
// store.
type ckptVariant struct {
	name     string
	keys     []string
	lateness int64
	batch    bool
	budget   int64
}

// ckptVariants: keys on the integer, string and composite paths, allowed
// lateness, a budget that evicts keys all the time and one that evicts
// some.
var ckptVariants = []ckptVariant{
	{name: "int-key", keys: []string{"user_id"}},
	{name: "string-key-batch", keys: []string{"merchant"}, batch: true},
	{name: "composite-key", keys: []string{"user_id", "merchant"}},
	{name: "lateness", keys: []string{"user_id"}, lateness: 3000},
	{name: "budget", keys: []string{"user_id", "merchant"}, budget: 1},
	{name: "budget-lateness", keys: []string{"merchant"}, lateness: 3000, budget: 20_000},
}

// TestCheckpointRestoreExact is the exactness property: a run checkpointed
// and restored (onto a copy of the store taken at the checkpoint) at random
// points emits exactly what an uninterrupted run emits, values bit for
// bit — over every frame kind (RANGE, ROWS, UNBOUNDED PRECEDING, EXCLUDE
// CURRENT ROW, frames ending before the current row), out-of-order
// arrivals, allowed lateness, batch and streaming output order, keys on
// the integer, string and composite paths, and with a memory budget that
// evicts keys all the time.
func TestCheckpointRestoreExact(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for _, v := range ckptVariants {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, v.name), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				frames, tab := ckptInput(rng, v.keys, v.lateness, bound)
				cfg := ckptConfig(t, v.keys, frames, ckptAggs, v.lateness, v.batch)
				steps := ckptSteps(rng, tab, bound, 0.15)
				a := &ckptRun{t: t, cfg: cfg}
				want := a.run(tab, steps)
				b := &ckptRun{t: t, cfg: cfg, store: memStore, budget: v.budget}
				got := b.run(tab, steps)
				if b.restores == 0 {
					t.Fatal("no checkpoint was taken")
				}
				diffOutputs(t, "restored run vs uninterrupted", got, want)
				if a.stats.RowsIn != b.stats.RowsIn || a.stats.RowsOut != b.stats.RowsOut ||
					a.stats.LateDropped != b.stats.LateDropped || a.stats.LateApplied != b.stats.LateApplied {
					t.Errorf("stats differ: restored %+v, uninterrupted %+v", b.stats, a.stats)
				}
				if v.budget > 0 && b.evicted == 0 {
					t.Errorf("budget %d evicted nothing over %d restores: %+v", v.budget, b.restores, b.stats)
				}
			})
		}
	}
}

// TestCheckpointRestoreBadger is TestCheckpointRestoreExact on Badger
// stores, through statestore.Sub views, with a budget.
func TestCheckpointRestoreBadger(t *testing.T) {
	const bound = 2000
	seed := testutil.Seeds(1)[0]
	rng := testutil.Rand(seed)
	events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(300)))
	keys := []string{"user_id", "merchant"}
	tab := arrival(rng, events, keys, bound)
	cfg := ckptConfig(t, keys, testutil.Frames, ckptAggs, 0, false)
	steps := ckptSteps(rng, tab, bound, 0.1)
	want := (&ckptRun{t: t, cfg: cfg}).run(tab, steps)
	newStore := func() statestore.Store {
		db, err := statestore.OpenBadger(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // before TempDir's removal
		return statestore.Sub(db, "op/0/3/")
	}
	b := &ckptRun{t: t, cfg: cfg, store: newStore, budget: 4000}
	got := b.run(tab, steps)
	diffOutputs(t, "restored run on badger vs uninterrupted", got, want)
	if b.evicted == 0 || b.loaded == 0 {
		t.Errorf("%d evictions, %d loads over the run: want both", b.evicted, b.loaded)
	}
}

// TestRestoreRefusesOtherOperator checks the configuration fingerprint:
// meta of an operator with other aggregates, frames or keys is refused.
func TestRestoreRefusesOtherOperator(t *testing.T) {
	keys := []string{"user_id"}
	frames := testutil.Frames[:2]
	base := ckptConfig(t, keys, frames, ckptAggs[:3], 0, false)
	st := statestore.NewMemory()
	base.Store = st
	op, err := window.New(base, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := op.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]window.Config{
		"aggregates": ckptConfig(t, keys, frames, ckptAggs[1:4], 0, false),
		"frames":     ckptConfig(t, keys, testutil.Frames[1:3], ckptAggs[:3], 0, false),
		"keys":       ckptConfig(t, []string{"merchant"}, frames, ckptAggs[:3], 0, false),
	}
	for name, cfg := range others {
		cfg.Store = statestore.NewMemory()
		o, err := window.New(cfg, mlSchema)
		if err != nil {
			t.Fatal(err)
		}
		err = o.Restore(meta)
		if !errors.Is(err, window.ErrIncompatibleCheckpoint) {
			t.Errorf("other %s: Restore = %v, want ErrIncompatibleCheckpoint", name, err)
		}
	}
	same := base
	same.Store = statestore.NewMemory()
	same.AllowedLateness = 500 // lateness may change
	o, err := window.New(same, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Restore(meta); err != nil {
		t.Errorf("same operator: %v", err)
	}
	if err := o.Restore(meta); err == nil {
		t.Error("a second Restore was accepted")
	}
	o2, _ := window.New(same, mlSchema)
	if err := o2.Restore([]byte("garbage")); err == nil || !strings.Contains(err.Error(), "incompatible") {
		t.Errorf("garbage meta: %v", err)
	}
	o3, _ := window.New(same, mlSchema)
	if err := o3.Restore(meta[:len(meta)-3]); err == nil {
		t.Error("truncated meta accepted")
	}
}

var _ = arrow.PrimitiveTypes.Int64
