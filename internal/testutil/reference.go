package testutil

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Frame is a window frame as SPEC section 3 defines it.
type Frame struct {
	// Rows measures Preceding in rows (ROWS BETWEEN n PRECEDING AND
	// CURRENT ROW); otherwise the frame is a RANGE in milliseconds.
	Rows bool
	// Unbounded is RANGE BETWEEN UNBOUNDED PRECEDING.
	Unbounded bool
	// Preceding is the frame start: ms (RANGE) or rows (ROWS).
	Preceding int64
	// EndPreceding is the frame end in ms before the current row; 0 is
	// CURRENT ROW with its peers.
	EndPreceding int64
	// ExcludeCurrent is EXCLUDE CURRENT ROW.
	ExcludeCurrent bool
}

// SQL renders the frame in the Volga dialect.
func (f Frame) SQL() string {
	var s string
	end := "CURRENT ROW"
	if f.EndPreceding > 0 {
		end = fmt.Sprintf("INTERVAL '%d' MILLISECOND PRECEDING", f.EndPreceding)
	}
	switch {
	case f.Rows:
		s = fmt.Sprintf("ROWS BETWEEN %d PRECEDING AND CURRENT ROW", f.Preceding)
	case f.Unbounded:
		s = "RANGE BETWEEN UNBOUNDED PRECEDING AND " + end
	default:
		s = fmt.Sprintf("RANGE BETWEEN INTERVAL '%d' MILLISECOND PRECEDING AND %s", f.Preceding, end)
	}
	if f.ExcludeCurrent {
		s += " EXCLUDE CURRENT ROW"
	}
	return s
}

// String is SQL.
func (f Frame) String() string { return f.SQL() }

// Frames is one frame of every kind the dialect has, with and without
// EXCLUDE CURRENT ROW, sized for the StepMs of DefaultEvents.
var Frames = []Frame{
	{Preceding: 2000},
	{Preceding: 2000, ExcludeCurrent: true},
	{Preceding: 1}, // the current row's peers and rows 1 ms older
	{Preceding: 5000, EndPreceding: 1000},
	{Preceding: 5000, EndPreceding: 1000, ExcludeCurrent: true},
	{Preceding: 1000, EndPreceding: 1000}, // only the rows exactly 1 s older
	{Unbounded: true},
	{Unbounded: true, ExcludeCurrent: true},
	{Unbounded: true, EndPreceding: 1500},
	{Rows: true, Preceding: 3},
	{Rows: true, Preceding: 0},
	{Rows: true, Preceding: 2, ExcludeCurrent: true},
}

// Agg is an aggregate call: a function of SPEC section 4 over a column
// (Arg "" is the * of count(*) and count_where(*, c)), with the extra
// arguments of the ML-oriented functions.
type Agg struct {
	Func string
	Arg  string
	// Cond is the boolean condition column of the _where and _cate_where
	// functions.
	Cond string
	// Cate is the category column of the _cate and _cate_where functions.
	Cate string
	// Param is the constant last argument: k (int64) of top and
	// topn_frequency, alpha (float64) of ew_avg, q (float64) of
	// approx_percentile; nil for none.
	Param any
}

// args lists the call's argument texts in SQL order: (x, c, g, param).
func (a Agg) args() []string {
	arg := a.Arg
	if arg == "" {
		arg = "*"
	}
	out := []string{arg}
	if a.Cond != "" {
		out = append(out, a.Cond)
	}
	if a.Cate != "" {
		out = append(out, a.Cate)
	}
	if a.Param != nil {
		out = append(out, paramText(a.Param))
	}
	return out
}

