package window

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// BenchmarkQuietKeys: a stream whose keys come and go (each key 20 rows
// over 2 s of event time, then never again; 1-minute RANGE frames with
// sum, max, count_distinct and topn_frequency), the watermark advanced
// after every batch of 1 000 rows, with the sweep of quiet keys on and
// off, and with the sweep on and parked keys forgotten once 1 024 are
// (as many as the live ones; the operators forget a million at a time).
// It reports the rows retained and the live heap at the end (all of it,
// and the operator's part per key seen: op_B/key), and the time per row.
func BenchmarkQuietKeys(b *testing.B) {
	const rows, perKey, batch = 400_000, 20, 1000
	recs := make([]arrow.RecordBatch, 0, rows/batch)
	for lo := 0; lo < rows; lo += batch {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for i := lo; i < lo+batch; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i) * 100)
			bld.Field(1).(*array.Int64Builder).Append(int64(i))
			bld.Field(2).(*array.Int64Builder).Append(int64(i / perKey))
			bld.Field(3).(*array.Float64Builder).Append(float64(i%977) / 10)
			bld.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("c%d", i%37))
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cat := agg.Arg{Type: arrow.BinaryTypes.String, Col: 1}
	for _, mode := range []string{"sweep=true", "sweep=false", "forget"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, Windows: []Spec{
				{Frame: Frame{Preceding: 60_000}, Aggs: []agg.Func{bindFunc(b, "sum", amount), bindFunc(b, "max", amount),
					bindFunc(b, "count_distinct", cat), bindFunc(b, "topn_frequency", cat, agg.Arg{Type: arrow.PrimitiveTypes.Int64, Col: -1, Const: int64(3), IsConst: true})}},
			}}
			var retained int64
			var heap, base uint64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				base = heapAlloc()
				b.StartTimer()
				op := openOp(b, cfg)
				op.sweepable = op.sweepable && mode != "sweep=false"
				if mode == "forget" {
					op.forgetMin = 1024
				}
				for _, r := range recs {
					push(b, op, r)
					ts := r.Column(0).(*array.Int64).Int64Values()
					advanceDiscard(b, op, ts[len(ts)-1])
				}
				b.StopTimer()
				retained = op.Stats().Retained
				heap = heapAlloc()
				runtime.KeepAlive(op)
				op.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			b.ReportMetric(float64(retained), "retained_rows")
			b.ReportMetric(float64(heap)/(1<<20), "heap_MB")
			b.ReportMetric(float64(heap-base)/float64(rows/perKey), "op_B/key")
		})
	}
}

// heapAlloc returns the bytes of live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
