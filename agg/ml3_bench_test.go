package agg

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ml3Keys builds per-key rows shaped like the ml-3 workload at 10 M
// events: each key (user) has perKey rows over 30 days, a string column of
// 1 000 uniform merchants ("m0000".."m0999") and a float amount. Column 0
// is the merchant, column 1 the amount.
func ml3Keys(nKeys, perKey int) []*Rows {
	rng := rand.New(rand.NewPCG(3, 7))
	merchants := make([]string, 1000)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("m%04d", i)
	}
	const span = 30 * 24 * 3600 * 1000
	keys := make([]*Rows, nKeys)
	for k := range keys {
		r := &Rows{Base: rng.Int64N(100)}
		for range perKey {
			r.Ts = append(r.Ts, rng.Int64N(span))
		}
		sort.Slice(r.Ts, func(i, j int) bool { return r.Ts[i] < r.Ts[j] })
		m := Column{Type: arrow.BinaryTypes.String, Kind: KindString}
		a := Column{Type: arrow.PrimitiveTypes.Float64, Kind: KindFloat64}
		for range perKey {
			m.Str = append(m.Str, merchants[rng.IntN(len(merchants))])
			m.Null = append(m.Null, false)
			a.F64 = append(a.F64, float64(rng.IntN(50000))/100)
			a.Null = append(a.Null, false)
		}
		r.Cols = []Column{m, a}
		keys[k] = r
	}
	return keys
}

// rangeFrames returns the frames of RANGE BETWEEN d PRECEDING AND CURRENT
// ROW over r's rows.
func rangeFrames(r *Rows, d int64) (lo, hi []int64) {
	n := r.Len()
	lo, hi = make([]int64, n), make([]int64, n)
	for p := range n {
		t := r.Ts[p]
		lo[p] = r.Base + int64(sort.Search(n, func(k int) bool { return r.Ts[k] >= t-d }))
		hi[p] = r.Base + int64(sort.Search(n, func(k int) bool { return r.Ts[k] > t }))
	}
	return lo, hi
}

// BenchmarkML3 runs each ml-3 aggregate as batch mode does: per key a new
// Window evaluates every row's RANGE frame in one call, appending to one
// result builder shared by all keys (NewResultBuilder's, as the window
// operator's); with rows_per_eval=1, one call per
// row, as when a run releases its input a batch at a time and a key has
// a row in each (the states then grow with their frames). One op is a pass over every key;
// ns/row and allocs/row are per output row.
func BenchmarkML3(b *testing.B) {
	const day = 24 * 3600 * 1000
	cases := []struct {
		name string
		fn   string
		args []Arg
		d    int64
	}{
		{"topn_frequency5_7d", "topn_frequency", []Arg{{Type: arrow.BinaryTypes.String, Col: 0}, constArg(int64(5))}, 7 * day},
		{"sum_cate_24h", "sum_cate", []Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 1}, {Type: arrow.BinaryTypes.String, Col: 0}}, day},
		{"top1_ratio_30d", "top1_ratio", []Arg{{Type: arrow.BinaryTypes.String, Col: 0}}, 30 * day},
	}
	for _, perKey := range []int{10, 100} {
		keys := ml3Keys(100000/perKey*2/10, perKey) // 20 000 or 2 000 keys
		for _, c := range cases {
			f, err := Bind(c.fn, c.args)
			if err != nil {
				b.Fatal(err)
			}
			los, his := make([][]int64, len(keys)), make([][]int64, len(keys))
			rows := 0
			for k, r := range keys {
				los[k], his[k] = rangeFrames(r, c.d)
				rows += r.Len()
			}
			for _, step := range []int{0, 1} {
				name := fmt.Sprintf("%s/rows_per_key=%d", c.name, perKey)
				if step > 0 {
					name += fmt.Sprintf("/rows_per_eval=%d", step)
				}
				b.Run(name, func(b *testing.B) {
					stateBytes := retainedPerKey(f, keys, los, his, rows)
					var m0, m1 runtime.MemStats
					runtime.ReadMemStats(&m0)
					bld := NewResultBuilder(memory.DefaultAllocator, f)
					defer bld.Release()
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						bld.Reserve(rows)
						for k, r := range keys {
							w := f.NewWindow()
							if step == 0 {
								w.Eval(r, los[k], his[k], nil, bld)
								continue
							}
							for p := 0; p < len(los[k]); p += step {
								e := min(p+step, len(los[k]))
								w.Eval(r, los[k][p:e], his[k][p:e], nil, bld)
							}
						}
						bld.NewArray().Release()
					}
					b.StopTimer()
					runtime.ReadMemStats(&m1)
					n := float64(b.N) * float64(rows)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/row")
					b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/row")
					b.ReportMetric(stateBytes, "state_B/key")
				})
			}
		}
	}
}

// retainedPerKey returns the heap bytes each key's Window holds after
// evaluating all its rows, as batch mode keeps them.
func retainedPerKey(f Func, keys []*Rows, los, his [][]int64, rows int) float64 {
	bld := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer bld.Release()
	bld.Reserve(rows)
	wins := make([]Window, len(keys))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for k, r := range keys {
		wins[k] = f.NewWindow()
		wins[k].Eval(r, los[k], his[k], nil, bld)
	}
	bld.NewArray().Release()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(wins)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(len(keys))
}
