package window

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// yieldOp is an operator keyed by tileSchema's key with sum(amount) and
// count(*) over a RANGE frame longer than any test's times: a lookup far
// ahead of the rows counts every released row of its key.
func yieldOp(t testing.TB) *Operator {
	t.Helper()
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	sum, err := agg.Bind("sum", []agg.Arg{amount})
	if err != nil {
		t.Fatal(err)
	}
	count, err := agg.Bind("count", []agg.Arg{{Star: true, Col: -1}})
	if err != nil {
		t.Fatal(err)
	}
	op, err := New(Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3},
		Windows: []Spec{{Frame: Frame{Preceding: 1 << 40}, Aggs: []agg.Func{sum, count}}}}, tileSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return op
}

// yieldRound returns round r (from 1) of the events: perKey rows for each
// of keys keys, key k's at times r*10000 + k*10 + i with amount
// r*1000 + k + i/4, in time order.
func yieldRound(r, keys, perKey int, seq *int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
	defer b.Release()
	for k := range keys {
		for i := range perKey {
			b.Field(0).(*array.Int64Builder).Append(int64(r*10000 + k*10 + i))
			b.Field(1).(*array.Int64Builder).Append(*seq)
			*seq++
			b.Field(2).(*array.Int64Builder).Append(int64(k))
			b.Field(3).(*array.Float64Builder).Append(float64(r*1000+k) + float64(i)/4)
			b.Field(4).(*array.StringBuilder).Append("a")
		}
	}
	return b.NewRecordBatch()
}

// yieldWant is key k's (sum, count) after rounds 1..r of yieldRound.
func yieldWant(r, k, perKey int) (float64, int64) {
	var s float64
	for q := 1; q <= r; q++ {
		for i := range perKey {
			s += float64(q*1000+k) + float64(i)/4
		}
	}
	return s, int64(r * perKey)
}

func yieldWm(r int) int64 { return int64(r*10000 + 9999) }

// yieldLookup looks key k up far ahead of every row.
type yieldLookup struct {
	op     *Operator
	bld    []array.Builder
	states [][]agg.State
	key    []byte
}

func newYieldLookup(op *Operator) *yieldLookup {
	l := &yieldLookup{op: op, states: op.NewLookupStates()}
	for _, rt := range op.ResultTypes() {
		l.bld = append(l.bld, array.NewBuilder(memory.DefaultAllocator, rt))
	}
	return l
}

func (l *yieldLookup) lookup(k int) (wm int64, sum float64, n int64, err error) {
	l.key, err = EncodeKeyValues(l.key[:0], l.op.KeyTypes(), []any{int64(k)})
	if err != nil {
		return 0, 0, 0, err
	}
	wm, err = l.op.LookupWith(l.key, 1<<30, nil, l.bld, l.states)
	s := l.bld[0].NewArray().(*array.Float64)
	c := l.bld[1].NewArray().(*array.Int64)
	defer s.Release()
	defer c.Release()
	if err != nil {
		return wm, 0, 0, err
	}
	return wm, s.Value(0), c.Value(0), nil
}

func (l *yieldLookup) release() {
	for _, b := range l.bld {
		b.Release()
	}
}

