package pipeline_test

import (
	"context"
	"fmt"
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

// TestFilteredRowsMoveTheWatermark: the watermark follows the event times
// of every row a partition delivers (SPEC section 7: the newest event time
// seen), those WHERE drops included. Partition 1 here delivers only rows
// the query filters out: were their times not seen, the partition would
// hold the watermark at none for ever, idle timeout or not (it is not
// idle: it delivers rows), and nothing would come out of a stream that
// keeps going.
func TestFilteredRowsMoveTheWatermark(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("idle=", idle), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				schema := testutil.EventSchema
				row := func(id, ts int64, cat string) []any { return []any{id, int64(1), "m", ts, int64(1), 1.0, cat} }
				mk := func(rows ...[]any) arrow.RecordBatch {
					return testutil.BuildRecord(memory.DefaultAllocator, schema, rows)
				}
				p0a := mk(row(0, 1000, "a"), row(2, 2000, "a"))
				p1a := mk(row(1, 1500, "b"), row(3, 4000, "b"))
				p0b := mk(row(4, 5000, "a"), row(6, 9000, "a"))
				p1b := mk(row(5, 8000, "b"))
				src := &partSource{schema: schema,
					steps: []partStep{{0, 0, p0a}, {0, 1, p1a}, {500 * time.Millisecond, 0, p0b}, {500 * time.Millisecond, 1, p1b}},
					parts: map[arrow.RecordBatch]int{p0a: 0, p1a: 1, p0b: 0, p1b: 1}}
				plan, err := pipeline.ParseSQL(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS n FROM events WHERE category = 'a'`)
				if err != nil {
					t.Fatal(err)
				}
				c, err := pipeline.Compile(plan, schema, "")
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var got [][]any
				out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, testutil.Rows(rec)...)
					return nil
				})
				stats := &pipeline.Stats{}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- c.Run(ctx, src, out, pipeline.RunOptions{Mode: pipeline.Streaming, IdleTimeout: idle,
						MaxOutOfOrder: time.Second, Stats: stats})
				}()
				time.Sleep(time.Minute) // fake time: every batch has been read
				synctest.Wait()
				mu.Lock()
				emitted := fmt.Sprint(got)
				mu.Unlock()
				wm := stats.Snapshot().Watermark
				cancel()
				<-done
				// Partition 0 is at 9000 - 1000, partition 1 at 8000 - 1000:
				// the watermark is 7000, and the rows at 1000, 2000 and 5000
				// are out.
				if want := "[[0 1] [2 2] [4 3]]"; emitted != want || wm != 7000 {
					t.Errorf("before the end: rows (id, n) %s at watermark %d, want %s at 7000", emitted, wm, want)
				}
				for _, r := range []arrow.RecordBatch{p0a, p1a, p0b, p1b} {
					r.Release()
				}
			})
		})
	}
}
