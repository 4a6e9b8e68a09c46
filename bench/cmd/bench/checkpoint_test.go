package main

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/workload"
)

// TestCheckpointWorkload runs the checkpoint workload at a tiny size: its
// result lines parse and carry every figure, the first checkpoint is full
// and the second incremental, and the output of the three checkpointed
// runs (each resuming from the previous one's checkpoint) equals the
// output of one uninterrupted run, row for row.
func TestCheckpointWorkload(t *testing.T) {
	saved := ckptFlags
	t.Cleanup(func() { ckptFlags = saved })
	ckptFlags.Keys = 500
	ckptFlags.Interval = 20 * time.Millisecond
	ckptFlags.IncrEvents = 0
	ckptFlags.Dir = ""

	c := config{Workload: "checkpoint", Events: 20_000, Seed: 3, DataDir: t.TempDir(),
		Parallelism: 2, MaxOutOfOrder: 5 * time.Second, BatchRows: 1000}
	var err error
	if c.Input, err = prepareCheckpoint(c); err != nil {
		t.Fatal(err)
	}
	in, err := loadCkptInput(c)
	if err != nil {
		t.Fatal(err)
	}
	defer in.release()
	ctx := context.Background()

	collect := func(out *rows.Table) func(arrow.RecordBatch) {
		return func(rec arrow.RecordBatch) {
			tb := rows.FromRecords(rec.Schema(), []arrow.RecordBatch{rec})
			out.Names = tb.Names
			out.Rows = append(out.Rows, tb.Rows...)
		}
	}
	var got, want rows.Table
	var sumGot, sumWant workload.Features4Checksum
	rep, err := runCheckpointSequence(ctx, c, in, t.TempDir(), &sumGot, collect(&got))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runPhase(ctx, c, in.source(-1), ckptOptions{}, &sumWant, collect(&want)); err != nil {
		t.Fatal(err)
	}

	lines := rep.lines(c)
	if len(lines) != 2 {
		t.Fatalf("%d result lines, want 2: %q", len(lines), lines)
	}
	for i, keys := range [][]string{
		{"keys", "full_seconds", "full_mb", "incr_seconds", "incr_mb", "max_stall_ms", "restore_seconds"},
		{"keys", "keys_in_state", "load_events", "load_keys", "full_stall_ms", "incr_events", "incr_keys", "incr_stall_ms",
			"max_incr_stall_ms", "restore_store_seconds", "restore2_seconds", "tail_events", "checkpoints", "ckpt_events_per_s", "ckpt_max_output_gap_ms"},
	} {
		f := parseLine(lines[i])
		if f["workload"] != "checkpoint" {
			t.Errorf("line %q: workload=%q", lines[i], f["workload"])
		}
		for _, k := range keys {
			v, err := strconv.ParseFloat(f[k], 64)
			if err != nil || math.IsNaN(v) || v < 0 {
				t.Errorf("line %q: %s=%q is not a non-negative number", lines[i], k, f[k])
			}
		}
	}
	t.Log(lines[0])
	t.Log(lines[1])
	if k := rep.runs[0].infos[0].Kind; k != "full" {
		t.Errorf("first checkpoint is %s, want full", k)
	}
	if k := rep.runs[1].infos[0].Kind; k != "incremental" {
		t.Errorf("second checkpoint is %s, want incremental", k)
	}
	if f := parseLine(lines[1]); f["keys_in_state"] != f["load_keys"] {
		t.Errorf("keys in state after the load: %s, distinct users loaded: %s", f["keys_in_state"], f["load_keys"])
	}

	if !sumGot.Agrees(sumWant) {
		t.Errorf("checksums differ:\n  checkpointed  %s\n  uninterrupted %s", sumGot, sumWant)
	}
	if int(sumWant.Rows) != c.Events {
		t.Errorf("uninterrupted run emitted %d rows, want %d", sumWant.Rows, c.Events)
	}
	if d := rows.Diff(want.SortedBy("id"), got.SortedBy("id"), rows.DefaultTolerance, []string{"id", "user_id", "ts"}, 5); d != "" {
		t.Errorf("checkpointed output differs from the uninterrupted one:\n%s", d)
	}
}
