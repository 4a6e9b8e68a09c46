package volgatest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/volgatest"
)

// TestResultArrival: Result.Arrival is the order the events really
// arrived in. With Streaming(0) an event is late exactly when an event
// of a later time arrived before it, so the late count follows from the
// order; and Shuffled keeps every event within its bound of the newest
// before it, while reordering some.
func TestResultArrival(t *testing.T) {
	var b strings.Builder
	b.WriteString("user_id,ts,amount\n")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var ts []time.Time
	for i := range 60 {
		at := start.Add(time.Duration(i*7%60) * time.Minute)
		ts = append(ts, at)
		fmt.Fprintf(&b, "u%d,%s,%d\n", i%3, at.Format(time.RFC3339), i)
	}
	events := volgatest.CSV(b.String())
	if got := volgatest.Run(t, spendQuery, events); !slices.Equal(got.Arrival, identity(60)) {
		t.Errorf("batch run without an order: Arrival %v", got.Arrival)
	}
	perm := identity(60)
	slices.Reverse(perm[10:20])
	if got := volgatest.Run(t, spendQuery, events, volgatest.Arrival(perm)); !slices.Equal(got.Arrival, perm) {
		t.Errorf("Arrival(%v): Result.Arrival %v", perm, got.Arrival)
	}
	for seed := range uint64(4) {
		got := volgatest.Run(t, spendQuery, events,
			volgatest.Streaming(0), volgatest.Shuffled("ts", 10*time.Minute, seed))
		if len(got.Arrival) != 60 {
			t.Fatalf("seed %d: Arrival %v", seed, got.Arrival)
		}
		var late int64
		var newest time.Time
		reordered := false
		for k, i := range got.Arrival {
			if k > 0 && ts[i].Before(newest) {
				late++
				if newest.Sub(ts[i]) >= 10*time.Minute {
					t.Errorf("seed %d: event %d arrived %s behind the newest", seed, i, newest.Sub(ts[i]))
				}
			}
			if k > 0 && i < got.Arrival[k-1] {
				reordered = true
			}
			if ts[i].After(newest) {
				newest = ts[i]
			}
		}
		if got.Stats.LateDropped != late || late == 0 || !reordered {
			t.Errorf("seed %d: %d late rows, %d events behind a newer one in Arrival %v", seed, got.Stats.LateDropped, late, got.Arrival)
		}
	}
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
