package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// TestIdleTimeoutIgnoresBackpressure: a partition is idle when it has
// delivered nothing for the idle timeout, not when the engine has read
// nothing for that long because it was waiting for a slow sink. Here the
// sink takes 5 s (longer than the 1 s idle timeout) over its first write,
// while both partitions have rows waiting in the source: partition 1 is
// not idle, so the watermark does not jump to partition 0's, and
// partition 1's next rows are on time, as they are with a fast sink (they
// were late: ten rows dropped).
func TestIdleTimeoutIgnoresBackpressure(t *testing.T) {
	for _, slow := range []time.Duration{0, 5 * time.Second} {
		t.Run(fmt.Sprint("slow=", slow), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				schema := testutil.EventSchema
				src := newEventPartSource()
				defer src.releaseAll()
				// Partition 0 runs 10 s ahead of partition 1, which holds
				// the watermark; every step, partition 1 delivers a row
				// and partition 0 two. The reader waits for the sink while
				// sending one of partition 0's, and then reads partition
				// 0's next: partition 1 must not count as idle there.
				for i := int64(0); i < 12; i++ {
					src.addEvent(0, 1, 3*i, i*1000)
					src.addEvent(0, 0, 3*i+1, 10_000+i*1000)
					src.addEvent(0, 0, 3*i+2, 10_500+i*1000)
				}
				plan, err := pipeline.ParseSQL(`SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW) AS n FROM events`)
				if err != nil {
					t.Fatal(err)
				}
				c, err := pipeline.Compile(plan, schema, "")
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var ids []int64
				first := true
				out := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
					mu.Lock()
					wait := first
					first = false
					for _, r := range testutil.Rows(rec) {
						ids = append(ids, r[0].(int64))
					}
					mu.Unlock()
					if wait {
						time.Sleep(slow)
					}
					return nil
				})
				stats := &pipeline.Stats{}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- c.Run(ctx, src, out, pipeline.RunOptions{Mode: pipeline.Streaming, IdleTimeout: time.Second,
						ChannelDepth: 1, Stats: stats})
				}()
				time.Sleep(time.Minute) // fake time: every batch has been read
				synctest.Wait()
				cancel()
				<-done
				mu.Lock()
				defer mu.Unlock()
				// Partition 1 ends at 11 000, holding the watermark there:
				// its rows and partition 0's first three are out.
				want := "[0 3 6 9 12 15 18 21 24 27 1 30 2 4 33]"
				if late := stats.Snapshot().LateDropped; late != 0 || fmt.Sprint(ids) != want {
					t.Errorf("%d late rows, rows out %v, want none late and %s", late, ids, want)
				}
			})
		})
	}
}
