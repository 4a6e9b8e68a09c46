package agg

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchWindow slides a ROWS window of the given width over random rows,
// one frame per row: ns/op and allocs/op are per row.
func benchWindow(b *testing.B, name string, args []Arg, width int64, exclude bool) {
	f, err := Bind(name, args)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1 << 16
	const chunk = 512
	r := randRows(rand.New(rand.NewPCG(1, 2)), n)
	lo := make([]int64, n)
	hi := make([]int64, n)
	ex := make([]int64, n)
	for j := range int64(n) {
		a := r.Base + j
		lo[j], hi[j], ex[j] = max(r.Base, a-width+1), a+1, a
	}
	bld := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer bld.Release()
	bld.Reserve(chunk)
	w := f.NewWindow()
	pos := 0
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		if pos == n {
			w, pos = f.NewWindow(), 0
		}
		k := min(chunk, n-pos, b.N-done)
		var e []int64
		if exclude {
			e = ex[pos : pos+k]
		}
		w.Eval(r, lo[pos:pos+k], hi[pos:pos+k], e, bld)
		if bld.Len() >= 4*chunk {
			bld.NewArray().Release()
			bld.Reserve(4 * chunk)
		}
		pos += k
		done += k
	}
}

func BenchmarkWindow(b *testing.B) {
	cases := []struct {
		name string
		fn   string
		args []Arg
	}{
		{"sum_float", "sum", []Arg{colArg(colFloat)}},
		{"sum_int", "sum", []Arg{colArg(colInt)}},
		{"sum_cate_int", "sum_cate", []Arg{colArg(colInt), colArg(colCat)}},
		{"count_star", "count", []Arg{starArg()}},
		{"count_x", "count", []Arg{colArg(colFloat)}},
		{"avg_float", "avg", []Arg{colArg(colFloat)}},
		{"avg_int", "avg", []Arg{colArg(colInt)}},
		{"min_float", "min", []Arg{colArg(colFloat)}},
		{"max_int", "max", []Arg{colArg(colInt)}},
		{"max_string", "max", []Arg{colArg(colStr)}},
		{"var_samp_float", "var_samp", []Arg{colArg(colFloat)}},
		{"var_samp_int", "var_samp", []Arg{colArg(colInt)}},
		{"count_distinct_int", "count_distinct", []Arg{colArg(colInt)}},
		{"first_value", "first_value", []Arg{colArg(colFloat)}},
	}
	cases = append(cases, mlBenchCases()...)
	for _, c := range cases {
		for _, width := range []int64{100, 10000} {
			for _, exclude := range []bool{false, true} {
				name := c.name + "/w=" + itoa(width)
				if exclude {
					name += "/exclude"
				}
				b.Run(name, func(b *testing.B) { benchWindow(b, c.fn, c.args, width, exclude) })
			}
		}
	}
}

func itoa(v int64) string {
	if v >= 1000 && v%1000 == 0 {
		return itoa(v/1000) + "k"
	}
	s := ""
	for ; v > 0; v /= 10 {
		s = string(rune('0'+v%10)) + s
	}
	return s
}

