package volga_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/window"
)

// The modes suite (issue #4): for random events and random (key, time)
// points, every way of computing a feature gives the same number.
//
//   - batch output (arrival order = input order) equals the brute-force
//     reference of internal/testutil row by row;
//   - streaming output, arrival shuffled within the out-of-orderness bound,
//     at parallelism 1 and 2, equals the batch output row for row (matched
//     by id), bit for bit (SPEC section 6: same accumulators, same rows);
//   - Pipeline.Lookup(key, t) on each finished pipeline (batch with a
//     lookup retention, streaming at parallelism 1 and 2, the last from
//     four goroutines at once) gives the same values everywhere, equal to
//     the reference for the frame a row at (key, t) would have without
//     that row; lookups made while the parallelism-2 stream runs, at times
//     up to the watermark they report, already give the final values;
//   - the HTTP answer of Pipeline.Handler, through a real loopback
//     listener, single and array requests, decodes to exactly the Lookup
//     values (same numbers, same map order, watermark "+inf");
//   - volga.Backfill over a spine of the points (non-strict, parallelism 1
//     and 2) equals the lookups; strict backfill equals the reference over
//     the events with ts < t, and equals non-strict backfill for frames
//     ending before the current row;
//   - at points where the SPEC makes them the same frame, the lookup (and
//     backfill) equals the output row of the key's last event at or before
//     t: RANGE frames without EXCLUDE CURRENT ROW when that event is at t
//     exactly (peers included on both sides), UNBOUNDED ... AND CURRENT ROW
//     at any t. ROWS frames and EXCLUDE CURRENT ROW frames are not the same
//     frame there (a lookup's probe row is not an event), so they are
//     compared with the reference only; lookups of the RANGE frame with
//     and without EXCLUDE CURRENT ROW must agree, as the probe is never in
//     the frame;
//   - Lookup with a candidate row (in process and over HTTP) equals the
//     output row of that row in a batch run with the row appended to the
//     input; a candidate that fails the WHERE clause (no such output row)
//     equals the lookup without it.
//
// Every comparison between modes is bit for bit, ew_avg included (see
// modesNearOnly); comparisons with the reference use its tolerances.
//
// The query has a WHERE clause, an integer key (user_id) and a string key
// (merchant), both with NULLs, event-time ties, NULL values, standard and
// ML aggregates, and day-long RANGE frames whose lookups merge tiles.
// A second query with UNBOUNDED PRECEDING frames (no lookups: CanLookup
// says so) runs batch, streaming and backfill.

const (
	modesRows      = 700
	modesTable     = "events"
	modesRetention = 48 * time.Hour
)

// modesRun is one finished pipeline and its output rows by id.
type modesRun struct {
	name string
	p    *volga.Pipeline
	rows [][]any         // in emission order
	byID map[int64][]any // output row of each event id
}

func runModes(t *testing.T, query string, tab *testutil.Table, rng *rand.Rand, name string, opts ...volga.Option) modesRun {
	t.Helper()
	return runModesHook(t, query, tab, rng, name, nil, opts...)
}

