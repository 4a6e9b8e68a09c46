package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestLatenessAtTheBounds: the watermark is the newest event time minus
// the out-of-orderness bound, and a row at or behind it is late (SPEC
// section 7): a row exactly the bound behind the newest is late, one a
// millisecond less behind is on time. With allowed lateness d, a late row
// is applied only when its time is above the watermark minus d.
func TestLatenessAtTheBounds(t *testing.T) {
	// One row per batch: the watermark moves after each.
	events := [][2]int64{
		{0, 10_000},
		{1, 9_000}, // the bound (1 s) behind: at the watermark, late
		{2, 9_001}, // a millisecond less: on time
		{3, 8_501}, // late, 499 ms behind the watermark
		{4, 8_500}, // late, 500 ms behind it
		{5, 12_000},
	}
	const query = `SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS n FROM events`
	for _, c := range []struct {
		allowed   time.Duration
		out, late string
	}{
		// Without allowed lateness every late row is dropped.
		{0, "[[2 1] [0 2] [5 3]]", "[1 3 4]"},
		// With 500 ms, rows above 9000 - 500 are applied, emitted at once
		// with their frame as of arrival (each sees itself only: no row
		// before either has come); the rows released later see them.
		{500 * time.Millisecond, "[[1 1] [3 1] [2 3] [0 4] [5 5]]", "[4]"},
	} {
		t.Run(fmt.Sprint(c.allowed), func(t *testing.T) {
			checkLateness(t, events, query, time.Second, c.allowed, c.out, c.late)
		})
	}
}

// TestLatenessSubMillisecondBounds: bounds finer than a millisecond are
// exact on event times of whole milliseconds: with a bound of 1.5 ms the
// watermark is the newest time less 1.5 ms, so a row 1 ms behind is on
// time and one 2 ms behind is late; with 1.5 ms of allowed lateness a late
// row 1 ms behind the watermark is applied and one 2 ms behind is not.
func TestLatenessSubMillisecondBounds(t *testing.T) {
	events := [][2]int64{
		{0, 100},
		{1, 99}, // 1 ms behind 100: on time (the watermark is 98.5)
		{2, 98}, // 2 ms behind: late, 0.5 ms behind the watermark
		{3, 97}, // late, 1.5 ms behind it
		{4, 200},
	}
	const query = `SELECT id, count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS n FROM events`
	for _, c := range []struct {
		allowed   time.Duration
		out, late string
	}{
		{0, "[[1 1] [0 2] [4 3]]", "[2 3]"},
		// The watermark is 98.5 when rows 2 and 3 come: 98 is within
		// 1.5 ms of it, 97 is not.
		{1500 * time.Microsecond, "[[2 1] [1 2] [0 3] [4 4]]", "[3]"},
	} {
		t.Run(fmt.Sprint(c.allowed), func(t *testing.T) {
			checkLateness(t, events, query, 1500*time.Microsecond, c.allowed, c.out, c.late)
		})
	}
}

// checkLateness streams events (id, time), one a batch, through query
// with the out-of-orderness bound and allowed lateness given, and checks
// the output (id, n) and the ids of the late rows.
func checkLateness(t *testing.T, events [][2]int64, query string, bound, allowed time.Duration, wantOut, wantLate string) {
	t.Helper()
	var batches []arrow.RecordBatch
	for _, e := range events {
		batches = append(batches, testutil.BuildRecord(memory.DefaultAllocator, testutil.EventSchema,
			[][]any{{e[0], int64(1), "m", e[1], int64(1), 1.0, "c"}}))
	}
	defer arrowutil.ReleaseAll(batches)
	src := source.NewMemory(testutil.EventSchema, batches...)
	defer src.Close()
	out, late := sink.NewCollector(), sink.NewCollector()
	defer out.Release()
	defer late.Release()
	p, err := volga.SQL(query, volga.WithSource("events", src), volga.WithSink(out), volga.WithLateSink(late),
		volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(bound), volga.WithAllowedLateness(allowed))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out.Rows()); got != wantOut {
		t.Errorf("output (id, n) %s, want %s", got, wantOut)
	}
	var lateIDs []int64
	for _, r := range late.Rows() {
		lateIDs = append(lateIDs, r[0].(int64))
	}
	slices.Sort(lateIDs)
	if got := fmt.Sprint(lateIDs); got != wantLate {
		t.Errorf("late rows %s, want %s", got, wantLate)
	}
}