// BenchmarkTileMerge merges tile states the way a tiled lookup or a tiled
// two-stack window does: 64 tiles of 256 rows each are built (and
// compacted, agg.Compacter, as lookup tiles are) once, then
// every op merges all of them into one state; ns/op and allocs/op are per
// tile merged.
func BenchmarkTileMerge(b *testing.B) {
	cases := []struct {
		name string
		fn   string
		args []Arg
	}{
		{"sum_float", "sum", []Arg{colArg(colFloat)}},
		{"sum_int", "sum", []Arg{colArg(colInt)}},
		{"count_star", "count", []Arg{starArg()}},
		{"max_float", "max", []Arg{colArg(colFloat)}},
		{"var_samp_float", "var_samp", []Arg{colArg(colFloat)}},
		{"first_value", "first_value", []Arg{colArg(colFloat)}},
	}
	cases = append(cases, mlBenchCases()...)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f, err := Bind(c.fn, c.args)
			if err != nil {
				b.Fatal(err)
			}
			const tiles, rows = 64, 256
			r := randRows(rand.New(rand.NewPCG(3, 4)), tiles*rows)
			ts := make([]State, tiles)
			for i := range ts {
				ts[i] = f.NewState()
				for a := r.Base + int64(i*rows); a < r.Base+int64((i+1)*rows); a++ {
					ts[i].Add(r, a)
				}
				if c, ok := ts[i].(Compacter); ok {
					c.Compact() // as lookup tiles are, once complete
				}
			}
			dst := f.NewState()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += tiles {
				dst.Reset()
				for _, s := range ts[:min(tiles, b.N-done)] {
					dst.Merge(s)
				}
			}
		})
	}
}

// BenchmarkStackWindowTiled slides a merge-only aggregate (drawdown) over
// RANGE-like frames of 10 000 rows with and without tiles of 100 rows'
// time (agg.Tiler): ns/op and allocs/op are per row.
func BenchmarkStackWindowTiled(b *testing.B) {
	for _, tile := range []int64{0, 100} {
		name := "untiled"
		if tile > 0 {
			name = "tile=" + itoa(tile)
		}
		b.Run(name, func(b *testing.B) {
			f, err := Bind("drawdown", []Arg{colArg(colFloat)})
			if err != nil {
				b.Fatal(err)
			}
			const n, width, chunk = 1 << 16, 10000, 512
			r := randRows(rand.New(rand.NewPCG(1, 2)), n)
			for i := range r.Ts {
				r.Ts[i] = int64(i) // one row per ms: a tile of 100 ms is 100 rows
			}
			lo, hi := make([]int64, n), make([]int64, n)
			for j := range int64(n) {
				a := r.Base + j
				lo[j], hi[j] = max(r.Base, a-width+1), a+1
			}
			newWin := func() Window {
				w := f.NewWindow()
				if tile > 0 {
					w.(Tiler).SetTile(tile)
				}
				return w
			}
			bld := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
			defer bld.Release()
			w := newWin()
			pos := 0
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				if pos == n {
					w, pos = newWin(), 0
				}
				k := min(chunk, n-pos, b.N-done)
				w.Eval(r, lo[pos:pos+k], hi[pos:pos+k], nil, bld)
				if bld.Len() >= 4*chunk {
					bld.NewArray().Release()
				}
				pos += k
				done += k
			}
		})
	}
}

// BenchmarkAddRange adds runs of 50 rows (a 30-day lookup frame of the
// lookup workload) to a fresh state, row by row through the State
// interface (as lookups did) and in one RangeAdder call: ns/op is per
// row.
func BenchmarkAddRange(b *testing.B) {
	const run = 50
	r := randRows(rand.New(rand.NewPCG(5, 6)), 1<<12)
	for _, c := range []aggCase{
		{name: "count", args: []Arg{starArg()}},
		{name: "sum", args: []Arg{colArg(colFloat)}},
		{name: "avg", args: []Arg{colArg(colFloat)}},
		{name: "max", args: []Arg{colArg(colFloat)}},
		{name: "sum", args: []Arg{colArg(colInt)}},
	} {
		f := c.bind(b)
		for _, ranged := range []bool{false, true} {
			name := c.String() + "/rows"
			if ranged {
				name = c.String() + "/range"
			}
			b.Run(name, func(b *testing.B) {
				var st State = f.NewState()
				ra := st.(RangeAdder)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; done += run {
					lo := r.Base + int64(done%(len(r.Ts)-run))
					st.Reset()
					if ranged {
						ra.AddRange(r, lo, lo+run)
						continue
					}
					for a := lo; a < lo+run; a++ {
						st.Add(r, a)
					}
				}
			})
		}
	}
}
