package window

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
)

// bindFunc binds an aggregate or fails the test.
func bindFunc(t testing.TB, name string, args ...agg.Arg) agg.Func {
	t.Helper()
	f, err := agg.Bind(name, args)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pagedConfig is an operator over tileSchema with a long RANGE frame (the
// paged one), a short RANGE frame and a ROWS frame, each with retractable,
// deque, edge and merge-only (tiled two-stack) aggregates.
func pagedConfig(t testing.TB, long, short, tile int64) Config {
	t.Helper()
	bind := func(name string, args ...agg.Arg) agg.Func { return bindFunc(t, name, args...) }
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cat := agg.Arg{Type: arrow.BinaryTypes.String, Col: 1}
	k2 := agg.Arg{IsConst: true, Const: int64(2), Col: -1, Type: arrow.PrimitiveTypes.Int64}
	aggs := func() []agg.Func {
		return []agg.Func{bind("count", agg.Arg{Star: true, Col: -1}), bind("sum", amount), bind("max", amount),
			bind("min", cat), bind("first_value", amount), bind("last_value", amount), bind("var_samp", amount),
			bind("topn_frequency", cat, k2), bind("drawdown", amount), bind("max_cate", amount, cat)}
	}
	return Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, TileMinRows: -1, TileSize: tile,
		Windows: []Spec{
			{Frame: Frame{Preceding: long}, Aggs: aggs()},
			{Frame: Frame{Preceding: short, ExcludeCurrent: true}, Aggs: aggs()},
			{Frame: Frame{Rows: true, Preceding: 3}, Aggs: aggs()[:3]},
		}}
}

// lookupText looks key up at t and renders the values (floats to 9
// significant digits: tiles merge sums in another order than rows).
func lookupText(t testing.TB, op *Operator, key int64, at int64) string {
	t.Helper()
	var bld []array.Builder
	for _, dt := range op.ResultTypes() {
		bld = append(bld, array.NewBuilder(memory.DefaultAllocator, dt))
	}
	k, err := EncodeKeyValues(nil, op.KeyTypes(), []any{key})
	if err != nil {
		t.Fatal(err)
	}
	wm, err := op.Lookup(k, at, nil, bld)
	if err != nil {
		t.Fatalf("Lookup(%d, %d): %v", key, at, err)
	}
	out := fmt.Sprint(wm)
	for _, b := range bld {
		a := b.NewArray()
		if f, ok := a.(*array.Float64); ok {
			for i := range f.Len() {
				if f.IsNull(i) {
					out += " null"
				} else {
					out += fmt.Sprintf(" %.9g", f.Value(i))
				}
			}
		} else {
			out += " " + a.String()
		}
		a.Release()
		b.Release()
	}
	return out
}

// TestRowPagingExact: an operator paging its long frame's rows to the
// store emits exactly what an operator holding every row emits, answers
// lookups the same, and carries on exactly across a checkpoint restore
// and under a memory budget that evicts paged keys; over an in-memory
// store and Badger on disk.
func TestRowPagingExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		store  func(t *testing.T) statestore.Store
		budget bool
		tiles  bool // lookups merge tiles (TileMinRows 16)
	}{
		{"memory", func(*testing.T) statestore.Store { return statestore.NewMemory() }, false, false},
		{"memory-tiles", func(*testing.T) statestore.Store { return statestore.NewMemory() }, false, true},
		{"memory-budget", func(*testing.T) statestore.Store { return statestore.NewMemory() }, true, false},
		{"badger", func(t *testing.T) statestore.Store {
			st, err := statestore.OpenBadger(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 40
			if testutil.Race {
				n = 16
			}
			recs := budgetBatches(7, 6, n, 300)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			pcfg := pagedConfig(t, 2000, 300, 100)
			cfg := pagedConfig(t, 2000, 300, 100)
			if tc.tiles {
				pcfg.TileMinRows, cfg.TileMinRows = 16, 16
			}
			plain := newOp(t, pcfg)
			st := tc.store(t)
			cfg.Store, cfg.PageRows = st, 24
			if tc.budget {
				cfg.MemoryBudget = 40_000
			}
			op := newOp(t, cfg)
			rng := rand.New(rand.NewPCG(3, 3))
			var pages, reads, restoredPages int64
			for i, r := range recs {
				want, got := feed(t, plain, r), feed(t, op, r)
				if len(got) != len(want) {
					t.Fatalf("batch %d: %d rows, want %d", i, len(got), len(want))
				}
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("batch %d row %d:\n paged %s\n plain %s", i, j, got[j], want[j])
					}
				}
				ts := r.Column(0).(*array.Int64).Int64Values()
				for range 4 {
					key, at := rng.Int64N(6), ts[len(ts)-1]+rng.Int64N(300)
					if g, w := lookupText(t, op, key, at), lookupText(t, plain, key, at); g != w {
						t.Fatalf("batch %d: lookup key %d at %d:\n paged %s\n plain %s", i, key, at, g, w)
					}
				}
				if i == n/2 {
					// Restart from a checkpoint into a fresh operator.
					meta, err := op.Checkpoint()
					if err != nil {
						t.Fatal(err)
					}
					s := op.Stats()
					pages, reads = s.PagesWritten, s.PagesRead
					op = newOp(t, cfg)
					if err := op.Restore(meta); err != nil {
						t.Fatal(err)
					}
					// Lookups right after the restore: the restored
					// keys' tiles serve them (tiles are part of a
					// paged key's state).
					for key := range int64(6) {
						at := ts[len(ts)-1] + 50
						if g, w := lookupText(t, op, key, at), lookupText(t, plain, key, at); g != w {
							t.Fatalf("after restore: lookup key %d at %d:\n paged %s\n plain %s", key, at, g, w)
						}
					}
					if lp := op.Stats().LookupPages; tc.tiles && lp > 6*4 {
						t.Errorf("6 lookups right after the restore read %d pages", lp)
					}
					restoredPages = op.Stats().LookupPages
				}
			}
			s := op.Stats()
			t.Logf("before restart: %d pages written, %d read; after: %+v", pages, reads, s)
			if pages == 0 || reads == 0 || s.PagesWritten == 0 || s.PagesRead == 0 {
				t.Errorf("rows were not paged: %d/%d pages written/read before the restart, %d/%d after", pages, reads, s.PagesWritten, s.PagesRead)
			}
			// 4 lookups per batch, over frames of about 330 rows in
			// pages of 24: with tiles only the edge pages are read.
			perLookup := float64(s.LookupPages-restoredPages) / float64(4*(n-n/2-1))
			t.Logf("pages read per lookup: %.1f", perLookup)
			if tc.tiles && perLookup > 4 {
				t.Errorf("lookups with tiles read %.1f pages each", perLookup)
			}
			if tc.budget && (s.Evicted == 0 || s.Loaded == 0) {
				t.Errorf("no evictions under the budget: %+v", s)
			}
		})
	}
}

