package window_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// TestAdvanceResultsBatchGap: AdvanceResults over a release whose rows
// come from batches with one between them already let go (all its rows
// out earlier) gives every row its results, in sequence order. Letting
// the first batch go moved the held batches' base past the gap, and
// looking the gap's batch up then panicked (index out of range).
func TestAdvanceResultsBatchGap(t *testing.T) {
	frames := []testutil.Frame{{Preceding: 5000}}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}}
	op, err := window.New(harnessConfig(t, []string{"user_id"}, frames, [][]testutil.Agg{aggs}, 0, false), opSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	row := func(seq, ts, amount int64) []any {
		return []any{seq, int64(1), "m", ts, amount, nil, nil, seq}
	}
	// Batch 0 has a row released now and one later; batch 1 is released
	// whole now; batch 2 later, with batch 0's last row.
	batches := [][][]any{
		{row(0, 100, 1), row(1, 1000, 2)},
		{row(2, 200, 4)},
		{row(3, 1100, 8)},
	}
	for _, b := range batches {
		rec := testutil.BuildRecord(nil, opSchema, b)
		_, late, err := op.Push(rec)
		rec.Release()
		if err != nil || late != nil {
			t.Fatalf("Push: %v, late %v", err, late)
		}
	}
	var got []string
	for _, wm := range []int64{500, 2000} {
		err := op.AdvanceResults(context.Background(), wm, func(res *window.Results) error {
			defer res.Release()
			for k, seq := range res.Seq {
				cols := res.Cols[res.Chunk[k]]
				r := int(res.Row[k])
				got = append(got, fmt.Sprintf("%d:%d/%d", seq, cols[0].(*array.Int64).Value(r), cols[1].(*array.Int64).Value(r)))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("AdvanceResults(%d): %v", wm, err)
		}
	}
	want := "[0:1/1 2:2/5 1:3/7 3:4/15]"
	if fmt.Sprint(got) != want {
		t.Fatalf("results %v, want %s", got, want)
	}
	if st := op.Stats(); st.Pending != 0 {
		t.Fatalf("%d rows still pending", st.Pending)
	}
}
