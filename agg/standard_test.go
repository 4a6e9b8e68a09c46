package agg

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// nonNull returns the non-NULL values of column c over rows.
func nonNull(r *Rows, c int, rows []int64) []any {
	var out []any
	for _, a := range rows {
		if v := colValue(r, c, a); v != nil {
			out = append(out, v)
		}
	}
	return out
}

func floats(vals []any) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			out[i] = float64(v)
		case uint64:
			out[i] = float64(v)
		case float64:
			out[i] = v
		}
	}
	return out
}

// lessAny orders the Go values of one column type.
func lessAny(a, b any) bool {
	switch x := a.(type) {
	case int64:
		return x < b.(int64)
	case uint64:
		return x < b.(uint64)
	case float64:
		return floatLess(x, b.(float64)) // NaN above +Inf, as in DuckDB
	case string:
		return x < b.(string)
	case bool:
		return !x && b.(bool)
	}
	panic("lessAny")
}

// distinctKey maps a Go value to a map key under which the values SQL
// sees as equal are equal: -0 and 0 are one float value, all NaNs one.
func distinctKey(v any) any {
	if f, ok := v.(float64); ok {
		if f != f {
			return "NaN" // no float key equals NaN
		}
		return f + 0 // -0 == 0
	}
	return v
}

func oracleCount(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		if c < 0 {
			return int64(len(rows))
		}
		return int64(len(nonNull(r, c, rows)))
	}
}

func oracleCountDistinct(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		seen := map[any]bool{}
		for _, v := range nonNull(r, c, rows) {
			seen[distinctKey(v)] = true
		}
		return int64(len(seen))
	}
}

// bigInts returns vals as exact integers when they are the Go values of
// an integer column (int64, or uint64 for UBIGINT).
func bigInts(vals []any) ([]*big.Int, bool) {
	out := make([]*big.Int, 0, len(vals))
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			out = append(out, big.NewInt(x))
		case uint64:
			out = append(out, new(big.Int).SetUint64(x))
		default:
			return nil, false
		}
	}
	return out, true
}

// bigSum is the exact sum of vals.
func bigSum(vals []*big.Int) *big.Int {
	s := new(big.Int)
	for _, v := range vals {
		s.Add(s, v)
	}
	return s
}

func oracleSum(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		vals := nonNull(r, c, rows)
		if len(vals) == 0 {
			return nil
		}
		if ints, ok := bigInts(vals); ok {
			// Exact, as DuckDB sums BIGINT and UBIGINT into HUGEINT; NULL
			// beyond int64.
			s := bigSum(ints)
			if !s.IsInt64() {
				return nil
			}
			return s.Int64()
		}
		var s float64
		for _, v := range floats(vals) {
			s += v
		}
		return s
	}
}

func oracleAvg(c int) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		if ints, ok := bigInts(nonNull(r, c, rows)); ok && len(ints) > 0 {
			// Exact, then rounded once.
			q := new(big.Rat).SetFrac(bigSum(ints), big.NewInt(int64(len(ints))))
			f, _ := q.Float64()
			return f
		}
		vals := floats(nonNull(r, c, rows))
		if len(vals) == 0 {
			return nil
		}
		var s float64
		for _, v := range vals {
			s += v
		}
		return s / float64(len(vals))
	}
}

func oracleExtremum(c int, isMax bool) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		var best any
		for _, v := range nonNull(r, c, rows) {
			if best == nil || (isMax && lessAny(best, v)) || (!isMax && lessAny(v, best)) {
				best = v
			}
		}
		return best
	}
}

// oracleVariance is the two-pass formula, exact for integers.
func oracleVariance(c int, samp, sqrt bool) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		if ints, ok := bigInts(nonNull(r, c, rows)); ok {
			return exactVariance(ints, samp, sqrt)
		}
		vals := floats(nonNull(r, c, rows))
		n := float64(len(vals))
		if n == 0 || samp && n == 1 {
			return nil
		}
		var mean float64
		for _, v := range vals {
			mean += v
		}
		mean /= n
		var m2 float64
		for _, v := range vals {
			m2 += (v - mean) * (v - mean)
		}
		if samp {
			m2 /= n - 1
		} else {
			m2 /= n
		}
		if sqrt {
			m2 = math.Sqrt(m2)
		}
		return m2
	}
}

// exactVariance is the variance (its square root when sqrt) of integers,
// computed exactly as (nΣx² - (Σx)²) / (n·(n-1)) (n·n for the population)
// and rounded once (the square root of the rounded variance).
func exactVariance(vals []*big.Int, samp, sqrt bool) any {
	n := int64(len(vals))
	if n == 0 || samp && n == 1 {
		return nil
	}
	s1, s2 := new(big.Int), new(big.Int)
	for _, v := range vals {
		s1.Add(s1, v)
		s2.Add(s2, new(big.Int).Mul(v, v))
	}
	num := new(big.Int).Mul(s2, big.NewInt(n))
	num.Sub(num, new(big.Int).Mul(s1, s1))
	den := n * n
	if samp {
		den = n * (n - 1)
	}
	v, _ := new(big.Rat).SetFrac(num, big.NewInt(den)).Float64()
	if sqrt {
		v = math.Sqrt(v)
	}
	return v
}