func paramText(v any) string {
	if f, ok := v.(float64); ok {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return fmt.Sprint(v)
}

// SQL renders the call, e.g. "sum(amount)" or "sum_cate_where(price, flag,
// category)".
func (a Agg) SQL() string { return a.Func + "(" + strings.Join(a.args(), ", ") + ")" }

// Name is a column name for the call, e.g. "sum_amount" or
// "top_amount_3".
func (a Agg) Name() string {
	parts := a.args()
	if parts[0] == "*" {
		parts[0] = "all"
	}
	n := a.Func + "_" + strings.Join(parts, "_")
	return strings.NewReplacer(".", "p", "-", "m").Replace(n)
}

// StandardAggs covers every standard aggregate over the int, float and
// string columns of EventSchema.
var StandardAggs = []Agg{
	{Func: "count"}, {Func: "count", Arg: "amount"}, {Func: "count", Arg: "category"},
	{Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"},
	{Func: "avg", Arg: "amount"}, {Func: "avg", Arg: "price"},
	{Func: "min", Arg: "amount"}, {Func: "max", Arg: "amount"}, {Func: "min", Arg: "price"}, {Func: "max", Arg: "price"},
	{Func: "min", Arg: "category"}, {Func: "max", Arg: "category"},
	{Func: "var_samp", Arg: "amount"}, {Func: "var_pop", Arg: "price"}, {Func: "stddev_samp", Arg: "price"}, {Func: "stddev_pop", Arg: "amount"},
	{Func: "var_samp", Arg: "price"}, {Func: "stddev_samp", Arg: "amount"},
	{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "amount"},
	{Func: "first_value", Arg: "category"}, {Func: "last_value", Arg: "price"},
	{Func: "count_distinct", Arg: "category"}, {Func: "count_distinct", Arg: "amount"}, {Func: "count_distinct", Arg: "price"},
}

// Window is a keyed sliding window.
type Window struct {
	Keys  []string
	Time  string
	Frame Frame
}

// Compute returns, for every row of t (row order is arrival order), the
// value of each aggregate over the row's frame, by definition: the rows of
// the row's key are ordered by (event time, arrival), the frame is cut
// from them, and each aggregate is computed from scratch.
func Compute(t *Table, w Window, aggs []Agg) [][]any {
	all := make([]int, len(t.Rows))
	for i := range all {
		all[i] = i
	}
	out := make([][]any, len(t.Rows))
	for _, rows := range partition(t, w, all) {
		for p, i := range rows {
			out[i] = evalFrame(t, w, rows, p, aggs)
		}
	}
	return out
}

// EvalAt returns the aggregates of row target over the rows of t listed in
// rows (in arrival order; target among them): the values a row gets when
// only those rows have been accepted.
func EvalAt(t *Table, w Window, aggs []Agg, rows []int, target int) []any {
	kc := make([]int, len(w.Keys))
	for j, k := range w.Keys {
		kc[j] = t.Col(k)
	}
	key := KeyString(t.Rows[target], kc)
	var same []int
	for _, i := range rows {
		if KeyString(t.Rows[i], kc) == key {
			same = append(same, i)
		}
	}
	for _, part := range partition(t, w, same) {
		if p := slices.Index(part, target); p >= 0 {
			return evalFrame(t, w, part, p, aggs)
		}
	}
	panic(fmt.Sprintf("testutil: row %d is not among the rows", target))
}

// partition groups rows by key, each group in (event time, arrival) order.
func partition(t *Table, w Window, rows []int) [][]int {
	kc := make([]int, len(w.Keys))
	for j, k := range w.Keys {
		kc[j] = t.Col(k)
	}
	tc := t.Col(w.Time)
	arrival := make(map[int]int, len(rows))
	groups := map[string][]int{}
	var order []string
	for pos, i := range rows {
		arrival[i] = pos
		k := KeyString(t.Rows[i], kc)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([][]int, 0, len(groups))
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b int) int {
			ta, tb := t.Rows[a][tc].(int64), t.Rows[b][tc].(int64)
			if ta != tb {
				return cmpInt(ta, tb)
			}
			return arrival[a] - arrival[b]
		})
		out = append(out, g)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// evalFrame computes the aggregates of the row at position p of part (one
// key's rows in (ts, arrival) order).
func evalFrame(t *Table, w Window, part []int, p int, aggs []Agg) []any {
	f, tc := w.Frame, t.Col(w.Time)
	ts := func(i int) int64 { return t.Rows[i][tc].(int64) }
	cur := part[p]
	now := ts(cur)
	var frame []int
	for q, i := range part {
		var in bool
		switch {
		case f.Rows:
			in = q <= p && q >= p-int(f.Preceding)
		case f.Unbounded:
			in = ts(i) <= now-f.EndPreceding
		default:
			in = ts(i) >= now-f.Preceding && ts(i) <= now-f.EndPreceding
		}
		if in && !(f.ExcludeCurrent && i == cur) {
			frame = append(frame, i)
		}
	}
	out := make([]any, len(aggs))
	for k, a := range aggs {
		out[k] = Aggregate(t, a, frame)
	}
	return out
}

// Aggregate computes a over the listed rows of t (in frame order) by
// definition. Results are int64, float64, string or nil (NULL) for the
// standard aggregates; see mlAggregate for the ML-oriented ones.
func Aggregate(t *Table, a Agg, rows []int) any {
	if v, ok := mlAggregate(t, a, rows); ok {
		return v
	}
	if a.Func == "count" && a.Arg == "" {
		return int64(len(rows))
	}
	c := t.Col(a.Arg)
	var vals []any // non-NULL values in frame order
	for _, i := range rows {
		if v := t.Rows[i][c]; v != nil {
			vals = append(vals, v)
		}
	}
	switch a.Func {
	case "count":
		return int64(len(vals))
	case "count_distinct":
		seen := map[any]bool{}
		for _, v := range vals {
			seen[canonKey(v)] = true
		}
		return int64(len(seen))
	case "first_value", "last_value":
		if len(rows) == 0 {
			return nil
		}
		if a.Func == "first_value" {
			return t.Rows[rows[0]][c]
		}
		return t.Rows[rows[len(rows)-1]][c]
	}
	if len(vals) == 0 {
		return nil
	}
	switch a.Func {
	case "min", "max":
		best := vals[0]
		for _, v := range vals[1:] {
			if c := compare(v, best); a.Func == "min" && c < 0 || a.Func == "max" && c > 0 {
				best = v
			}
		}
		return best
	case "sum":
		if _, ok := vals[0].(float64); !ok {
			// Exact; NULL when the sum does not fit in BIGINT (SPEC's sum).
			s := new(big.Int)
			for _, v := range vals {
				s.Add(s, bigInt(v))
			}
			if !s.IsInt64() {
				return nil
			}
			return s.Int64()
		}
		if v, ok := nonFiniteSum(vals); ok {
			return v
		}
		f, _ := exactSum(vals, false).Float64()
		return f
	case "avg":
		if v, ok := nonFiniteSum(vals); ok {
			return v
		}
		s := exactSum(vals, false)
		f, _ := s.Quo(s, newFloat().SetInt64(int64(len(vals)))).Float64()
		return f
	case "var_samp", "var_pop", "stddev_samp", "stddev_pop", "variance", "stddev":
		samp := !strings.HasSuffix(a.Func, "_pop")
		n := int64(len(vals))
		if samp && n < 2 {
			return nil
		}
		if _, ok := nonFiniteSum(vals); ok {
			return math.NaN() // x - mean is NaN for an infinite or NaN x
		}
		// (n*Σx² - (Σx)²) / (n² or n(n-1)), with exact sums.
		s, s2 := exactSum(vals, false), exactSum(vals, true)
		num := newFloat().Mul(s2, newFloat().SetInt64(n))
		num.Sub(num, newFloat().Mul(s, s))
		den := n * n
		if samp {
			den = n * (n - 1)
		}
		v, _ := num.Quo(num, newFloat().SetInt64(den)).Float64()
		if strings.HasPrefix(a.Func, "stddev") {
			return math.Sqrt(v)
		}
		return v
	}
	panic(fmt.Sprintf("testutil: no reference for aggregate %q", a.Func))
}

// precision of the reference's sums: exact for the sums of float64
// values (and their squares) of any sensible magnitude span.
const precision = 1024

func newFloat() *big.Float { return new(big.Float).SetPrec(precision) }

// exactSum is the sum of the values (or of their squares), exact at the
// reference's precision.
func exactSum(vals []any, squares bool) *big.Float {
	s, x := newFloat(), newFloat()
	for _, v := range vals {
		switch v := v.(type) {
		case int64:
			x.SetInt64(v)
		case uint64:
			x.SetUint64(v)
		case float64:
			x.SetFloat64(v)
		default:
			panic(fmt.Sprintf("testutil: sum of non-number %T", v))
		}
		if squares {
			x.Mul(x, x)
		}
		s.Add(s, x)
	}
	return s
}

// bigInt is an integer value (int64 or uint64) as a big.Int.
func bigInt(v any) *big.Int {
	switch v := v.(type) {
	case int64:
		return big.NewInt(v)
	case uint64:
		return new(big.Int).SetUint64(v)
	}
	panic(fmt.Sprintf("testutil: %T is not an integer", v))
}

// nonFiniteSum is the IEEE sum of float values when one of them is NaN
// or infinite: NaN with a NaN or with both infinities, else the infinity;
// ok is false when every value is finite (or the values are integers).
func nonFiniteSum(vals []any) (v float64, ok bool) {
	var nan, pos, neg bool
	for _, x := range vals {
		f, isFloat := x.(float64)
		switch {
		case !isFloat:
			return 0, false
		case math.IsNaN(f):
			nan = true
		case math.IsInf(f, 1):
			pos = true
		case math.IsInf(f, -1):
			neg = true
		}
	}
	switch {
	case nan || pos && neg:
		return math.NaN(), true
	case pos:
		return math.Inf(1), true
	case neg:
		return math.Inf(-1), true
	}
	return 0, false
}

// canonKey is v as a map key under SQL equality: -0 is 0 and every NaN
// one value (a Go map has NaN keys all different).
func canonKey(v any) any {
	if f, ok := v.(float64); ok {
		switch {
		case f == 0:
			return 0.0
		case math.IsNaN(f):
			return nanKey{}
		}
	}
	return v
}

// nanKey stands for NaN in maps keyed by canonKey.
type nanKey struct{}

// compare orders two non-NULL values of one type; floats as SQL engines
// (DuckDB, PostgreSQL) order them: NaN above +Inf and equal to itself, -0
// equal to 0.
func compare(a, b any) int {
	switch a := a.(type) {
	case int64:
		return cmpInt(a, b.(int64))
	case uint64:
		return cmp.Compare(a, b.(uint64))
	case float64:
		b := b.(float64)
		an, bn := math.IsNaN(a), math.IsNaN(b)
		switch {
		case an || bn:
			return cmpInt(b2i(an), b2i(bn))
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	case string:
		return strings.Compare(a, b.(string))
	case bool:
		return cmpInt(b2i(a), b2i(b.(bool)))
	}
	panic(fmt.Sprintf("testutil: cannot compare %T", a))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
