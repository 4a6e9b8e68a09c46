package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// The operator's input: the generated events plus the arrival sequence.
var opSchema = arrow.NewSchema(append(testutil.EventSchema.Fields(),
	arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64}), nil)

const (
	idCol    = 0
	tsCol    = 3
	seqCol   = 7
	firstRes = 8 // first result column of the output
)

// argCols are the columns kept in window state; aggregate arguments refer
// to them by position.
var argCols = []string{"amount", "price", "category"}

// harness drives one Operator evaluating every aggregate of aggs over
// every frame of frames, keyed by keys.
type harness struct {
	t      *testing.T
	op     *window.Operator
	frames []testutil.Frame
	aggs   [][]testutil.Agg // per frame
	keys   []string
	seed   uint64
}

func newHarness(t *testing.T, seed uint64, keys []string, frames []testutil.Frame, aggs []testutil.Agg, lateness int64, batchOrder bool) *harness {
	t.Helper()
	perFrame := make([][]testutil.Agg, len(frames))
	for fi := range frames {
		perFrame[fi] = aggs
	}
	return newHarnessPerFrame(t, seed, keys, frames, perFrame, lateness, batchOrder)
}

// newHarnessPerFrame is newHarness with the aggregates of each frame given.
func newHarnessPerFrame(t *testing.T, seed uint64, keys []string, frames []testutil.Frame, perFrame [][]testutil.Agg, lateness int64, batchOrder bool) *harness {
	t.Helper()
	op, err := window.New(harnessConfig(t, keys, frames, perFrame, lateness, batchOrder), opSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return &harness{t: t, op: op, frames: frames, aggs: perFrame, keys: keys, seed: seed}
}

// harnessConfig is the operator configuration of newHarnessPerFrame.
func harnessConfig(t *testing.T, keys []string, frames []testutil.Frame, perFrame [][]testutil.Agg, lateness int64, batchOrder bool) window.Config {
	t.Helper()
	cfg := window.Config{TsCol: tsCol, SeqCol: seqCol, AllowedLateness: lateness, BatchOrder: batchOrder}
	for _, k := range keys {
		cfg.KeyCols = append(cfg.KeyCols, opSchema.FieldIndices(k)[0])
	}
	for _, c := range argCols {
		cfg.ArgCols = append(cfg.ArgCols, opSchema.FieldIndices(c)[0])
	}
	for fi, f := range frames {
		spec := window.Spec{Frame: window.Frame{Rows: f.Rows, Unbounded: f.Unbounded, Preceding: f.Preceding,
			EndPreceding: f.EndPreceding, ExcludeCurrent: f.ExcludeCurrent}}
		for _, a := range perFrame[fi] {
			spec.Aggs = append(spec.Aggs, bindAgg(t, a))
			cfg.ResultNames = append(cfg.ResultNames, fmt.Sprintf("%s over %s", a.SQL(), f))
		}
		cfg.Windows = append(cfg.Windows, spec)
	}
	return cfg
}

func bindAgg(t *testing.T, a testutil.Agg) agg.Func {
	t.Helper()
	var arg agg.Arg
	if a.Arg == "" {
		arg = agg.Arg{Star: true, Col: -1}
	} else {
		pos := slices.Index(argCols, a.Arg)
		arg = agg.Arg{Type: opSchema.Field(opSchema.FieldIndices(a.Arg)[0]).Type, Col: pos}
	}
	f, err := agg.Bind(a.Func, []agg.Arg{arg})
	if err != nil {
		t.Fatalf("bind %s: %v", a.SQL(), err)
	}
	return f
}

// record builds the operator input for rows of tab, each with its seq.
func record(tab *testutil.Table, rows []int, seq []int64) arrow.RecordBatch {
	vals := make([][]any, len(rows))
	for k, i := range rows {
		vals[k] = append(slices.Clone(tab.Rows[i]), seq[k])
	}
	return testutil.BuildRecord(nil, opSchema, vals)
}

// push feeds the rows to the operator and returns what it emitted at once
// (late rows applied within the allowed lateness) and the late rows.
func (h *harness) push(tab *testutil.Table, rows []int, seq []int64) (applied, late [][]any) {
	h.t.Helper()
	rec := record(tab, rows, seq)
	defer rec.Release()
	outs, lateRec, err := h.op.Push(rec)
	if err != nil {
		h.t.Fatalf("seed %d: Push: %v", h.seed, err)
	}
	applied = testutil.Rows(outs...)
	releaseAll(outs)
	if lateRec != nil {
		if !lateRec.Schema().Equal(opSchema) {
			h.t.Fatalf("seed %d: late rows have schema %s, want the input schema", h.seed, lateRec.Schema())
		}
		late = testutil.Rows(lateRec)
		lateRec.Release()
	}
	return applied, late
}

func (h *harness) advance(wm int64) [][]any {
	h.t.Helper()
	outs, err := h.op.Advance(context.Background(), wm)
	if err != nil {
		h.t.Fatalf("seed %d: Advance(%d): %v", h.seed, wm, err)
	}
	defer releaseAll(outs)
	return testutil.Rows(outs...)
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// results splits emitted rows into the results of frame f.
func (h *harness) results(rows [][]any, f int) [][]any {
	off := firstRes
	for _, a := range h.aggs[:f] {
		off += len(a)
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = r[off : off+len(h.aggs[f])]
	}
	return out
}

func aggNames(aggs []testutil.Agg) []string {
	out := make([]string, len(aggs))
	for i, a := range aggs {
		out[i] = a.SQL()
	}
	return out
}

// check compares, frame by frame, the emitted rows with want, computed for
// the rows of tab listed in index (emitted row i is row index[i] of tab).
func (h *harness) check(what string, got [][]any, tab *testutil.Table, index []int, want func(f int) [][]any) {
	h.t.Helper()
	label := testutil.Label(tab, index, "id", "user_id", "merchant", "ts")
	for f, fr := range h.frames {
		if d := testutil.Diff(aggNames(h.aggs[f]), h.results(got, f), want(f), label); d != "" {
			h.t.Errorf("seed %d, %s, keys %v, %s:\n%s", h.seed, what, h.keys, fr, d)
		}
	}
}

func ids(rows [][]any) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = int(r[idCol].(int64))
	}
	return out
}

