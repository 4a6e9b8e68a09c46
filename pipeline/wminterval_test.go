package pipeline_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// idleTail serves its batches, then empty batches (a quiet stream) until
// want reports true or ten seconds have passed (an error), then ends.
type idleTail struct {
	*testutil.Source
	want func() bool
	done bool
	end  time.Time
}

func (s *idleTail) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if !s.done {
		rec, err := s.Source.Read(ctx)
		if err != io.EOF {
			return rec, err
		}
		s.done, s.end = true, time.Now().Add(10*time.Second)
	}
	if s.want() {
		return nil, io.EOF
	}
	if time.Now().After(s.end) {
		return nil, errors.New("the held watermark was never sent while the stream was quiet")
	}
	time.Sleep(2 * time.Millisecond)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s.Schema())
	defer b.Release()
	return b.NewRecordBatch(), nil
}

// TestWatermarkInterval: a stream whose watermark advances at most every
// interval gives the rows, in the same order, of one that advances it after
// every batch; a watermark held back is sent once due even when the stream
// goes quiet.
func TestWatermarkInterval(t *testing.T) {
	tab := testutil.ModesData(12, 3000)
	query := testutil.ModesSQL("events", slices.Concat(testutil.ModesLookupWindows, testutil.ModesUnboundedWindows))
	bound := time.Duration(testutil.ModesMaxOutOfOrder) * time.Millisecond
	run := func(src source.Source, out sink.Sink, interval time.Duration) {
		t.Helper()
		p, err := volga.SQL(query, volga.WithSource("events", src), volga.WithSink(out), volga.WithMode(volga.Streaming),
			volga.WithMaxOutOfOrder(bound), volga.WithParallelism(2), volga.WithWatermarkInterval(interval))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := sink.NewCollector()
	run(testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 40)...), want, 0)
	names := make([]string, want.Records()[0].Schema().NumFields())
	for i, f := range want.Records()[0].Schema().Fields() {
		names[i] = f.Name
	}
	for _, interval := range []time.Duration{time.Millisecond, time.Hour} {
		got := sink.NewCollector()
		run(testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 40)...), got, interval)
		if d := testutil.Diff(names, got.Rows(), want.Rows(), nil); d != "" {
			t.Fatalf("interval %s changed the output:\n%s", interval, d)
		}
	}
	// Quiet after its rows: the watermark held back (the rows arrive
	// well within 500 ms) is sent on an empty batch once due.
	tsCol := slices.Index(names, "ts")
	maxTs := int64(0)
	for _, r := range tab.Rows {
		maxTs = max(maxTs, r[tab.Col("ts")].(int64))
	}
	final, released := 0, atomic.Int64{}
	for _, r := range want.Rows() {
		if r[tsCol].(int64) <= maxTs-testutil.ModesMaxOutOfOrder {
			final++
		}
	}
	counted := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		released.Add(rec.NumRows())
		return nil
	})
	src := &idleTail{Source: testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 40)...),
		want: func() bool { return released.Load() >= int64(final) }}
	run(src, counted, 500*time.Millisecond)
	if n := released.Load(); n != int64(len(want.Rows())) {
		t.Fatalf("%d rows out, want %d", n, len(want.Rows()))
	}
}

// TestWatermarkMaxRows: under an interval too long to pass during the run
// (an hour), a watermark is still sent once WithWatermarkMaxRows rows were
// read since the last one, so a fast source's rows come out as it goes
// rather than all at its end, with the output unchanged.
func TestWatermarkMaxRows(t *testing.T) {
	tab := testutil.ModesData(12, 3000)
	query := testutil.ModesSQL("events", testutil.ModesLookupWindows)
	bound := time.Duration(testutil.ModesMaxOutOfOrder) * time.Millisecond
	run := func(src source.Source, out sink.Sink, opts ...volga.Option) {
		t.Helper()
		p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out), volga.WithMode(volga.Streaming),
			volga.WithMaxOutOfOrder(bound), volga.WithParallelism(2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := sink.NewCollector()
	run(testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 40)...), want)
	names := make([]string, want.Records()[0].Schema().NumFields())
	for i, f := range want.Records()[0].Schema().Fields() {
		names[i] = f.Name
	}
	// The source goes quiet after its rows until half of them are out:
	// with the interval alone that takes an hour (idleTail fails after
	// ten seconds).
	var released atomic.Int64
	got := sink.NewCollector()
	counted := sink.NewCallback(func(ctx context.Context, rec arrow.RecordBatch) error {
		released.Add(rec.NumRows())
		return got.Write(ctx, rec)
	})
	src := &idleTail{Source: testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 40)...),
		want: func() bool { return released.Load() >= int64(len(tab.Rows)/2) }}
	run(src, counted, volga.WithWatermarkInterval(time.Hour), volga.WithWatermarkMaxRows(200))
	if d := testutil.Diff(names, got.Rows(), want.Rows(), nil); d != "" {
		t.Fatalf("WithWatermarkMaxRows changed the output:\n%s", d)
	}
}
