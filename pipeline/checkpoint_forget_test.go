package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testhook"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
)

// forgetQuery has RANGE frames only, on one key set, so that its window
// operator may forget quiet keys.
const forgetQuery = `SELECT id, user_id, ts,
  sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s2,
  topn_frequency(merchant, 2) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS top2,
  max(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS m1
FROM events`

// sessionEvents are events whose keys come and go, as sessions do: user
// u's events of the n-th span of 20 s of event time have user_id
// u*100 000 + n for odd u, a key no other span has, quiet for good once
// its span and frames have passed; for even u, u*100 000 + n mod 5, a key
// that comes back after 80 s of quiet (forgotten in between, most of the
// time).
func sessionEvents(t *testing.T, seed uint64) *testutil.Table {
	t.Helper()
	// Not scaled down under the race detector: with fewer rows, a run
	// whose checkpoints happened to fall badly forgot no key.
	ecfg := testutil.DefaultEvents(3000)
	tab := testutil.Events(testutil.Rand(seed), ecfg)
	user, ts := tab.Col("user_id"), tab.Col("ts")
	for _, row := range tab.Rows {
		if u, ok := row[user].(int64); ok {
			n := (row[ts].(int64) - ecfg.Start) / 20_000
			if u%2 == 0 {
				n %= 5
			}
			row[user] = u*100_000 + n
		}
	}
	return tab
}

// TestCheckpointForgetKeysExactlyOnce: with the window operators
// forgetting quiet keys a few at a time (keys whose stored states a
// checkpoint wrote are deleted from the store, and later checkpoints and
// restores no longer see them), a run over keys that come and go,
// cancelled again and again and resumed each time from its latest
// checkpoint, writes exactly what an uninterrupted run without state
// writes, and keys were forgotten. In streaming and batch mode, with one
// and two tasks, with and without a memory budget (keys evicted between
// checkpoints).
func TestCheckpointForgetKeysExactlyOnce(t *testing.T) {
	// Batch runs release rows early (at most 64 waiting: the keys get too
	// few rows each for the wait for a few rows a key to end sooner).
	defer pipeline.SetBatchReleaseRows(0)()
	defer pipeline.SetReleaseMaxRows(64, 64)()
	defer testhook.SetKeyForgetMin(4)()
	type combo struct {
		mode   volga.Mode
		par    int
		budget int64
	}
	var combos []combo
	for _, mode := range []volga.Mode{volga.Streaming, volga.Batch} {
		for _, par := range []int{1, 2} {
			combos = append(combos, combo{mode, par, 0})
		}
	}
	combos = append(combos, combo{volga.Streaming, 2, 16 << 10}, combo{volga.Batch, 1, 16 << 10})
	for _, cb := range combos {
		t.Run(fmt.Sprintf("%s/par%d/budget%d", cb.mode, cb.par, cb.budget), func(t *testing.T) {
			seed := testutil.Seeds(1)[0] + uint64(cb.par)
			rng := testutil.Rand(seed)
			tab := sessionEvents(t, seed)
			tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
			batches := tab.Batches(rng, 25)
			defer func() {
				for _, b := range batches {
					b.Release()
				}
			}()
			var regs []*prometheus.Registry
			checkResume(t, forgetQuery, tab.Schema, batches, cb.par, seed, 6, func(dir string) []volga.Option {
				reg := prometheus.NewRegistry()
				regs = append(regs, reg)
				return []volga.Option{volga.WithMemoryBudget(cb.budget), volga.WithStateDir(filepath.Join(dir, "state")), volga.WithMetrics(reg)}
			}, volga.WithMode(cb.mode), volga.WithMaxOutOfOrder(time.Second))
			forgotten := 0.0
			for _, reg := range regs {
				forgotten += metricSum(t, reg, "volga_window_forgotten_keys_total")
			}
			if forgotten == 0 {
				t.Fatal("no key was forgotten")
			}
			t.Logf("%d runs, %.0f keys forgotten", len(regs), forgotten)
		})
	}
}

// metricSum reads the sum of the samples of metric name from reg.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return n
}

// TestBatchSessionKeysLetGo: a batch run over keys that come and go
// (each key's few rows within seconds, then never again) releases its
// rows as it goes and forgets most of its keys on the way, where it used
// to wait for a few rows a key it had seen, which such keys never get,
// and so held every row and key to the end. Its output equals that of a
// run that releases everything at the end, with one and two tasks.
func TestBatchSessionKeysLetGo(t *testing.T) {
	defer testhook.SetKeyForgetMin(64)()
	defer pipeline.SetBatchReleaseRows(512)()
	// Not scaled down under the race detector: the keys held at the end
	// are those of the last releases, so the fraction forgotten grows
	// with the rows (at a third of them, seed 2 forgot 4 009 of 8 025).
	rows := 30_000
	rng := testutil.Rand(testutil.Seeds(1)[0])
	tab := &testutil.Table{Schema: testutil.EventSchema}
	ts := int64(1_700_000_000_000)
	sessions := map[int64]bool{}
	for i := range rows {
		ts += int64(rng.IntN(100))
		// About 2.5 rows a session: 10 of them at a time, each open
		// for 250 ms of event time.
		user := ts/250*10 + int64(rng.IntN(10))
		sessions[user] = true
		tab.Rows = append(tab.Rows, []any{int64(i), user, fmt.Sprintf("m%d", rng.IntN(5)), ts, int64(rng.IntN(100)), 1.5, "food"})
	}
	batches := tab.Batches(rng, 256)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("par%d", par), func(t *testing.T) {
			run := func(path string, reg *prometheus.Registry) {
				err := runBatchToFile(context.Background(), t, forgetQuery, tab.Schema, batches, par, path, 0, nil,
					volga.WithMode(volga.Batch), volga.WithMetrics(reg))
				if err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			reg := prometheus.NewRegistry()
			run(filepath.Join(dir, "out.csv"), reg)
			held, forgotten := metricSum(t, reg, "volga_window_keys"), metricSum(t, reg, "volga_window_forgotten_keys_total")
			t.Logf("%d rows, %d keys: %.0f held at the end, %.0f forgotten", rows, len(sessions), held, forgotten)
			if forgotten < float64(len(sessions))/2 {
				t.Fatalf("%.0f keys forgotten of %d, %.0f held at the end: the run held its keys", forgotten, len(sessions), held)
			}
			// The same run releasing everything at the end.
			undo := pipeline.SetBatchReleaseRows(1 << 30)
			defer undo()
			undoMax := pipeline.SetReleaseMaxRows(1<<30, 1<<30)
			defer undoMax()
			run(filepath.Join(dir, "ref.csv"), prometheus.NewRegistry())
			got, _ := os.ReadFile(filepath.Join(dir, "out.csv"))
			want, _ := os.ReadFile(filepath.Join(dir, "ref.csv"))
			if !bytes.Equal(got, want) {
				t.Fatalf("the output differs from a run releasing at the end:\n%s", lineDiff(got, want))
			}
		})
	}
}
