package window_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// rangeFrames are the RANGE frames of the reference (the sweep of quiet
// keys needs every frame bounded in time).
func rangeFrames() []testutil.Frame {
	var out []testutil.Frame
	for _, f := range testutil.Frames {
		if !f.Rows && !f.Unbounded {
			out = append(out, f)
		}
	}
	return out
}

// TestQuietKeysLetGo: an operator that lets go of the rows of keys whose
// newest row no frame or lookup can reach any more emits exactly what one
// that keeps them emits — over keys that come and go, out-of-order and
// late rows, allowed lateness, restores from checkpoints, a memory budget
// evicting keys — and it does let keys go.
func TestQuietKeysLetGo(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for _, v := range ckptVariants {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, v.name), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				// Not scaled down under the race detector: keys must have
				// time to go quiet, and checkpoints to come after.
				events := churn(testutil.MLEvents(rng, testutil.DefaultEvents(400)))
				tab := arrival(rng, events, v.keys, bound)
				if v.lateness > 0 {
					tab = lateArrival(rng, events, bound)
				}
				cfg := ckptConfig(t, v.keys, rangeFrames(), ckptAggs, v.lateness, v.batch)
				steps := ckptSteps(rng, tab, bound, 0.15)
				keep := &ckptRun{t: t, cfg: cfg, noSweep: true}
				want := keep.run(tab, steps)
				if keep.quiet != 0 {
					t.Fatalf("the sweep was off, yet %d keys were let go", keep.quiet)
				}
				sweep := &ckptRun{t: t, cfg: cfg}
				diffOutputs(t, "letting quiet keys go vs keeping them", sweep.run(tab, steps), want)
				if sweep.quiet == 0 {
					t.Error("no quiet key was let go")
				}
				if sweep.stats.Retained >= keep.stats.Retained && keep.stats.Retained > 0 {
					t.Errorf("%d rows retained at the end, %d keeping quiet keys", sweep.stats.Retained, keep.stats.Retained)
				}
				// Without a store, keys let go are parked: not resident.
				if sweep.gone == 0 {
					t.Errorf("no key was ever parked (%d keys)", sweep.stats.Keys)
				}
				// With a store, keys let go leave memory once a
				// checkpoint has written what is left of them.
				kept := &ckptRun{t: t, cfg: cfg, store: memStore, budget: v.budget, sameOp: true}
				diffOutputs(t, "letting quiet keys go, checkpointed, vs keeping them", kept.run(tab, steps), want)
				if kept.quiet == 0 {
					t.Error("checkpointed: no quiet key was let go")
				}
				if v.budget == 0 && kept.gone == 0 {
					t.Errorf("checkpointed: no key ever left memory (%d keys)", kept.stats.Keys)
				}
				restored := &ckptRun{t: t, cfg: cfg, store: memStore, budget: v.budget}
				diffOutputs(t, "letting quiet keys go, restored, vs keeping them", restored.run(tab, steps), want)
				if restored.restores == 0 || restored.quiet == 0 {
					t.Errorf("%d restores, %d quiet keys let go: want both", restored.restores, restored.quiet)
				}
			})
		}
	}
}

// noRangeEval are ckptAggs without ew_avg, whose values depend on the
// rows' absolute numbers (agg.RangeEvaluator): an operator that has it
// never forgets keys.
var noRangeEval = slices.DeleteFunc(slices.Clone(ckptAggs), func(a testutil.Agg) bool { return a.Func == "ew_avg" })

