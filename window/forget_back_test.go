package window_test

import (
	"errors"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// TestForgottenKeyBackLookups: a key forgotten (its rows let go) that
// comes back is a new key, but lookups whose frames reach the rows it had
// are still refused (ErrTooOld), as for a key not held, rather than
// answered with an empty frame; lookups that do not reach them see its
// new rows. Without a store (parked keys) and with one (keys dropped from
// memory once checkpointed), the new row pending or released.
func TestForgottenKeyBackLookups(t *testing.T) {
	for _, withStore := range []bool{false, true} {
		rng := testutil.Rand(1)
		tab := testutil.MLEvents(rng, testutil.DefaultEvents(11))
		ts, user, amount := tab.Col("ts"), tab.Col("user_id"), tab.Col("amount")
		// Users 1-10 have a row each at 0-9 s (amount 10); user 5 comes
		// back at 200 s (amount 7).
		for i := range 10 {
			tab.Rows[i][ts], tab.Rows[i][user], tab.Rows[i][amount] = int64(i)*1000, int64(i+1), int64(10)
		}
		tab.Rows[10][ts], tab.Rows[10][user], tab.Rows[10][amount] = int64(200_000), int64(5), int64(7)
		frames := []testutil.Frame{{Preceding: 2000}}
		aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}}
		cfg := ckptConfig(t, []string{"user_id"}, frames, aggs, 0, false)
		if withStore {
			cfg.Store = statestore.NewMemory()
		}
		op, err := window.New(cfg, mlSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		window.SetKeyForgetMin(op, 2)
		steps := []step{{lo: 0, hi: 10, wm: 100_000}, {wm: 150_000}, {wm: 160_000}}
		for _, s := range steps {
			stepOut(t, op, tab, s)
			if withStore {
				if _, err := op.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if st := op.Stats(); st.ForgottenKeys != 10 || st.Keys != 0 {
			t.Fatalf("store %v: %d keys forgotten, %d held: want every key forgotten", withStore, st.ForgottenKeys, st.Keys)
		}
		types := op.KeyTypes()
		check := func(when string, u, at int64, tooOld bool, want string) {
			t.Helper()
			key, err := window.EncodeKeyValues(nil, types, []any{u})
			if err != nil {
				t.Fatal(err)
			}
			got, err := lookupText(t, op, key, at)
			switch {
			case tooOld && !errors.Is(err, window.ErrTooOld):
				t.Errorf("store %v, %s: user %d at %d: %q, %v; want ErrTooOld", withStore, when, u, at, got, err)
			case !tooOld && (err != nil || got != want):
				t.Errorf("store %v, %s: user %d at %d: %q, %v; want %q", withStore, when, u, at, got, err, want)
			}
		}
		// User 5 is back, its row pending, then released.
		stepOut(t, op, tab, step{lo: 10, hi: 11, wm: watermark.None})
		for _, when := range []string{"pending", "released"} {
			check(when, 5, 4_500, true, "")  // reaches its row at 4 s
			check(when, 6, 5_500, true, "")  // not held: reaches 9 s
			check(when, 5, 10_500, true, "") // reaches user 10's row at 9 s
			check(when, 5, 11_001, false, "[[0 <nil>]]")
			stepOut(t, op, tab, step{wm: 250_000})
		}
		check("released", 5, 200_500, false, "[[1 7]]")
	}
}
