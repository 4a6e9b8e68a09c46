package pipeline_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// partSource is a two-partition source: it returns its batches in order,
// sleeping (in the test's fake time) before each as told, then blocks
// until the context ends, like a quiet topic.
type partSource struct {
	schema *arrow.Schema
	steps  []partStep
	parts  map[arrow.RecordBatch]int
}

// newEventPartSource is a partSource of testutil.EventSchema rows,
// filled with addEvent.
func newEventPartSource() *partSource {
	return &partSource{schema: testutil.EventSchema, parts: map[arrow.RecordBatch]int{}}
}

// addEvent appends a step: after sleep, partition part delivers a batch
// of one event row, id at time ts.
func (s *partSource) addEvent(sleep time.Duration, part int, id, ts int64) {
	rec := testutil.BuildRecord(memory.DefaultAllocator, s.schema, [][]any{{id, int64(1), "m", ts, int64(1), 1.0, "c"}})
	s.steps = append(s.steps, partStep{sleep, part, rec})
	s.parts[rec] = part
}

// releaseAll releases every batch addEvent made.
func (s *partSource) releaseAll() {
	for rec := range s.parts {
		rec.Release()
	}
}

type partStep struct {
	sleep time.Duration
	part  int
	rec   arrow.RecordBatch
}

func (s *partSource) Schema() *arrow.Schema { return s.schema }
func (s *partSource) Partitions() int       { return 2 }
func (s *partSource) PartitionOf(rec arrow.RecordBatch) int {
	if p, ok := s.parts[rec]; ok {
		return p
	}
	return -1
}
func (s *partSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if len(s.steps) == 0 {
		<-ctx.Done()
		return nil, io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	select {
	case <-time.After(st.sleep):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st.rec.Retain()
	return st.rec, nil
}
func (s *partSource) Close() error { return nil }

// TestIdlePartitionStopsHoldingTheWatermark: with a partitioned source the
// watermark is the minimum over partitions, so a quiet partition holds
// back rows of a busy one; with an idle timeout it stops doing so once it
// has been quiet that long.
func TestIdlePartitionStopsHoldingTheWatermark(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Second} {
		synctest.Test(t, func(t *testing.T) {
			schema := testutil.EventSchema
			row := func(id, ts int64) []any { return []any{id, int64(1), "m", ts, int64(1), 1.0, "c"} }
			mk := func(rows ...[]any) arrow.RecordBatch {
				return testutil.BuildRecord(memory.DefaultAllocator, schema, rows)
			}
			p1 := mk(row(0, 1000))
			p0a := mk(row(1, 2000), row(2, 3000))
			p0b := mk(row(3, 10_000), row(4, 11_000))
			src := &partSource{schema: schema,
				steps: []partStep{{0, 1, p1}, {0, 0, p0a}, {5 * time.Second, 0, p0b}},
				parts: map[arrow.RecordBatch]int{p1: 1, p0a: 0, p0b: 0}}
			plan, err := pipeline.ParseSQL(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS n FROM events`)
			if err != nil {
				t.Fatal(err)
			}
			c, err := pipeline.Compile(plan, schema, "")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var ids []int64
			out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range testutil.Rows(rec) {
					ids = append(ids, r[0].(int64))
				}
				return nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- c.Run(ctx, src, out, pipeline.RunOptions{Mode: pipeline.Streaming, IdleTimeout: idle})
			}()
			time.Sleep(time.Minute) // fake time: every batch has been read
			synctest.Wait()
			mu.Lock()
			got := len(ids)
			mu.Unlock()
			cancel()
			<-done
			// Partition 1 is at 1000 ms. Without an idle timeout it holds
			// the watermark there: only row 0 is out. With one, partition
			// 1 is idle by the time partition 0's second batch comes (5 s
			// later), so the watermark follows partition 0 to 11 000 ms.
			want := 1
			if idle > 0 {
				want = 5
			}
			if got != want {
				t.Errorf("idle timeout %v: %d rows emitted before the end (%v), want %d", idle, got, ids, want)
			}
			for _, r := range []arrow.RecordBatch{p1, p0a, p0b} {
				r.Release()
			}
		})
	}
}
