package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// ml3Records generates n rows shaped like the ml-3 workload's input for
// one window task: keys uniform over nKeys, event times uniform over 30
// days (arrival not in event-time order), 1 000 merchants, in batches of
// 8 192 rows of tileSchema.
func ml3Records(nKeys, n int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(3, 11))
	merchants := make([]string, 1000)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("m%04d", i)
	}
	const span = 30 * 24 * 3600 * 1000
	var out []arrow.RecordBatch
	for seq := 0; seq < n; {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for i := 0; i < 8192 && seq < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(1_700_000_000_000 + rng.Int64N(span))
			b.Field(1).(*array.Int64Builder).Append(int64(seq))
			b.Field(2).(*array.Int64Builder).Append(rng.Int64N(int64(nKeys)))
			b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(50000)) / 100)
			b.Field(4).(*array.StringBuilder).Append(merchants[rng.IntN(len(merchants))])
			seq++
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// BenchmarkOperatorBatchML3 runs the ml-3 query's window operator as one
// batch-mode task does: every row pushed, then one Advance to End that
// evaluates topn_frequency(merchant, 5) over 7 days, sum_cate(amount,
// merchant) over 24 hours and top1_ratio(merchant) over 30 days, builds
// the results and emits them in arrival order. ns/row and allocs/row are
// per input row.
func BenchmarkOperatorBatchML3(b *testing.B) {
	for _, perKey := range []int{10, 50} {
		const rows = 200_000
		recs := ml3Records(rows/perKey, rows)
		bind := func(name string, args ...agg.Arg) agg.Func {
			f, err := agg.Bind(name, args)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
		amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
		merchant := agg.Arg{Type: arrow.BinaryTypes.String, Col: 1}
		five := agg.Arg{IsConst: true, Const: int64(5), Col: -1, Type: arrow.PrimitiveTypes.Int64}
		const hour = 3600 * 1000
		cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, BatchOrder: true, Windows: []Spec{
			{Frame: Frame{Preceding: 7 * 24 * hour}, Aggs: []agg.Func{bind("topn_frequency", merchant, five)}},
			{Frame: Frame{Preceding: 24 * hour}, Aggs: []agg.Func{bind("sum_cate", amount, merchant)}},
			{Frame: Frame{Preceding: 30 * 24 * hour}, Aggs: []agg.Func{bind("top1_ratio", merchant)}},
		}}
		b.Run(fmt.Sprintf("rows_per_key=%d", perKey), func(b *testing.B) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			c0 := cpuNanos()
			b.ReportAllocs()
			for b.Loop() {
				op, err := New(cfg, tileSchema)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if _, _, err := op.Push(r); err != nil {
						b.Fatal(err)
					}
				}
				err = op.AdvanceFunc(context.Background(), End, func(rec arrow.RecordBatch) error {
					rec.Release()
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				op.Close()
			}
			runtime.ReadMemStats(&m1)
			n := float64(b.N) * rows
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/row")
			b.ReportMetric(float64(cpuNanos()-c0)/n, "cpu-ns/row")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/row")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/row")
		})
	}
}

// cpuNanos is the process's user and system CPU time so far: on a shared
// machine, CPU time per row is steadier than wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
