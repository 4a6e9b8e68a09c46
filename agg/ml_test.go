package agg

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMLAggregates(t *testing.T) { runCases(t, mlCases()) }

func floatRows(vals []float64) *Rows {
	col := Column{Type: colTypes[colFloat], Kind: KindFloat64, F64: vals, Null: make([]bool, len(vals))}
	return &Rows{Ts: make([]int64, len(vals)), Cols: []Column{col}}
}

// TestApproxCountDistinctSketch checks the HyperLogLog estimate beyond the
// exact range, added row by row and merged from parts.
func TestApproxCountDistinctSketch(t *testing.T) {
	for _, n := range []int{1000, 1001, 5000, 100000} {
		vals := make([]float64, 2*n)
		for i := range vals {
			vals[i] = float64(i % n) // every value twice
		}
		r := floatRows(vals)
		f, _ := Bind("approx_count_distinct", []Arg{{Type: colTypes[colFloat], Col: 0}})
		s := f.NewState()
		parts := []State{f.NewState(), f.NewState(), f.NewState()}
		for a := range int64(len(vals)) {
			s.Add(r, a)
			parts[a%3].Add(r, a)
		}
		parts[0].Merge(parts[1])
		parts[0].Merge(parts[2])
		for _, st := range []State{s, parts[0]} {
			got := result(f, st).(int64)
			if n <= hllExact && got != int64(n) {
				t.Errorf("n=%d: %d, want exact", n, got)
			}
			if rel := math.Abs(float64(got)-float64(n)) / float64(n); rel > 0.05 {
				t.Errorf("n=%d: estimate %d, relative error %.3f > 5%%", n, got, rel)
			}
		}
	}
}

// TestApproxPercentileSketch checks the documented rank error bound of the
// compactor sketch.
func TestApproxPercentileSketch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1024, 5000, 200000} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i)
		}
		rng.Shuffle(n, func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		r := floatRows(vals)
		levels := math.Ceil(math.Log2(float64(n)/pctK)) + 1
		bound := float64(n) * levels / pctK
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 1} {
			f, _ := Bind("approx_percentile", []Arg{{Type: colTypes[colFloat], Col: 0}, constArg(q)})
			s := f.NewState()
			parts := []State{f.NewState(), f.NewState()}
			for a := range int64(n) {
				s.Add(r, a)
				parts[a%2].Add(r, a)
			}
			parts[0].Merge(parts[1])
			for _, st := range []State{s, parts[0]} {
				got := result(f, st).(float64)
				want := q * float64(n-1) // the values are 0..n-1: value = rank
				if math.Abs(got-want) > bound {
					t.Errorf("n=%d q=%v: %v, want %v ± %v", n, q, got, want, bound)
				}
			}
		}
	}
}