// arrival returns a shuffled arrival order of tab (events within bound of
// each other) and a table whose row order is that arrival order.
func arrival(rng *rand.Rand, tab *testutil.Table, keys []string, bound int64) *testutil.Table {
	return tab.Subset(testutil.Shuffle(rng, tab, "ts", keys, bound))
}

func seqs(lo, hi int) []int64 {
	out := make([]int64, hi-lo)
	for i := range out {
		out[i] = int64(lo + i)
	}
	return out
}

func span(lo, hi int) []int {
	out := make([]int, hi-lo)
	for i := range out {
		out[i] = lo + i
	}
	return out
}

var keySets = [][]string{{"user_id"}, {"merchant"}, {"user_id", "merchant"}}

// TestOperatorMatchesReference runs every frame kind and every standard
// aggregate in batch order (one End watermark) and streaming (shuffled
// arrival within the out-of-orderness bound, random watermark advances),
// and compares both with the brute-force reference. The streaming output,
// reordered by arrival, must equal the batch output.
func TestOperatorMatchesReference(t *testing.T) {
	const bound = 3000
	for _, seed := range testutil.Seeds(3) {
		for _, keys := range keySets {
			t.Run(fmt.Sprintf("seed=%d/keys=%v", seed, keys), func(t *testing.T) {
				t.Parallel()
				operatorMatchesReference(t, seed, keys, bound)
			})
		}
	}
}

