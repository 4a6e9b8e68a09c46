package testutil

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/sink"
)

// MLEventSchema is EventSchema plus the columns the ML-oriented aggregates
// need: a nullable boolean condition (flag), an integer category with many
// values (tag), and a float with a small value domain, negative values and
// zeros (score: frequency ties, drawdown peaks and troughs).
var MLEventSchema = arrow.NewSchema(append(EventSchema.Fields(),
	arrow.Field{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	arrow.Field{Name: "tag", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
), nil)

// MLTags is the number of distinct tag values MLEvents draws from.
const MLTags = 40

// MLEvents generates events as Events does, with the extra columns of
// MLEventSchema: flag TRUE 40% of the time, tag in [0, MLTags), score a
// multiple of 0.5 in [-1, 5]; each NULL with probability cfg.NullRate.
func MLEvents(rng *rand.Rand, cfg EventConfig) *Table {
	t := Events(rng, cfg)
	t.Schema = MLEventSchema
	maybe := func(v any) any {
		if rng.Float64() < cfg.NullRate {
			return nil
		}
		return v
	}
	for i, r := range t.Rows {
		t.Rows[i] = append(r,
			maybe(rng.Float64() < 0.4),
			maybe(int64(rng.IntN(MLTags))),
			maybe(float64(rng.IntN(13)-2)/2),
		)
	}
	return t
}

// MLAggs calls every ML-oriented aggregate of SPEC section 4 over the
// columns of MLEventSchema, each on several argument types.
var MLAggs = []Agg{
	{Func: "top", Arg: "amount", Param: int64(3)},
	{Func: "top", Arg: "category", Param: int64(2)},
	{Func: "top", Arg: "score", Param: int64(1)},
	{Func: "topn_frequency", Arg: "category", Param: int64(3)},
	{Func: "topn_frequency", Arg: "score", Param: int64(2)},
	{Func: "topn_frequency", Arg: "tag", Param: int64(4)},
	{Func: "topn_frequency", Arg: "flag", Param: int64(1)},
	{Func: "top1_ratio", Arg: "category"},
	{Func: "top1_ratio", Arg: "score"},
	{Func: "top1_ratio", Arg: "tag"},
	{Func: "count_where", Cond: "flag"},
	{Func: "count_where", Arg: "price", Cond: "flag"},
	{Func: "sum_where", Arg: "amount", Cond: "flag"},
	{Func: "sum_where", Arg: "price", Cond: "flag"},
	{Func: "avg_where", Arg: "amount", Cond: "flag"},
	{Func: "avg_where", Arg: "price", Cond: "flag"},
	{Func: "min_where", Arg: "price", Cond: "flag"},
	{Func: "max_where", Arg: "category", Cond: "flag"},
	{Func: "count_cate", Arg: "amount", Cate: "category"},
	{Func: "sum_cate", Arg: "amount", Cate: "tag"},
	{Func: "sum_cate", Arg: "price", Cate: "category"},
	{Func: "avg_cate", Arg: "price", Cate: "merchant"},
	{Func: "min_cate", Arg: "category", Cate: "tag"},
	{Func: "max_cate", Arg: "score", Cate: "flag"},
	{Func: "count_cate_where", Arg: "price", Cond: "flag", Cate: "category"},
	{Func: "sum_cate_where", Arg: "amount", Cond: "flag", Cate: "merchant"},
	{Func: "avg_cate_where", Arg: "score", Cond: "flag", Cate: "tag"},
	{Func: "min_cate_where", Arg: "amount", Cond: "flag", Cate: "category"},
	{Func: "max_cate_where", Arg: "price", Cond: "flag", Cate: "category"},
	{Func: "ew_avg", Arg: "price", Param: 0.3},
	{Func: "ew_avg", Arg: "amount", Param: 1.0},
	{Func: "drawdown", Arg: "score"},
	{Func: "drawdown", Arg: "amount"},
	{Func: "approx_percentile", Arg: "price", Param: 0.5},
	{Func: "approx_percentile", Arg: "amount", Param: 0.9},
	{Func: "approx_percentile", Arg: "score", Param: 0.0},
	{Func: "approx_percentile", Arg: "score", Param: 1.0},
	{Func: "approx_count_distinct", Arg: "category"},
	{Func: "approx_count_distinct", Arg: "price"},
	{Func: "approx_count_distinct", Arg: "tag"},
}

// Exact is a reference value that the engine must reproduce bit for bit
// (approx_percentile over few values: the same interpolation formula on
// the same two neighbours).
type Exact struct{ V float64 }

func (e Exact) String() string { return fmt.Sprintf("%v (exactly)", e.V) }

// Within is a reference value with the absolute error bound the engine may
// have (ew_avg: rounding relative to the magnitude of the weighted terms,
// which can cancel).
type Within struct{ V, Tol float64 }

func (w Within) String() string { return fmt.Sprintf("%v ± %.3g", w.V, w.Tol) }

// mlAggregate computes the ML-oriented aggregates (SPEC section 4) over
// the rows of t (in frame order, that is (ts, arrival) order) by
// definition. Lists are []any (topn_frequency entries map[string]any with
// keys value and count, as sink.Value renders structs), maps
// []sink.MapEntry in ascending key order; ok is false for other functions.
func mlAggregate(t *Table, a Agg, rows []int) (v any, ok bool) {
	if base, found := strings.CutSuffix(a.Func, "_cate_where"); found {
		return cate(t, base, a.Arg, a.Cate, filterCond(t, a.Cond, rows)), true
	}
	if base, found := strings.CutSuffix(a.Func, "_cate"); found {
		return cate(t, base, a.Arg, a.Cate, rows), true
	}
	if base, found := strings.CutSuffix(a.Func, "_where"); found {
		return Aggregate(t, Agg{Func: base, Arg: a.Arg}, filterCond(t, a.Cond, rows)), true
	}
	var vals []any // non-NULL values of the argument, in frame order
	if a.Arg != "" {
		c := t.Col(a.Arg)
		for _, i := range rows {
			if v := t.Rows[i][c]; v != nil {
				vals = append(vals, v)
			}
		}
	}
	switch a.Func {
	case "top":
		sorted := slices.Clone(vals)
		slices.SortStableFunc(sorted, func(x, y any) int { return compare(y, x) })
		out := []any{}
		for i := 0; i < len(sorted) && i < int(a.Param.(int64)); i++ {
			out = append(out, sorted[i])
		}
		return out, true
	case "topn_frequency":
		vc := frequencies(vals)
		out := []any{}
		for i := 0; i < len(vc) && i < int(a.Param.(int64)); i++ {
			out = append(out, map[string]any{"value": vc[i].v, "count": vc[i].n})
		}
		return out, true
	case "top1_ratio":
		if len(vals) == 0 {
			return 0.0, true
		}
		return float64(frequencies(vals)[0].n) / float64(len(vals)), true
	case "approx_count_distinct":
		return int64(len(frequencies(vals))), true
	case "ew_avg":
		xs := slices.DeleteFunc(toFloats(vals), math.IsNaN) // NaN is missing, as in pandas
		return ewAvg(xs, a.Param.(float64)), true
	case "drawdown":
		return drawdown(toFloats(vals)), true
	case "approx_percentile":
		return quantileCont(toFloats(vals), a.Param.(float64)), true
	}
	return nil, false
}

// filterCond keeps the rows whose cond column is TRUE (NULL is not).
func filterCond(t *Table, cond string, rows []int) []int {
	c := t.Col(cond)
	var out []int
	for _, i := range rows {
		if t.Rows[i][c] == true {
			out = append(out, i)
		}
	}
	return out
}

// cate computes the base aggregate of x per distinct non-NULL category g
// over the rows with non-NULL g and x, keys ascending.
func cate(t *Table, base, x, g string, rows []int) []sink.MapEntry {
	gc, xc := t.Col(g), t.Col(x)
	groups := map[any][]int{}
	var keys []any
	for _, i := range rows {
		k, v := t.Rows[i][gc], t.Rows[i][xc]
		if k == nil || v == nil {
			continue
		}
		if _, seen := groups[canonKey(k)]; !seen {
			keys = append(keys, k)
		}
		groups[canonKey(k)] = append(groups[canonKey(k)], i)
	}
	slices.SortFunc(keys, compare)
	out := []sink.MapEntry{}
	for _, k := range keys {
		out = append(out, sink.MapEntry{Key: k, Value: Aggregate(t, Agg{Func: base, Arg: x}, groups[canonKey(k)])})
	}
	return out
}

type valCount struct {
	v any
	n int64
}

// frequencies counts the values: count descending, ties by value
// ascending. Floats count under SQL equality (see canonKey): -0 as 0,
// every NaN as one value.
func frequencies(vals []any) []valCount {
	counts := map[any]int64{}
	first := map[any]any{}
	for _, v := range vals {
		k := canonKey(v)
		if _, ok := first[k]; !ok {
			first[k] = v
			if f, ok := v.(float64); ok && f == 0 {
				first[k] = 0.0
			}
		}
		counts[k]++
	}
	out := make([]valCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, valCount{first[k], n})
	}
	slices.SortFunc(out, func(x, y valCount) int {
		if x.n != y.n {
			return cmp.Compare(y.n, x.n)
		}
		return compare(x.v, y.v)
	})
	return out
}

func toFloats(vals []any) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			out[i] = float64(v)
		case uint64:
			out[i] = float64(v)
		case float64:
			out[i] = v
		default:
			panic(fmt.Sprintf("testutil: %T is not a number", v))
		}
	}
	return out
}

