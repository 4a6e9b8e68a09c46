package main

import (
	"slices"
	"testing"
)

func TestEngineParallelism(t *testing.T) {
	for engine, want := range map[string]int{
		"volga-batch-p1": 1, "volga-batch-p2": 2, "volga-batch-p16": 16,
		"volga-batch": 4, "volga-batch-p0": 4, "volga-batch-px": 4, "duckdb": 4,
	} {
		if got := engineParallelism(engine, 4); got != want {
			t.Errorf("engineParallelism(%q, 4) = %d, want %d", engine, got, want)
		}
	}
}

func TestScalingLines(t *testing.T) {
	run := func(engine string, seconds, cpu float64) measured {
		return testRun(engine, seconds, cpu, 0)
	}
	done := []measured{
		run("volga-batch-p1", 4, 5), run("volga-batch-p2", 2.5, 5),
		run("volga-batch-p1", 4.5, 5.4), run("volga-batch-p2", 2.5, 4.9),
		run("volga-batch-p2", 9, 9), // no parallelism-1 run before it: skipped
	}
	want := []string{
		"workload=scaling ratio=p2/p1 events_per_s=1.60 cpu_s=1.00 cores_p1=1.25 cores_p2=2.00",
		"workload=scaling ratio=p2/p1 events_per_s=1.80 cpu_s=0.91 cores_p1=1.20 cores_p2=1.96",
		"workload=scaling ratio=p2/p1 pairs=2 median_events_per_s=1.70",
	}
	if got := scalingLines("scaling", done); !slices.Equal(got, want) {
		t.Errorf("scalingLines:\n got %q\nwant %q", got, want)
	}
}

// testRun is a measured run of engine for the ratio lines' tests.
func testRun(engine string, seconds, cpu, rssMB float64) measured {
	m := measured{engine: engine, cpuSeconds: cpu, peakRSSMB: rssMB}
	m.Seconds = seconds
	return m
}
