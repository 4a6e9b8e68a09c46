package agg

import "testing"

// TestTopnSkiplistMode runs topn_frequency with its slice order capped at
// a few distinct values, so states move between the sorted slice and the
// skip list (and back) within windows, merges and decodings.
func TestTopnSkiplistMode(t *testing.T) {
	var cases []aggCase
	for _, ordMax := range []int{1, 4, 8} {
		tune := func(f Func) {
			switch f := f.(type) {
			case *topnFunc[int64]:
				f.ordMax = ordMax
			case *topnFunc[uint64]:
				f.ordMax = ordMax
			case *topnFunc[string]:
				f.ordMax = ordMax
			case *topnFunc[bool]:
				f.ordMax = ordMax
			default:
				t.Fatalf("unexpected %T", f)
			}
		}
		for _, c := range []int{colInt, colFloat, colStr, colU64} {
			for _, k := range []int{1, 3} {
				cases = append(cases, aggCase{name: "topn_frequency", args: []Arg{colArg(c), constArg(int64(k))}, oracle: oracleTopN(c, k), tune: tune})
			}
		}
	}
	runCases(t, cases)
}
