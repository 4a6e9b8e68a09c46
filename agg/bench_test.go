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
