package window_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// TestBatchIDsRunOut: an operator that has taken 2^31 batches (a stream
// of a thousand batches a second, after 25 days) goes on emitting every
// row with its results, by Advance and by AdvanceResults, over releases
// of batches pushed before and after the ids ran out. The ids (int32)
// wrapped around, and a release spanning the wrap panicked (index out of
// range) or walked 2^32 batch ids.
func TestBatchIDsRunOut(t *testing.T) {
	frames := []testutil.Frame{{Preceding: 5000}}
	aggs := []testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "max", Arg: "category"}}
	row := func(seq, ts, amount int64) []any {
		return []any{seq, int64(1), "m", ts, amount, nil, fmt.Sprint("c", seq), seq}
	}
	// Each batch has rows released at 500, and rows released at 2000.
	var batches [][][]any
	for b := range int64(6) {
		batches = append(batches, [][]any{row(2*b, 100+b, 1<<b), row(2*b+1, 1000+b, 1<<(b+6))})
	}
	want := "[0:1/1/c0 2:2/3/c2 4:3/7/c4 6:4/15/c6 8:5/31/c8 10:6/63/c8 " +
		"1:7/127/c8 3:8/255/c8 5:9/511/c8 7:10/1023/c8 9:11/2047/c9 11:12/4095/c9]"
	for _, results := range []bool{false, true} {
		op, err := window.New(harnessConfig(t, []string{"user_id"}, frames, [][]testutil.Agg{aggs}, 0, false), opSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		window.SetNextBatchID(op, math.MaxInt32-2)
		for _, b := range batches {
			rec := testutil.BuildRecord(nil, opSchema, b)
			_, late, err := op.Push(rec)
			rec.Release()
			if err != nil || late != nil {
				t.Fatalf("Push: %v, late %v", err, late)
			}
		}
		var got []string
		add := func(seq int64, count, sum *array.Int64, maxCat *array.String, r int) {
			got = append(got, fmt.Sprintf("%d:%d/%d/%s", seq, count.Value(r), sum.Value(r), maxCat.Value(r)))
		}
		for _, wm := range []int64{500, 2000} {
			if results {
				err = op.AdvanceResults(context.Background(), wm, func(res *window.Results) error {
					defer res.Release()
					for k, seq := range res.Seq {
						cols := res.Cols[res.Chunk[k]]
						add(seq, cols[0].(*array.Int64), cols[1].(*array.Int64), cols[2].(*array.String), int(res.Row[k]))
					}
					return nil
				})
			} else {
				var outs []arrow.RecordBatch
				outs, err = op.Advance(context.Background(), wm)
				for _, rec := range outs {
					seq := rec.Column(seqCol).(*array.Int64)
					for r := range int(rec.NumRows()) {
						add(seq.Value(r), rec.Column(firstRes).(*array.Int64), rec.Column(firstRes+1).(*array.Int64), rec.Column(firstRes+2).(*array.String), r)
					}
					rec.Release()
				}
			}
			if err != nil {
				t.Fatalf("advance to %d: %v", wm, err)
			}
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("results %v: got\n%v\nwant\n%s", results, got, want)
		}
		if st := op.Stats(); st.Pending != 0 || st.RowsOut != 12 {
			t.Fatalf("results %v: stats %+v", results, st)
		}
	}
}