// runModesHook is runModes calling hook(p, n) before the source's n-th
// read, while the pipeline runs.
func runModesHook(t *testing.T, query string, tab *testutil.Table, rng *rand.Rand, name string, hook func(p *volga.Pipeline, n int), opts ...volga.Option) modesRun {
	t.Helper()
	out := sink.NewCollector()
	// Batches of 1 to 200 rows: the watermark moves between batches.
	src := testutil.NewSource(tab.Schema, tab.Batches(rng, 200)...)
	var p *volga.Pipeline
	if hook != nil {
		src.Before = func(_ context.Context, n int) error {
			hook(p, n)
			return nil
		}
	}
	p, err := volga.SQL(query, append([]volga.Option{volga.WithSource(modesTable, src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, query)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("%s: run: %v", name, err)
	}
	r := modesRun{name: name, p: p, rows: out.Rows(), byID: map[int64][]any{}}
	out.Release()
	for _, row := range r.rows {
		r.byID[row[0].(int64)] = row
	}
	if st := p.Stats(); st.LateDropped != 0 {
		t.Fatalf("%s: %d late rows; the arrival order must stay within the bound", name, st.LateDropped)
	}
	return r
}

// modesFixture holds one seed's data and what the checks share.
type modesFixture struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	tab    *testutil.Table // events in arrival order
	acc    *testutil.Table // the events that pass WHERE, in arrival order
	points []testutil.ModesPoint
	// keyRows[keys][key] are the rows of acc with that key (KeyString of
	// the window's key columns), in arrival order.
	keyRows map[string]map[string][]int
	mism    map[string]int // cells equal only within the float tolerance, by comparison
}

func newModesFixture(t *testing.T, seed uint64) *modesFixture {
	f := &modesFixture{t: t, seed: seed, rng: testutil.Rand(seed ^ 0x6d6f646573), keyRows: map[string]map[string][]int{}, mism: map[string]int{}}
	f.tab = testutil.ModesData(seed, modesRows)
	f.acc, _ = f.tab.Filter(testutil.ModesKeep)
	f.points = testutil.ModesPoints(f.rng, f.tab, testutil.Scale(150))
	return f
}

func (f *modesFixture) rowsOfKey(keys []string, row []any) []int {
	ks := strings.Join(keys, ",")
	m, ok := f.keyRows[ks]
	kc := f.keyCols(keys)
	if !ok {
		m = map[string][]int{}
		for i, r := range f.acc.Rows {
			k := testutil.KeyString(r, kc)
			m[k] = append(m[k], i)
		}
		f.keyRows[ks] = m
	}
	return m[testutil.KeyString(row, kc)]
}

func (f *modesFixture) keyCols(keys []string) []int {
	kc := make([]int, len(keys))
	for j, k := range keys {
		kc[j] = f.acc.Col(k)
	}
	return kc
}

// probeRow is the row a lookup at p stands for: the point's key and time,
// no values (it is left out of its own frame).
func (f *modesFixture) probeRow(p testutil.ModesPoint) []any {
	row := make([]any, f.acc.Schema.NumFields())
	row[f.acc.Col("id")] = int64(-1)
	row[f.acc.Col("user_id")] = p.User
	row[f.acc.Col("merchant")] = p.Merchant
	row[f.acc.Col("ts")] = p.T
	return row
}

// reference computes window w's aggregates at point p by brute force
// (testutil.EvalAt): over the accepted events (only those with ts < t when
// strict) plus the probe row as the last arrival, left out of its own frame
// unless it is a candidate row (cand), which counts as the current row.
func (f *modesFixture) reference(w testutil.ModesWindow, p testutil.ModesPoint, strict bool, cand []any) []any {
	probe := cand
	if probe == nil {
		probe = f.probeRow(p)
	}
	n := len(f.acc.Rows)
	ext := &testutil.Table{Schema: f.acc.Schema, Rows: append(f.acc.Rows[:n:n], probe)}
	tc := f.acc.Col("ts")
	var rows []int
	for _, i := range f.rowsOfKey(w.Keys, probe) {
		if !strict || f.acc.Rows[i][tc].(int64) < p.T {
			rows = append(rows, i)
		}
	}
	rows = append(rows, n)
	fr := w.Frame
	if cand == nil {
		fr.ExcludeCurrent = true
	}
	return testutil.EvalAt(ext, testutil.Window{Keys: w.Keys, Time: "ts", Frame: fr}, w.Aggs, rows, n)
}

// references computes reference for every point, all windows' features
// in a row.
func (f *modesFixture) references(windows []testutil.ModesWindow, strict bool) [][]any {
	out := make([][]any, len(f.points))
	for i, p := range f.points {
		for _, w := range windows {
			out[i] = append(out[i], f.reference(w, p, strict, nil)...)
		}
	}
	return out
}

// batchVsReference checks the batch output of a sample of the events
// against the reference (testutil.EvalAt over the events of the row's key).
func (f *modesFixture) batchVsReference(what string, windows []testutil.ModesWindow, names []string, r modesRun) {
	f.t.Helper()
	const nProj = 5
	for range testutil.Scale(90) {
		i := f.rng.IntN(len(f.acc.Rows))
		row := f.acc.Rows[i]
		for k, w := range windows {
			lo, hi := modesFeatureRange(windows, k)
			want := testutil.EvalAt(f.acc, testutil.Window{Keys: w.Keys, Time: "ts", Frame: w.Frame}, w.Aggs, f.rowsOfKey(w.Keys, row), i)
			if !f.agreeRef(fmt.Sprintf("%s vs reference: id %v window %s", what, row[0], w.Name), names[lo:hi], r.byID[row[0].(int64)][nProj+lo:nProj+hi], want) {
				f.t.FailNow()
			}
		}
	}
}

// lastAt returns the accepted event of w's key at p that is last in
// (ts, arrival) order among those with ts <= t (ts < t when strict), or -1.
func (f *modesFixture) lastAt(w testutil.ModesWindow, p testutil.ModesPoint, strict bool) int {
	tc := f.acc.Col("ts")
	best := -1
	for _, i := range f.rowsOfKey(w.Keys, f.probeRow(p)) {
		ts := f.acc.Rows[i][tc].(int64)
		if ts > p.T || strict && ts == p.T {
			continue
		}
		if best < 0 || ts >= f.acc.Rows[best][tc].(int64) {
			best = i
		}
	}
	return best
}

// modesSame reports whether two values of one feature are identical: floats
// bit for bit (NaN equals NaN), lists, maps and structs element by element.
func modesSame(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, modesSame)
	case []sink.MapEntry:
		y, ok := b.([]sink.MapEntry)
		return ok && slices.EqualFunc(x, y, func(p, q sink.MapEntry) bool { return modesSame(p.Key, q.Key) && modesSame(p.Value, q.Value) })
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !modesSame(v, w) {
				return false
			}
		}
		return true
	}
	return testutil.Equal(a, b)
}

// agree checks that got equals want for every feature, bit for bit (SPEC
// section 6: the modes share the plan and the accumulators), except the
// features of nearOnly, which must agree within the float tolerance of
// SPEC section 4 (cells that differ only in the last bits are counted
// under what's first words, and logged).
func (f *modesFixture) agree(what string, names []string, got, want []any) bool {
	f.t.Helper()
	if len(got) != len(want) {
		f.t.Errorf("seed %d: %s: %d values, want %d", f.seed, what, len(got), len(want))
		return false
	}
	ok := true
	for i := range want {
		if modesSame(got[i], want[i]) {
			continue
		}
		if modesNearOnly(names[i]) && testutil.Equal(got[i], want[i]) {
			f.mism[names[i]]++
			continue
		}
		f.t.Errorf("seed %d: %s: %s = %s, want %s (VOLGA_SEED=%d)", f.seed, what, names[i], modesShow(got[i]), modesShow(want[i]), f.seed)
		ok = false
	}
	return ok
}

// modesNearOnly reports whether a feature may differ between modes in the
// last bits: none does any more. ew_avg, whose partial states merge with
// powers of 1-alpha, groups every frame the same canonical way in its
// window and in lookups (agg.RangeEvaluator), so it too agrees bit for bit
// across batch, streaming, lookup, HTTP and backfill.
func modesNearOnly(name string) bool { return false }