// TestQuietKeysForgotten: operators that forget their quiet keys (here as
// soon as 2 are, and as many as the live ones) emit exactly what one that
// keeps every key emits, over keys that come and go (churn: they then
// hold fewer keys at the end) or come back after they were forgotten
// (recurring), out-of-order and late rows, allowed lateness: without a
// store (parked keys), with one checkpointed at every step, and with one
// checkpointed at every step and restored from checkpoints at random
// points (the keys forgotten are deleted from the store, and the restored
// operators do not see them; the others, left quiet in the store, are
// not loaded), with and without a memory budget. With ew_avg among its aggregates an
// operator forgets none.
func TestQuietKeysForgotten(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for _, v := range ckptVariants {
			for _, keys := range []string{"churn", "recurring"} {
				t.Run(fmt.Sprintf("seed=%d/%s/%s", seed, v.name, keys), func(t *testing.T) {
					t.Parallel()
					rng := testutil.Rand(seed)
					// Not scaled down: see TestQuietKeysLetGo.
					events := testutil.MLEvents(rng, testutil.DefaultEvents(400))
					if keys == "churn" {
						events = churn(events)
					} else {
						events = recurring(events)
					}
					tab := arrival(rng, events, v.keys, bound)
					if v.lateness > 0 {
						tab = lateArrival(rng, events, bound)
					}
					cfg := ckptConfig(t, v.keys, rangeFrames(), noRangeEval, v.lateness, v.batch)
					steps := ckptSteps(rng, tab, bound, 0.15)
					keep := &ckptRun{t: t, cfg: cfg, noSweep: true}
					want := keep.run(tab, steps)
					seen := keep.stats.Keys
					runs := map[string]*ckptRun{
						"checkpointed": {t: t, cfg: cfg, store: memStore, budget: v.budget, sameOp: true, forgetMin: 2},
						"restored":     {t: t, cfg: cfg, store: memStore, budget: v.budget, everyStep: true, forgetMin: 2},
					}
					if v.budget == 0 { // a budget needs a store
						runs["parked"] = &ckptRun{t: t, cfg: cfg, forgetMin: 2}
					}
					for name, r := range runs {
						diffOutputs(t, "forgetting quiet keys ("+name+") vs keeping them", r.run(tab, steps), want)
						st := r.stats
						t.Logf("%s: %d keys held at the end (%d keeping them), %d forgotten (%d let go, %d restores)", name, st.Keys, seen, r.forgotten, r.quiet, r.restores)
						switch {
						case r.forgotten == 0:
							t.Errorf("%s: no key forgotten (%d held)", name, st.Keys)
						case keys == "churn" && st.Keys >= seen:
							t.Errorf("%s: %d keys held at the end, %d keeping them", name, st.Keys, seen)
						case keys == "recurring" && name != "restored" && int64(st.Keys)+r.forgotten <= int64(seen):
							// Keys that came back were counted twice.
							t.Errorf("%s: %d keys held and %d forgotten of %d: none came back", name, st.Keys, r.forgotten, seen)
						case r.storeKeys > st.Keys:
							t.Errorf("%s: %d key states in the store, %d keys held", name, r.storeKeys, st.Keys)
						}
					}
					ew := &ckptRun{t: t, cfg: ckptConfig(t, v.keys, rangeFrames(), ckptAggs, v.lateness, v.batch), store: memStore, sameOp: true, forgetMin: 2}
					ew.run(tab, steps)
					if ew.quiet == 0 || ew.forgotten != 0 {
						t.Errorf("with ew_avg: %d keys let go, %d forgotten: want some let go, none forgotten", ew.quiet, ew.forgotten)
					}
				})
			}
		}
	}
}

// recurring makes the users and merchants of events take turns: each
// twelfth of the time span has keys of its own. Half of them (odd user
// ids, merchants of odd last byte) come back six twelfths later, after a
// quiet spell longer than any frame; the others never do, so that new
// keys keep coming (an operator counts its keys to forget only then).
func recurring(events *testutil.Table) *testutil.Table {
	ts := events.Col("ts")
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range events.Rows {
		lo, hi = min(lo, r[ts].(int64)), max(hi, r[ts].(int64))
	}
	period := max(hi-lo, 24) / 12
	for _, col := range []string{"user_id", "merchant"} {
		j := events.Col(col)
		for _, r := range events.Rows {
			turn := (r[ts].(int64) - lo) / period
			switch v := r[j].(type) {
			case string:
				if v != "" && v[len(v)-1]%2 == 1 {
					turn %= 6
				}
				r[j] = fmt.Sprintf("%s-%d", v, turn)
			case int64:
				if v%2 != 0 {
					turn %= 6
				}
				r[j] = v + 1000*turn
			}
		}
	}
	return events
}