func operatorMatchesReference(t *testing.T, seed uint64, keys []string, bound int64) {
	{
		{
			rng := testutil.Rand(seed)
			events := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(300)))
			tab := arrival(rng, events, keys, bound) // row i arrives i-th, seq i
			want := make([][][]any, len(testutil.Frames))
			for f, fr := range testutil.Frames {
				want[f] = testutil.Compute(tab, testutil.Window{Keys: keys, Time: "ts", Frame: fr}, testutil.StandardAggs)
			}

			// Batch: everything pushed, then the End watermark; output in
			// arrival order.
			hb := newHarness(t, seed, keys, testutil.Frames, testutil.StandardAggs, 0, true)
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(50))
				if ap, late := hb.push(tab, span(lo, hi), seqs(lo, hi)); ap != nil || late != nil {
					t.Fatalf("seed %d: batch push before any watermark emitted %d rows and %d late", seed, len(ap), len(late))
				}
				lo = hi
			}
			batch := hb.advance(watermark.End)
			if got := ids(batch); !slices.Equal(got, ids(tab.Rows)) {
				t.Fatalf("seed %d keys %v: batch output is not in arrival order:\n got ids %v\nwant ids %v", seed, keys, got, ids(tab.Rows))
			}
			hb.check("batch", batch, tab, nil, func(f int) [][]any { return want[f] })
			if st := hb.op.Stats(); st.RowsIn != int64(len(tab.Rows)) || st.RowsOut != st.RowsIn || st.Pending != 0 || st.LateDropped != 0 {
				t.Errorf("seed %d: batch stats %+v", seed, st)
			}

			// Streaming: the same arrival order, watermark = newest event
			// time - bound, advanced after some pushes.
			hs := newHarness(t, seed, keys, testutil.Frames, testutil.StandardAggs, 0, false)
			var stream [][]any
			maxTs, wm := watermark.None, watermark.None
			for lo := 0; lo < len(tab.Rows); {
				hi := min(len(tab.Rows), lo+1+rng.IntN(20))
				if ap, late := hs.push(tab, span(lo, hi), seqs(lo, hi)); ap != nil || late != nil {
					t.Fatalf("seed %d: streaming within the bound produced %d late rows (%v)", seed, len(late), ids(late))
				}
				for i := lo; i < hi; i++ {
					maxTs = max(maxTs, tab.Value(i, "ts").(int64))
				}
				lo = hi
				if rng.IntN(3) == 0 || maxTs-bound <= wm {
					continue
				}
				wm = maxTs - bound
				out := hs.advance(wm)
				checkReleased(t, seed, tab, hi, wm, out, stream)
				stream = append(stream, out...)
			}
			stream = append(stream, hs.advance(watermark.End)...)
			slices.SortFunc(stream, func(a, b []any) int { return int(a[seqCol].(int64) - b[seqCol].(int64)) })
			if got := ids(stream); !slices.Equal(got, ids(tab.Rows)) {
				t.Fatalf("seed %d keys %v: streaming emitted ids %v, want each row once: %v", seed, keys, got, ids(tab.Rows))
			}
			hs.check("streaming vs reference", stream, tab, nil, func(f int) [][]any { return want[f] })
			hs.check("streaming vs batch", stream, tab, nil, func(f int) [][]any { return hb.results(batch, f) })
		}
	}
}

// checkReleased checks one Advance(wm) after the first n rows of tab were
// pushed: it emits exactly the rows with ts <= wm not emitted before, in
// (event time, arrival) order.
func checkReleased(t *testing.T, seed uint64, tab *testutil.Table, n int, wm int64, out, before [][]any) {
	t.Helper()
	done := map[int]bool{}
	for _, id := range ids(before) {
		done[id] = true
	}
	var want []int
	for i := range n {
		if tab.Value(i, "ts").(int64) <= wm && !done[int(tab.Value(i, "id").(int64))] {
			want = append(want, int(tab.Value(i, "id").(int64)))
		}
	}
	got := ids(out)
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("seed %d: Advance(%d) emitted ids %v, want %v", seed, wm, sorted(got), sorted(want))
	}
	if !slices.IsSortedFunc(out, func(a, b []any) int {
		if a[tsCol].(int64) != b[tsCol].(int64) {
			return int(a[tsCol].(int64) - b[tsCol].(int64))
		}
		return int(a[seqCol].(int64) - b[seqCol].(int64))
	}) {
		t.Fatalf("seed %d: Advance(%d) output is not in (ts, seq) order: ids %v", seed, wm, got)
	}
}

func sorted(s []int) []int { return slices.Sorted(slices.Values(s)) }

// lateArrival returns an arrival order (as a table) in which most rows are
// within bound of each other but some are held back long enough to be
// late.
func lateArrival(rng *rand.Rand, events *testutil.Table, bound int64) *testutil.Table {
	order := testutil.Shuffle(rng, events, "ts", []string{"user_id"}, bound)
	return events.Subset(holdBack(rng, order, 12, 2, 12))
}

