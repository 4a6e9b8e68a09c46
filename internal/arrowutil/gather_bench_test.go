package arrowutil

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ml3Types are the result types of the ml-3 workload: topn_frequency
// (list<struct<value, count>>), sum_cate (map<string, float64>) and
// top1_ratio (float64), plus the string and int64 columns passed through.
var ml3Types = []arrow.DataType{
	arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "count", Type: arrow.PrimitiveTypes.Int64})),
	arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64),
	arrow.PrimitiveTypes.Float64,
	arrow.BinaryTypes.String,
	arrow.PrimitiveTypes.Int64,
}

// ml3Array builds n rows of dt shaped like ml-3's results: lists of 5
// (value, count) pairs, maps of 1-4 entries, merchant names "m0000".."m0999".
func ml3Array(mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	merchant := func() string { return fmt.Sprintf("m%04d", rng.IntN(1000)) }
	for range n {
		switch b := b.(type) {
		case *array.ListBuilder:
			b.Append(true)
			sb := b.ValueBuilder().(*array.StructBuilder)
			for range 5 {
				sb.Append(true)
				sb.FieldBuilder(0).(*array.StringBuilder).Append(merchant())
				sb.FieldBuilder(1).(*array.Int64Builder).Append(rng.Int64N(20))
			}
		case *array.MapBuilder:
			b.Append(true)
			for range 1 + rng.IntN(4) {
				b.KeyBuilder().(*array.StringBuilder).Append(merchant())
				b.ItemBuilder().(*array.Float64Builder).Append(rng.Float64())
			}
		case *array.Float64Builder:
			b.Append(rng.Float64())
		case *array.StringBuilder:
			b.Append(merchant())
		case *array.Int64Builder:
			b.Append(rng.Int64())
		}
	}
	return b.NewArray()
}

// BenchmarkGatherML3 gathers ml-3 shaped columns the ways the batch
// pipeline does: "window" puts the results of 8 chunks of 65 536 rows
// (built in key order) back in arrival order, one row per run, 32 768 rows
// per call; "merger" interleaves two sources in runs of 1-3 rows, as the
// merge of two tasks' outputs does; "release" takes 65 536 rows at random
// from two sources of 1 M rows, as the merge of two tasks' releases of
// per-value windows does (each task's results of a release in key order,
// some 100 MB of them: most reads miss the caches). ns/row and allocs/row
// are per output row.
func BenchmarkGatherML3(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(7, 3))
	const chunk, nChunks, out = 1 << 16, 8, 1 << 15
	for _, dt := range ml3Types {
		name := dt.String()
		if len(name) > 24 {
			name = name[:24]
		}
		srcs := make([]arrow.Array, nChunks)
		for i := range srcs {
			srcs[i] = ml3Array(mem, rng, dt, chunk)
		}
		var win []Seg
		for _, k := range rng.Perm(chunk * nChunks)[:out] {
			win = append(win, Seg{Src: int32(k / chunk), Start: int32(k % chunk), End: int32(k%chunk) + 1})
		}
		var rel []Seg
		var big []arrow.Array
		if dt.ID() == arrow.LIST || dt.ID() == arrow.MAP {
			const bigRows = 1 << 20
			big = []arrow.Array{ml3Array(mem, rng, dt, bigRows), ml3Array(mem, rng, dt, bigRows)}
			for range 1 << 16 {
				r := int32(rng.IntN(bigRows))
				rel = append(rel, Seg{Src: int32(rng.IntN(2)), Start: r, End: r + 1})
			}
		}
		var mrg []Seg
		pos := [2]int32{}
		for n := 0; n < out; {
			src := int32(rng.IntN(2))
			l := int32(1 + rng.IntN(3))
			mrg = append(mrg, Seg{Src: src, Start: pos[src], End: pos[src] + l})
			pos[src] += l
			n += int(l)
		}
		for _, c := range []struct {
			name string
			segs []Seg
			srcs []arrow.Array
		}{{"window", win, srcs}, {"merger", mrg, srcs}, {"release", rel, big}} {
			if c.srcs == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", c.name, name), func(b *testing.B) {
				rows := segRows(c.segs)
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				c0 := cpuNanos()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					a, err := Gather(mem, dt, c.srcs, c.segs)
					if err != nil {
						b.Fatal(err)
					}
					a.Release()
				}
				b.StopTimer()
				runtime.ReadMemStats(&m1)
				n := float64(b.N) * float64(rows)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/row")
				b.ReportMetric(float64(cpuNanos()-c0)/n, "cpu-ns/row")
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/row")
			})
		}
		ReleaseAll(srcs)
		ReleaseAll(big)
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
