package pipeline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// slowWriter is an operator whose checkpoint takes encode to encode, on a
// goroutine of its own, and end to end (WriteCheckpoint).
type slowWriter struct {
	encode, end time.Duration
	encoded     chan struct{}
}

func (*slowWriter) Push(arrow.RecordBatch) ([]arrow.RecordBatch, arrow.RecordBatch, error) {
	return nil, nil, nil
}
func (*slowWriter) Advance(context.Context, int64) ([]arrow.RecordBatch, error) { return nil, nil }
func (*slowWriter) Late() (int64, int64)                                        { return 0, 0 }
func (*slowWriter) Checkpoint() ([]byte, error)                                 { return nil, nil }
func (*slowWriter) Restore([]byte) error                                        { return nil }
func (*slowWriter) Close()                                                      {}

func (w *slowWriter) BeginCheckpoint() ([]byte, error) {
	w.encoded = make(chan struct{})
	go func() {
		time.Sleep(w.encode)
		close(w.encoded)
	}()
	return []byte("meta"), nil
}

func (w *slowWriter) CheckpointEncoded() <-chan struct{} { return w.encoded }

func (w *slowWriter) WriteCheckpoint(time.Duration) (func() error, error) {
	<-w.encoded
	time.Sleep(w.end)
	return func() error { return nil }, nil
}

// TestCheckpointEncodingIsNoStall: while the operator encodes a
// checkpoint's key states the task takes its input as it comes; the
// checkpoint's stall is the barrier step and the end of the writing
// (WriteCheckpoint once the states are encoded), and at the final
// checkpoint of an input the barrier step only, as no input is left to
// hold up.
//
// It runs in a synctest bubble: the encoding and the end take exactly
// their fake durations and the rest no time, however loaded the machine.
func TestCheckpointEncodingIsNoStall(t *testing.T) {
	synctest.Test(t, testCheckpointEncodingIsNoStall)
}

func testCheckpointEncodingIsNoStall(t *testing.T) {
	const encode, end, gap = 50 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond
	for _, final := range []bool{false, true} {
		op := &slowWriter{encode: encode, end: end}
		var frozen uint64
		tc := &taskCheckpoint{r: &runner{ck: &checkpointRun{}}, op: op, frozen: &frozen}
		ctx := context.Background()
		if err := tc.begin(ctx, 1, final); err != nil {
			t.Fatal(err)
		}
		in := make(chan msg, 1)
		in <- msg{wm: 1}
		start := time.Now()
		if m, ok, err := tc.next(ctx, in); err != nil || !ok || m.wm != 1 {
			t.Fatalf("final=%v: next = %v, %v, %v; want the message waiting", final, m.wm, ok, err)
		}
		if d := time.Since(start); d != 0 || !tc.writing {
			t.Fatalf("final=%v: a message waiting was taken after %v (writing %v), want at once while the states are encoded", final, d, tc.writing)
		}
		// The next message comes after the encoding: meanwhile the task
		// ends the writing and delivers its part once flushed.
		go func() {
			time.Sleep(gap)
			in <- msg{wm: 2}
		}()
		if m, ok, err := tc.next(ctx, in); err != nil || !ok || m.wm != 2 {
			t.Fatalf("final=%v: next = %v, %v, %v; want the second message", final, m.wm, ok, err)
		}
		if d := time.Since(start); d != gap {
			t.Errorf("final=%v: the second message was taken after %v, want %v", final, d, gap)
		}
		if tc.writing || tc.flushed != nil {
			t.Errorf("final=%v: writing %v, flush pending %v after the encoding and the flush", final, tc.writing, tc.flushed != nil)
		}
		switch {
		case !final && tc.stall != end:
			t.Errorf("stall %v, want %v: the end of the writing counts, the encoding does not", tc.stall, end)
		case final && tc.stall != 0:
			t.Errorf("final checkpoint: stall %v, want 0 (the barrier step only)", tc.stall)
		}
	}
}

// TestFinalBarrierFinishingIsNoStall: the final barrier of an input may
// find the previous checkpoint still being encoded; the task then finishes
// it at once (encoding, ending the writing), which holds back no input
// and is no stall of either checkpoint.
func TestFinalBarrierFinishingIsNoStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const encode, end = 50 * time.Millisecond, 20 * time.Millisecond
		op := &slowWriter{encode: encode, end: end}
		var frozen uint64
		cr := &checkpointRun{inflight: map[uint64]*inflight{
			1: {parts: map[string][]byte{}},
			2: {parts: map[string][]byte{}},
		}}
		tc := &taskCheckpoint{r: &runner{ck: cr}, op: op, frozen: &frozen}
		ctx := context.Background()
		if err := tc.begin(ctx, 1, false); err != nil {
			t.Fatal(err)
		}
		cr.prepared.Store(1) // the previous backup is taken once its parts are in
		start := time.Now()
		if err := tc.begin(ctx, 2, true); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != encode+end {
			t.Errorf("the final barrier took %v, want %v: the previous checkpoint encoded and ended", d, encode+end)
		}
		if !cr.partsIn(1, 1) {
			t.Fatal("the previous checkpoint's part was not delivered before the final one began")
		}
		if s := cr.inflight[1].task; s != 0 {
			t.Errorf("previous checkpoint: stall %v, want 0 (finished at the final barrier)", s)
		}
		if err := tc.finish(ctx); err != nil {
			t.Fatal(err)
		}
		if s := cr.inflight[2].task; s != 0 {
			t.Errorf("final checkpoint: stall %v, want 0", s)
		}
	})
}