// forceLate makes sure that tab, pushed in batches of sizes with the
// watermark bound behind the newest time after each batch, has a late
// row within the lateness and one beyond it, whatever the seed. It
// changes the time of two rows that are not the newest so far (so the
// watermarks stay as they were): the first such row past the middle
// gets a time one millisecond behind the watermark its batch meets,
// the first past three quarters a time beyond the lateness.
func forceLate(tab *testutil.Table, sizes []int, bound, lateness int64) {
	tsCol := tab.Col("ts")
	n := len(tab.Rows)
	targets := []struct {
		from int
		ts   func(wm int64) int64
	}{
		{n / 2, func(wm int64) int64 { return wm - 1 }},
		{n * 3 / 4, func(wm int64) int64 { return wm - lateness - 1 }},
	}
	maxTs, wm := watermark.None, watermark.None
	for b, lo := 0, 0; lo < n && len(targets) > 0; b++ {
		hi := min(n, lo+sizes[b])
		for i := lo; i < hi && len(targets) > 0; i++ {
			ts := tab.Rows[i][tsCol].(int64)
			if i >= targets[0].from && wm != watermark.None && ts <= maxTs {
				tab.Rows[i][tsCol] = targets[0].ts(wm)
				targets = targets[1:]
				continue
			}
			maxTs = max(maxTs, ts)
		}
		lo = hi
		if maxTs-bound > wm {
			wm = maxTs - bound
		}
	}
}

// holdBack moves len(order)/every rows of order, picked at random, lag
// to lag+spread-1 places later (so that some arrive late), and returns
// order.
func holdBack(rng *rand.Rand, order []int, every, lag, spread int) []int {
	for k := 0; k < len(order)/every; k++ {
		p := rng.IntN(len(order))
		q := min(len(order)-1, p+lag+rng.IntN(spread))
		row := order[p]
		order = slices.Insert(slices.Delete(order, p, p+1), q, row)
	}
	return order
}

// boundedFrames are the frames that can be combined with allowed lateness.
func boundedFrames() []testutil.Frame {
	var out []testutil.Frame
	for _, f := range testutil.Frames {
		if !f.Unbounded {
			out = append(out, f)
		}
	}
	return out
}

// TestOperatorLateRows: with no allowed lateness, rows at or behind the
// watermark are returned as late, counted, and change nothing: every other
// row's values equal the reference over the accepted rows only.
func TestOperatorLateRows(t *testing.T) {
	t.Parallel()
	const bound = 1000
	keys := []string{"user_id"}
	frames := boundedFrames()
	for _, seed := range testutil.Seeds(4) {
		rng := testutil.Rand(seed)
		tab := lateArrival(rng, testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(400))), bound)
		h := newHarness(t, seed, keys, frames, testutil.StandardAggs, 0, false)
		var emitted, late [][]any
		var wantLate, accepted []int
		maxTs, wm := watermark.None, watermark.None
		for lo := 0; lo < len(tab.Rows); {
			hi := min(len(tab.Rows), lo+1+rng.IntN(8))
			for i := lo; i < hi; i++ {
				if ts := tab.Value(i, "ts").(int64); ts <= wm {
					wantLate = append(wantLate, i)
				} else {
					accepted = append(accepted, i)
				}
			}
			ap, lt := h.push(tab, span(lo, hi), seqs(lo, hi))
			if len(ap) > 0 {
				t.Fatalf("seed %d: %d late rows applied with no allowed lateness", seed, len(ap))
			}
			late = append(late, lt...)
			for i := lo; i < hi; i++ {
				maxTs = max(maxTs, tab.Value(i, "ts").(int64))
			}
			lo = hi
			if maxTs-bound > wm {
				wm = maxTs - bound
				emitted = append(emitted, h.advance(wm)...)
			}
		}
		emitted = append(emitted, h.advance(watermark.End)...)

		if len(wantLate) == 0 {
			t.Fatalf("seed %d: the test data has no late rows", seed)
		}
		if got, want := sorted(ids(late)), sorted(ids(tab.Subset(wantLate).Rows)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: late rows %v, want %v", seed, got, want)
		}
		for _, r := range late {
			if len(r) != opSchema.NumFields() {
				t.Fatalf("seed %d: a late row has %d columns, want the %d input columns", seed, len(r), opSchema.NumFields())
			}
		}
		if st := h.op.Stats(); st.LateDropped != int64(len(wantLate)) || st.LateApplied != 0 || st.RowsOut != int64(len(accepted)) {
			t.Errorf("seed %d: stats %+v, want %d late dropped and %d rows out", seed, st, len(wantLate), len(accepted))
		}
		acc := tab.Subset(accepted) // arrival order of the accepted rows
		slices.SortFunc(emitted, func(a, b []any) int { return int(a[seqCol].(int64) - b[seqCol].(int64)) })
		if got, want := ids(emitted), ids(acc.Rows); !slices.Equal(got, want) {
			t.Fatalf("seed %d: emitted %v, want the accepted rows %v", seed, got, want)
		}
		h.check("late rows dropped", emitted, acc, nil, func(f int) [][]any {
			return testutil.Compute(acc, testutil.Window{Keys: keys, Time: "ts", Frame: frames[f]}, testutil.StandardAggs)
		})
	}
}