// TestQuietKeysLookups: with a lookup retention, lookups of every key at
// times the retention serves give the same values whether quiet keys are
// let go or kept; lookups at older times are refused (ErrTooOld) or agree.
func TestQuietKeysLookups(t *testing.T) {
	const bound, retention = 2000, 3000
	for _, seed := range testutil.Seeds(2) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := testutil.Rand(seed)
			keys := []string{"user_id"}
			events := churn(testutil.MLEvents(rng, testutil.DefaultEvents(300))) // not scaled: see TestQuietKeysLetGo
			tab := arrival(rng, events, keys, bound)
			cfg := ckptConfig(t, keys, rangeFrames(), ckptAggs, 0, false)
			cfg.Retention = retention
			// ops[0] lets quiet keys go (parks them), ops[1] keeps them,
			// ops[2] lets them go with a store and checkpoints (they
			// leave memory; lookups read them back).
			ops := make([]*window.Operator, 3)
			for i := range ops {
				c := cfg
				if i == 2 {
					c.Store = statestore.NewMemory()
				}
				op, err := window.New(c, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer op.Close()
				ops[i] = op
			}
			window.DisableQuietSweep(ops[1])
			var users []int64
			seen := map[int64]bool{}
			for i := range tab.Rows {
				if u, ok := tab.Value(i, "user_id").(int64); ok && !seen[u] {
					seen[u] = true
					users = append(users, u)
				}
			}
			types := ops[0].KeyTypes()
			served, refused := 0, 0
			maxTs := watermark.None
			newest := map[int64]int64{} // user -> newest row time pushed
			storeGone := 0              // the most keys ops[2] held out of memory
			for n, s := range ckptSteps(rng, tab, bound, 0) {
				for _, op := range ops {
					stepOut(t, op, tab, s)
				}
				if n%3 == 2 {
					if _, err := ops[2].Checkpoint(); err != nil {
						t.Fatal(err)
					}
				}
				st := ops[2].Stats()
				storeGone = max(storeGone, st.Keys-st.ResidentKeys)
				for i := s.lo; i < s.hi; i++ {
					ts := tab.Value(i, "ts").(int64)
					maxTs = max(maxTs, ts)
					if u, ok := tab.Value(i, "user_id").(int64); ok {
						newest[u] = max(newest[u], ts)
					}
				}
				if s.wm == watermark.None || s.wm == watermark.End {
					continue
				}
				// Users gone quiet lately: lookups reaching their last
				// rows, let go if the sweep got to them.
				var quiet []int64
				for _, u := range users {
					if ts, ok := newest[u]; ok && ts > s.wm-retention-20000 && ts < s.wm-retention-5000 {
						quiet = append(quiet, u)
					}
				}
				for k := range 32 {
					u := users[rng.IntN(len(users))]
					// Older than the retention by up to the longest
					// frame and more: lookups reaching rows let go.
					at := s.wm - retention - 8000 + rng.Int64N(retention+8000)
					if k%2 == 1 && len(quiet) > 0 {
						u = quiet[rng.IntN(len(quiet))]
						at = newest[u] + rng.Int64N(5000)
					}
					key, err := window.EncodeKeyValues(nil, types, []any{u})
					if err != nil {
						t.Fatal(err)
					}
					got, gerr := lookupText(t, ops[0], key, at)
					want, werr := lookupText(t, ops[1], key, at)
					stored, serr := lookupText(t, ops[2], key, at)
					if stored != got || (serr == nil) != (gerr == nil) || !errors.Is(serr, window.ErrTooOld) && serr != nil {
						t.Fatalf("user %d at %d (watermark %d): parked gave %q, %v; from the store %q, %v", u, at, s.wm, got, gerr, stored, serr)
					}
					switch {
					case gerr == nil && werr == nil && got == want:
						served++
					case errors.Is(gerr, window.ErrTooOld) && at < s.wm-retention:
						refused++
					default:
						t.Fatalf("user %d at %d (watermark %d): letting go gave %q, %v; keeping gave %q, %v", u, at, s.wm, got, gerr, want, werr)
					}
				}
			}
			if q := ops[0].Stats().QuietKeys; q == 0 || served == 0 || refused == 0 {
				t.Fatalf("%d quiet keys let go, %d lookups served, %d refused: want all", q, served, refused)
			}
			if storeGone == 0 {
				t.Errorf("with a store: no key ever left memory (%d keys)", ops[2].Stats().Keys)
			}
			t.Logf("%d lookups answered alike, %d older ones refused", served, refused)
		})
	}
}

// lookupText renders one lookup's values.
func lookupText(t *testing.T, op *window.Operator, key []byte, at int64) (string, error) {
	t.Helper()
	fields := op.OutSchema().Fields()[mlSchema.NumFields():]
	bld := make([]array.Builder, len(fields))
	for i, f := range fields {
		bld[i] = array.NewBuilder(memory.DefaultAllocator, f.Type)
		defer bld[i].Release()
	}
	if _, err := op.Lookup(key, at, nil, bld); err != nil {
		return "", err
	}
	cols := make([]arrow.Array, len(bld))
	for i, b := range bld {
		cols[i] = b.NewArray()
		defer cols[i].Release()
	}
	return fmt.Sprint(testutil.Rows(array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1))), nil
}

