package agg

import (
	"cmp"
	"math"
	"slices"
)

func oracleTop(c, k int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vals := nonNull(r, c, rows)
		slices.SortStableFunc(vals, func(a, b any) int {
			switch {
			case lessAny(b, a):
				return -1
			case lessAny(a, b):
				return 1
			}
			return 0
		})
		out := []any{}
		for i := 0; i < len(vals) && i < k; i++ {
			out = append(out, vals[i])
		}
		return out
	}
}

type valCount struct {
	v any
	n int64
}

func countValues(vals []any) []valCount {
	var out []valCount
	for _, v := range vals {
		found := false
		for i := range out {
			if distinctKey(out[i].v) == distinctKey(v) {
				out[i].n++
				found = true
			}
		}
		if !found {
			out = append(out, valCount{v, 1})
		}
	}
	return out
}

func oracleTopN(c, k int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vc := countValues(nonNull(r, c, rows))
		slices.SortFunc(vc, func(a, b valCount) int {
			if a.n != b.n {
				return cmp.Compare(b.n, a.n)
			}
			if lessAny(a.v, b.v) {
				return -1
			}
			return 1
		})
		out := []any{}
		for i := 0; i < len(vc) && i < k; i++ {
			out = append(out, []any{vc[i].v, vc[i].n})
		}
		return out
	}
}

func oracleTop1(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vals := nonNull(r, c, rows)
		if len(vals) == 0 {
			return 0.0
		}
		var best int64
		for _, e := range countValues(vals) {
			best = max(best, e.n)
		}
		return float64(best) / float64(len(vals))
	}
}

// whereRows keeps the rows whose condition is TRUE.
func whereRows(r *Rows, cond int, rows []int64) []int64 {
	var out []int64
	for _, a := range rows {
		if v := colValue(r, cond, a); v == true {
			out = append(out, a)
		}
	}
	return out
}

func oracleWhere(base func(r *Rows, rows []int64) any, cond int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any { return base(r, whereRows(r, cond, rows)) }
}

func oracleCate(base func(r *Rows, rows []int64) any, x, g, cond int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		if cond >= 0 {
			rows = whereRows(r, cond, rows)
		}
		var keys []any
		groups := map[any][]int64{}
		for _, a := range rows {
			k := colValue(r, g, a)
			if k == nil || colValue(r, x, a) == nil {
				continue
			}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], a)
		}
		slices.SortFunc(keys, func(a, b any) int {
			if lessAny(a, b) {
				return -1
			}
			return 1
		})
		out := [][2]any{}
		for _, k := range keys {
			out = append(out, [2]any{k, base(r, groups[k])})
		}
		return out
	}
}

func oracleEwAvg(c int, alpha float64) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vals := slices.DeleteFunc(floats(nonNull(r, c, rows)), math.IsNaN)
		if len(vals) == 0 {
			return nil
		}
		var s, w float64
		wt := 1.0
		for i := len(vals) - 1; i >= 0; i-- {
			s += wt * vals[i]
			w += wt
			wt *= 1 - alpha
		}
		return s / w
	}
}

func oracleDrawdown(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		var vals []float64
		for _, v := range floats(nonNull(r, c, rows)) {
			if v >= 0 {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return nil
		}
		best := 0.0
		for i := range vals {
			for j := i + 1; j < len(vals); j++ {
				if vals[i] > 0 && vals[j] < vals[i] {
					best = math.Max(best, (vals[i]-vals[j])/vals[i])
				}
			}
		}
		return best
	}
}

func oraclePercentile(c int, q float64) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vals := floats(nonNull(r, c, rows))
		if len(vals) == 0 {
			return nil
		}
		slices.SortFunc(vals, floatCmp) // NaN last, as in DuckDB
		p := q * float64(len(vals)-1)
		i := int(math.Floor(p))
		// As DuckDB's quantile_cont: no interpolation at an exact rank
		// (0·Inf would make it NaN).
		if frac := p - float64(i); frac > 0 && i+1 < len(vals) {
			return vals[i] + frac*(vals[i+1]-vals[i])
		}
		return vals[i]
	}
}