// TestRowPagingBoundsMemory: with a 30-day frame, a key's state in memory
// (rows held and the encoded window state) stays about the same when its
// events grow tenfold, while an operator holding every row grows tenfold;
// and the paged (tiled) operator emits exactly what the other one does.
func TestRowPagingBoundsMemory(t *testing.T) {
	const day = 24 * 3600_000
	measure := func(perDay int, paged bool) (rows int64, bytes int, out []string) {
		cfg := pagedConfig(t, 30*day, 3600_000, 0)
		if paged {
			cfg.Store, cfg.PageRows = statestore.NewMemory(), 256
		}
		op := newOp(t, cfg)
		rng := rand.New(rand.NewPCG(uint64(perDay), 9))
		ts, seq := int64(1_700_000_000_000), int64(0)
		for range 60 { // 60 days, a batch a day
			b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
			for range perDay {
				ts += rng.Int64N(2 * day / int64(perDay))
				b.Field(0).(*array.Int64Builder).Append(ts)
				b.Field(1).(*array.Int64Builder).Append(seq)
				seq++
				b.Field(2).(*array.Int64Builder).Append(1)
				b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(10000)) / 100)
				b.Field(4).(*array.StringBuilder).Append(fmt.Sprint("c", rng.IntN(5)))
			}
			rec := b.NewRecordBatch()
			b.Release()
			if _, _, err := op.Push(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			outs, err := op.Advance(context.Background(), ts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range testutil.Rows(outs...) {
				out = append(out, fmt.Sprint(r))
			}
			for _, o := range outs {
				o.Release()
			}
		}
		ks := op.states[0]
		enc, err := op.encodeKeyState(ks)
		if err != nil {
			t.Fatal(err)
		}
		return op.Stats().Retained, len(enc), out
	}
	r1, b1, _ := measure(100, true)
	r10, b10, got := measure(1000, true)
	p10, pb10, want := measure(1000, false)
	if len(got) != len(want) {
		t.Fatalf("paged run emitted %d rows, unpaged %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d:\n paged %s\n plain %s", i, got[i], want[i])
		}
	}
	t.Logf("paged: %d rows / %d bytes at 100 events a day, %d / %d at 1000; unpaged at 1000: %d / %d", r1, b1, r10, b10, p10, pb10)
	if r10 > 3*r1 || b10 > 3*b1 {
		t.Errorf("paged state grew from %d rows / %d bytes to %d / %d with ten times the events", r1, b1, r10, b10)
	}
	if r10*10 > p10 || b10*5 > pb10 {
		t.Errorf("paged state %d rows / %d bytes is not far below the unpaged %d / %d", r10, b10, p10, pb10)
	}
}

