package pipeline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// slowWriter is an operator whose checkpoint writing takes write a slice,
// for slices slices.
type slowWriter struct {
	write  time.Duration
	slices int
}

func (*slowWriter) Push(arrow.RecordBatch) ([]arrow.RecordBatch, arrow.RecordBatch, error) {
	return nil, nil, nil
}
func (*slowWriter) Advance(context.Context, int64) ([]arrow.RecordBatch, error) { return nil, nil }
func (*slowWriter) Late() (int64, int64)                                        { return 0, 0 }
func (*slowWriter) Checkpoint() ([]byte, error)                                 { return nil, nil }
func (*slowWriter) Restore([]byte) error                                        { return nil }
func (*slowWriter) Close()                                                      {}
func (*slowWriter) BeginCheckpoint() ([]byte, error)                            { return []byte("meta"), nil }

func (w *slowWriter) WriteCheckpoint(time.Duration) (func() error, error) {
	time.Sleep(w.write)
	w.slices--
	if w.slices > 0 {
		return nil, nil
	}
	return func() error { return nil }, nil
}

// TestFinalCheckpointWritingIsNoStall: the slices of writing a checkpoint
// hold the task's input up and count in its stall, except at the final
// checkpoint of an input, when no input is left to hold up.
//
// It runs in a synctest bubble: the slices take exactly their fake 20 ms
// and the rest no time, however loaded the machine.
func TestFinalCheckpointWritingIsNoStall(t *testing.T) {
	synctest.Test(t, testFinalCheckpointWritingIsNoStall)
}

func testFinalCheckpointWritingIsNoStall(t *testing.T) {
	const write = 20 * time.Millisecond
	for _, final := range []bool{false, true} {
		op := &slowWriter{write: write, slices: 3}
		var frozen uint64
		tc := &taskCheckpoint{r: &runner{ck: &checkpointRun{}}, op: op, frozen: &frozen}
		ctx := context.Background()
		if err := tc.begin(ctx, 1, final); err != nil {
			t.Fatal(err)
		}
		for tc.writing {
			if err := tc.write(checkpointSlice); err != nil {
				t.Fatal(err)
			}
		}
		if tc.flushed == nil {
			t.Fatalf("final=%v: no flush after the last slice", final)
		}
		if err := <-tc.flushed; err != nil {
			t.Fatal(err)
		}
		switch {
		case !final && tc.stall < write:
			t.Errorf("stall %v with slices of %v: the slices must count", tc.stall, write)
		case final && tc.stall >= write:
			t.Errorf("final checkpoint: stall %v, want the barrier step only (slices of %v are no stall)", tc.stall, write)
		}
	}
}
