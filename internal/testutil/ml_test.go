package testutil

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/sink"
)

// The reference is the oracle of the ML suites; these hand-computed cases
// pin its definitions (SPEC section 4).
func TestMLReferenceByHand(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "c", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	tab := &Table{Schema: schema, Rows: [][]any{
		{10.0, "b", true}, {5.0, "a", nil}, {nil, "b", true}, {20.0, nil, false},
		{8.0, "a", true}, {-3.0, "c", true}, {12.0, "b", true},
	}}
	all := []int{0, 1, 2, 3, 4, 5, 6}
	for _, tt := range []struct {
		a    Agg
		rows []int
		want any
	}{
		{Agg{Func: "top", Arg: "x", Param: int64(3)}, all, []any{20.0, 12.0, 10.0}},
		{Agg{Func: "top", Arg: "s", Param: int64(4)}, all, []any{"c", "b", "b", "b"}},
		{Agg{Func: "top", Arg: "x", Param: int64(2)}, []int{2}, []any{}},
		// b three times, a twice, c once.
		{Agg{Func: "topn_frequency", Arg: "s", Param: int64(2)}, all, []any{map[string]any{"value": "b", "count": int64(3)}, map[string]any{"value": "a", "count": int64(2)}}},
		// A tie in count is broken by value ascending.
		{Agg{Func: "topn_frequency", Arg: "s", Param: int64(2)}, []int{0, 1, 5}, []any{map[string]any{"value": "a", "count": int64(1)}, map[string]any{"value": "b", "count": int64(1)}}},
		{Agg{Func: "topn_frequency", Arg: "s", Param: int64(2)}, nil, []any{}},
		{Agg{Func: "top1_ratio", Arg: "s"}, all, 3.0 / 6},
		{Agg{Func: "top1_ratio", Arg: "s"}, []int{3}, 0.0},
		{Agg{Func: "count_where", Cond: "c"}, all, int64(5)},
		{Agg{Func: "count_where", Arg: "x", Cond: "c"}, all, int64(4)},
		{Agg{Func: "sum_where", Arg: "x", Cond: "c"}, all, 27.0},
		{Agg{Func: "min_where", Arg: "s", Cond: "c"}, []int{1, 3}, nil},
		{Agg{Func: "count_cate", Arg: "x", Cate: "s"}, all, []sink.MapEntry{{Key: "a", Value: int64(2)}, {Key: "b", Value: int64(2)}, {Key: "c", Value: int64(1)}}},
		{Agg{Func: "max_cate_where", Arg: "x", Cond: "c", Cate: "s"}, all, []sink.MapEntry{{Key: "a", Value: 8.0}, {Key: "b", Value: 12.0}, {Key: "c", Value: -3.0}}},
		{Agg{Func: "avg_cate", Arg: "x", Cate: "s"}, []int{2, 3}, []sink.MapEntry{}},
		// pandas: Series([10, 5, None, 20]).ewm(alpha=0.5, ignore_na=True).mean().iloc[-1]
		// = (20 + 0.5*5 + 0.25*10) / 1.75.
		{Agg{Func: "ew_avg", Arg: "x", Param: 0.5}, []int{0, 1, 2, 3}, 25.0 / 1.75},
		{Agg{Func: "ew_avg", Arg: "x", Param: 1.0}, all, 12.0},
		{Agg{Func: "ew_avg", Arg: "x", Param: 0.5}, []int{2}, nil},
		// Peaks and later troughs: 10 -> 5 is 0.5, 20 -> 8 is 0.6; -3 is ignored.
		{Agg{Func: "drawdown", Arg: "x"}, all, 0.6},
		{Agg{Func: "drawdown", Arg: "x"}, []int{4}, 0.0},
		{Agg{Func: "drawdown", Arg: "x"}, []int{5, 2}, nil},
		// Sorted: -3 5 8 10 12 20; p = q(n-1).
		{Agg{Func: "approx_percentile", Arg: "x", Param: 0.5}, all, 9.0},
		{Agg{Func: "approx_percentile", Arg: "x", Param: 0.1}, all, 1.0},
		{Agg{Func: "approx_percentile", Arg: "x", Param: 1.0}, all, 20.0},
		{Agg{Func: "approx_count_distinct", Arg: "s"}, all, int64(3)},
	} {
		got := Aggregate(tab, tt.a, tt.rows)
		if ex, ok := got.(Exact); ok {
			got = ex.V
		}
		if w, ok := got.(Within); ok {
			got = w.V
		}
		if !Equal(got, tt.want) {
			t.Errorf("%s over rows %v = %s, want %s", tt.a.SQL(), tt.rows, show1(got), show1(tt.want))
		}
	}
}

func TestGroupByWindows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	tab := &Table{Schema: schema, Rows: [][]any{{int64(1), int64(-1)}, {nil, int64(700)}, {int64(1), int64(499)}}}
	got := GroupBy(tab, GroupWindow{Keys: []string{"k"}, Time: "ts", Size: 1000, Slide: 500}, []Agg{{Func: "count"}})
	want := [][]any{
		{int64(1), int64(-1000), int64(0), int64(1)},
		{int64(1), int64(-500), int64(500), int64(2)},
		{nil, int64(0), int64(1000), int64(1)},
		{int64(1), int64(0), int64(1000), int64(1)},
		{nil, int64(500), int64(1500), int64(1)},
	}
	var rows [][]any
	for _, r := range got {
		rows = append(rows, r.Values)
	}
	if d := Diff([]string{"k", "start", "end", "n"}, rows, want, func(int) string { return "" }); d != "" {
		t.Error(d)
	}
}
