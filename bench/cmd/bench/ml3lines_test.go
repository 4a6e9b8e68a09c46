package main

import (
	"slices"
	"testing"
)

// TestML3Lines: each ml-3 run is paired with the features-4 run after it
// (before it when none follows), the clustered runs' ratios get their
// median, and volga-batch is compared with the go-loop.
func TestML3Lines(t *testing.T) {
	run := func(engine string, seconds, rss float64) measured {
		return testRun(engine, seconds, 0, rss)
	}
	done := []measured{
		run("volga-batch", 10, 2000), run("volga-batch-features-4", 2, 400),
		run("volga-batch-clustered", 4, 800), run("volga-batch-features-4", 2.2, 400),
		run("volga-batch-clustered", 5, 800), run("volga-batch-features-4", 2, 400),
		run("volga-batch-clustered", 4, 800), run("volga-batch-features-4", 2.4, 400),
		run("go-loop", 20, 1000),
	}
	want := []string{
		"workload=ml-3 ratio=volga-batch(ml-3)/volga-batch(features-4) events_per_s=0.20 time=5.00 rss=5.00",
		"workload=ml-3 ratio=volga-batch-clustered(ml-3)/volga-batch(features-4) events_per_s=0.55 time=1.82 rss=2.00",
		"workload=ml-3 ratio=volga-batch-clustered(ml-3)/volga-batch(features-4) events_per_s=0.40 time=2.50 rss=2.00",
		"workload=ml-3 ratio=volga-batch-clustered(ml-3)/volga-batch(features-4) events_per_s=0.60 time=1.67 rss=2.00",
		"workload=ml-3 ratio=volga-batch-clustered(ml-3)/volga-batch(features-4) pairs=3 median_events_per_s=0.55",
		"workload=ml-3 ratio=volga-batch/go-loop time=0.50 rss=2.00",
		`workload=ml-3 duckdb=none reason="no topn_frequency, sum_cate or top1_ratio in DuckDB; the features-4 run is the reference"`,
	}
	if got := ml3Lines("ml-3", done); !slices.Equal(got, want) {
		t.Errorf("ml3Lines:\n got %q\nwant %q", got, want)
	}
	// -engines volga-batch-features-4,volga-batch-clustered: the
	// features-4 run came first.
	done = []measured{run("volga-batch-features-4", 2, 400), run("volga-batch-clustered", 4, 600)}
	want = []string{
		"workload=ml-3 ratio=volga-batch-clustered(ml-3)/volga-batch(features-4) events_per_s=0.50 time=2.00 rss=1.50",
		want[len(want)-1],
	}
	if got := ml3Lines("ml-3", done); !slices.Equal(got, want) {
		t.Errorf("ml3Lines, features-4 first:\n got %q\nwant %q", got, want)
	}
}
