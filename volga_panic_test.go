package volga_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// panickySource serves recs, then panics in Read.
type panickySource struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func (s *panickySource) Schema() *arrow.Schema { return s.schema }
func (s *panickySource) Close() error          { return nil }
func (s *panickySource) Read(context.Context) (arrow.RecordBatch, error) {
	if len(s.recs) == 0 {
		panic("source boom")
	}
	rec := s.recs[0]
	s.recs = s.recs[1:]
	rec.Retain()
	return rec, nil
}

// TestPanicsEndTheRun: a panic on one of the engine's goroutines (here
// from a source's Read and a sink's Write) ends Run with an error naming
// where it happened, in batch and streaming runs and with several tasks,
// instead of taking the process down.
func TestPanicsEndTheRun(t *testing.T) {
	const q = `SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM tx`
	good := transactions()
	defer good.Release()
	for _, mode := range []volga.Mode{volga.Batch, volga.Streaming} {
		for _, par := range []int{1, 2} {
			for _, tc := range []struct {
				name string
				src  source.Source
				out  sink.Sink
				want string
			}{
				{"source", &panickySource{schema: good.Schema(), recs: []arrow.RecordBatch{good}}, sink.NewCollector(),
					"volga: panic in the reader (the source's Read): source boom"},
				{"sink", source.NewMemory(good.Schema(), good), sink.NewCallback(func(context.Context, arrow.RecordBatch) error { panic("sink boom") }),
					"volga: panic in the merger (the sink's Write): sink boom"},
			} {
				p, err := volga.SQL(q, volga.WithSource("tx", tc.src), volga.WithSink(tc.out), volga.WithMode(mode), volga.WithParallelism(par))
				if err != nil {
					t.Fatal(err)
				}
				err = p.Run(context.Background())
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s, %s, parallelism %d: Run = %v, want an error containing %q", tc.name, mode, par, err, tc.want)
				}
				if c, ok := tc.out.(*sink.Collector); ok {
					c.Release()
				}
			}
		}
	}
}