// TestForgetKeysPendingAndLookups: a parked key whose new row is pending
// when the keys are counted is kept (its row comes out right), the other
// parked keys are forgotten, and lookups of keys not held are refused
// (ErrTooOld) where their frames reach the newest row of a forgotten key
// (users 2-10 had rows up to 9 s), and otherwise answer as an operator
// that keeps the keys parked does (empty frames).
func TestForgetKeysPendingAndLookups(t *testing.T) {
	rng := testutil.Rand(1)
	tab := testutil.MLEvents(rng, testutil.DefaultEvents(12))
	ts, user := tab.Col("ts"), tab.Col("user_id")
	// Users 1-10 have a row each at 0-9 s; user 1 comes back at 200 s,
	// user 50 is new at 200.5 s.
	for i := range 10 {
		tab.Rows[i][ts], tab.Rows[i][user] = int64(i)*1000, int64(i+1)
	}
	tab.Rows[10][ts], tab.Rows[10][user] = int64(200_000), int64(1)
	tab.Rows[11][ts], tab.Rows[11][user] = int64(200_500), int64(50)
	frames := []testutil.Frame{{Preceding: 2000}}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "topn_frequency", Arg: "category", Param: int64(2)}}
	cfg := ckptConfig(t, []string{"user_id"}, frames, aggs, 0, false)
	ops := make([]*window.Operator, 2) // ops[0] forgets, ops[1] parks
	for i := range ops {
		op, err := window.New(cfg, mlSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		ops[i] = op
	}
	window.SetKeyForgetMin(ops[0], 2)
	steps := []step{{lo: 0, hi: 11, wm: 100_000}, {lo: 11, hi: 11, wm: 150_000}, {lo: 11, hi: 12, wm: watermark.End}}
	var outs [2][]string
	for _, s := range steps {
		for i, op := range ops {
			outs[i] = append(outs[i], stepOut(t, op, tab, s)...)
		}
	}
	diffOutputs(t, "forgetting vs parking", outs[0], outs[1])
	if len(outs[0]) != 12 {
		t.Fatalf("%d rows out, want 12", len(outs[0]))
	}
	st := ops[0].Stats()
	if st.ForgottenKeys != 9 || st.Keys != 2 {
		t.Fatalf("%d keys forgotten, %d held: want users 2-10 forgotten, 1 and 50 held", st.ForgottenKeys, st.Keys)
	}
	types := ops[0].KeyTypes()
	for _, c := range []struct {
		user, at int64
		tooOld   bool // refused by the forgetting operator
	}{
		{5, 5_500, true},      // reaches user 5's row at 4 s (parked: refused too)
		{5, 6_500, true},      // reaches 9 s (parked: an empty frame)
		{5, 11_001, false},    // starts after 9 s: an empty frame
		{5, 120_000, false},   //
		{999, 9_500, true},    // never seen
		{999, 11_500, false},  //
		{1, 200_000, false},   // held: user 1's row at 200 s
		{50, 201_000, false},  //
		{10, 11_001, false},   // starts after user 10's row at 9 s
		{10, 11_000, true},    // starts at it (parked: refused too)
		{999, 200_000, false}, //
	} {
		key, err := window.EncodeKeyValues(nil, types, []any{c.user})
		if err != nil {
			t.Fatal(err)
		}
		got, gerr := lookupText(t, ops[0], key, c.at)
		want, werr := lookupText(t, ops[1], key, c.at)
		switch {
		case c.tooOld:
			if !errors.Is(gerr, window.ErrTooOld) {
				t.Errorf("user %d at %d: %q, %v; want ErrTooOld", c.user, c.at, got, gerr)
			}
			if werr != nil && !errors.Is(werr, window.ErrTooOld) {
				t.Errorf("user %d at %d, parked: %q, %v", c.user, c.at, want, werr)
			}
		case gerr != nil || werr != nil || got != want:
			t.Errorf("user %d at %d: forgetting gave %q, %v; parking %q, %v", c.user, c.at, got, gerr, want, werr)
		}
	}
}

