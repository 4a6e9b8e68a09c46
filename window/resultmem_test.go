package window_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// TestResultMemStaysInside: with Config.ResultMem, the result builders
// allocate from it, and only AdvanceResults hands their arrays out: the
// batches Push (late rows applied at once) and Advance emit hold copies
// in Mem, and their values are those of an operator without ResultMem.
func TestResultMemStaysInside(t *testing.T) {
	t.Parallel()
	const bound, lateness = 1000, 2500
	keys := []string{"user_id"}
	frames := boundedFrames()
	perFrame := make([][]testutil.Agg, len(frames))
	for fi := range frames {
		perFrame[fi] = testutil.StandardAggs
	}
	for _, seed := range testutil.Seeds(2) {
		rng := testutil.Rand(seed)
		tab := lateArrival(rng, testutil.Events(rng, testutil.DefaultEvents(300)), bound)
		var cuts []int
		for lo := 0; lo < len(tab.Rows); {
			lo = min(len(tab.Rows), lo+1+rng.IntN(8))
			cuts = append(cuts, lo)
		}
		// run feeds tab in batches cut at cuts, advancing the watermark
		// bound behind the newest row, and returns the rows emitted,
		// converted only once the run is over and the operator closed.
		run := func(resMem memory.Allocator) ([][]any, []arrow.RecordBatch) {
			cfg := harnessConfig(t, keys, frames, perFrame, lateness, false)
			cfg.ResultMem = resMem
			op, err := window.New(cfg, opSchema)
			if err != nil {
				t.Fatal(err)
			}
			var outs []arrow.RecordBatch
			maxTs, wm, lo := watermark.None, watermark.None, 0
			for _, hi := range cuts {
				rec := record(tab, span(lo, hi), seqs(lo, hi))
				applied, late, err := op.Push(rec)
				rec.Release()
				if err != nil {
					t.Fatalf("seed %d: Push: %v", seed, err)
				}
				if late != nil {
					late.Release()
				}
				outs = append(outs, applied...)
				for i := lo; i < hi; i++ {
					maxTs = max(maxTs, tab.Value(i, "ts").(int64))
				}
				lo = hi
				if maxTs-bound > wm {
					wm = maxTs - bound
					o, err := op.Advance(context.Background(), wm)
					if err != nil {
						t.Fatalf("seed %d: Advance: %v", seed, err)
					}
					outs = append(outs, o...)
				}
			}
			o, err := op.Advance(context.Background(), watermark.End)
			if err != nil {
				t.Fatalf("seed %d: Advance: %v", seed, err)
			}
			outs = append(outs, o...)
			op.Close()
			return testutil.Rows(outs...), outs
		}
		want, plain := run(nil)
		releaseAll(plain)
		ra := &testutil.RecordingAllocator{}
		got, outs := run(ra)
		if ra.Len() == 0 {
			t.Fatalf("seed %d: no result was built in ResultMem", seed)
		}
		for _, rec := range outs {
			for c, col := range rec.Columns() {
				if ra.Gave(col.Data()) {
					t.Fatalf("seed %d: column %s of an output batch is in ResultMem", seed, rec.Schema().Field(c).Name)
				}
			}
		}
		releaseAll(outs)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("seed %d: output with ResultMem differs:\n got %v\nwant %v", seed, got, want)
		}
		if len(got) == 0 {
			t.Fatalf("seed %d: no output", seed)
		}
	}
}
