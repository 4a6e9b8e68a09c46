package window_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// The input of the ML operator tests: the ML events plus the arrival
// sequence.
var mlSchema = arrow.NewSchema(append(testutil.MLEventSchema.Fields(),
	arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64}), nil)

var (
	mlSeqCol = mlSchema.FieldIndices("seq")[0]
	mlTsCol  = mlSchema.FieldIndices("ts")[0]
	mlIDCol  = mlSchema.FieldIndices("id")[0]
	// mlArgCols are the columns kept in window state.
	mlArgCols = []string{"amount", "price", "category", "flag", "tag", "score", "merchant"}
)

// bindML binds a call of testutil.Agg to the operator's argument columns:
// (x | *, [c], [g], [constant]).
func bindML(t testing.TB, a testutil.Agg) agg.Func {
	t.Helper()
	col := func(name string) agg.Arg {
		pos := slices.Index(mlArgCols, name)
		if pos < 0 {
			t.Fatalf("%s: column %q is not an argument column", a.SQL(), name)
		}
		return agg.Arg{Type: mlSchema.Field(mlSchema.FieldIndices(name)[0]).Type, Col: pos}
	}
	args := []agg.Arg{{Star: true, Col: -1}}
	if a.Arg != "" {
		args[0] = col(a.Arg)
	}
	if a.Cond != "" {
		args = append(args, col(a.Cond))
	}
	if a.Cate != "" {
		args = append(args, col(a.Cate))
	}
	switch p := a.Param.(type) {
	case int64:
		args = append(args, agg.Arg{IsConst: true, Const: p, Col: -1, Type: arrow.PrimitiveTypes.Int64})
	case float64:
		args = append(args, agg.Arg{IsConst: true, Const: p, Col: -1, Type: arrow.PrimitiveTypes.Float64})
	}
	f, err := agg.Bind(a.Func, args)
	if err != nil {
		t.Fatalf("bind %s: %v", a.SQL(), err)
	}
	return f
}

// mlOp is a window.Operator evaluating aggs over each of frames, with the
// helpers the tests drive it by.
type mlOp struct {
	t      *testing.T
	seed   uint64
	op     *window.Operator
	frames []testutil.Frame
	aggs   []testutil.Agg
}

func newMLOp(t *testing.T, seed uint64, keys []string, frames []testutil.Frame, aggs []testutil.Agg, lateness int64, batchOrder bool) *mlOp {
	t.Helper()
	cfg := window.Config{TsCol: mlTsCol, SeqCol: mlSeqCol, AllowedLateness: lateness, BatchOrder: batchOrder}
	for _, k := range keys {
		cfg.KeyCols = append(cfg.KeyCols, mlSchema.FieldIndices(k)[0])
	}
	for _, c := range mlArgCols {
		cfg.ArgCols = append(cfg.ArgCols, mlSchema.FieldIndices(c)[0])
	}
	for _, f := range frames {
		spec := window.Spec{Frame: window.Frame{Rows: f.Rows, Unbounded: f.Unbounded, Preceding: f.Preceding,
			EndPreceding: f.EndPreceding, ExcludeCurrent: f.ExcludeCurrent}}
		for _, a := range aggs {
			spec.Aggs = append(spec.Aggs, bindML(t, a))
			cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("%s over %s", a.SQL(), f))
		}
		cfg.Windows = append(cfg.Windows, spec)
	}
	op, err := window.New(cfg, mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return &mlOp{t: t, seed: seed, op: op, frames: frames, aggs: aggs}
}

// push feeds rows [lo, hi) of tab (arrival sequence = row index) and
// returns the late rows applied at once and the late rows dropped.
func (m *mlOp) push(tab *testutil.Table, lo, hi int) (applied, dropped [][]any) {
	m.t.Helper()
	vals := make([][]any, 0, hi-lo)
	for i := lo; i < hi; i++ {
		vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(i)))
	}
	rec := testutil.BuildRecord(nil, mlSchema, vals)
	defer rec.Release()
	outs, late, err := m.op.Push(rec)
	if err != nil {
		m.t.Fatalf("seed %d: Push: %v", m.seed, err)
	}
	applied = testutil.Rows(outs...)
	for _, r := range outs {
		r.Release()
	}
	if late != nil {
		dropped = testutil.Rows(late)
		late.Release()
	}
	return applied, dropped
}

func (m *mlOp) advance(wm int64) [][]any {
	m.t.Helper()
	outs, err := m.op.Advance(context.Background(), wm)
	if err != nil {
		m.t.Fatalf("seed %d: Advance(%d): %v", m.seed, wm, err)
	}
	defer func() {
		for _, r := range outs {
			r.Release()
		}
	}()
	return testutil.Rows(outs...)
}