// TestForgetKeysStoreRenumbersDirty: with a store, a key changed since
// the last checkpoint when others are forgotten gets a new id and is
// still written by the next checkpoint, which lists few changed keys (so
// it visits the list rather than every key): a restore from it answers
// lookups of every key as the operator does, and holds the live keys
// only.
func TestForgetKeysStoreRenumbersDirty(t *testing.T) {
	rng := testutil.Rand(1)
	const n = 200 // users 0-99 go quiet and are forgotten, 100-199 stay
	tab := testutil.MLEvents(rng, testutil.DefaultEvents(n+n/2+1))
	ts, user := tab.Col("ts"), tab.Col("user_id")
	for i := range n {
		tab.Rows[i][ts], tab.Rows[i][user] = int64(1000+i%100), int64(i)
	}
	// Users 100-199 again, far later; user 199 once more before them.
	for i := range n / 2 {
		tab.Rows[n+i][ts], tab.Rows[n+i][user] = int64(100_000+i), int64(100+i)
	}
	end := n + n/2
	tab.Rows[end][ts], tab.Rows[end][user] = int64(60_001), int64(199)
	frames := []testutil.Frame{{Preceding: 2000}}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}}
	cfg := ckptConfig(t, []string{"user_id"}, frames, aggs, 0, false)
	cfg.Store = statestore.NewMemory()
	op, err := window.New(cfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	window.SetKeyForgetMin(op, 2)
	stepOut(t, op, tab, step{lo: 0, hi: n, wm: 2000})
	stepOut(t, op, tab, step{lo: n, hi: end + 1, wm: 50_000})
	stepOut(t, op, tab, step{lo: end + 1, hi: end + 1, wm: 60_000}) // every user quiet: small states
	if _, err := op.Checkpoint(); err != nil {                      // written: clean
		t.Fatal(err)
	}
	// User 199's row at 60.001 s comes out: it changed. The step is too
	// short to sweep any key.
	stepOut(t, op, tab, step{lo: end + 1, hi: end + 1, wm: 60_002})
	// The sweep drops the others from memory; users 100-198 have rows
	// pending: 0-99 are forgotten.
	stepOut(t, op, tab, step{lo: end + 1, hi: end + 1, wm: 99_000})
	st := op.Stats()
	if st.ForgottenKeys != n/2 || st.Keys != n/2 {
		t.Fatalf("%d keys forgotten, %d held: want users 0-99 forgotten, 100-199 held", st.ForgottenKeys, st.Keys)
	}
	meta, err := op.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if st := op.Stats(); st.CheckpointKeys != 1 {
		t.Fatalf("the checkpoint wrote %d keys, want user 199's", st.CheckpointKeys)
	}
	snap := statestore.NewMemory()
	copyStore(t, snap, cfg.Store)
	rcfg := cfg
	rcfg.Store = snap
	restored, err := window.New(rcfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if err := restored.Restore(meta); err != nil {
		t.Fatal(err)
	}
	if k := restored.Stats().Keys; k != n/2 {
		t.Fatalf("restored %d keys, want %d", k, n/2)
	}
	types := op.KeyTypes()
	for u := range int64(n) {
		key, err := window.EncodeKeyValues(nil, types, []any{u})
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int64{60_500, 99_500} {
			got, gerr := lookupText(t, restored, key, at)
			want, werr := lookupText(t, op, key, at)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("user %d at %d: restored gave %q, %v; the operator %q, %v", u, at, got, gerr, want, werr)
			}
		}
	}
	key, _ := window.EncodeKeyValues(nil, types, []any{int64(199)})
	if got, err := lookupText(t, restored, key, 60_500); err != nil || !strings.HasPrefix(got, "[[1 ") {
		t.Fatalf("user 199 at 60.5 s: %q, %v; want its row at 60.001 s counted", got, err)
	}
	// User 5, forgotten, had a row at 1.005 s: refused where frames reach
	// it (the newest forgotten row, 1.099 s), by the restored operator
	// too; an empty frame after.
	key, _ = window.EncodeKeyValues(nil, types, []any{int64(5)})
	for _, o := range []*window.Operator{op, restored} {
		if got, err := lookupText(t, o, key, 2500); !errors.Is(err, window.ErrTooOld) {
			t.Errorf("user 5 at 2.5 s: %q, %v; want ErrTooOld", got, err)
		}
		if got, err := lookupText(t, o, key, 3100); err != nil || !strings.HasPrefix(got, "[[0 ") {
			t.Errorf("user 5 at 3.1 s: %q, %v; want an empty frame", got, err)
		}
	}
}
