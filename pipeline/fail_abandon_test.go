package pipeline_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// endSink records whether the run ended it with Close or Abandon.
type endSink struct {
	sink.Sink
	closed, abandoned atomic.Int32
}

func (s *endSink) Close() error   { s.closed.Add(1); return nil }
func (s *endSink) Abandon() error { s.abandoned.Add(1); return nil }

// failingSource serves its batches, then fails.
type failingSource struct {
	source.Source
	n int
}

var errFailingSource = errors.New("source failed")

func (f *failingSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if f.n == 0 {
		return nil, errFailingSource
	}
	f.n--
	return f.Source.Read(ctx)
}

// TestFailedInputAbandonsSinks: a run whose source fails ends its sinks
// with Abandon, never Close (which publishes a file sink's output as
// whole), whichever comes first: the merger seeing the end of its input
// (the reader closes the channels as it returns) or the group cancelling
// the run. The merger could see the end first and Close.
func TestFailedInputAbandonsSinks(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	var batches []arrow.RecordBatch
	for b := range 3 {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range 8 {
			bld.Field(0).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
			bld.Field(1).(*array.Int64Builder).Append(int64(b*8+i) * 1000)
		}
		batches = append(batches, bld.NewRecordBatch())
		bld.Release()
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	plan, err := pipeline.ParseSQL(`SELECT k, ts, count(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS n FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pipeline.Compile(plan, schema, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pipeline.Mode{pipeline.Batch, pipeline.Streaming} {
		for _, par := range []int{1, 2} {
			for i := range 300 {
				out := &endSink{Sink: sink.NewCallback(func(context.Context, arrow.RecordBatch) error { return nil })}
				src := &failingSource{Source: source.NewMemory(schema, batches...), n: i % 3}
				err := c.Run(context.Background(), src, out, pipeline.RunOptions{Mode: mode, Parallelism: par})
				if !errors.Is(err, errFailingSource) {
					t.Fatalf("Run: %v, want the source's error", err)
				}
				if out.closed.Load() != 0 || out.abandoned.Load() != 1 {
					t.Fatalf("%v, parallelism %d, run %d: the failed run closed its sink %d times and abandoned it %d times, want one Abandon",
						mode, par, i, out.closed.Load(), out.abandoned.Load())
				}
			}
		}
	}
}
