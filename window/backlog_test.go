package window

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
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

// TestBacklogKeys checks Backlog against a count of the rows pushed: the
// rows waiting are those above the watermark, the keys those of these
// rows, not every key seen. Keys come and go (a key lives for a few
// hundred milliseconds of event time, some come back much later), and
// quiet ones are forgotten a few at a time, so the ids of the pending
// rows' keys are renumbered now and then.
func TestBacklogKeys(t *testing.T) {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cfg := Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, Windows: []Spec{
		{Frame: Frame{Preceding: 100}, Aggs: []agg.Func{bindFunc(t, "sum", amount)}},
	}}
	op := openOp(t, cfg)
	defer op.Close()
	op.forgetMin = 4
	rng := rand.New(rand.NewPCG(5, 8))
	type row struct{ ts, key int64 }
	var pushed []row
	var seq int64
	ts := int64(1_000_000)
	wm := None
	forgotten := int64(0)
	for step := range 400 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
		for range 1 + rng.IntN(40) {
			rts := ts + int64(rng.IntN(300)) // up to 300 ms out of order
			key := rts/500*10 + int64(rng.IntN(4))
			if rng.IntN(8) == 0 {
				key = int64(rng.IntN(4)) // keys that come back
			}
			b.Field(0).(*array.Int64Builder).Append(rts)
			b.Field(1).(*array.Int64Builder).Append(seq)
			b.Field(2).(*array.Int64Builder).Append(key)
			b.Field(3).(*array.Float64Builder).Append(1)
			b.Field(4).AppendNull()
			seq++
			if rts > wm {
				pushed = append(pushed, row{rts, key})
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		out, late, err := op.Push(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		arrowutil.ReleaseAll(out)
		if late != nil {
			late.Release()
		}
		ts += int64(rng.IntN(60))
		if rng.IntN(3) == 0 {
			wm = max(wm, ts-300)
			advanceDiscard(t, op, wm)
		}
		keys := map[int64]bool{}
		rows := 0
		for _, r := range pushed {
			if r.ts > wm {
				rows++
				keys[r.key] = true
			}
		}
		gotRows, gotKeys := op.Backlog()
		if gotRows != rows || gotKeys != len(keys) {
			t.Fatalf("step %d: Backlog() = %d rows, %d keys; want %d, %d", step, gotRows, gotKeys, rows, len(keys))
		}
		forgotten = op.Stats().ForgottenKeys
	}
	if forgotten == 0 {
		t.Fatal("no key was forgotten: the renumbering went untested")
	}
}
