package pipeline

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/watermark"
)

// fakeBacklog is an operator that tells a backlog (the rest of operator
// is never called).
type fakeBacklog struct {
	operator
	rows, keys int
	// held is the number of keys held (keys when 0).
	held     int
	created  int64
	retained float64
	perValue bool
	sampled  int
}

func (f *fakeBacklog) KeysCreated() int64 { return f.created }

func (f *fakeBacklog) KeysHeld() int {
	if f.held > 0 {
		return f.held
	}
	return f.keys
}

func (f *fakeBacklog) PerValueState() bool { return f.perValue }

func (f *fakeBacklog) Backlog() (int, int) { return f.rows, f.keys }

func (f *fakeBacklog) RetainedPerKey() float64 {
	f.sampled++
	return f.retained
}

// TestDeferRelease checks when a window task of a batch run lets rows
// wait at a watermark: below batchReleaseRows, below releaseSmall rows a
// key, below releaseLarge rows a key once keys hold largeState rows, and
// below releasePerValue rows a key when a window keeps an entry per
// distinct value (without sampling the keys); at most releaseMaxRows
// rows in all (perValueRows with per-value windows), however many keys
// (keys with rows waiting) they are spread over; never in a stream, at
// the end, or for an operator that tells no backlog.
func TestDeferRelease(t *testing.T) {
	batch := &runner{opt: RunOptions{Mode: Batch}}
	stream := &runner{opt: RunOptions{Mode: Streaming}}
	const keys = 100_000
	for _, tc := range []struct {
		name    string
		r       *runner
		wm      int64
		op      *fakeBacklog
		want    bool
		sampled bool
	}{
		{"few rows", batch, 1, &fakeBacklog{rows: batchReleaseRows - 1, keys: 10, retained: 100}, true, false},
		{"few keys", batch, 1, &fakeBacklog{rows: batchReleaseRows, keys: 10, retained: 100}, false, true},
		{"below small", batch, 1, &fakeBacklog{rows: releaseSmall*keys - 1, keys: keys, retained: 1}, true, false},
		{"small state", batch, 1, &fakeBacklog{rows: releaseSmall * keys, keys: keys, retained: largeState - 0.5}, false, true},
		{"large state", batch, 1, &fakeBacklog{rows: releaseSmall * keys, keys: keys, retained: largeState}, true, true},
		{"large state, enough", batch, 1, &fakeBacklog{rows: releaseLarge * keys, keys: keys, retained: 1000}, false, true},
		{"per value", batch, 1, &fakeBacklog{rows: releasePerValue*keys/2 - 1, keys: keys / 2, retained: 1, perValue: true}, true, false},
		{"per value, enough", batch, 1, &fakeBacklog{rows: releasePerValue * keys / 2, keys: keys / 2, retained: 1, perValue: true}, false, false},
		{"per value, few rows", batch, 1, &fakeBacklog{rows: releaseSmall*keys - 1, keys: keys, perValue: true}, true, false},
		{"per value, many keys", batch, 1, &fakeBacklog{rows: perValueRows, keys: 200_000, perValue: true}, false, false},
		{"per value, many keys, fewer rows", batch, 1, &fakeBacklog{rows: perValueRows - 1, keys: 200_000, perValue: true}, true, false},
		{"per value, more keys than the cap allows", batch, 1, &fakeBacklog{rows: perValueRows, keys: 1_000_000, perValue: true}, false, false},
		{"many keys", batch, 1, &fakeBacklog{rows: releaseMaxRows, keys: 10_000_000, retained: 1}, false, false},
		{"many keys, fewer rows", batch, 1, &fakeBacklog{rows: releaseMaxRows - 1, keys: 10_000_000, retained: 1}, true, false},
		{"end", batch, watermark.End, &fakeBacklog{rows: 1, keys: keys, retained: 1000}, false, false},
		{"stream", stream, 1, &fakeBacklog{rows: 1, keys: keys, retained: 1000}, false, false},
	} {
		if got := tc.r.deferRelease(tc.op, tc.wm, &releaseWait{}); got != tc.want {
			t.Errorf("%s: deferRelease = %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.op.sampled > 0; got != tc.sampled {
			t.Errorf("%s: sampled the keys: %v, want %v", tc.name, got, tc.sampled)
		}
	}
	type plain struct{ operator }
	if batch.deferRelease(plain{}, 1, &releaseWait{}) {
		t.Error("an operator that tells no backlog: deferRelease = true")
	}
}

// TestDeferReleaseKeysKeepComing follows the wait of a batch run's task
// as rows come 8 192 at a time: over keys that come and go (2.5 rows a
// key, then never again, each key new) it releases once the rows waiting
// have doubled from batchReleaseRows; over 50 000 keys spread evenly, not
// before the keys have 3 rows each (4 with large states, 12 with
// per-value windows), as without the rule; over 10 million keys spread
// evenly, seen for the first time, once the rows have doubled too; over
// a million keys spread evenly, all or a third of them seen before, not
// before they have 3 rows each; with one key in 40 % of the rows, not before the keys held
// (not only those with rows waiting) have 3 rows each.
func TestDeferReleaseKeysKeepComing(t *testing.T) {
	batch := &runner{opt: RunOptions{Mode: Batch}}
	even := func(k float64) func(rows int) int {
		return func(rows int) int { return int(k * (1 - math.Exp(-float64(rows)/k))) }
	}
	for _, tc := range []struct {
		name     string
		keys     func(rows int) int // with rows waiting
		held     int                // keys held; 0: keys(rows)
		newFrac  float64            // of the keys with rows waiting, those new (the others seen before)
		retained float64
		perValue bool
		// wantRows is the rows at the release, when > 0; else the first
		// step at which the keys have perKey rows each.
		wantRows int
	}{
		{"sessions", func(rows int) int { return rows * 2 / 5 }, 0, 1, 3, false, 2 * batchReleaseRows},
		{"sessions, per value", func(rows int) int { return rows * 2 / 5 }, 0, 1, 3, true, 2 * batchReleaseRows},
		{"50k keys", even(50_000), 0, 1, 3, false, 0},
		{"50k keys, large states", even(50_000), 0, 1, 100, false, 0},
		{"50k keys, per value", even(50_000), 0, 1, 3, true, 0},
		{"10M new keys", even(10_000_000), 0, 1, 3, false, 2 * batchReleaseRows},
		{"1M keys seen before", even(1_000_000), 1_000_000, 0, 3, false, 0},
		{"1M keys, a third seen before", even(1_000_000), 1_000_000, 2.0 / 3, 3, false, 0},
		{"50k keys seen before, one hot", func(rows int) int { return 1 + even(50_000)(rows*3/5) }, 50_001, 0, 3, false, 0},
	} {
		heldAt := func(rows int) int {
			if tc.held > 0 {
				return tc.held
			}
			return tc.keys(rows)
		}
		w := &releaseWait{}
		op := &fakeBacklog{retained: tc.retained, perValue: tc.perValue, created: 1000}
		released := 0
		for rows := 8192; rows <= 4_000_000; rows += 8192 {
			op.rows, op.keys, op.held = rows, tc.keys(rows), tc.held
			op.created = 1000 + int64(tc.newFrac*float64(op.keys))
			if !batch.deferRelease(op, 1, w) {
				released = rows
				break
			}
		}
		keys := heldAt(released)
		perKey := releaseSmall
		switch {
		case tc.perValue:
			perKey = releasePerValue
		case tc.retained >= largeState:
			perKey = releaseLarge
		}
		switch {
		case released == 0:
			t.Errorf("%s: no release in 4 M rows", tc.name)
		case tc.wantRows > 0 && released != tc.wantRows:
			t.Errorf("%s: released at %d rows (%d keys), want %d", tc.name, released, keys, tc.wantRows)
		case tc.wantRows == 0 && (released < perKey*keys || released-8192 >= perKey*heldAt(released-8192)):
			t.Errorf("%s: released at %d rows over %d keys, want the first step at %d rows a key", tc.name, released, keys, perKey)
		}
	}
}

// TestReleasedByPeer checks that the tasks of a stage release together:
// a task follows another's release once its own watermarks reach it, and
// only once; releases of other stages, and older ones, do not count.
func TestReleasedByPeer(t *testing.T) {
	r := &runner{released: make([]atomic.Int64, 2)}
	for s := range r.released {
		r.released[s].Store(watermark.None)
	}
	if r.releasedByPeer(0, watermark.None, 100) {
		t.Fatal("no release yet, but a task follows one")
	}
	r.noteRelease(0, 100)
	r.noteRelease(0, 80) // an older release changes nothing
	for _, tc := range []struct {
		stage   int
		cur, wm int64
		want    bool
	}{
		{0, watermark.None, 90, false}, // not there yet
		{0, watermark.None, 100, true},
		{0, 50, 120, true},   // past it
		{0, 100, 150, false}, // released there itself
		{0, 120, 150, false}, // released after it
		{1, watermark.None, 150, false},
	} {
		if got := r.releasedByPeer(tc.stage, tc.cur, tc.wm); got != tc.want {
			t.Errorf("stage %d, last release at %d, watermark %d: releasedByPeer = %v, want %v", tc.stage, tc.cur, tc.wm, got, tc.want)
		}
	}
	if got := r.released[0].Load(); got != 100 {
		t.Fatalf("newest release %d, want 100", got)
	}
}

// TestTakeAhead checks the bound on the rows the reader of a batch run
// over clustered input may send a task ahead of what it has received:
// each task has batchReleaseRows of its own, a batch takes its rows (all
// of the bound when larger), and the rows come back once received.
func TestTakeAhead(t *testing.T) {
	ctx := context.Background()
	rec := func(n int) arrow.RecordBatch {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(make([]int64, n), nil)
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(n))
	}
	bound := int64(batchReleaseRows)
	r := &runner{ahead: clusterAhead(2)}
	m1 := msg{rec: rec(40000)}
	defer m1.release()
	if err := r.takeAhead(ctx, 0, &m1); err != nil || m1.ahead != 40000 {
		t.Fatalf("first batch: took %d (err %v), want 40000", m1.ahead, err)
	}
	if r.ahead[0].TryAcquire(bound - 40000 + 1) {
		t.Fatalf("task 0 has more than %d rows left of its bound", bound-40000)
	}
	if !r.ahead[0].TryAcquire(bound - 40000) {
		t.Fatalf("task 0 has less than %d rows left of its bound", bound-40000)
	}
	r.ahead[0].Release(bound - 40000)
	// Task 1's bound is its own; a batch larger than the bound takes it
	// all.
	big := msg{rec: rec(int(bound) + 1000)}
	defer big.release()
	if err := r.takeAhead(ctx, 1, &big); err != nil || big.ahead != bound {
		t.Fatalf("batch of %d rows: took %d (err %v), want the whole bound %d", bound+1000, big.ahead, err, bound)
	}
	// A message without rows takes nothing, and the rows come back.
	fin := msg{fin: 7}
	if err := r.takeAhead(ctx, 1, &fin); err != nil || fin.ahead != 0 {
		t.Fatalf("message without rows: took %d (err %v)", fin.ahead, err)
	}
	r.ahead[0].Release(m1.ahead)
	if !r.ahead[0].TryAcquire(bound) {
		t.Fatal("task 0's rows did not come back")
	}
	// Without a bound (input not clustered, or one task) nothing is taken.
	free := &runner{}
	m2 := msg{rec: rec(10)}
	defer m2.release()
	if err := free.takeAhead(ctx, 0, &m2); err != nil || m2.ahead != 0 {
		t.Fatalf("run without a bound: took %d (err %v)", m2.ahead, err)
	}
}