func oracleEdge(c int, last bool) func(r *Rows, rows []int64) any {
	return func(r *Rows, rows []int64) any {
		if len(rows) == 0 {
			return nil
		}
		if last {
			return colValue(r, c, rows[len(rows)-1])
		}
		return colValue(r, c, rows[0])
	}
}

func standardCases() []aggCase {
	cases := []aggCase{
		{name: "count", args: []Arg{starArg()}, oracle: oracleCount(-1)},
		{name: "sum", args: []Arg{colArg(colInt)}, oracle: oracleSum(colInt)},
		{name: "sum", args: []Arg{colArg(colFloat)}, oracle: oracleSum(colFloat)},
		{name: "sum", args: []Arg{colArg(colI32)}, oracle: oracleSum(colI32)},
		{name: "sum", args: []Arg{colArg(colBig)}, oracle: oracleSum(colBig)},
		{name: "avg", args: []Arg{colArg(colInt)}, oracle: oracleAvg(colInt)},
		{name: "avg", args: []Arg{colArg(colFloat)}, oracle: oracleAvg(colFloat)},
		{name: "avg", args: []Arg{colArg(colDrift)}, oracle: oracleAvg(colDrift)},
		// uint64 values are unsigned: values from 2^63 up are not negative.
		{name: "sum", args: []Arg{colArg(colU64)}, oracle: oracleSum(colU64)},
		{name: "sum", args: []Arg{colArg(colUBig)}, oracle: oracleSum(colUBig)},
		{name: "avg", args: []Arg{colArg(colU64)}, oracle: oracleAvg(colU64)},
		{name: "avg", args: []Arg{colArg(colUBig)}, oracle: oracleAvg(colUBig)},
	}
	for _, c := range []int{colInt, colFloat, colStr, colBool, colTs, colI32, colU64, colUBig} {
		cases = append(cases,
			aggCase{name: "count", args: []Arg{colArg(c)}, oracle: oracleCount(c)},
			aggCase{name: "count_distinct", args: []Arg{colArg(c)}, oracle: oracleCountDistinct(c)},
			aggCase{name: "min", args: []Arg{colArg(c)}, oracle: oracleExtremum(c, false)},
			aggCase{name: "max", args: []Arg{colArg(c)}, oracle: oracleExtremum(c, true)},
			aggCase{name: "first_value", args: []Arg{colArg(c)}, oracle: oracleEdge(c, false), ordered: true},
			aggCase{name: "last_value", args: []Arg{colArg(c)}, oracle: oracleEdge(c, true), ordered: true},
		)
	}
	for _, c := range []int{colInt, colFloat, colI32, colDrift, colU64, colUBig} {
		cases = append(cases,
			aggCase{name: "var_samp", args: []Arg{colArg(c)}, oracle: oracleVariance(c, true, false)},
			aggCase{name: "var_pop", args: []Arg{colArg(c)}, oracle: oracleVariance(c, false, false)},
			aggCase{name: "stddev_samp", args: []Arg{colArg(c)}, oracle: oracleVariance(c, true, true)},
			aggCase{name: "stddev_pop", args: []Arg{colArg(c)}, oracle: oracleVariance(c, false, true)},
			aggCase{name: "variance", args: []Arg{colArg(c)}, oracle: oracleVariance(c, true, false)},
			aggCase{name: "stddev", args: []Arg{colArg(c)}, oracle: oracleVariance(c, true, true)},
		)
	}
	return cases
}

func TestStandardAggregates(t *testing.T) { runCases(t, standardCases()) }