// An Advance over many keys lets lookups in between keys: a lookup made
// while it is under way completes, sees every key either before or after
// the release (the keys processed so far after it), and reports the
// previous watermark until the release is complete.
func TestLookupDuringAdvance(t *testing.T) {
	const keys, perKey = 100, 2
	op := yieldOp(t)
	l := newYieldLookup(op)
	defer l.release()
	ctx := context.Background()
	var seq int64
	advance := func(r int) []arrow.RecordBatch {
		rec := yieldRound(r, keys, perKey, &seq)
		defer rec.Release()
		if _, _, err := op.Push(rec); err != nil {
			t.Fatal(err)
		}
		outs, err := op.Advance(ctx, yieldWm(r))
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	for _, o := range advance(1) {
		o.Release()
	}

	type seen struct {
		wm  int64
		sum float64
		n   int64
	}
	var during [][]seen // per yield, per key
	var opWm []int64
	yieldHook = func(o *Operator) {
		if o != op {
			return
		}
		opWm = append(opWm, op.Watermark())
		var s []seen
		for k := range keys {
			wm, sum, n, err := l.lookup(k)
			if err != nil {
				t.Errorf("lookup of key %d during Advance: %v", k, err)
			}
			s = append(s, seen{wm, sum, n})
		}
		during = append(during, s)
	}
	defer func() { yieldHook = nil }()
	outs := advance(2)
	yieldHook = nil

	// Keys are processed in id order (the order they were first seen: 0,
	// 1, ...), perKey rows each, letting lookups in every yieldRows rows.
	step := (yieldRows + perKey - 1) / perKey
	if want := (keys - 1) / step; len(during) != want {
		t.Fatalf("Advance over %d keys let lookups in %d times, want %d", keys, len(during), want)
	}
	for y, s := range during {
		if opWm[y] != yieldWm(1) {
			t.Errorf("yield %d: Watermark() = %d during the Advance to %d, want the previous %d", y, opWm[y], yieldWm(2), yieldWm(1))
		}
		done := (y + 1) * step
		for k, got := range s {
			r := 1
			if k < done {
				r = 2
			}
			sum, n := yieldWant(r, k, perKey)
			if got.wm != yieldWm(1) || got.sum != sum || got.n != n {
				t.Errorf("yield %d (%d keys done), key %d: got wm=%d sum=%v n=%d, want wm=%d sum=%v n=%d",
					y, done, k, got.wm, got.sum, got.n, yieldWm(1), sum, n)
			}
		}
	}

	// After it: the new watermark, every key with both rounds, and the
	// emitted rows carry the same values.
	for k := range keys {
		wm, sum, n, err := l.lookup(k)
		wantSum, wantN := yieldWant(2, k, perKey)
		if err != nil || wm != yieldWm(2) || sum != wantSum || n != wantN {
			t.Errorf("key %d after Advance: wm=%d sum=%v n=%d err=%v, want wm=%d sum=%v n=%d",
				k, wm, sum, n, err, yieldWm(2), wantSum, wantN)
		}
	}
	last := map[int64][2]float64{} // key -> (sum, count) of its newest emitted row
	rows := 0
	for _, o := range outs {
		keyCol := o.Column(2).(*array.Int64)
		sums := o.Column(5).(*array.Float64)
		counts := o.Column(6).(*array.Int64)
		for i := range int(o.NumRows()) {
			last[keyCol.Value(i)] = [2]float64{sums.Value(i), float64(counts.Value(i))}
			rows++
		}
		o.Release()
	}
	if rows != keys*perKey {
		t.Fatalf("Advance emitted %d rows, want %d", rows, keys*perKey)
	}
	for k := range keys {
		sum, n := yieldWant(2, k, perKey)
		if got := last[int64(k)]; got != [2]float64{sum, float64(n)} {
			t.Errorf("key %d: newest emitted row has (sum, count) %v, want (%v, %d)", k, got, sum, n)
		}
	}
}

// Lookups from another goroutine while rounds are pushed and advanced
// (run with -race): each sees its key after some whole round, the round
// of the watermark it reports or the one being advanced to, never part
// of a round.
func TestLookupConcurrentWithAdvance(t *testing.T) {
	const keys, perKey, rounds = 60, 3, 40
	op := yieldOp(t)
	ctx := context.Background()
	var seq int64
	advance := func(r int) {
		rec := yieldRound(r, keys, perKey, &seq)
		defer rec.Release()
		if _, _, err := op.Push(rec); err != nil {
			t.Fatal(err)
		}
		if err := op.AdvanceFunc(ctx, yieldWm(r), func(rec arrow.RecordBatch) error {
			rec.Release()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	advance(1)
	var stop atomic.Bool
	var lookups int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l := newYieldLookup(op)
		defer l.release()
		rng := rand.New(rand.NewPCG(1, 2))
		prevWm := yieldWm(1)
		for first := true; first || !stop.Load(); first = false {
			k := rng.IntN(keys)
			wm, sum, n, err := l.lookup(k)
			if err != nil {
				t.Errorf("lookup of key %d: %v", k, err)
				return
			}
			lookups++
			r := int(wm-9999) / 10000
			if wm != yieldWm(r) || wm < prevWm {
				t.Errorf("lookup of key %d reported watermark %d after %d", k, wm, prevWm)
				return
			}
			prevWm = wm
			s0, n0 := yieldWant(r, k, perKey)
			s1, n1 := yieldWant(r+1, k, perKey)
			if !(sum == s0 && n == n0 || sum == s1 && n == n1) {
				t.Errorf("lookup of key %d at watermark %d: sum=%v n=%d, want (%v, %d) or (%v, %d)", k, wm, sum, n, s0, n0, s1, n1)
				return
			}
		}
	}()
	for r := 2; r <= rounds; r++ {
		advance(r)
		if wm := op.Watermark(); wm != yieldWm(r) {
			t.Fatalf("Watermark() = %d after advancing to %d", wm, yieldWm(r))
		}
	}
	stop.Store(true)
	wg.Wait()
	if lookups == 0 {
		t.Fatal("no lookup ran")
	}
}