// check compares the results of frame f of the emitted rows (emitted row
// i is row index[i] of tab) with want.
func (m *mlOp) check(what string, keys []string, got [][]any, tab *testutil.Table, index []int, want func(f int) [][]any) {
	m.t.Helper()
	names := make([]string, len(m.aggs))
	for k, a := range m.aggs {
		names[k] = a.SQL()
	}
	label := testutil.Label(tab, index, "id", "user_id", "merchant", "ts")
	for f, fr := range m.frames {
		off := mlSchema.NumFields() + f*len(m.aggs)
		res := make([][]any, len(got))
		for i, r := range got {
			res[i] = r[off : off+len(m.aggs)]
		}
		if d := testutil.Diff(names, res, want(f), label); d != "" {
			m.t.Errorf("seed %d (VOLGA_SEED=%d to replay), %s, keys %v, %s:\n%s", m.seed, m.seed, what, keys, fr, d)
		}
	}
}

func mlIDs(rows [][]any) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[mlIDCol].(int64)
	}
	return out
}

// TestOperatorMLMatchesReference evaluates every ML aggregate over every
// frame kind in one operator, in batch order (one End watermark) and
// streaming (shuffled arrival within the bound, random watermark
// advances), against the brute-force reference; streaming output,
// reordered by arrival, must also equal the batch output.
func TestOperatorMLMatchesReference(t *testing.T) {
	const bound = 3000
	for _, seed := range testutil.Seeds(2) {
		for _, keys := range [][]string{{"user_id"}, {"merchant"}, {"user_id", "merchant"}} {
			t.Run(fmt.Sprintf("seed=%d/keys=%v", seed, keys), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				events := testutil.MLEvents(rng, testutil.DefaultEvents(testutil.Scale(240)))
				tab := events.Subset(testutil.Shuffle(rng, events, "ts", keys, bound))
				want := make([][][]any, len(testutil.Frames))
				for f, fr := range testutil.Frames {
					want[f] = testutil.Compute(tab, testutil.Window{Keys: keys, Time: "ts", Frame: fr}, testutil.MLAggs)
				}

				batch := newMLOp(t, seed, keys, testutil.Frames, testutil.MLAggs, 0, true)
				for lo := 0; lo < len(tab.Rows); {
					hi := min(len(tab.Rows), lo+1+rng.IntN(50))
					batch.push(tab, lo, hi)
					lo = hi
				}
				bout := batch.advance(watermark.End)
				if got, want := mlIDs(bout), mlIDs(tab.Rows); !slices.Equal(got, want) {
					t.Fatalf("seed %d: batch output ids %v, want arrival order %v", seed, got, want)
				}
				batch.check("batch", keys, bout, tab, nil, func(f int) [][]any { return want[f] })

				stream := newMLOp(t, seed, keys, testutil.Frames, testutil.MLAggs, 0, false)
				var sout [][]any
				maxTs, wm := watermark.None, watermark.None
				for lo := 0; lo < len(tab.Rows); {
					hi := min(len(tab.Rows), lo+1+rng.IntN(20))
					if ap, late := stream.push(tab, lo, hi); ap != nil || late != nil {
						t.Fatalf("seed %d: rows within the bound were late: %v", seed, mlIDs(late))
					}
					for i := lo; i < hi; i++ {
						maxTs = max(maxTs, tab.Value(i, "ts").(int64))
					}
					lo = hi
					if rng.IntN(3) > 0 && maxTs-bound > wm {
						wm = maxTs - bound
						sout = append(sout, stream.advance(wm)...)
					}
				}
				sout = append(sout, stream.advance(watermark.End)...)
				slices.SortFunc(sout, func(a, b []any) int { return int(a[mlSeqCol].(int64) - b[mlSeqCol].(int64)) })
				if got, want := mlIDs(sout), mlIDs(tab.Rows); !slices.Equal(got, want) {
					t.Fatalf("seed %d: streaming emitted ids %v, want each row once: %v", seed, got, want)
				}
				stream.check("streaming", keys, sout, tab, nil, func(f int) [][]any { return want[f] })
				stream.check("streaming vs batch", keys, sout, tab, nil, func(f int) [][]any {
					off := mlSchema.NumFields() + f*len(testutil.MLAggs)
					out := make([][]any, len(bout))
					for i, r := range bout {
						out[i] = r[off : off+len(testutil.MLAggs)]
					}
					return out
				})
			})
		}
	}
}

