package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
)

// budgetConfig is an operator over tileSchema: bounded RANGE and ROWS
// frames (lookups work on them) and, with unbounded, a running frame.
func budgetConfig(t testing.TB, unbounded bool) Config {
	t.Helper()
	bind := func(name string, args ...agg.Arg) agg.Func { return bindFunc(t, name, args...) }
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cat := agg.Arg{Type: arrow.BinaryTypes.String, Col: 1}
	aggs := func() []agg.Func {
		return []agg.Func{bind("count", agg.Arg{Star: true, Col: -1}), bind("sum", amount), bind("max", amount),
			bind("min", cat), bind("first_value", amount), bind("var_samp", amount),
			bind("topn_frequency", cat, agg.Arg{IsConst: true, Const: int64(2), Col: -1, Type: arrow.PrimitiveTypes.Int64})}
	}
	specs := []Spec{
		{Frame: Frame{Preceding: 60_000}, Aggs: aggs()},
		{Frame: Frame{Rows: true, Preceding: 3, ExcludeCurrent: true}, Aggs: aggs()},
	}
	if unbounded {
		specs = append(specs, Spec{Frame: Frame{Unbounded: true}, Aggs: aggs()})
	}
	return Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, Windows: specs, TileMinRows: -1}
}

// budgetBatches makes n batches of rows over keys keys, event time
// rising by about a millisecond per row.
func budgetBatches(seed uint64, keys, n, rows int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []arrow.RecordBatch
	var seq int64
	ts := int64(1_700_000_000_000)
	cats := []string{"a", "b", "c", "d"}
	for range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for range rows {
			ts += int64(rng.IntN(3))
			b.Field(0).(*array.Int64Builder).Append(ts)
			b.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			b.Field(2).(*array.Int64Builder).Append(int64(rng.IntN(keys)))
			if rng.IntN(10) == 0 {
				b.Field(3).AppendNull()
			} else {
				b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(10000)) / 100)
			}
			b.Field(4).(*array.StringBuilder).Append(cats[rng.IntN(len(cats))])
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// feed pushes a batch and advances the watermark to its newest event time
// minus 5 ms; it returns the output rows as text.
func feed(t testing.TB, op *Operator, rec arrow.RecordBatch) []string {
	t.Helper()
	outs, late, err := op.Push(rec)
	if err != nil || late != nil || len(outs) > 0 {
		t.Fatalf("Push: %v (late %v)", err, late)
	}
	ts := rec.Column(0).(*array.Int64).Int64Values()
	outs, err = op.Advance(context.Background(), ts[len(ts)-1]-5)
	if err != nil {
		t.Fatalf("Advance: %v", err)
	}
	var res []string
	for _, r := range testutil.Rows(outs...) {
		res = append(res, fmt.Sprint(r))
	}
	for _, o := range outs {
		o.Release()
	}
	return res
}

// newOp returns a new operator over tileSchema, closed when the test ends.
func newOp(t testing.TB, cfg Config) *Operator {
	t.Helper()
	op := openOp(t, cfg)
	t.Cleanup(op.Close)
	return op
}

