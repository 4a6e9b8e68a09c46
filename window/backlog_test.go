package window

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/agg"
)

// TestRetainedPerKey checks the sampled mean of the rows a key's windows
// hold: exact while there are at most retainedSample keys, close to the
// exact mean beyond, over frames that keep every row and frames that keep
// a few.
func TestRetainedPerKey(t *testing.T) {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	for _, tc := range []struct {
		name      string
		keys      int
		preceding int64
	}{
		{"all-rows-100-keys", 100, 1 << 40},
		{"all-rows-5000-keys", 5000, 1 << 40},
		{"short-frame-200-keys", 200, 40},
		{"short-frame-5000-keys", 5000, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, BatchOrder: true, Windows: []Spec{
				{Frame: Frame{Preceding: tc.preceding}, Aggs: []agg.Func{bindFunc(t, "sum", amount)}},
			}}
			op := openOp(t, cfg)
			defer op.Close()
			if got := op.RetainedPerKey(); got != 0 {
				t.Fatalf("before any row: %v, want 0", got)
			}
			recs := benchRecords(tc.keys, 4, 4096)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			perKey := map[int64]int{}
			var last int64
			for _, r := range recs {
				push(t, op, r)
				for i, k := range r.Column(2).(*array.Int64).Int64Values() {
					perKey[k]++
					last = r.Column(0).(*array.Int64).Value(i)
				}
			}
			advanceDiscard(t, op, last)
			got := op.RetainedPerKey()
			// The exact mean: from the input when every row is kept, from
			// a walk over every key otherwise.
			want := float64(4*4096) / float64(len(perKey))
			if tc.preceding < 1<<40 {
				st := op.Stats()
				want = float64(st.Retained) / float64(st.ResidentKeys)
				if want >= float64(4*4096)/float64(len(perKey))/2 {
					t.Fatalf("the short frame keeps %.1f rows a key: not short", want)
				}
			}
			if tc.keys <= retainedSample {
				if got != want {
					t.Fatalf("RetainedPerKey() = %v, want exactly %v", got, want)
				}
				return
			}
			if math.Abs(got-want) > 0.1*want {
				t.Fatalf("RetainedPerKey() = %v, want within 10%% of %v", got, want)
			}
		})
	}
}
