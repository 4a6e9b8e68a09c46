package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// TestIdlePartitionReturnsWithOldRows: a partition idle past the idle
// timeout stops holding the watermark back; when it comes back with rows
// behind the watermark the watermark does not go back (SPEC section 7):
// those rows are late, handed to the late-row sink (or applied, within
// the allowed lateness), and the partition holds the watermark again
// only from where it is.
func TestIdlePartitionReturnsWithOldRows(t *testing.T) {
	for _, allowed := range []time.Duration{0, 3 * time.Second} {
		t.Run(fmt.Sprint("allowed=", allowed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				schema := testutil.EventSchema
				src := newEventPartSource()
				defer src.releaseAll()
				src.addEvent(0, 1, 0, 1000)
				src.addEvent(0, 0, 1, 1000)
				// Partition 1 is quiet for 5 s (idle after 1 s): partition
				// 0 alone moves the watermark to 10 000.
				src.addEvent(5*time.Second, 0, 2, 10_000)
				// Partition 1 comes back behind it: 8000 is 2 s behind the
				// watermark, 2000 8 s behind; 12 000 is on time.
				src.addEvent(0, 1, 3, 8000)
				src.addEvent(0, 1, 4, 2000)
				src.addEvent(0, 1, 5, 12_000)
				// Partition 1 holds the watermark again, at 12 000 once
				// partition 0 is at 20 000.
				src.addEvent(0, 0, 6, 20_000)
				plan, err := pipeline.ParseSQL(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW) AS n FROM events`)
				if err != nil {
					t.Fatal(err)
				}
				c, err := pipeline.Compile(plan, schema, "")
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var out [][]any
				var late []int64
				outSink := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
					mu.Lock()
					defer mu.Unlock()
					out = append(out, testutil.Rows(rec)...)
					return nil
				})
				lateSink := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
					mu.Lock()
					defer mu.Unlock()
					for _, r := range testutil.Rows(rec) {
						late = append(late, r[0].(int64))
					}
					return nil
				})
				stats := &pipeline.Stats{}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- c.Run(ctx, src, outSink, pipeline.RunOptions{Mode: pipeline.Streaming, IdleTimeout: time.Second,
						AllowedLateness: allowed, Late: lateSink, Stats: stats})
				}()
				time.Sleep(time.Minute) // fake time: every batch has been read
				synctest.Wait()
				st := stats.Snapshot()
				cancel()
				<-done
				mu.Lock()
				defer mu.Unlock()
				slices.Sort(late)
				wantOut, wantLate := "[[0 2] [1 2] [2 3] [5 4]]", "[3 4]"
				if allowed > 0 {
					// 8000 is applied: emitted at once, seeing the rows up
					// to it; the row at 12 000 sees it.
					wantOut, wantLate = "[[0 2] [1 2] [2 3] [3 3] [5 5]]", "[4]"
				}
				if fmt.Sprint(out) != wantOut || fmt.Sprint(late) != wantLate || st.Watermark != 12_000 {
					t.Errorf("rows out %v, late %v, watermark %d; want %s, %s, 12000", out, late, st.Watermark, wantOut, wantLate)
				}
			})
		})
	}
}