// TestRowPagingRefused: configurations paging cannot serve are refused
// with a reason.
func TestRowPagingRefused(t *testing.T) {
	base := func() Config {
		c := pagedConfig(t, 2000, 300, 100)
		c.Store, c.PageRows = statestore.NewMemory(), 16
		return c
	}
	for name, mod := range map[string]func(*Config){
		"no store":  func(c *Config) { c.Store = nil },
		"lateness":  func(c *Config) { c.AllowedLateness = 10 },
		"retention": func(c *Config) { c.Retention = 10 },
		"rows only": func(c *Config) { c.Windows = c.Windows[2:] },
	} {
		c := base()
		mod(&c)
		if _, err := New(c, tileSchema); err == nil {
			t.Errorf("%s: New accepted PageRows", name)
		} else if CanPage(c) == nil {
			t.Errorf("%s: CanPage says yes, New says %v", name, err)
		}
	}
}

// TestRowPagingConcurrentLookups: lookups running while a paging operator
// ingests (they get in between keys) read pages written in the same
// Advance and never fail; run it with -race.
func TestRowPagingConcurrentLookups(t *testing.T) {
	recs := budgetBatches(11, 8, 30, 400)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cfg := pagedConfig(t, 2000, 300, 100)
	cfg.Store, cfg.PageRows, cfg.TileMinRows = statestore.NewMemory(), 16, 16
	op := newOp(t, cfg)
	var newest atomic.Int64
	newest.Store(recs[0].Column(0).(*array.Int64).Value(0))
	stop := make(chan struct{})
	errs := make(chan error, 1)
	var lookups atomic.Int64
	go func() {
		defer close(errs)
		rng := rand.New(rand.NewPCG(5, 5))
		var bld []array.Builder
		for _, dt := range op.ResultTypes() {
			bld = append(bld, array.NewBuilder(memory.DefaultAllocator, dt))
		}
		states := op.NewLookupStates()
		for {
			select {
			case <-stop:
				return
			default:
			}
			k, _ := EncodeKeyValues(nil, op.KeyTypes(), []any{rng.Int64N(8)})
			_, err := op.LookupWith(k, newest.Load()+rng.Int64N(100), nil, bld, states)
			if err != nil && !errors.Is(err, ErrTooOld) {
				// (Too old: the key's rows moved past the time while
				// this Advance ran; a legitimate answer.)
				errs <- err
				return
			}
			lookups.Add(1)
			for _, b := range bld {
				b.NewArray().Release()
			}
		}
	}()
	for _, r := range recs {
		feed(t, op, r)
		ts := r.Column(0).(*array.Int64).Int64Values()
		newest.Store(ts[len(ts)-1])
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Fatalf("lookup during ingest: %v", err)
	}
	s := op.Stats()
	t.Logf("%d lookups; %+v", lookups.Load(), s)
	if s.PagesWritten == 0 || s.LookupPages == 0 || lookups.Load() == 0 {
		t.Errorf("no paging seen by lookups: %d lookups, stats %+v", lookups.Load(), s)
	}
}