// ewAvg is Σ w_i x_i / Σ w_i with w_i = (1-alpha)^i, i = 0 for the last
// (newest) value; nil when there are none. The sums are exact; the bound
// allows the engine rounding errors relative to Σ w_i |x_i| / Σ w_i.
func ewAvg(xs []float64, alpha float64) any {
	if len(xs) == 0 {
		return nil
	}
	num, den, mag := newFloat(), newFloat(), newFloat()
	w := newFloat().SetFloat64(1)
	decay := newFloat().SetFloat64(1 - alpha)
	for i := len(xs) - 1; i >= 0; i-- {
		x := newFloat().SetFloat64(xs[i])
		num.Add(num, newFloat().Mul(w, x))
		mag.Add(mag, newFloat().Mul(w, x.Abs(x)))
		den.Add(den, w)
		w.Mul(w, decay)
	}
	v, _ := num.Quo(num, den).Float64()
	scale, _ := mag.Quo(mag, den).Float64()
	return Within{V: v, Tol: max(RelTol*math.Abs(v), 1e-12*scale, AbsTol)}
}

// drawdown is the largest (peak - trough) / peak over a peak and a later
// trough among the values >= 0, by trying every pair; 0 for a single value
// or no drop, nil for none.
func drawdown(xs []float64) any {
	var vals []float64
	for _, x := range xs {
		if x >= 0 {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	best := 0.0
	for i, peak := range vals {
		for _, trough := range vals[i+1:] {
			if peak > 0 && trough < peak {
				best = max(best, (peak-trough)/peak)
			}
		}
	}
	return best
}

// quantileCont is DuckDB's quantile_cont: with the n values sorted and
// p = q(n-1), v[⌊p⌋] + (p-⌊p⌋)(v[⌊p⌋+1] - v[⌊p⌋]); nil for none.
func quantileCont(xs []float64, q float64) any {
	if len(xs) == 0 {
		return nil
	}
	v := slices.Clone(xs)
	slices.SortFunc(v, func(a, b float64) int { return compare(a, b) })
	p := q * float64(len(v)-1)
	lo := math.Floor(p)
	i := int(lo)
	if p == lo || i+1 >= len(v) {
		return Exact{v[i]}
	}
	return Exact{v[i] + (p-lo)*(v[i+1]-v[i])}
}

// GroupWindow is a tumbling (Slide == Size) or hopping window of SPEC
// section 5, GROUP BY Keys, in milliseconds.
type GroupWindow struct {
	Keys        []string
	Time        string
	Size, Slide int64
}

// GroupRow is one output row of a GROUP BY query: its window, the arrival
// position of the window's first row, and the values (keys...,
// window_start, window_end, aggregates...).
type GroupRow struct {
	Start, First int64
	Values       []any
}

// GroupBy computes by definition the rows a GROUP BY keys, tumble/hop
// query emits over the rows of t (row order is arrival order): one per
// key and window [start, start+Size) aligned to the epoch that received a
// row, ordered by window start and then by the arrival of the window's
// first row. Each window's rows are aggregated in (ts, arrival) order.
func GroupBy(t *Table, w GroupWindow, aggs []Agg) []GroupRow {
	kc := make([]int, len(w.Keys))
	for j, k := range w.Keys {
		kc[j] = t.Col(k)
	}
	tc := t.Col(w.Time)
	type win struct {
		key   string
		start int64
	}
	members := map[win][]int{}
	var order []win
	for i, r := range t.Rows {
		ts := r[tc].(int64)
		// Every start s = n*Slide with ts-Size < s <= ts.
		for s := ceilDiv(ts-w.Size+1, w.Slide) * w.Slide; s <= ts; s += w.Slide {
			k := win{KeyString(r, kc), s}
			if _, ok := members[k]; !ok {
				order = append(order, k)
			}
			members[k] = append(members[k], i)
		}
	}
	out := make([]GroupRow, 0, len(order))
	for _, k := range order {
		rows := members[k]
		first := rows[0]
		slices.SortStableFunc(rows, func(a, b int) int { return cmpInt(t.Rows[a][tc].(int64), t.Rows[b][tc].(int64)) })
		vals := make([]any, 0, len(kc)+2+len(aggs))
		for _, c := range kc {
			vals = append(vals, t.Rows[first][c])
		}
		vals = append(vals, k.start, k.start+w.Size)
		for _, a := range aggs {
			vals = append(vals, Aggregate(t, a, rows))
		}
		out = append(out, GroupRow{Start: k.start, First: int64(first), Values: vals})
	}
	slices.SortStableFunc(out, func(a, b GroupRow) int {
		if a.Start != b.Start {
			return cmpInt(a.Start, b.Start)
		}
		return cmpInt(a.First, b.First)
	})
	return out
}

// ceilDiv is ⌈a/b⌉ for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// CheckMapKeysAscending checks, in every map column of rec, that each
// map's keys are strictly ascending as stored (sink.Value sorts them, so
// a comparison of values cannot see the stored order). It returns the
// number of maps with two keys or more it checked.
func CheckMapKeysAscending(rec arrow.RecordBatch) (int, error) {
	checked := 0
	for c, col := range rec.Columns() {
		m, ok := col.(*array.Map)
		if !ok {
			continue
		}
		keys := m.Keys()
		for i := range m.Len() {
			if m.IsNull(i) {
				continue
			}
			start, end := m.ValueOffsets(i)
			if end-start >= 2 {
				checked++
			}
			for j := start + 1; j < end; j++ {
				a, b := sink.Value(keys, int(j-1)), sink.Value(keys, int(j))
				if compare(a, b) >= 0 {
					return checked, fmt.Errorf("column %s, row %d: map keys %v then %v are not ascending",
						rec.Schema().Field(c).Name, i, a, b)
				}
			}
		}
	}
	return checked, nil
}
