package pipeline_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestResultPoolStaysInside: a run without an allocator of its own
// builds its window results in the result pool, and no output batch holds
// a buffer of it (the pool reuses buffers once freed, which would change
// the values of a batch used past its release); the output is that of a
// run with Go's allocator throughout. Batch over one task and several
// (results gathered by the merger, or written in place), and streaming
// with late rows applied at once. Not parallel: it swaps the pool.
func TestResultPoolStaysInside(t *testing.T) {
	windows, numeric := userWindows()
	// Arriving up to ModesMaxOutOfOrder out of order, with a watermark
	// a minute behind: streaming applies the rows later than that.
	tab := testutil.ModesData(5, 3000)
	for _, c := range []struct {
		name    string
		windows []testutil.ModesWindow
		mode    volga.Mode
		par     int
		late    bool
	}{
		{"batch/1 task", windows, volga.Batch, 1, false},
		{"batch/2 tasks/numeric", numeric, volga.Batch, 2, false},
		{"batch/2 tasks/every aggregate", windows, volga.Batch, 2, false},
		{"stream/late rows", windows, volga.Streaming, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(pooled bool) [][]any {
				var batches []arrow.RecordBatch
				for lo := 0; lo < len(tab.Rows); lo += 97 {
					batches = append(batches, tab.Record(nil, lo, min(len(tab.Rows), lo+97)))
				}
				src := source.NewMemory(tab.Schema, batches...)
				defer src.Close()
				for _, b := range batches {
					b.Release()
				}
				out := sink.NewCollector()
				defer out.Release()
				opts := []volga.Option{volga.WithSource("events", src), volga.WithSink(out), volga.WithMode(c.mode), volga.WithParallelism(c.par)}
				if c.late {
					opts = append(opts, volga.WithMaxOutOfOrder(time.Minute), volga.WithAllowedLateness(time.Hour))
				}
				if !pooled {
					opts = append(opts, volga.WithAllocator(memory.NewGoAllocator()))
				}
				p, err := volga.SQL(testutil.ModesSQL("events", c.windows), opts...)
				if err != nil {
					t.Fatal(err)
				}
				rec := &testutil.RecordingAllocator{}
				defer pipeline.SetResultPool(rec)()
				if err := p.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				for _, b := range out.Records() {
					for k, col := range b.Columns() {
						if rec.Gave(col.Data()) {
							t.Fatalf("output column %s holds a buffer of the result pool", b.Schema().Field(k).Name)
						}
					}
				}
				if n := rec.Len(); (n > 0) != pooled {
					t.Fatalf("pooled %v: %d buffers from the result pool", pooled, n)
				}
				if st := p.Stats(); c.late && st.LateApplied == 0 {
					t.Fatalf("no late row applied: %+v", st)
				}
				rows := out.Rows()
				slices.SortFunc(rows, func(a, b []any) int {
					return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
				})
				return rows
			}
			want := run(false)
			got := run(true)
			if len(got) < len(tab.Rows)*9/10 {
				t.Fatalf("%d rows out of %d", len(got), len(tab.Rows))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("the output with pooled results differs from that with Go's allocator")
			}
		})
	}
}
