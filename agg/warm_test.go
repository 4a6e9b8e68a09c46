package agg

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestWarmChangesNothing evaluates each window twice over the same rows,
// one of them warmed by Warm at both depths before every call, and
// requires equal results: Warm only prefetches (and reads pointers).
func TestWarmChangesNothing(t *testing.T) {
	const day = 24 * 3600 * 1000
	str := Arg{Type: arrow.BinaryTypes.String, Col: 0}
	num := Arg{Type: arrow.PrimitiveTypes.Float64, Col: 1}
	cases := []struct {
		fn   string
		args []Arg
	}{
		{"sum", []Arg{num}}, {"avg", []Arg{num}}, {"count", []Arg{num}},
		{"count", []Arg{{Star: true}}}, {"min", []Arg{num}}, {"max", []Arg{str}},
		{"first_value", []Arg{num}}, {"last_value", []Arg{str}},
		{"approx_percentile", []Arg{num, constArg(0.5)}},
		{"ew_avg", []Arg{num, constArg(0.5)}},
		{"count_distinct", []Arg{str}},
		{"topn_frequency", []Arg{str, constArg(int64(3))}},
		{"top1_ratio", []Arg{str}}, {"sum_cate", []Arg{num, str}},
	}
	keys := ml3Keys(20, 60)
	for _, c := range cases {
		f, err := Bind(c.fn, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.fn, err)
		}
		plain, warmed := array.NewBuilder(memory.DefaultAllocator, f.ResultType()), array.NewBuilder(memory.DefaultAllocator, f.ResultType())
		for _, r := range keys {
			lo, hi := rangeFrames(r, 2*day)
			wp, ww := f.NewWindow(), f.NewWindow()
			for p := 0; p < len(lo); p += 7 {
				e := min(p+7, len(lo))
				wp.Eval(r, lo[p:e], hi[p:e], nil, plain)
				Warm(ww, 0)
				Warm(ww, 1)
				ww.Eval(r, lo[p:e], hi[p:e], nil, warmed)
			}
			Warm(ww, 0)
			Warm(ww, 1)
		}
		a, b := plain.NewArray(), warmed.NewArray()
		if !array.Equal(a, b) {
			t.Errorf("%s(%d args): results differ after Warm", c.fn, len(c.args))
		}
		a.Release()
		b.Release()
		plain.Release()
		warmed.Release()
	}
	Warm(nil, 0)
	Warm(foreignWindow{}, 1)
}

type foreignWindow struct{}

func (foreignWindow) Eval(*Rows, []int64, []int64, []int64, array.Builder) {}