// TestOperatorAllowedLateness: late rows within the allowed lateness are
// applied, emitted at once with their frame as of arrival, and seen by
// later rows; rows beyond it are dropped. Every emitted row must equal the
// reference over the rows accepted before it was emitted.
func TestOperatorAllowedLateness(t *testing.T) {
	t.Parallel()
	const bound, lateness = 1000, 2500
	keys := []string{"user_id"}
	frames := boundedFrames()
	for _, seed := range testutil.Seeds(4) {
		rng := testutil.Rand(seed)
		// Not scaled down under the race detector: a third may have no
		// late row within the lateness.
		tab := lateArrival(rng, testutil.Events(rng, testutil.DefaultEvents(300)), bound)
		// The batches' sizes are drawn first, so that the watermark each
		// batch meets is known and two rows can be made late for sure.
		var sizes []int
		for n := 0; n < len(tab.Rows); {
			sizes = append(sizes, 1+rng.IntN(8))
			n += sizes[len(sizes)-1]
		}
		forceLate(tab, sizes, bound, lateness)
		h := newHarness(t, seed, keys, frames, testutil.StandardAggs, lateness, false)
		var accepted []int
		var gotRows [][]any
		var wantRows [][][]any // per frame
		// A late row applied is emitted with its frame as of its
		// arrival: over the rows accepted up to itself, not those after
		// it in its batch (arrival true).
		expect := func(rows [][]any, arrival bool) {
			for _, r := range rows {
				i := slices.IndexFunc(tab.Rows, func(x []any) bool { return x[idCol] == r[idCol] })
				gotRows = append(gotRows, r)
				acc := accepted
				if arrival {
					acc = accepted[:slices.Index(accepted, i)+1]
				}
				for f, fr := range frames {
					if len(wantRows) <= f {
						wantRows = append(wantRows, nil)
					}
					wantRows[f] = append(wantRows[f], testutil.EvalAt(tab, testutil.Window{Keys: keys, Time: "ts", Frame: fr}, testutil.StandardAggs, acc, i))
				}
			}
		}
		var nApplied, nDropped int
		maxTs, wm := watermark.None, watermark.None
		for b, lo := 0, 0; lo < len(tab.Rows); b++ {
			hi := min(len(tab.Rows), lo+sizes[b])
			var wantApplied, wantDropped []int
			for i := lo; i < hi; i++ {
				switch ts := tab.Value(i, "ts").(int64); {
				case ts > wm:
					accepted = append(accepted, i)
				case ts > wm-lateness:
					accepted = append(accepted, i)
					wantApplied = append(wantApplied, i)
				default:
					wantDropped = append(wantDropped, i)
				}
			}
			ap, lt := h.push(tab, span(lo, hi), seqs(lo, hi))
			if got, want := ids(ap), ids(tab.Subset(wantApplied).Rows); !slices.Equal(sorted(got), sorted(want)) {
				t.Fatalf("seed %d: applied late rows %v, want %v (watermark %d)", seed, got, want, wm)
			}
			if got, want := ids(lt), ids(tab.Subset(wantDropped).Rows); !slices.Equal(sorted(got), sorted(want)) {
				t.Fatalf("seed %d: dropped late rows %v, want %v", seed, got, want)
			}
			nApplied += len(wantApplied)
			nDropped += len(wantDropped)
			expect(ap, true)
			for i := lo; i < hi; i++ {
				maxTs = max(maxTs, tab.Value(i, "ts").(int64))
			}
			lo = hi
			if maxTs-bound > wm {
				wm = maxTs - bound
				expect(h.advance(wm), false)
			}
		}
		expect(h.advance(watermark.End), false)
		if nApplied == 0 || nDropped == 0 {
			t.Fatalf("seed %d: the test data has %d applied and %d dropped late rows; want some of each", seed, nApplied, nDropped)
		}
		if st := h.op.Stats(); st.LateApplied != int64(nApplied) || st.LateDropped != int64(nDropped) || st.RowsOut != int64(len(accepted)) {
			t.Errorf("seed %d: stats %+v, want %d applied, %d dropped, %d out", seed, st, nApplied, nDropped, len(accepted))
		}
		if len(gotRows) != len(accepted) {
			t.Fatalf("seed %d: emitted %d rows, want %d", seed, len(gotRows), len(accepted))
		}
		byID := map[int64]int{}
		for i, r := range tab.Rows {
			byID[r[idCol].(int64)] = i
		}
		index := make([]int, len(gotRows))
		for k, r := range gotRows {
			index[k] = byID[r[idCol].(int64)]
		}
		h.check("allowed lateness", gotRows, tab, index, func(f int) [][]any { return wantRows[f] })
	}
}