func mlCases() []aggCase {
	var cases []aggCase
	for _, c := range []int{colInt, colFloat, colStr, colBool, colTs, colU64, colUBig} {
		for _, k := range []int{1, 3} {
			cases = append(cases,
				aggCase{name: "top", args: []Arg{colArg(c), constArg(int64(k))}, oracle: oracleTop(c, k)},
				aggCase{name: "topn_frequency", args: []Arg{colArg(c), constArg(int64(k))}, oracle: oracleTopN(c, k)},
			)
		}
		cases = append(cases,
			aggCase{name: "top1_ratio", args: []Arg{colArg(c)}, oracle: oracleTop1(c)},
			aggCase{name: "approx_count_distinct", args: []Arg{colArg(c)}, oracle: oracleCountDistinct(c)},
		)
	}
	cases = append(cases,
		aggCase{name: "count_where", args: []Arg{starArg(), colArg(colCond)}, oracle: oracleWhere(oracleCount(-1), colCond)},
		aggCase{name: "count_where", args: []Arg{colArg(colStr), colArg(colCond)}, oracle: oracleWhere(oracleCount(colStr), colCond)},
		aggCase{name: "sum_where", args: []Arg{colArg(colInt), colArg(colCond)}, oracle: oracleWhere(oracleSum(colInt), colCond)},
		aggCase{name: "sum_where", args: []Arg{colArg(colFloat), colArg(colCond)}, oracle: oracleWhere(oracleSum(colFloat), colCond)},
		aggCase{name: "sum_where", args: []Arg{colArg(colBig), colArg(colCond)}, oracle: oracleWhere(oracleSum(colBig), colCond)},
		aggCase{name: "avg_where", args: []Arg{colArg(colFloat), colArg(colCond)}, oracle: oracleWhere(oracleAvg(colFloat), colCond)},
		aggCase{name: "min_where", args: []Arg{colArg(colInt), colArg(colCond)}, oracle: oracleWhere(oracleExtremum(colInt, false), colCond)},
		aggCase{name: "max_where", args: []Arg{colArg(colStr), colArg(colCond)}, oracle: oracleWhere(oracleExtremum(colStr, true), colCond)},
		aggCase{name: "sum_where", args: []Arg{colArg(colUBig), colArg(colCond)}, oracle: oracleWhere(oracleSum(colUBig), colCond)},
		aggCase{name: "avg_where", args: []Arg{colArg(colUBig), colArg(colCond)}, oracle: oracleWhere(oracleAvg(colUBig), colCond)},
		aggCase{name: "min_where", args: []Arg{colArg(colUBig), colArg(colCond)}, oracle: oracleWhere(oracleExtremum(colUBig, false), colCond)},
		aggCase{name: "max_where", args: []Arg{colArg(colUBig), colArg(colCond)}, oracle: oracleWhere(oracleExtremum(colUBig, true), colCond)},
	)
	for _, g := range []int{colCat, colCatInt, colBool} {
		for _, cond := range []int{-1, colCond} {
			suffix := "_cate"
			args := func(x int) []Arg { return []Arg{colArg(x), colArg(g)} }
			if cond >= 0 {
				suffix = "_cate_where"
				args = func(x int) []Arg { return []Arg{colArg(x), colArg(cond), colArg(g)} }
			}
			cases = append(cases,
				aggCase{name: "count" + suffix, args: args(colStr), oracle: oracleCate(oracleCount(colStr), colStr, g, cond)},
				aggCase{name: "sum" + suffix, args: args(colInt), oracle: oracleCate(oracleSum(colInt), colInt, g, cond)},
				aggCase{name: "sum" + suffix, args: args(colFloat), oracle: oracleCate(oracleSum(colFloat), colFloat, g, cond)},
				aggCase{name: "sum" + suffix, args: args(colBig), oracle: oracleCate(oracleSum(colBig), colBig, g, cond)},
				aggCase{name: "avg" + suffix, args: args(colFloat), oracle: oracleCate(oracleAvg(colFloat), colFloat, g, cond)},
				aggCase{name: "min" + suffix, args: args(colFloat), oracle: oracleCate(oracleExtremum(colFloat, false), colFloat, g, cond)},
				aggCase{name: "max" + suffix, args: args(colTs), oracle: oracleCate(oracleExtremum(colTs, true), colTs, g, cond)},
				aggCase{name: "sum" + suffix, args: args(colUBig), oracle: oracleCate(oracleSum(colUBig), colUBig, g, cond)},
				aggCase{name: "avg" + suffix, args: args(colUBig), oracle: oracleCate(oracleAvg(colUBig), colUBig, g, cond)},
				aggCase{name: "min" + suffix, args: args(colUBig), oracle: oracleCate(oracleExtremum(colUBig, false), colUBig, g, cond)},
				aggCase{name: "max" + suffix, args: args(colUBig), oracle: oracleCate(oracleExtremum(colUBig, true), colUBig, g, cond)},
			)
		}
	}
	// uint64 categories, keys in unsigned order.
	cases = append(cases,
		aggCase{name: "sum_cate", args: []Arg{colArg(colInt), colArg(colUBig)}, oracle: oracleCate(oracleSum(colInt), colInt, colUBig, -1)},
		aggCase{name: "max_cate_where", args: []Arg{colArg(colUBig), colArg(colCond), colArg(colUBig)}, oracle: oracleCate(oracleExtremum(colUBig, true), colUBig, colUBig, colCond)},
	)
	for _, c := range []int{colInt, colFloat, colU64, colUBig} {
		for _, alpha := range []float64{0.1, 0.5, 1} {
			cases = append(cases, aggCase{name: "ew_avg", args: []Arg{colArg(c), constArg(alpha)}, oracle: oracleEwAvg(c, alpha), ordered: true})
		}
		for _, q := range []float64{0, 0.25, 0.5, 0.9, 1} {
			cases = append(cases, aggCase{name: "approx_percentile", args: []Arg{colArg(c), constArg(q)}, oracle: oraclePercentile(c, q)})
		}
		cases = append(cases, aggCase{name: "drawdown", args: []Arg{colArg(c)}, oracle: oracleDrawdown(c), ordered: true})
	}
	cases = append(cases, aggCase{name: "drawdown", args: []Arg{colArg(colDrift)}, oracle: oracleDrawdown(colDrift), ordered: true})
	return cases
}

func mlBenchCases() []struct {
	name string
	fn   string
	args []Arg
} {
	return []struct {
		name string
		fn   string
		args []Arg
	}{
		{"top3_float", "top", []Arg{colArg(colFloat), constArg(int64(3))}},
		{"topn_frequency3_str", "topn_frequency", []Arg{colArg(colStr), constArg(int64(3))}},
		{"top1_ratio_int", "top1_ratio", []Arg{colArg(colInt)}},
		{"sum_cate_float", "sum_cate", []Arg{colArg(colFloat), colArg(colCat)}},
		{"ew_avg", "ew_avg", []Arg{colArg(colFloat), constArg(0.1)}},
		{"drawdown", "drawdown", []Arg{colArg(colFloat)}},
		{"approx_percentile", "approx_percentile", []Arg{colArg(colFloat), constArg(0.9)}},
	}
}
