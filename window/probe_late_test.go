package window_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// TestLateProbeNotStored: a probe row (a backfill's spine row) late
// within the allowed lateness gets its features as of its arrival, the
// events at or before its time (before it when strict), and is not
// stored: the events after it do not count it.
func TestLateProbeNotStored(t *testing.T) {
	for _, strict := range []bool{false, true} {
		cfg := window.Config{TsCol: rdTsCol, SeqCol: rdSeqCol, KeyCols: []int{rdSchema.FieldIndices("ki")[0]},
			ArgCols: []int{rdSchema.FieldIndices("amount")[0]}, AllowedLateness: 1000, ProbeCol: rdProbeCol, StrictProbes: strict}
		for _, f := range []window.Frame{{Preceding: 5000}, {Rows: true, Preceding: 3}} {
			count, err := agg.Bind("count", []agg.Arg{{Star: true, Col: -1}})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := agg.Bind("sum", []agg.Arg{{Type: rdSchema.Field(rdSchema.FieldIndices("amount")[0]).Type, Col: 0}})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Windows = append(cfg.Windows, window.Spec{Frame: f, Aggs: []agg.Func{count, sum}})
		}
		op, err := window.New(cfg, rdSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close()
		row := func(seq, ts, amount int64, probe bool) []any {
			r := make([]any, rdSchema.NumFields())
			r[0], r[rdSchema.FieldIndices("ki")[0]], r[rdTsCol], r[rdSchema.FieldIndices("amount")[0]] = seq, int64(1), ts, amount
			r[rdProbeCol], r[rdSeqCol] = probe, seq
			return r
		}
		var got []string
		take := func(rows [][]any) {
			for _, r := range rows {
				got = append(got, fmt.Sprint(r[rdSeqCol], r[rdSchema.NumFields():]))
			}
		}
		push := func(rows ...[]any) {
			rec := testutil.BuildRecord(nil, rdSchema, rows)
			defer rec.Release()
			outs, late, err := op.Push(rec)
			if err != nil || late != nil {
				t.Fatalf("Push: %v, late %v", err, late)
			}
			take(testutil.Rows(outs...))
			releaseAll(outs)
		}
		advance := func(wm int64) {
			outs, err := op.Advance(context.Background(), wm)
			if err != nil {
				t.Fatal(err)
			}
			take(testutil.Rows(outs...))
			releaseAll(outs)
		}
		push(row(0, 1000, 1, false), row(1, 1500, 2, false))
		advance(2000)
		push(row(2, 1500, 100, true)) // late, within the lateness
		push(row(3, 3000, 4, false))
		advance(watermark.End)
		probe := "2 [2 3 2 3]" // the events at 1000 and 1500
		if strict {
			probe = "2 [1 1 1 1]" // the event at 1000 only
		}
		want := fmt.Sprint([]string{"0 [1 1 1 1]", "1 [2 3 2 3]", probe, "3 [3 7 3 7]"})
		if fmt.Sprint(got) != want {
			t.Errorf("strict %v: got %v, want %s", strict, got, want)
		}
	}
}
