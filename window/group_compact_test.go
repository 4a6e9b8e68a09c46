package window_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// TestGroupForgetsKeys: a tumble/hop operator that forgets the keys with
// no open window and no row waiting, as often as it can (at least two at
// a time), emits exactly what one that keeps every key emits, late rows,
// allowed lateness and restores from checkpoints at random points
// included; and it does forget keys. (Not parallel: the threshold is a
// package variable.)
func TestGroupForgetsKeys(t *testing.T) {
	const bound = 2000
	for _, seed := range testutil.Seeds(2) {
		for wi, w := range groupCkptWindows {
			t.Run(fmt.Sprintf("seed=%d/w=%d", seed, wi), func(t *testing.T) {
				rng := testutil.Rand(seed)
				events := churn(testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(400))))
				tab := lateArrival(rng, events, bound)
				steps := ckptSteps(rng, tab, bound, 0.2)
				lateness := int64(wi) * 1500
				var ops []*window.GroupOperator
				mk := func() *window.GroupOperator {
					op := newGroupCkpt(t, w, groupTestAggs, lateness)
					ops = append(ops, op)
					return op
				}
				want, _ := runGroup(t, mk, tab, steps, false)
				kept, forgotten := window.GroupKeys(ops[0])
				if forgotten != 0 {
					t.Fatalf("the default threshold forgot %d keys of %d", forgotten, kept)
				}
				undo := window.SetGroupCompactMin(2)
				defer undo()
				for _, restore := range []bool{false, true} {
					ops = ops[:0]
					got, _ := runGroup(t, mk, tab, steps, restore)
					diffOutputs(t, fmt.Sprintf("forgetting keys (restores %v) vs keeping them", restore), got, want)
					var held int
					var dropped int64
					for _, op := range ops {
						n, f := window.GroupKeys(op)
						held, dropped = n, dropped+f
					}
					if dropped == 0 {
						t.Errorf("restores %v: no key forgotten (%d held at the end, %d kept without forgetting)", restore, held, kept)
					}
					if held >= kept {
						t.Errorf("restores %v: %d keys held at the end, as many as without forgetting (%d)", restore, held, kept)
					}
				}
			})
		}
	}
}

// churn makes the users and merchants of events come and go: each value
// becomes a new one a dozen times over the events' time span (NULLs stay
// NULL).
func churn(events *testutil.Table) *testutil.Table {
	ts := events.Col("ts")
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range events.Rows {
		lo, hi = min(lo, r[ts].(int64)), max(hi, r[ts].(int64))
	}
	span := max(hi-lo, 24)
	for _, c := range []struct {
		col    string
		period int64
	}{{"user_id", span / 12}, {"merchant", span / 9}} {
		j := events.Col(c.col)
		for _, r := range events.Rows {
			switch v := r[j].(type) {
			case string:
				r[j] = fmt.Sprintf("%s-%d", v, r[ts].(int64)/c.period)
			case int64:
				r[j] = v + 1000*(r[ts].(int64)/c.period)
			}
		}
	}
	return events
}
