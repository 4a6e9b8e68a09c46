package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/statestore"
)

var probeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "probe", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// TestProbeOnlyKeysParked: keys that only ever served probe rows (a
// backfill spine's entities with no event) are parked once their probes
// are below the quiet horizon, as quiet keys are, rather than keeping a
// fresh state each to the end, and forgotten when many; probed again, or
// given events, they answer as if they had been kept. The outputs equal
// those of an operator that sweeps no key, over 300 steps of events for a
// few keys and probes for new keys, some probed again or given events
// later.
func TestProbeOnlyKeysParked(t *testing.T) {
	for _, withStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("store=%v", withStore), func(t *testing.T) { testProbeOnlyKeys(t, withStore) })
	}
}

// testProbeOnlyKeys is TestProbeOnlyKeysParked without a store, or with
// one (the swept operator checkpointed before every step, so that its
// probe-only keys leave memory clean and are forgotten with their
// stored states).
func testProbeOnlyKeys(t *testing.T, withStore bool) {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	newOp := func(st statestore.Store) *Operator {
		op, err := New(Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, ProbeCol: 4, Store: st, Windows: []Spec{
			{Frame: Frame{Preceding: 100}, Aggs: []agg.Func{bindFunc(t, "sum", amount), bindFunc(t, "count", amount)}},
			{Frame: Frame{Preceding: 30}, Aggs: []agg.Func{bindFunc(t, "max", amount)}},
		}}, probeSchema)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	var store statestore.Store
	if withStore {
		store = statestore.NewMemory()
	}
	swept, kept := newOp(store), newOp(nil)
	defer swept.Close()
	defer kept.Close()
	kept.sweepable = false
	swept.forgetMin = 8 // and forgets them a few at a time
	rng := rand.New(rand.NewPCG(9, 9))
	var seq int64
	ts := int64(1_000_000)
	next := int64(1000) // the next probe-only key
	var outSwept, outKept strings.Builder
	collect := func(op *Operator, b *strings.Builder, wm int64) {
		err := op.AdvanceFunc(context.Background(), wm, func(rec arrow.RecordBatch) error {
			defer rec.Release()
			for i := range int(rec.NumRows()) {
				for c := range int(rec.NumCols()) {
					fmt.Fprintf(b, "%v ", rec.Column(c).GetOneForMarshal(i))
				}
				b.WriteByte('\n')
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for step := range 300 {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, probeSchema)
		add := func(key int64, probe bool) {
			bld.Field(0).(*array.Int64Builder).Append(ts + int64(rng.IntN(20)))
			bld.Field(1).(*array.Int64Builder).Append(seq)
			seq++
			bld.Field(2).(*array.Int64Builder).Append(key)
			if probe {
				bld.Field(3).AppendNull()
			} else {
				bld.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100)))
			}
			bld.Field(4).(*array.BooleanBuilder).Append(probe)
		}
		for range 1 + rng.IntN(3) {
			add(int64(rng.IntN(5)), false) // events of a few keys
		}
		for range 5 {
			add(next, true) // new probe-only keys
			next++
		}
		if step > 50 && rng.IntN(4) == 0 {
			add(1000+int64(rng.IntN(int(next-1000))), true) // probed again
		}
		if step > 50 && rng.IntN(8) == 0 {
			add(1000+int64(rng.IntN(int(next-1000))), false) // an event at last
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		if withStore {
			if _, err := swept.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		for _, op := range []*Operator{swept, kept} {
			out, late, err := op.Push(rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > 0 || late != nil {
				t.Fatalf("step %d: rows applied or refused late", step)
			}
		}
		rec.Release()
		ts += 10 + int64(rng.IntN(20))
		collect(swept, &outSwept, ts-40)
		collect(kept, &outKept, ts-40)
	}
	collect(swept, &outSwept, End)
	collect(kept, &outKept, End)
	if outSwept.String() != outKept.String() {
		t.Fatal("the outputs of the operator that parks probe-only keys differ from those of one that keeps them")
	}
	ss, sk := swept.Stats(), kept.Stats()
	if ss.QuietKeys == 0 || ss.ForgottenKeys == 0 || ss.ResidentKeys*4 > sk.ResidentKeys {
		t.Fatalf("%d of %d keys resident (%d let go quiet, %d forgotten), against %d kept", ss.ResidentKeys, ss.Keys, ss.QuietKeys, ss.ForgottenKeys, sk.ResidentKeys)
	}
	t.Logf("%d of %d keys resident, %d let go quiet, %d forgotten; %d kept", ss.ResidentKeys, ss.Keys, ss.QuietKeys, ss.ForgottenKeys, sk.ResidentKeys)
	if withStore {
		if _, err := swept.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		stored := 0
		if err := store.Scan(nil, func(k, v []byte) error { stored++; return nil }); err != nil {
			t.Fatal(err)
		}
		if stored > ss.Keys+16 {
			t.Fatalf("%d entries in the store for %d keys held", stored, ss.Keys)
		}
	}
}
