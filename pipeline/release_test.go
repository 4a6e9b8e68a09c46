package pipeline

import (
	"testing"

	"github.com/volga-go/volga/watermark"
)

// fakeBacklog is an operator that tells a backlog (the rest of operator
// is never called).
type fakeBacklog struct {
	operator
	rows, keys int
	retained   float64
	perValue   bool
	sampled    int
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
// below releasePerValue rows a key (at most perValueRows in all) when a
// window keeps an entry per distinct value (without sampling the keys);
// never in a stream, at the end, or for an operator that tells no
// backlog.
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
		{"end", batch, watermark.End, &fakeBacklog{rows: 1, keys: keys, retained: 1000}, false, false},
		{"stream", stream, 1, &fakeBacklog{rows: 1, keys: keys, retained: 1000}, false, false},
	} {
		if got := tc.r.deferRelease(tc.op, tc.wm); got != tc.want {
			t.Errorf("%s: deferRelease = %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.op.sampled > 0; got != tc.sampled {
			t.Errorf("%s: sampled the keys: %v, want %v", tc.name, got, tc.sampled)
		}
	}
	type plain struct{ operator }
	if batch.deferRelease(plain{}, 1) {
		t.Error("an operator that tells no backlog: deferRelease = true")
	}
}
