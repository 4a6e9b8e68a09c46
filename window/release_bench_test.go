package window

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/agg"
)

// BenchmarkBatchRelease: a batch run (arrival-order output) over
// time-ordered rows, 25 000 keys and 20 rows a key, with the features-4
// windows, releasing rows every `every` rows (as a batch run does with a
// source's lower bound of event time) or only at the end. It shows the
// cost per row of visiting a key for fewer rows at a time.
func BenchmarkBatchRelease(b *testing.B) {
	const keys, batches, rows = 25_000, 61, 8192
	recs := benchRecords(keys, batches, rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	for _, every := range []int{rows, 8 * rows, 32 * rows, math.MaxInt} {
		name := fmt.Sprintf("every=%d", every)
		if every == math.MaxInt {
			name = "every=end"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, BatchOrder: true, Windows: []Spec{
				{Frame: Frame{Preceding: 3_000}, Aggs: []agg.Func{bindFunc(b, "sum", amount), bindFunc(b, "max", amount)}},
				{Frame: Frame{Preceding: 72_000}, Aggs: []agg.Func{bindFunc(b, "count", agg.Arg{Star: true, Col: -1})}},
				{Frame: Frame{Preceding: 504_000}, Aggs: []agg.Func{bindFunc(b, "avg", amount)}},
			}}
			b.ReportAllocs()
			for b.Loop() {
				op := openOp(b, cfg)
				since := 0
				for _, r := range recs {
					push(b, op, r)
					if since += rows; since >= every {
						ts := r.Column(0).(*array.Int64).Int64Values()
						advanceDiscard(b, op, ts[len(ts)-1]-1)
						since = 0
					}
				}
				advanceDiscard(b, op, End)
				op.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batches*rows), "ns/row")
		})
	}
}
