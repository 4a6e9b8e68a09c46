package volga_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestEventTimesOutOfRange: rows whose event time is beyond
// pipeline.MinEventTime/MaxEventTime (±2^62 ms; math.MinInt64 is also the
// watermark before any row) go to the dead letters, naming the time, and
// the other rows get the values they would have without them, in batch
// and streaming runs, OVER and GROUP BY windows, for int64 milliseconds
// and timestamp[s] (whose values overflow int64 once in milliseconds).
// Such rows failed a batch run ("internal error"), vanished, turned the
// frames of other rows empty, or landed in windows near the other end of
// int64.
func TestEventTimesOutOfRange(t *testing.T) {
	const q1 = "SELECT k, sum(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM t"
	const q2 = "SELECT k, window_start, count(*) AS n, sum(x) AS s FROM t GROUP BY k, tumble(ts, INTERVAL '1' HOUR)"
	for _, unit := range []string{"int64 ms", "timestamp[s]"} {
		var tsType arrow.DataType = arrow.PrimitiveTypes.Int64
		// Row i has x = i; rows 0, 1, 5 and 6 are out of range.
		times := []int64{math.MinInt64, pipeline.MinEventTime - 1, -5, 0, 10, pipeline.MaxEventTime + 1, math.MaxInt64}
		if unit == "timestamp[s]" {
			tsType = &arrow.TimestampType{Unit: arrow.Second}
			times = []int64{math.MinInt64, pipeline.MinEventTime/1000 - 1, -5, 0, 10, pipeline.MaxEventTime/1000 + 1, math.MaxInt64}
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: tsType}, {Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i, ts := range times {
			b.Field(0).(*array.Int64Builder).Append(1)
			switch tb := b.Field(1).(type) {
			case *array.Int64Builder:
				tb.Append(ts)
			case *array.TimestampBuilder:
				tb.Append(arrow.Timestamp(ts))
			}
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		}
		rec := b.NewRecordBatch()
		b.Release()
		// Rows 2, 3, 4 at -5, 0 and 10 (ms or s): one hour covers them all.
		wantOver := [][]any{{int64(1), 2.0}, {int64(1), 5.0}, {int64(1), 9.0}}
		wantGroup := [][]any{{int64(1), "-3600000", int64(1), 2.0}, {int64(1), "0", int64(2), 7.0}}
		for _, mode := range []volga.Mode{volga.Batch, volga.Streaming} {
			for _, q := range []string{q1, q2} {
				out := sink.NewCollector()
				var dead []string
				p, err := volga.SQL(q, volga.WithSource("t", source.NewMemory(schema, rec)), volga.WithSink(out), volga.WithMode(mode),
					volga.WithDeadLetters(func(d source.DeadLetter) { dead = append(dead, d.Reason) }))
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Run(context.Background()); err != nil {
					t.Fatalf("%s, %s, %s: %v", unit, mode, q[:30], err)
				}
				got := out.Rows()
				if q == q2 {
					for _, r := range got {
						r[1] = fmt.Sprint(windowStartMillis(r[1]))
					}
					if !reflect.DeepEqual(got, wantGroup) {
						t.Errorf("%s, %s, GROUP BY: %v, want %v", unit, mode, got, wantGroup)
					}
				} else if !reflect.DeepEqual(got, wantOver) {
					t.Errorf("%s, %s, OVER: %v, want %v", unit, mode, got, wantOver)
				}
				if len(dead) != 4 || !strings.Contains(dead[0], "in column ts is out of range") {
					t.Errorf("%s, %s, %s: dead letters %q, want the 4 rows out of range", unit, mode, q[:30], dead)
				}
				out.Release()
			}
		}
		rec.Release()
	}
}

// windowStartMillis is a window_start value in epoch milliseconds.
func windowStartMillis(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case interface{ UnixMilli() int64 }:
		return x.UnixMilli()
	}
	return math.MinInt64
}