func TestMLBindErrors(t *testing.T) {
	x, c, g := colArg(colInt), colArg(colCond), colArg(colCat)
	cases := []struct {
		name string
		args []Arg
		want []string
	}{
		{"top", []Arg{x, constArg(int64(0))}, []string{"top:", "k must be an integer between 1", "top(x any, k integer constant >= 1)"}},
		{"top", []Arg{x, colArg(colInt)}, []string{"top:", "k must be a constant"}},
		{"topn_frequency", []Arg{x, constArg(-2.5)}, []string{"topn_frequency:", "k must be"}},
		{"top", []Arg{x}, []string{"top takes 2 arguments, got 1"}},
		{"ew_avg", []Arg{x, constArg(0.0)}, []string{"ew_avg:", "alpha must be in (0, 1]"}},
		{"ew_avg", []Arg{x, constArg(1.5)}, []string{"alpha must be in (0, 1]"}},
		{"ew_avg", []Arg{colArg(colStr), constArg(0.5)}, []string{"ew_avg:", "utf8"}},
		{"approx_percentile", []Arg{x, constArg(1.01)}, []string{"approx_percentile:", "q must be in [0, 1]"}},
		{"approx_percentile", []Arg{x, constArg("a")}, []string{"q must be a number"}},
		{"sum_where", []Arg{colArg(colStr), c}, []string{"sum_where:", "value argument of type utf8", "sum_where(x integer|float, c boolean)"}},
		{"sum_where", []Arg{x, x}, []string{"sum_where:", "condition must be a boolean"}},
		{"avg_where", []Arg{starArg(), c}, []string{"avg_where:", "*"}},
		{"count_cate", []Arg{x, colArg(colFloat)}, []string{"count_cate:", "category type float64 is unsupported"}},
		{"sum_cate", []Arg{colArg(colBool), g}, []string{"sum_cate:", "value argument of type bool"}},
		{"max_cate_where", []Arg{x, g, c}, []string{"max_cate_where:", "condition must be a boolean"}},
		{"min_cate", []Arg{x, constArg("a")}, []string{"min_cate:", "category must be a column"}},
		{"drawdown", []Arg{colArg(colStr)}, []string{"drawdown(x integer|float)"}},
		{"top1_ratio", []Arg{starArg()}, []string{"top1_ratio(x any)"}},
	}
	for _, tc := range cases {
		_, err := Bind(tc.name, tc.args)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

// TestResultTypes checks the Arrow types of the ML results.
func TestResultTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []Arg
		want string
	}{
		{"top", []Arg{colArg(colStr), constArg(int64(2))}, "list<item: utf8, nullable>"},
		{"topn_frequency", []Arg{colArg(colInt), constArg(int64(2))}, "list<item: struct<value: int64, count: int64>, nullable>"},
		{"sum_cate", []Arg{colArg(colFloat), colArg(colCat)}, "map<utf8, float64, items_nullable>"},
		{"min_cate_where", []Arg{colArg(colTs), colArg(colCond), colArg(colCatInt)}, "map<int64, timestamp[ms, tz=UTC], items_nullable>"},
		{"max", []Arg{colArg(colI32)}, "int32"},
	} {
		f, err := Bind(tc.name, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.ResultType().String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestEveryNameDocumented checks that every registered function has a
// signature and a doc line, and binds its documented example.
func TestEveryNameDocumented(t *testing.T) {
	for _, n := range Names() {
		d, _ := Lookup(n)
		if d.Signature == "" || d.Doc == "" || !strings.HasPrefix(d.Signature, d.Name+"(") {
			t.Errorf("%s: signature %q doc %q", n, d.Signature, d.Doc)
		}
	}
}

// TestTopCompact: a compacted top(x, k) state (agg.Compacter) answers,
// adds and merges exactly like one keeping every value, over random rows,
// k and compaction points.
func TestTopCompact(t *testing.T) {
	for seed := range seeds(60) {
		rng := rand.New(rand.NewPCG(seed, 21))
		r := randRows(rng, 50+rng.IntN(400))
		for _, col := range []int{colInt, colFloat, colStr} {
			f, err := Bind("top", []Arg{colArg(col), constArg(int64(1 + rng.IntN(6)))})
			if err != nil {
				t.Fatal(err)
			}
			full, comp := f.NewState(), f.NewState()
			other, otherComp := f.NewState(), f.NewState()
			for a := r.Base; a < r.End(); a++ {
				switch rng.IntN(3) {
				case 0:
					other.Add(r, a)
					otherComp.Add(r, a)
				default:
					full.Add(r, a)
					comp.Add(r, a)
				}
				if rng.IntN(40) == 0 {
					comp.(Compacter).Compact()
					otherComp.(Compacter).Compact()
				}
				if rng.IntN(60) == 0 {
					full.Merge(other)
					comp.Merge(otherComp)
					other.Reset()
					otherComp.Reset()
				}
				if g, w := result(f, comp), result(f, full); !approxEqual(g, w, 0) {
					t.Fatalf("seed %d col %d row %d: compacted %v, full %v", seed, col, a, g, w)
				}
			}
		}
	}
}
