package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// The special-values oracle: the standard aggregates over a DOUBLE column
// drawing from NaN, +Inf, -Inf, -0.0 and 0.0 (and a few ordinary values),
// a VARCHAR column with empty strings and an INTEGER column, on data with
// many peers, against DuckDB. DuckDB orders NaN above +Inf and equal to
// itself, -0.0 equal to 0.0, and sums a NaN or both infinities to NaN;
// volga must agree in every path (retraction, tiles, rebuilds).
var specialSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// specialRows returns n rows in event-time order (id is the position),
// half of them peers of the row before, and their times.
func specialRows(seed uint64, n int) ([][]any, []int64) {
	rng := rand.New(rand.NewPCG(seed, 0x6e616e)) // "nan"
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1.5, -2.25, 1e300}
	strs := []string{"", "a", "b", "B", ""}
	ts := oracleStart.UnixMilli()
	var out [][]any
	var times []int64
	for i := range n {
		if rng.IntN(2) == 0 {
			ts += 1000 * rng.Int64N(20)
		}
		row := []any{int64(i), rng.Int64N(4), ts, nil, nil, nil}
		if rng.IntN(8) > 0 {
			row[3] = floats[rng.IntN(len(floats))]
		}
		if rng.IntN(8) > 0 {
			row[4] = strs[rng.IntN(len(strs))]
		}
		if rng.IntN(8) > 0 {
			row[5] = int32(rng.IntN(7) - 3)
		}
		out = append(out, row)
		times = append(times, ts)
	}
	return out, times
}

// specialRecords builds batches of up to batchRows rows.
func specialRecords(rs [][]any, batchRows int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, specialSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rs); lo += batchRows {
		for _, r := range rs[lo:min(lo+batchRows, len(rs))] {
			b.Field(0).(*array.Int64Builder).Append(r[0].(int64))
			b.Field(1).(*array.Int64Builder).Append(r[1].(int64))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r[2].(int64)))
			if v, ok := r[3].(float64); ok {
				b.Field(3).(*array.Float64Builder).Append(v)
			} else {
				b.Field(3).AppendNull()
			}
			if v, ok := r[4].(string); ok {
				b.Field(4).(*array.StringBuilder).Append(v)
			} else {
				b.Field(4).AppendNull()
			}
			if v, ok := r[5].(int32); ok {
				b.Field(5).(*array.Int32Builder).Append(v)
			} else {
				b.Field(5).AppendNull()
			}
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return recs
}

// specialAggs are the standard aggregates of the special-values oracle.
var specialAggs = aggs{
	{"count", "f"}, {"sum", "f"}, {"avg", "f"}, {"min", "f"}, {"max", "f"},
	{"first_value", "f"}, {"last_value", "f"}, {"count_distinct", "f"},
	{"count", "s"}, {"min", "s"}, {"max", "s"}, {"count_distinct", "s"},
	{"first_value", "s"}, {"last_value", "s"},
	{"sum", "i"}, {"avg", "i"}, {"min", "i"}, {"max", "i"}, {"count_distinct", "i"},
	{"var_samp", "i"}, {"stddev_pop", "i"},
}

// TestOracleSpecialValues checks OVER windows of every frame kind over
// NaN, infinities, signed zeros and empty strings against DuckDB, in
// batch mode with parallelism 1 and 2 and in streaming mode with shuffled
// arrival.
func TestOracleSpecialValues(t *testing.T) {
	seed := *oracleSeed + 7
	ctx := context.Background()
	data, ts := specialRows(seed, 1200)
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	recs := specialRecords(data, oracleBatchRows)
	if err := db.LoadRecords(ctx, "t", specialSchema, recs); err != nil {
		t.Fatal(err)
	}
	perm := gen.ArrivalOrder(ts, streamBound, seed)
	arrival := make([][]any, len(perm))
	for i, p := range perm {
		arrival[i] = data[p]
	}
	modes := []struct {
		name string
		in   [][]any
		opt  volgarun.Options
	}{
		{"batch_p1", data, volgarun.Options{Parallelism: 1}},
		{"batch_p2", data, volgarun.Options{Parallelism: 2}},
		{"stream_p2", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 2}},
	}
	frames := []frame{
		rangeFrame("INTERVAL '30' SECOND PRECEDING", "CURRENT ROW"),
		rangeFrame("INTERVAL '5' MINUTE PRECEDING", "CURRENT ROW"),
		rangeFrame("INTERVAL '5' MINUTE PRECEDING", "CURRENT ROW").exclude(),
		rangeFrame("INTERVAL '10' MINUTE PRECEDING", "INTERVAL '1' MINUTE PRECEDING"),
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW"),
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW").exclude(),
		rowsFrame(3),
		rowsFrame(2).exclude(),
	}
	for i, fr := range frames {
		w := &window{name: fmt.Sprintf("w%d", i), partition: "user_id", frame: fr}
		q := oracleQuery{name: w.name, project: []string{"id", "user_id", "ts"}, features: specialAggs.over(w)}
		t.Run(strings.NewReplacer(" ", "_", "'", "").Replace(fr.sql), func(t *testing.T) {
			names, rs, err := db.Query(ctx, q.duck())
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			want := rows.Table{Names: names, Rows: rs}
			if len(want.Rows) != len(data) {
				t.Fatalf("DuckDB returned %d rows, want %d", len(want.Rows), len(data))
			}
			for _, m := range modes {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				got, err := volgarun.Collect(cctx, q.volga(), "t", volgarun.Memory(specialSchema, specialRecords(m.in, oracleBatchRows)), m.opt)
				cancel()
				if err != nil {
					t.Fatalf("%s: seed %d: volga: %v", m.name, seed, err)
				}
				if d := rows.Diff(want, got.SortedByCols("id"), rows.DefaultTolerance, []string{"id"}, diffRows); d != "" {
					t.Errorf("%s: volga vs DuckDB differ (seed %d)\n%s\nvolga query:\n%s", m.name, seed, d, q.volga())
				}
			}
		})
	}
}