func modesShow(v any) string {
	if v == nil {
		return "NULL"
	}
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprintf("%v", v)
}

func modesPointLabel(p testutil.ModesPoint) string {
	return fmt.Sprintf("user_id=%s merchant=%s t=%d", modesShow(p.User), modesShow(p.Merchant), p.T)
}

func modesFeatureNames(windows []testutil.ModesWindow) (names []string, win []int) {
	for k, w := range windows {
		for _, a := range w.Aggs {
			names = append(names, w.FeatureName(a))
			win = append(win, k)
		}
	}
	return names, win
}

// modesFeatureRange returns the positions of window k's features.
func modesFeatureRange(windows []testutil.ModesWindow, k int) (lo, hi int) {
	for i, w := range windows {
		if i == k {
			return lo, lo + len(w.Aggs)
		}
		lo += len(w.Aggs)
	}
	panic("no window")
}

// modesBackfillParallelism is 1 and 2, or only underRace under the race
// detector (where a run at parallelism 2 costs several times more).
func modesBackfillParallelism(underRace int) []int {
	if testutil.Race {
		return []int{underRace}
	}
	return []int{1, 2}
}

// backfill runs volga.Backfill over a spine of the points and returns the
// feature values of each spine row.
func (f *modesFixture) backfill(query string, strict bool, par int) [][]any {
	f.t.Helper()
	spine := testutil.ModesSpine(f.points)
	out := sink.NewCollector()
	defer out.Release()
	err := volga.Backfill(context.Background(), query,
		testutil.NewSource(spine.Schema, spine.Batches(f.rng, 64)...), out,
		volga.WithSource(modesTable, testutil.NewSource(f.tab.Schema, f.tab.Batches(f.rng, 300)...)),
		volga.WithStrict(strict), volga.WithParallelism(par))
	if err != nil {
		f.t.Fatalf("seed %d: backfill (strict %v, parallelism %d): %v", f.seed, strict, par, err)
	}
	rows := out.Rows()
	if len(rows) != len(spine.Rows) {
		f.t.Fatalf("seed %d: backfill gave %d rows for %d spine rows", f.seed, len(rows), len(spine.Rows))
	}
	nSpine := spine.Schema.NumFields()
	feats := make([][]any, len(rows))
	for i, r := range rows {
		if !slices.EqualFunc(r[:nSpine], spine.Rows[i], testutil.Equal) {
			f.t.Fatalf("seed %d: backfill row %d starts %v, want the spine row %v", f.seed, i, r[:nSpine], spine.Rows[i])
		}
		feats[i] = r[nSpine:]
	}
	return feats
}

func TestModesAgree(t *testing.T) {
	for _, seed := range testutil.Seeds(3) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			f := newModesFixture(t, seed)
			f.lookupQuery()
			f.unboundedQuery()
			for name, n := range f.mism {
				t.Logf("seed %d: %d values of %s equal between modes within 1e-9 relative, not bit for bit", seed, n, name)
			}
		})
	}
}