func TestBindErrors(t *testing.T) {
	list := Arg{Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Col: 0}
	cases := []struct {
		name string
		args []Arg
		want []string
	}{
		{"sum", []Arg{colArg(colStr)}, []string{"sum:", "expected sum(x integer|float)", "utf8"}},
		{"sum", []Arg{colArg(colTs)}, []string{"sum:", "timestamp"}},
		{"avg", []Arg{colArg(colBool)}, []string{"avg:", "avg(x integer|float)"}},
		{"avg", []Arg{starArg()}, []string{"avg:"}},
		{"var_samp", []Arg{colArg(colStr)}, []string{"var_samp(x integer|float)"}},
		{"stddev", []Arg{colArg(colStr)}, []string{"stddev_samp(x integer|float)"}},
		{"min", []Arg{starArg()}, []string{"min:", "min(x"}},
		{"max", []Arg{constArg(int64(1))}, []string{"max:"}},
		{"max", []Arg{list}, []string{"max:", "list"}},
		{"first_value", []Arg{starArg()}, []string{"first_value(x any)"}},
		{"count_distinct", []Arg{starArg()}, []string{"count_distinct(x any)"}},
		{"count", []Arg{list}, []string{"count:", "list"}},
		{"count", []Arg{colArg(colInt), colArg(colInt)}, []string{"count takes 1 argument, got 2", "count(*)"}},
		{"sum", nil, []string{"sum takes 1 argument, got 0", "sum(x integer|float)"}},
		{"nosuch", []Arg{colArg(colInt)}, []string{`unknown aggregate function "nosuch"`}},
	}
	for _, c := range cases {
		_, err := Bind(c.name, c.args)
		if err == nil {
			t.Errorf("%s%v: no error", c.name, c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

func TestCountConst(t *testing.T) {
	r := randRows(rand.New(rand.NewPCG(1, 1)), 10)
	for _, c := range []struct {
		arg  Arg
		want int64
	}{{constArg(int64(1)), 10}, {constArg(nil), 0}} {
		f, err := Bind("count", []Arg{c.arg})
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		f.NewWindow().Eval(r, []int64{r.Base}, []int64{r.End()}, nil, b)
		Compute(f, r, []int64{r.End() - 1, r.Base, r.Base + 1, r.Base + 2, r.Base + 3, r.Base + 4, r.Base + 5, r.Base + 6, r.Base + 7, r.Base + 8, r.End() + 5}, b)
		arr := b.NewInt64Array()
		if arr.Value(0) != c.want || arr.Value(1) != c.want {
			t.Errorf("count(%v) = %v, want %d", c.arg.Const, arr, c.want)
		}
	}
}

// TestComputeOrder checks that Compute sorts rows for order-sensitive
// functions.
func TestComputeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	r := randRows(rng, 50)
	f, _ := Bind("first_value", []Arg{colArg(colInt)})
	b := array.NewInt64Builder(memory.DefaultAllocator)
	Compute(f, r, []int64{r.Base + 9, r.Base + 3, r.Base + 5}, b)
	arr := b.NewArray()
	if got, want := valueOf(arr, 0), colValue(r, colInt, r.Base+3); got != want {
		t.Errorf("first_value over unsorted rows = %v, want %v", got, want)
	}
}

// TestVarianceEdge checks the special values of the variance family.
func TestVarianceEdge(t *testing.T) {
	col := Column{Type: colTypes[colFloat], Kind: KindFloat64}
	for _, v := range []float64{5, 5, 5, math.NaN(), math.Inf(1), 7} {
		col.F64 = append(col.F64, v)
		col.Null = append(col.Null, false)
	}
	r := &Rows{Ts: make([]int64, 6), Cols: []Column{col}}
	eval := func(name string, lo, hi int64) any {
		f, err := Bind(name, []Arg{{Type: col.Type, Col: 0}})
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		f.NewWindow().Eval(r, []int64{lo}, []int64{hi}, nil, b)
		return valueOf(b.NewArray(), 0)
	}
	check := func(name string, lo, hi int64, want any) {
		t.Helper()
		if got := eval(name, lo, hi); !approxEqual(got, want, 0) {
			t.Errorf("%s over [%d,%d) = %v, want %v", name, lo, hi, got, want)
		}
	}
	check("var_samp", 0, 0, nil)
	check("var_pop", 0, 0, nil)
	check("var_samp", 0, 1, nil)
	check("stddev_samp", 0, 1, nil)
	check("var_pop", 0, 1, 0.0)
	check("stddev_pop", 0, 1, 0.0)
	check("var_samp", 0, 3, 0.0)
	check("var_samp", 0, 4, math.NaN())
	check("var_pop", 4, 5, math.NaN())
	check("var_pop", 5, 6, 0.0)

	// A sliding window over constant values far from the first value
	// reports exactly 0, and large offsets keep full precision.
	col = Column{Type: colTypes[colFloat], Kind: KindFloat64}
	for i := range 1000 {
		v := 1e9 + 0.25
		if i < 500 {
			v = float64(i) * 1e6
		}
		col.F64 = append(col.F64, v)
		col.Null = append(col.Null, false)
	}
	r = &Rows{Ts: make([]int64, 1000), Cols: []Column{col}}
	f, _ := Bind("var_pop", []Arg{{Type: col.Type, Col: 0}})
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	var lo, hi []int64
	for i := range int64(1000) {
		lo = append(lo, max(0, i-100))
		hi = append(hi, i+1)
	}
	f.NewWindow().Eval(r, lo, hi, nil, b)
	arr := b.NewFloat64Array()
	for i := 600; i < 1000; i++ {
		if arr.Value(i) != 0 {
			t.Fatalf("var_pop of a constant frame = %g at row %d", arr.Value(i), i)
		}
	}
}