// TestOperatorMLAllowedLateness: with allowed lateness, late rows are
// applied to the ML aggregates' state (retracting and re-adding for the
// retractable ones, rebuilding for the others) and each emitted row equals
// the reference over the rows accepted before it was emitted (for a late
// row, its frame as of its arrival: not the rows after it in its batch).
func TestOperatorMLAllowedLateness(t *testing.T) {
	const bound, lateness = 1000, 2500
	keys := []string{"user_id"}
	var frames []testutil.Frame
	for _, f := range testutil.Frames {
		if !f.Unbounded {
			frames = append(frames, f)
		}
	}
	for _, seed := range testutil.Seeds(2) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := testutil.Rand(seed)
			// Not scaled down under the race detector: a third may have
			// no late row beyond the lateness.
			events := testutil.MLEvents(rng, testutil.DefaultEvents(240))
			order := testutil.Shuffle(rng, events, "ts", keys, bound)
			for k := 0; k < len(order)/8; k++ { // hold some rows back
				p := rng.IntN(len(order))
				q := min(len(order)-1, p+2+rng.IntN(6))
				row := order[p]
				order = slices.Insert(slices.Delete(order, p, p+1), q, row)
			}
			tab := events.Subset(order)
			m := newMLOp(t, seed, keys, frames, testutil.MLAggs, lateness, false)
			var accepted, index []int
			var got [][]any
			want := make([][][]any, len(frames))
			// expect notes emitted rows and their reference: over the
			// rows accepted so far, or, for late rows applied
			// (arrival), over those accepted up to the row itself: a
			// late row's frame is as of its arrival, without the rows
			// after it in its batch.
			expect := func(rows [][]any, arrival bool) {
				for _, r := range rows {
					i := int(r[mlSeqCol].(int64))
					got = append(got, r)
					index = append(index, i)
					acc := accepted
					if arrival {
						acc = accepted[:slices.Index(accepted, i)+1]
					}
					for f, fr := range frames {
						want[f] = append(want[f], testutil.EvalAt(tab, testutil.Window{Keys: keys, Time: "ts", Frame: fr}, testutil.MLAggs, acc, i))
					}
				}
			}
			var nApplied, nDropped int
			maxTs, wm := watermark.None, watermark.None
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(8))
				for i := lo; i < hi; i++ {
					if ts := tab.Value(i, "ts").(int64); ts > wm || ts > wm-lateness { // (wm-lateness wraps while wm is None)
						accepted = append(accepted, i)
					}
				}
				ap, dropped := m.push(tab, lo, hi)
				nApplied += len(ap)
				nDropped += len(dropped)
				expect(ap, true)
				for i := lo; i < hi; i++ {
					maxTs = max(maxTs, tab.Value(i, "ts").(int64))
				}
				lo = hi
				if maxTs-bound > wm {
					wm = maxTs - bound
					expect(m.advance(wm), false)
				}
			}
			expect(m.advance(watermark.End), false)
			if nApplied == 0 || nDropped == 0 {
				t.Fatalf("seed %d: %d late rows applied and %d dropped; want some of each", seed, nApplied, nDropped)
			}
			if len(got) != len(accepted) {
				t.Fatalf("seed %d: emitted %d rows, want the %d accepted", seed, len(got), len(accepted))
			}
			m.check("allowed lateness", keys, got, tab, index, func(f int) [][]any { return want[f] })
		})
	}
}

// TestOperatorPerValueState checks that an operator says its state keeps
// an entry per distinct value when one of its windows' aggregates does
// (the batch release policy waits for more rows a key then), and only
// then.
func TestOperatorPerValueState(t *testing.T) {
	hour := testutil.Frame{Preceding: 3_600_000}
	for _, tc := range []struct {
		aggs []testutil.Agg
		want bool
	}{
		{[]testutil.Agg{{Func: "sum", Arg: "amount"}, {Func: "count"}, {Func: "max", Arg: "price"}}, false},
		{[]testutil.Agg{{Func: "sum", Arg: "amount"}, {Func: "topn_frequency", Arg: "merchant", Param: int64(3)}}, true},
		{[]testutil.Agg{{Func: "sum_cate", Arg: "amount", Cate: "category"}}, true},
		{[]testutil.Agg{{Func: "count_where", Arg: "amount", Cond: "flag"}}, false},
	} {
		m := newMLOp(t, 1, []string{"user_id"}, []testutil.Frame{hour}, tc.aggs, 0, false)
		if got := m.op.PerValueState(); got != tc.want {
			t.Errorf("%v: PerValueState = %v, want %v", tc.aggs, got, tc.want)
		}
	}
}