func (f *modesFixture) lookupQuery() {
	t := f.t
	windows := testutil.ModesLookupWindows
	query := testutil.ModesSQL(modesTable, windows)
	names, _ := modesFeatureNames(windows)
	const nProj = 5 // id, user_id, merchant, ts, amount
	bound := time.Duration(testutil.ModesMaxOutOfOrder) * time.Millisecond

	// (a) batch, (b) streaming at parallelism 1 and 2.
	batch := runModes(t, query, f.tab, f.rng, "batch", volga.WithLookupRetention(modesRetention))
	if err := batch.p.CanLookup(); err != nil {
		t.Fatalf("CanLookup: %v", err)
	}
	if got := batch.p.KeyColumns(); !slices.Equal(got, []string{"user_id", "merchant"}) {
		t.Fatalf("KeyColumns = %v, want [user_id merchant]", got)
	}
	runs := []modesRun{batch}
	// While stream_p2 runs, look a few points up before each read of its
	// source (the window tasks run meanwhile).
	type liveLookup struct {
		point  int
		wm     int64
		values []any
	}
	var live []liveLookup
	hook := func(p *volga.Pipeline, n int) {
		wm := int64(math.MinInt64)
		for range 5 {
			// A random point, then points at or behind the watermark seen.
			i := f.rng.IntN(len(f.points))
			for try := 0; try < 20 && f.points[i].T > wm && wm != math.MinInt64; try++ {
				i = f.rng.IntN(len(f.points))
			}
			pt := f.points[i]
			res, err := p.Lookup(context.Background(), map[string]any{"user_id": pt.User, "merchant": pt.Merchant}, time.UnixMilli(pt.T), nil)
			if errors.Is(err, pipeline.ErrNotRunning) && len(live) == 0 {
				// The source is read before the window tasks are up.
				return
			}
			if err != nil {
				t.Errorf("seed %d: Lookup(%s) while streaming, before read %d: %v", f.seed, modesPointLabel(pt), n, err)
				return
			}
			live = append(live, liveLookup{point: i, wm: res.Watermark, values: res.Values})
			wm = max(wm, res.Watermark)
		}
	}
	for _, par := range []int{1, 2} {
		var h func(*volga.Pipeline, int)
		if par == 2 {
			h = hook
		}
		runs = append(runs, runModesHook(t, query, f.tab, f.rng, fmt.Sprintf("stream_p%d", par), h,
			volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(bound), volga.WithParallelism(par)))
	}

	// Batch output in input order, equal to the reference.
	if len(batch.rows) != len(f.acc.Rows) {
		t.Fatalf("batch: %d rows, want %d", len(batch.rows), len(f.acc.Rows))
	}
	for i, r := range f.acc.Rows {
		if batch.rows[i][0] != r[0] {
			t.Fatalf("batch row %d has id %v, want %v (input order)", i, batch.rows[i][0], r[0])
		}
	}
	f.batchVsReference("batch", windows, names, batch)
	// Streaming equals batch, row for row by id, bit for bit.
	for _, r := range runs[1:] {
		if len(r.rows) != len(batch.rows) {
			t.Fatalf("%s: %d rows, want %d", r.name, len(r.rows), len(batch.rows))
		}
		for _, br := range batch.rows {
			id := br[0].(int64)
			sr, ok := r.byID[id]
			if !ok {
				t.Fatalf("%s: no output row for id %d", r.name, id)
			}
			if !f.agree(fmt.Sprintf("%s vs batch: id %d", r.name, id), names, sr[nProj:], br[nProj:]) {
				t.FailNow()
			}
		}
	}

	// (c) Lookups on every finished pipeline; on the last one from four
	// goroutines at once (tiles are built by the first lookup that needs
	// them, under the operator's shared lock).
	lookups := make([][][]any, len(runs)) // [run][point]
	for k, r := range runs {
		lookups[k] = make([][]any, len(f.points))
		workers := 1
		if k == len(runs)-1 {
			workers = 4
		}
		var wg sync.WaitGroup
		for g := range workers {
			wg.Go(func() {
				for i := g; i < len(f.points); i += workers {
					p := f.points[i]
					res, err := r.p.Lookup(context.Background(), map[string]any{"user_id": p.User, "merchant": p.Merchant}, time.UnixMilli(p.T), nil)
					if err != nil {
						t.Errorf("seed %d: %s: Lookup(%s): %v", f.seed, r.name, modesPointLabel(p), err)
						return
					}
					if res.Watermark != window.End {
						t.Errorf("%s: lookup watermark %d after the run, want End", r.name, res.Watermark)
					}
					if !slices.Equal(res.Names, names) {
						t.Errorf("%s: lookup names %v, want %v", r.name, res.Names, names)
						return
					}
					lookups[k][i] = res.Values
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	// A lookup while streaming counts every row up to the watermark it
	// reports: at times up to that watermark it already has the final
	// values. The watermark is the one of the window task serving the key
	// (tasks advance separately), so it never goes back for one key.
	liveFinal, prevWM := 0, map[string]int64{}
	for _, l := range live {
		p := f.points[l.point]
		key := fmt.Sprint(p.User, p.Merchant)
		if w, ok := prevWM[key]; ok && l.wm < w {
			t.Errorf("seed %d: a lookup of %s while streaming reported watermark %d after %d", f.seed, modesPointLabel(p), l.wm, w)
		}
		prevWM[key] = l.wm
		if p.T <= l.wm {
			f.agree(fmt.Sprintf("lookup while streaming (watermark %d) vs after the run: %s", l.wm, modesPointLabel(p)), names, l.values, lookups[2][l.point])
			liveFinal++
		}
	}
	if liveFinal == 0 {
		t.Errorf("seed %d: none of the %d lookups made while streaming was at or behind the watermark", f.seed, len(live))
	}
	refLoose, refStrict := f.references(windows, false), f.references(windows, true)
	long, _ := modesFeatureRange(windows, slices.IndexFunc(windows, func(w testutil.ModesWindow) bool { return w.Name == "d1" }))
	tiled := 0
	for i, p := range f.points {
		if n := refLoose[i][long].(int64); n > 256 {
			tiled++
		}
		if !f.agreeRef("lookup vs reference: "+modesPointLabel(p), names, lookups[0][i], refLoose[i]) {
			t.FailNow()
		}
		for k := range runs[1:] {
			f.agree(fmt.Sprintf("lookup %s vs %s: %s", runs[k+1].name, runs[0].name, modesPointLabel(p)), names, lookups[k+1][i], lookups[0][i])
		}
	}
	if tiled == 0 {
		t.Errorf("seed %d: no lookup has more than 256 rows in its day-long frame; tiles are not exercised", f.seed)
	}
	// The probe row is never in its own frame: RANGE with and without
	// EXCLUDE CURRENT ROW look up the same values.
	f.excludePairs(windows, names, lookups[0])

	// (d) HTTP, through a loopback listener, against the streaming
	// pipeline of parallelism 2.
	f.checkHTTP(runs[2], names, lookups[2])

	// (e) Backfill: non-strict equals the lookups, strict equals the
	// reference over ts < t.
	for _, par := range modesBackfillParallelism(2) {
		loose := f.backfill(query, false, par)
		strict := f.backfill(query, true, par)
		for i, p := range f.points {
			f.agree(fmt.Sprintf("backfill p%d vs lookup: %s", par, modesPointLabel(p)), names, loose[i], lookups[0][i])
			f.agreeRef(fmt.Sprintf("strict backfill p%d vs reference: %s", par, modesPointLabel(p)), names, strict[i], refStrict[i])
			// Frames that end before the current row see nothing at t.
			for k, w := range windows {
				if w.Frame.EndPreceding > 0 {
					lo, hi := modesFeatureRange(windows, k)
					f.agree(fmt.Sprintf("strict vs non-strict backfill p%d, window %s: %s", par, w.Name, modesPointLabel(p)), names[lo:hi], strict[i][lo:hi], loose[i][lo:hi])
				}
			}
		}
	}

	// Lookup (and so HTTP and backfill) against the output rows, where the
	// frames are the same by SPEC sections 3 and 6.
	compared := 0
	for i, p := range f.points {
		for k, w := range windows {
			if w.Frame.Rows || w.Frame.ExcludeCurrent {
				continue
			}
			e := f.lastAt(w, p, false)
			if e < 0 || f.acc.Rows[e][f.acc.Col("ts")].(int64) != p.T {
				continue
			}
			lo, hi := modesFeatureRange(windows, k)
			id := f.acc.Rows[e][0].(int64)
			for _, r := range runs {
				f.agree(fmt.Sprintf("lookup vs %s output row of id %d, window %s: %s", r.name, id, w.Name, modesPointLabel(p)), names[lo:hi], lookups[0][i][lo:hi], r.byID[id][nProj+lo:nProj+hi])
			}
			compared++
		}
	}
	if compared < len(f.points)/4 {
		t.Errorf("seed %d: only %d (point, window) pairs compared with output rows", f.seed, compared)
	}
	t.Logf("seed %d: %d events (%d pass WHERE), %d points; %d lookups over more than 256 rows of the day-long frame (tiles); %d (point, window) pairs equal to an output row; %d of %d lookups while streaming behind the watermark",
		f.seed, len(f.tab.Rows), len(f.acc.Rows), len(f.points), tiled, compared, liveFinal, len(live))

	// Candidate rows: Lookup with the row (in process and over HTTP) equals
	// a batch run with the row appended.
	f.candidates(windows, query, names, runs, lookups[0])
}

// agreeRef compares with the brute-force reference (whose Exact and
// Within values say how close ML aggregates must be).
func (f *modesFixture) agreeRef(what string, names []string, got, want []any) bool {
	f.t.Helper()
	ok := true
	for i := range want {
		if !testutil.Equal(got[i], want[i]) {
			f.t.Errorf("seed %d: %s: %s = %s, want %v (VOLGA_SEED=%d)", f.seed, what, names[i], modesShow(got[i]), want[i], f.seed)
			ok = false
		}
	}
	return ok
}

func (f *modesFixture) excludePairs(windows []testutil.ModesWindow, names []string, lookups [][]any) {
	for a, wa := range windows {
		for b, wb := range windows {
			if !wb.Frame.ExcludeCurrent || wa.Frame.ExcludeCurrent || wb.Frame.Rows || wa.Frame.Rows {
				continue
			}
			fr := wb.Frame
			fr.ExcludeCurrent = false
			if fr != wa.Frame || !slices.Equal(wa.Keys, wb.Keys) {
				continue
			}
			loA, _ := modesFeatureRange(windows, a)
			loB, _ := modesFeatureRange(windows, b)
			for j, ag := range wb.Aggs {
				k := slices.Index(wa.Aggs, ag)
				if k < 0 {
					continue
				}
				for i, p := range f.points {
					f.agree(fmt.Sprintf("lookup of %s vs %s: %s", wb.Name, wa.Name, modesPointLabel(p)), names[loB+j:loB+j+1], lookups[i][loB+j:loB+j+1], lookups[i][loA+k:loA+k+1])
				}
			}
		}
	}
}

func (f *modesFixture) candidates(windows []testutil.ModesWindow, query string, names []string, runs []modesRun, lookups [][]any) {
	t := f.t
	srv := httptest.NewServer(runs[0].p.Handler())
	defer srv.Close()
	n := testutil.Scale(12)
	for c := 0; c < n; c++ {
		pi := f.rng.IntN(len(f.points))
		p := f.points[pi]
		maybe := func(v any) any {
			if f.rng.IntN(6) == 0 {
				return nil
			}
			return v
		}
		cols := []string{"id", "user_id", "merchant", "ts", "amount", "price", "category", "flag", "tag", "score"}
		cand := []any{int64(1_000_000 + c), p.User, p.Merchant, p.T,
			maybe(int64(f.rng.IntN(240) - 39)), maybe(float64(f.rng.IntN(100_001)-20_000) / 100),
			maybe([]string{"food", "fuel", "zzz"}[f.rng.IntN(3)]), maybe(f.rng.IntN(2) == 0),
			maybe(int64(f.rng.IntN(testutil.MLTags))), maybe(float64(f.rng.IntN(13)-2) / 2)}
		if c%3 == 2 {
			cand[4] = int64(-40 - f.rng.IntN(20)) // fails WHERE amount > -40
		}
		row := map[string]any{}
		for j, col := range cols {
			row[col] = cand[j]
		}
		// A third of the candidates fail the WHERE clause (amount <= -40):
		// inserted, they would be filtered out and count nowhere.
		pass := testutil.ModesKeep(cand)
		label := fmt.Sprintf("candidate %v (passes WHERE: %v) at %s", cand, pass, modesPointLabel(p))
		res, err := runs[0].p.Lookup(context.Background(), map[string]any{"user_id": p.User, "merchant": p.Merchant}, time.UnixMilli(p.T), row)
		if err != nil {
			t.Fatalf("seed %d: Lookup with %s: %v", f.seed, label, err)
		}
		// The same from the other pipelines, and over HTTP.
		for _, r := range runs[1:] {
			o, err := r.p.Lookup(context.Background(), map[string]any{"user_id": p.User, "merchant": p.Merchant}, time.UnixMilli(p.T), row)
			if err != nil {
				t.Fatalf("%s: Lookup with %s: %v", r.name, label, err)
			}
			f.agree(fmt.Sprintf("candidate lookup %s vs batch: %s", r.name, label), names, o.Values, res.Values)
		}
		body := modesRequestJSON(p, c%2 == 0, row)
		got := f.post(srv.URL, body)
		if len(got) != 1 {
			t.Fatalf("HTTP candidate request answered %d results", len(got))
		}
		f.checkAnswer("HTTP candidate: "+label, got[0], p, names, res.Values)
		// By the reference, the candidate in its own frame.
		var want []any
		for _, w := range windows {
			if pass {
				want = append(want, f.reference(w, p, false, cand)...)
			} else {
				want = append(want, f.reference(w, p, false, nil)...)
			}
		}
		f.agreeRef("candidate lookup vs reference: "+label, names, res.Values, want)
		// A batch run with the candidate appended.
		ext := &testutil.Table{Schema: f.tab.Schema, Rows: append(f.tab.Rows[:len(f.tab.Rows):len(f.tab.Rows)], cand)}
		r := runModes(t, query, ext, f.rng, "batch+candidate")
		out, ok := r.byID[cand[0].(int64)]
		if !pass {
			if ok {
				t.Fatalf("batch run with the candidate appended: an output row for a row failing WHERE (%s)", label)
			}
			f.agree("candidate failing WHERE vs the lookup without it: "+label, names, res.Values, lookups[pi])
			continue
		}
		if !ok {
			t.Fatalf("batch run with the candidate appended: no output row for it (%s)", label)
		}
		f.agree("candidate lookup vs batch with the row appended: "+label, names, res.Values, out[5:])
	}
}

// modesRequestJSON renders a lookup request at p ("at" as epoch ms or RFC
// 3339), with a candidate row when row is not nil.
func modesRequestJSON(p testutil.ModesPoint, rfc bool, row map[string]any) []byte {
	var b bytes.Buffer
	b.WriteString(`{"key":{"user_id":`)
	b.WriteString(modesJSONScalar(p.User))
	b.WriteString(`,"merchant":`)
	b.WriteString(modesJSONScalar(p.Merchant))
	b.WriteString(`},"at":`)
	if rfc {
		b.WriteString(strconv.Quote(time.UnixMilli(p.T).UTC().Format(time.RFC3339Nano)))
	} else {
		b.WriteString(strconv.FormatInt(p.T, 10))
	}
	if row != nil {
		b.WriteString(`,"row":{`)
		first := true
		for _, col := range []string{"id", "user_id", "merchant", "ts", "amount", "price", "category", "flag", "tag", "score"} {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(strconv.Quote(col) + ":" + modesJSONScalar(row[col]))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes()
}

func modesJSONScalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

// post sends body to the features endpoint and returns the decoded
// result objects (one for a single request).
func (f *modesFixture) post(url string, body []byte) []modesJSON {
	f.t.Helper()
	resp, err := http.Post(url+"/v1/features", "application/json", bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("seed %d: POST %s: status %d: %s", f.seed, body, resp.StatusCode, data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := modesDecodeJSON(dec)
	if err != nil {
		f.t.Fatalf("decoding %s: %v", data, err)
	}
	if n.kind == '[' {
		return n.arr
	}
	return []modesJSON{n}
}

func (f *modesFixture) checkHTTP(r modesRun, names []string, lookups [][]any) {
	srv := httptest.NewServer(r.p.Handler())
	defer srv.Close()
	// Single requests for the first points, then arrays of up to 25.
	single := min(len(f.points), 20)
	for i := range single {
		got := f.post(srv.URL, modesRequestJSON(f.points[i], i%2 == 1, nil))
		if len(got) != 1 {
			f.t.Fatalf("single request answered %d results", len(got))
		}
		f.checkAnswer("HTTP single: "+modesPointLabel(f.points[i]), got[0], f.points[i], names, lookups[i])
	}
	for lo := 0; lo < len(f.points); lo += 25 {
		hi := min(lo+25, len(f.points))
		var body bytes.Buffer
		body.WriteByte('[')
		for i := lo; i < hi; i++ {
			if i > lo {
				body.WriteByte(',')
			}
			body.Write(modesRequestJSON(f.points[i], i%3 == 0, nil))
		}
		body.WriteByte(']')
		got := f.post(srv.URL, body.Bytes())
		if len(got) != hi-lo {
			f.t.Fatalf("array of %d requests answered %d results", hi-lo, len(got))
		}
		for i := lo; i < hi; i++ {
			f.checkAnswer("HTTP array: "+modesPointLabel(f.points[i]), got[i-lo], f.points[i], names, lookups[i])
		}
	}
}

// checkAnswer checks one HTTP result object against the lookup values:
// the key and time echoed, watermark "+inf", features in SELECT order with
// exactly the lookup's values.
func (f *modesFixture) checkAnswer(what string, n modesJSON, p testutil.ModesPoint, names []string, want []any) {
	f.t.Helper()
	get := func(name string) modesJSON {
		for i, k := range n.keys {
			if k == name {
				return n.vals[i]
			}
		}
		f.t.Fatalf("seed %d: %s: no %q in the answer", f.seed, what, name)
		return modesJSON{}
	}
	if wm := get("watermark"); wm.kind != 's' || wm.str != "+inf" {
		f.t.Errorf("%s: watermark %+v, want \"+inf\"", what, wm)
	}
	at, err := time.Parse(time.RFC3339Nano, get("at").str)
	if err != nil || at.UnixMilli() != p.T {
		f.t.Errorf("%s: at %q, want %d ms (%v)", what, get("at").str, p.T, err)
	}
	key := get("key")
	if err := modesMatchJSON(p.User, key.get("user_id")); err != nil {
		f.t.Errorf("%s: key user_id: %v", what, err)
	}
	if err := modesMatchJSON(p.Merchant, key.get("merchant")); err != nil {
		f.t.Errorf("%s: key merchant: %v", what, err)
	}
	feats := get("features")
	if !slices.Equal(feats.keys, names) {
		f.t.Fatalf("%s: features %v, want %v in this order", what, feats.keys, names)
	}
	for i, v := range want {
		if err := modesMatchJSON(v, feats.vals[i]); err != nil {
			f.t.Errorf("seed %d: %s: %s: %v", f.seed, what, names[i], err)
		}
	}
}

// modesJSON is a decoded JSON value that keeps the order of object members.
type modesJSON struct {
	kind byte // 'n' null, 'b' bool, '#' number, 's' string, '[' array, '{' object
	b    bool
	num  json.Number
	str  string
	arr  []modesJSON
	keys []string
	vals []modesJSON
}

func (n modesJSON) get(key string) modesJSON {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return modesJSON{kind: '?'}
}

func (n modesJSON) String() string {
	switch n.kind {
	case 'n':
		return "null"
	case 'b':
		return strconv.FormatBool(n.b)
	case '#':
		return n.num.String()
	case 's':
		return strconv.Quote(n.str)
	case '[':
		parts := make([]string, len(n.arr))
		for i, e := range n.arr {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ",") + "]"
	case '{':
		parts := make([]string, len(n.keys))
		for i, k := range n.keys {
			parts[i] = strconv.Quote(k) + ":" + n.vals[i].String()
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return "(missing)"
}

func modesDecodeJSON(dec *json.Decoder) (modesJSON, error) {
	tok, err := dec.Token()
	if err != nil {
		return modesJSON{}, err
	}
	switch x := tok.(type) {
	case nil:
		return modesJSON{kind: 'n'}, nil
	case bool:
		return modesJSON{kind: 'b', b: x}, nil
	case json.Number:
		return modesJSON{kind: '#', num: x}, nil
	case string:
		return modesJSON{kind: 's', str: x}, nil
	case json.Delim:
		n := modesJSON{kind: byte(x)}
		for dec.More() {
			if x == '{' {
				k, err := dec.Token()
				if err != nil {
					return n, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := modesDecodeJSON(dec)
			if err != nil {
				return n, err
			}
			if x == '{' {
				n.vals = append(n.vals, v)
			} else {
				n.arr = append(n.arr, v)
			}
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	}
	return modesJSON{}, fmt.Errorf("unexpected token %v", tok)
}

// modesMatchJSON checks that the JSON value n is the rendering of the feature
// value v: exactly the same number (a float must parse back to the same
// bits), NULL and NaN as null, lists as arrays, structs as objects, maps
// as objects in key order.
func modesMatchJSON(v any, n modesJSON) error {
	bad := func() error { return fmt.Errorf("JSON %s does not render %s (%T)", n, modesShow(v), v) }
	switch x := v.(type) {
	case nil:
		if n.kind != 'n' {
			return bad()
		}
	case bool:
		if n.kind != 'b' || n.b != x {
			return bad()
		}
	case int64:
		if n.kind != '#' {
			return bad()
		}
		if g, err := n.num.Int64(); err != nil || g != x {
			return bad()
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if n.kind != 'n' {
				return bad()
			}
			return nil
		}
		if n.kind != '#' {
			return bad()
		}
		if g, err := strconv.ParseFloat(n.num.String(), 64); err != nil || g != x {
			return bad()
		}
	case string:
		if n.kind != 's' || n.str != x {
			return bad()
		}
	case []any:
		if n.kind != '[' || len(n.arr) != len(x) {
			return bad()
		}
		for i := range x {
			if err := modesMatchJSON(x[i], n.arr[i]); err != nil {
				return err
			}
		}
	case map[string]any:
		if n.kind != '{' || len(n.keys) != len(x) {
			return bad()
		}
		for k, e := range x {
			if err := modesMatchJSON(e, n.get(k)); err != nil {
				return err
			}
		}
	case []sink.MapEntry:
		if n.kind != '{' || len(n.keys) != len(x) {
			return bad()
		}
		for i, e := range x {
			var kt string
			switch k := e.Key.(type) {
			case string:
				kt = k
			case int64:
				kt = strconv.FormatInt(k, 10)
			case bool:
				kt = strconv.FormatBool(k)
			default:
				return fmt.Errorf("map key %v (%T): no text form in this test", e.Key, e.Key)
			}
			if n.keys[i] != kt {
				return fmt.Errorf("map entry %d: JSON key %q, want %q (map order)", i, n.keys[i], kt)
			}
			if err := modesMatchJSON(e.Value, n.vals[i]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("feature value %v of type %T: no JSON check", v, v)
	}
	return nil
}

// unboundedQuery checks the UNBOUNDED PRECEDING query: no lookups, batch
// and streaming agree, backfill equals the reference, and non-strict
// backfill of UNBOUNDED ... AND CURRENT ROW equals the output row of the
// key's last event at or before t (strict: before t) at any t.
func (f *modesFixture) unboundedQuery() {
	t := f.t
	windows := testutil.ModesUnboundedWindows
	query := testutil.ModesSQL(modesTable, windows)
	names, _ := modesFeatureNames(windows)
	const nProj = 5
	bound := time.Duration(testutil.ModesMaxOutOfOrder) * time.Millisecond
	batch := runModes(t, query, f.tab, f.rng, "unbounded batch")
	stream := runModes(t, query, f.tab, f.rng, "unbounded stream_p2", volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(bound), volga.WithParallelism(2))
	if err := batch.p.CanLookup(); !errors.Is(err, window.ErrUnboundedLookup) {
		t.Errorf("CanLookup of an UNBOUNDED query: %v, want ErrUnboundedLookup", err)
	}
	if _, err := batch.p.Lookup(context.Background(), map[string]any{"user_id": int64(1), "merchant": "m0"}, time.UnixMilli(f.points[0].T), nil); !errors.Is(err, window.ErrUnboundedLookup) {
		t.Errorf("Lookup over an UNBOUNDED frame: %v, want ErrUnboundedLookup", err)
	}
	if len(batch.rows) != len(f.acc.Rows) || len(stream.rows) != len(f.acc.Rows) {
		t.Fatalf("unbounded: batch %d rows, stream %d, want %d", len(batch.rows), len(stream.rows), len(f.acc.Rows))
	}
	f.batchVsReference("unbounded batch", windows, names, batch)
	for i, r := range f.acc.Rows {
		id := r[0].(int64)
		if batch.rows[i][0] != id {
			t.Fatalf("unbounded batch row %d has id %v, want %d (input order)", i, batch.rows[i][0], id)
		}
		if !f.agree(fmt.Sprintf("unbounded stream_p2 vs batch: id %d", id), names, stream.byID[id][nProj:], batch.rows[i][nProj:]) {
			t.FailNow()
		}
	}
	refLoose, refStrict := f.references(windows, false), f.references(windows, true)
	for _, par := range modesBackfillParallelism(1) {
		loose := f.backfill(query, false, par)
		strict := f.backfill(query, true, par)
		for i, p := range f.points {
			f.agreeRef(fmt.Sprintf("unbounded backfill p%d vs reference: %s", par, modesPointLabel(p)), names, loose[i], refLoose[i])
			f.agreeRef(fmt.Sprintf("unbounded strict backfill p%d vs reference: %s", par, modesPointLabel(p)), names, strict[i], refStrict[i])
			for k, w := range windows {
				lo, hi := modesFeatureRange(windows, k)
				if w.Frame.EndPreceding > 0 {
					f.agree(fmt.Sprintf("unbounded strict vs non-strict backfill p%d, window %s: %s", par, w.Name, modesPointLabel(p)), names[lo:hi], strict[i][lo:hi], loose[i][lo:hi])
				}
				if w.Frame.ExcludeCurrent {
					continue
				}
				for _, st := range []bool{false, true} {
					e := f.lastAt(w, p, st)
					if e < 0 || w.Frame.EndPreceding > 0 && f.acc.Rows[e][f.acc.Col("ts")].(int64) != p.T {
						continue
					}
					got := loose[i]
					if st {
						got = strict[i]
					}
					id := f.acc.Rows[e][0].(int64)
					f.agree(fmt.Sprintf("unbounded backfill p%d (strict %v) vs batch output row of id %d, window %s: %s", par, st, id, w.Name, modesPointLabel(p)),
						names[lo:hi], got[lo:hi], batch.byID[id][nProj+lo:nProj+hi])
				}
			}
		}
	}
}

// TestBackfillSpineWithoutTime: a spine row whose time is NULL is an
// error naming the row, not a row silently missing from the training data
// (which would shift every later label against its features).
func TestBackfillSpineWithoutTime(t *testing.T) {
	tab := testutil.ModesData(1, 50)
	spine := testutil.ModesSpine([]testutil.ModesPoint{{User: int64(1), Merchant: "m0", T: 1_700_000_100_000}, {User: int64(2), Merchant: "m1"}})
	spine.Rows[1][3] = nil
	err := volga.Backfill(context.Background(), testutil.ModesSQL(modesTable, testutil.ModesLookupWindows[:1]),
		testutil.NewSource(spine.Schema, spine.Record(nil, 0, 2)), sink.NewCollector(),
		volga.WithSource(modesTable, testutil.NewSource(tab.Schema, tab.Record(nil, 0, len(tab.Rows)))))
	if err == nil || !strings.Contains(err.Error(), "spine row 2") {
		t.Fatalf("backfill of a spine row without a time: %v, want an error naming spine row 2", err)
	}
}

// TestLookupCandidateKey: a candidate row belongs to the lookup's key.
// One that leaves the key columns out takes the key's values; one whose
// key columns hold other values would, inserted, be in another key's
// frames, so Lookup refuses it (ErrCandidateKey) and HTTP answers 400.
func TestLookupCandidateKey(t *testing.T) {
	tab := testutil.ModesData(2, 120)
	p, err := volga.SQL(testutil.ModesSQL(modesTable, testutil.ModesLookupWindows),
		volga.WithSource(modesTable, testutil.NewSource(tab.Schema, tab.Record(nil, 0, len(tab.Rows)))))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(tab.Rows[len(tab.Rows)-1][tab.Col("ts")].(int64) + 1000)
	key := map[string]any{"user_id": int64(1), "merchant": "m0"}
	full := map[string]any{"user_id": int64(1), "merchant": "m0", "amount": int64(10), "price": 2.5}
	want, err := p.Lookup(context.Background(), key, at, full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Lookup(context.Background(), key, at, map[string]any{"amount": int64(10), "price": 2.5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Values {
		if !modesSame(got.Values[i], want.Values[i]) {
			t.Errorf("candidate without key columns: %s = %s, with them %s", want.Names[i], modesShow(got.Values[i]), modesShow(want.Values[i]))
		}
	}
	for _, other := range []map[string]any{
		{"user_id": int64(2), "amount": int64(10)},
		{"merchant": "m1", "amount": int64(10)},
		{"user_id": nil, "merchant": "m0"},
	} {
		if _, err := p.Lookup(context.Background(), key, at, other); !errors.Is(err, pipeline.ErrCandidateKey) {
			t.Errorf("Lookup of %v with the candidate %v: %v, want ErrCandidateKey", key, other, err)
		}
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/features", "application/json",
		strings.NewReader(fmt.Sprintf(`{"key":{"user_id":1,"merchant":"m0"},"at":%d,"row":{"user_id":2,"amount":10}}`, at.UnixMilli())))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "key differs") {
		t.Errorf("HTTP candidate of another key: %d %s, want 400 naming the key", resp.StatusCode, b)
	}
}