// TestMemoryBudget: with key state ten times the budget, the operator
// emits exactly what an unlimited one emits, and after every Advance its
// resident estimate is within the budget.
func TestMemoryBudget(t *testing.T) {
	keys, n, rows := 20_000, 12, 4000
	if testutil.Race {
		keys, n, rows = 4000, 10, 2000
	}
	recs := budgetBatches(1, keys, n, rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// An operator that tracks sizes but never evicts measures the state.
	full := budgetConfig(t, true)
	full.Store, full.MemoryBudget = statestore.NewMemory(), 1<<60
	fop := newOp(t, full)
	plain := newOp(t, budgetConfig(t, true))
	var want []string
	for _, r := range recs {
		want = append(want, feed(t, plain, r)...)
		feed(t, fop, r)
	}
	total := fop.Stats().ResidentBytes
	budget := total / 10

	st := statestore.NewMemory()
	cfg := budgetConfig(t, true)
	cfg.Store, cfg.MemoryBudget = st, budget
	op := newOp(t, cfg)
	var got []string
	for i, r := range recs {
		got = append(got, feed(t, op, r)...)
		if s := op.Stats(); s.ResidentBytes > budget {
			t.Fatalf("after batch %d: resident %d bytes > budget %d", i, s.ResidentBytes, budget)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	s := op.Stats()
	t.Logf("state %d bytes, budget %d: %+v", total, budget, s)
	if s.Evicted == 0 || s.Loaded == 0 || s.ResidentKeys >= s.Keys/2 || s.ResidentBytes < budget/2 {
		t.Errorf("stats %+v: want evictions, loads, and a working set near the budget", s)
	}
	if st.Len() < s.Keys-s.ResidentKeys {
		t.Errorf("store holds %d keys, %d are evicted", st.Len(), s.Keys-s.ResidentKeys)
	}
}

// TestCheckpointIncremental: Checkpoint writes the keys changed since the
// last one, and none of the keys already in the store by eviction.
func TestCheckpointIncremental(t *testing.T) {
	recs := budgetBatches(2, 1000, 4, 2000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	st := statestore.NewMemory()
	cfg := budgetConfig(t, false)
	cfg.Store = st
	op := newOp(t, cfg)
	for _, r := range recs {
		feed(t, op, r)
	}
	last := recs[len(recs)-1].Column(0).(*array.Int64).Int64Values()
	ts := last[len(last)-1] + 10
	if _, err := op.Advance(context.Background(), ts-1); err != nil { // release every row
		t.Fatal(err)
	}
	if _, err := op.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	s := op.Stats()
	if s.CheckpointKeys != int64(s.Keys) || st.Len() != s.Keys {
		t.Fatalf("first checkpoint wrote %d keys (store %d), want all %d", s.CheckpointKeys, st.Len(), s.Keys)
	}
	// Rows for three keys only.
	b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
	for i, k := range []int64{7, 8, 9, 7} {
		b.Field(0).(*array.Int64Builder).Append(ts + int64(i))
		b.Field(1).(*array.Int64Builder).Append(1_000_000 + int64(i))
		b.Field(2).(*array.Int64Builder).Append(k)
		b.Field(3).(*array.Float64Builder).Append(1)
		b.Field(4).(*array.StringBuilder).Append("x")
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	if _, _, err := op.Push(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Advance(context.Background(), ts+100); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := op.Stats().CheckpointKeys; got != 3 {
		t.Errorf("second checkpoint wrote %d keys, want 3", got)
	}
	if _, err := op.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := op.Stats().CheckpointKeys; got != 0 {
		t.Errorf("third checkpoint wrote %d keys, want 0", got)
	}

	// With a budget, evicted keys are in the store already: a checkpoint
	// writes at most the resident ones.
	st2 := statestore.NewMemory()
	cfg.Store, cfg.MemoryBudget = st2, 20_000
	op2 := newOp(t, cfg)
	for _, r := range recs {
		feed(t, op2, r)
	}
	before := st2.Len()
	if _, err := op2.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	s = op2.Stats()
	if s.Evicted == 0 || before == 0 || s.CheckpointKeys > int64(s.ResidentKeys) || st2.Len() != s.Keys {
		t.Errorf("budgeted checkpoint: %+v, store had %d keys before and %d after", s, before, st2.Len())
	}
}

// TestMayWrite: while MayWrite says no, nothing is written to the store
// and memory may exceed the budget; evictions resume when it says yes.
func TestMayWrite(t *testing.T) {
	recs := budgetBatches(3, 2000, 6, 2000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var allow atomic.Bool
	st := statestore.NewMemory()
	cfg := budgetConfig(t, false)
	cfg.Store, cfg.MemoryBudget, cfg.MayWrite = st, 30_000, allow.Load
	op := newOp(t, cfg)
	for _, r := range recs[:5] {
		feed(t, op, r)
	}
	if s := op.Stats(); s.Evicted != 0 || st.Len() != 0 || s.ResidentBytes <= cfg.MemoryBudget {
		t.Fatalf("with MayWrite false: %+v, store %d keys", s, st.Len())
	}
	allow.Store(true)
	feed(t, op, recs[5])
	if s := op.Stats(); s.Evicted == 0 || s.ResidentBytes > cfg.MemoryBudget {
		t.Fatalf("with MayWrite true: %+v", s)
	}
}

// TestLookupEvictedKeys: lookups of evicted keys read them from the store
// and give what an unlimited operator gives, also while ingest (and
// eviction) goes on in another goroutine (run with -race).
func TestLookupEvictedKeys(t *testing.T) {
	const keys = 3000
	recs := budgetBatches(4, keys, 8, 3000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cfg := budgetConfig(t, false)
	plain := newOp(t, cfg)
	cfg.Store, cfg.MemoryBudget = statestore.NewMemory(), 40_000
	op := newOp(t, cfg)
	for _, r := range recs[:4] {
		feed(t, plain, r)
		feed(t, op, r)
	}
	last := recs[3].Column(0).(*array.Int64).Int64Values()
	at := last[len(last)-1] - 5
	check := func(k int64) {
		key, _ := EncodeKeyValues(nil, plain.KeyTypes(), []any{k})
		want, err1 := lookupValues(plain, key, at)
		got, err2 := lookupValues(op, key, at)
		if err1 != nil || err2 != nil {
			t.Errorf("key %d: lookup errors %v, %v", k, err1, err2)
			return
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("key %d at %d: got %v, want %v", k, at, got, want)
		}
	}
	for k := range int64(200) {
		check(k)
	}
	if s := op.Stats(); s.LookupLoads == 0 {
		t.Errorf("no lookup read an evicted key: %+v", s)
	}
	// Concurrent lookups while the budgeted operator ingests.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key, _ := EncodeKeyValues(nil, op.KeyTypes(), []any{int64(rng.IntN(keys))})
				if _, err := lookupValues(op, key, at+1_000_000); err != nil && err != ErrTooOld {
					t.Error(err)
					return
				}
			}
		}()
	}
	for _, r := range recs[4:] {
		feed(t, op, r)
	}
	close(stop)
	wg.Wait()
}