func TestOperatorRejectsLatenessWithUnboundedFrame(t *testing.T) {
	cfg := window.Config{TsCol: tsCol, SeqCol: seqCol, KeyCols: []int{1}, AllowedLateness: 1000,
		Windows: []window.Spec{{Frame: window.Frame{Unbounded: true}, Aggs: []agg.Func{bindAgg(t, testutil.Agg{Func: "count"})}}}}
	if _, err := window.New(cfg, opSchema); err == nil {
		t.Fatal("New accepted allowed lateness with an UNBOUNDED PRECEDING frame")
	}
}

// TestOperatorRetainedRowsBounded: a bounded frame keeps only the rows it
// can still reach, so state does not grow with the history of a key.
func TestOperatorRetainedRowsBounded(t *testing.T) {
	t.Parallel()
	maxRetained := func(rowsPerKey int, frame testutil.Frame) int64 {
		const users = 4
		rng := testutil.Rand(7)
		cfg := testutil.DefaultEvents(rowsPerKey * users)
		cfg.Users, cfg.NullKeys = users, false
		tab := testutil.Events(rng, cfg)
		h := newHarness(t, 7, []string{"user_id"}, []testutil.Frame{frame}, []testutil.Agg{{Func: "sum", Arg: "price"}, {Func: "max", Arg: "amount"}, {Func: "first_value", Arg: "category"}}, 0, false)
		var peak int64
		for lo := 0; lo < len(tab.Rows); {
			hi := min(len(tab.Rows), lo+10)
			h.push(tab, span(lo, hi), seqs(lo, hi))
			h.advance(tab.Value(hi-1, "ts").(int64))
			st := h.op.Stats()
			peak = max(peak, st.Retained)
			if frame.Rows && st.Retained > users*(frame.Preceding+1) {
				t.Fatalf("%s: %d rows retained for %d keys", frame, st.Retained, users)
			}
			lo = hi
		}
		return peak
	}
	for _, f := range []testutil.Frame{{Preceding: 2000}, {Preceding: 5000, EndPreceding: 1000, ExcludeCurrent: true}, {Rows: true, Preceding: 3}} {
		small, large := maxRetained(testutil.Scale(100), f), maxRetained(10*testutil.Scale(100), f)
		t.Logf("%s: peak retained %d rows at n events per key, %d at 10n", f, small, large)
		if large > 2*small+20 {
			t.Errorf("%s: retained rows grew from %d to %d when events per key grew tenfold", f, small, large)
		}
	}
}

// TestFirstValueUnboundedAcrossWatermarks is the regression test of a bug
// found by TestOperatorMatchesReference: first_value over RANGE BETWEEN
// UNBOUNDED PRECEDING AND CURRENT ROW panicked (index out of range [-1])
// once a key's rows were released by more than one Advance, because the
// frame's first row had been trimmed from state.
func TestFirstValueUnboundedAcrossWatermarks(t *testing.T) {
	h := newHarnessPerFrame(t, 0, []string{"user_id"}, []testutil.Frame{{Unbounded: true}},
		[][]testutil.Agg{{{Func: "first_value", Arg: "amount"}}}, 0, false)
	tab := &testutil.Table{Schema: testutil.EventSchema, Rows: [][]any{
		{int64(0), int64(1), "m", int64(1000), int64(5), nil, nil},
		{int64(1), int64(1), "m", int64(2000), int64(7), nil, nil},
		{int64(2), int64(1), "m", int64(3000), int64(9), nil, nil},
	}}
	var got []any
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		for i := range tab.Rows {
			h.push(tab, []int{i}, []int64{int64(i)})
			for _, r := range h.advance(tab.Value(i, "ts").(int64)) {
				got = append(got, r[firstRes])
			}
		}
		return nil
	}()
	if err != nil {
		t.Fatalf("first_value over an unbounded frame, one Advance per row: %v", err)
	}
	if want := []any{int64(5), int64(5), int64(5)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first_value = %v, want %v", got, want)
	}
}
