package agg_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// Binding sum(amount) and sliding it over the rows of one key as
// ROWS BETWEEN 2 PRECEDING AND CURRENT ROW, then once more with
// EXCLUDE CURRENT ROW.
func Example() {
	amount, _ := agg.NewColumn(arrow.PrimitiveTypes.Int64)
	in := array.NewInt64Builder(memory.DefaultAllocator)
	in.AppendValues([]int64{10, 20, 0, 40, 50}, []bool{true, true, false, true, true})
	arr := in.NewArray()
	defer arr.Release()
	amount.AppendArrow(arr, nil)
	rows := &agg.Rows{Ts: []int64{1, 2, 3, 4, 5}, Cols: []agg.Column{amount}}

	f, err := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Int64, Col: 0}})
	if err != nil {
		panic(err)
	}
	lo := []int64{0, 0, 0, 1, 2}
	hi := []int64{1, 2, 3, 4, 5}
	ex := []int64{0, 1, 2, 3, 4} // the current row of each frame

	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	f.NewWindow().Eval(rows, lo, hi, nil, b)
	fmt.Println(b.NewArray())
	f.NewWindow().Eval(rows, lo, hi, ex, b)
	fmt.Println(b.NewArray())
	// Output:
	// [10 30 30 60 90]
	// [(null) 10 30 20 40]
}

// Compute aggregates arbitrary rows with a fresh state, as request-time
// lookups do.
func ExampleCompute() {
	score, _ := agg.NewColumn(arrow.PrimitiveTypes.Float64)
	in := array.NewFloat64Builder(memory.DefaultAllocator)
	in.AppendValues([]float64{1, 2, 3, 4}, nil)
	arr := in.NewArray()
	defer arr.Release()
	score.AppendArrow(arr, nil)
	rows := &agg.Rows{Base: 100, Ts: []int64{1, 2, 3, 4}, Cols: []agg.Column{score}}

	f, _ := agg.Bind("stddev_pop", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	agg.Compute(f, rows, []int64{100, 101, 102, 103}, b)
	fmt.Println(b.NewArray())
	// Output:
	// [1.118033988749895]
}

// NewStates makes the states of many groups at once (one allocation for
// count, sum, avg, min and max), as the GROUP BY operator does for the
// windows of a start: here max(amount) of three groups.
func ExampleNewStates() {
	amount, _ := agg.NewColumn(arrow.PrimitiveTypes.Int64)
	in := array.NewInt64Builder(memory.DefaultAllocator)
	in.AppendValues([]int64{5, 7, 3, 9, 1, 4}, nil)
	arr := in.NewArray()
	defer arr.Release()
	amount.AppendArrow(arr, nil)
	rows := &agg.Rows{Ts: []int64{1, 2, 3, 4, 5, 6}, Cols: []agg.Column{amount}}
	group := []int{0, 1, 0, 2, 1, 2} // each row's group

	f, _ := agg.Bind("max", []agg.Arg{{Type: arrow.PrimitiveTypes.Int64, Col: 0}})
	states := make([]agg.State, 3)
	agg.NewStates(f, states)
	for a, g := range group {
		states[g].Add(rows, int64(a))
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, s := range states {
		s.AppendResult(b)
	}
	fmt.Println(b.NewArray())
	// Output:
	// [5 7 9]
}

// NewResultBuilder gives the builder a Func fills fastest (for a string
// topn_frequency, one of its own): here the two most frequent merchants
// of each row's last three rows.
func ExampleNewResultBuilder() {
	merchant, _ := agg.NewColumn(arrow.BinaryTypes.String)
	in := array.NewStringBuilder(memory.DefaultAllocator)
	in.AppendValues([]string{"acme", "bolt", "acme", "cafe", "cafe"}, nil)
	arr := in.NewArray()
	defer arr.Release()
	merchant.AppendArrow(arr, nil)
	rows := &agg.Rows{Ts: []int64{1, 2, 3, 4, 5}, Cols: []agg.Column{merchant}}

	f, err := agg.Bind("topn_frequency", []agg.Arg{
		{Type: arrow.BinaryTypes.String, Col: 0},
		{Col: -1, IsConst: true, Const: int64(2), Type: arrow.PrimitiveTypes.Int64},
	})
	if err != nil {
		panic(err)
	}
	b := agg.NewResultBuilder(memory.DefaultAllocator, f)
	defer b.Release()
	f.NewWindow().Eval(rows, []int64{0, 0, 0, 1, 2}, []int64{1, 2, 3, 4, 5}, nil, b)
	res := b.NewArray().(*array.List)
	defer res.Release()
	for i := range res.Len() {
		fmt.Println(res.ValueStr(i))
	}
	// Output:
	// [{"count":1,"value":"acme"}]
	// [{"count":1,"value":"acme"},{"count":1,"value":"bolt"}]
	// [{"count":2,"value":"acme"},{"count":1,"value":"bolt"}]
	// [{"count":1,"value":"acme"},{"count":1,"value":"bolt"}]
	// [{"count":2,"value":"cafe"},{"count":1,"value":"acme"}]
}
