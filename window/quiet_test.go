package window_test

import (
	"errors"
	"fmt"
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
