package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// TestLookupWaitsForEveryTask: while some window tasks of a run are not
// up yet, every lookup gets ErrNotRunning, whichever task its key belongs
// to; once all are, every key is answered.
func TestLookupWaitsForEveryTask(t *testing.T) {
	tab := testutil.Events(testutil.Rand(1), testutil.DefaultEvents(10))
	plan, err := ParseSQL(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS n FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(plan, tab.Schema, "")
	if err != nil {
		t.Fatal(err)
	}
	const tasks = 3
	live := &Live{}
	live.start(c, tasks)
	lookupAll := func() (answered, notRunning int) {
		for user := range int64(30) {
			_, err := live.Lookup(context.Background(), map[string]any{"user_id": user}, time.UnixMilli(1000), nil)
			switch {
			case err == nil:
				answered++
			case errors.Is(err, ErrNotRunning):
				notRunning++
			default:
				t.Fatalf("lookup of user %d: %v", user, err)
			}
		}
		return answered, notRunning
	}
	for task := range tasks {
		if a, n := lookupAll(); a != 0 || n != 30 {
			t.Fatalf("%d of %d tasks up: %d lookups answered, %d not running; want none answered", task, tasks, a, n)
		}
		op, err := window.New(c.stages[0].cfg, c.stages[0].in)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		live.register(0, task, op)
	}
	if a, n := lookupAll(); a != 30 || n != 0 {
		t.Fatalf("every task up: %d lookups answered, %d not running; want all answered", a, n)
	}
}
