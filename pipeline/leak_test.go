package pipeline_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// userWindows returns the cross-mode windows keyed by user alone (every
// aggregate), and one such window of numeric aggregates only (results
// written in place by a batch run over several tasks).
func userWindows() (windows, numeric []testutil.ModesWindow) {
	for _, w := range testutil.ModesLookupWindows {
		if slices.Equal(w.Keys, []string{"user_id"}) {
			windows = append(windows, w)
		}
	}
	numeric = []testutil.ModesWindow{{Name: "n1", Keys: []string{"user_id"}, Frame: windows[0].Frame, Aggs: []testutil.Agg{
		{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "max", Arg: "price"}, {Func: "avg", Arg: "price"},
	}}}
	return windows, numeric
}

// TestRunReleasesEveryBuffer: a run whose input batches and every
// buffer it makes come from a checked allocator leaves nothing allocated
// once the source is closed and the output released: in batch mode over
// one task and over several (numeric results written in place into each
// batch's Dest, and list and map results gathered by the merger), and in
// streaming mode.
func TestRunReleasesEveryBuffer(t *testing.T) {
	windows, numeric := userWindows()
	tab := testutil.MLEvents(testutil.Rand(4), testutil.ModesEventConfig(1500))
	for _, c := range []struct {
		name    string
		windows []testutil.ModesWindow
		mode    volga.Mode
		par     int
		inPlace bool
	}{
		{"batch/1 task", windows, volga.Batch, 1, false},
		{"batch/3 tasks/numeric", numeric, volga.Batch, 3, true},
		{"batch/2 tasks/every aggregate", windows, volga.Batch, 2, false},
		{"stream/2 tasks", windows, volga.Streaming, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var batches []arrow.RecordBatch
			for lo := 0; lo < len(tab.Rows); lo += 97 {
				batches = append(batches, tab.Record(mem, lo, min(len(tab.Rows), lo+97)))
			}
			src := source.NewMemory(tab.Schema, batches...)
			for _, b := range batches {
				b.Release() // the source holds them
			}
			out := sink.NewCollector()
			p, err := volga.SQL(testutil.ModesSQL("events", c.windows), volga.WithSource("events", src), volga.WithSink(out),
				volga.WithMode(c.mode), volga.WithParallelism(c.par), volga.WithAllocator(mem))
			if err != nil {
				t.Fatal(err)
			}
			dests := pipeline.DestRuns()
			if err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if wrote := pipeline.DestRuns() > dests; wrote != c.inPlace {
				t.Fatalf("results written in place: %v, want %v", wrote, c.inPlace)
			}
			// WHERE drops some rows, streaming the late ones.
			if got := out.NumRows(); got < int64(len(tab.Rows))*9/10 {
				t.Fatalf("%d rows out of %d", got, len(tab.Rows))
			}
			src.Close()
			out.Release()
			if n := mem.CurrentAlloc(); n != 0 {
				t.Fatalf("%d bytes still allocated after the run", n)
			}
		})
	}
}
