package agg

import "testing"

// TestPerValue checks which aggregates keep an entry per distinct value,
// with and without a _where condition.
func TestPerValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []Arg
		want bool
	}{
		{"count_distinct", []Arg{colArg(colStr)}, true},
		{"top", []Arg{colArg(colInt), constArg(int64(3))}, true},
		{"topn_frequency", []Arg{colArg(colStr), constArg(int64(3))}, true},
		{"top1_ratio", []Arg{colArg(colCatInt)}, true},
		{"sum_cate", []Arg{colArg(colFloat), colArg(colCat)}, true},
		{"count_cate_where", []Arg{colArg(colInt), colArg(colCond), colArg(colCat)}, true},
		{"sum", []Arg{colArg(colFloat)}, false},
		{"sum_where", []Arg{colArg(colFloat), colArg(colCond)}, false},
		{"count", []Arg{starArg()}, false},
		{"avg", []Arg{colArg(colInt)}, false},
		{"max", []Arg{colArg(colStr)}, false},
		{"first_value", []Arg{colArg(colStr)}, false},
		{"approx_count_distinct", []Arg{colArg(colStr)}, false},
	} {
		f, err := Bind(tc.name, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := PerValue(f); got != tc.want {
			t.Errorf("PerValue(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// A condition around a per-value aggregate keeps it one.
	inner, err := Bind("count_distinct", []Arg{colArg(colStr)})
	if err != nil {
		t.Fatal(err)
	}
	if !PerValue(&whereFunc{name: "w", inner: inner, cond: colCond}) {
		t.Error("PerValue of a condition around count_distinct = false")
	}
}
