package hostnoise

import (
	"slices"
	"testing"
	"time"
)

// fakeClock returns a clock whose successive readings are separated by
// the given steps in turn (cycling).
func fakeClock(steps ...time.Duration) func() time.Time {
	t := time.Unix(0, 0)
	i := 0
	return func() time.Time {
		t = t.Add(steps[i%len(steps)])
		i++
		return t
	}
}

// TestSpinItersFor checks the calibration takes the fastest probe: with
// probes timed at 5 ms, 1 ms, 5 ms ... (each probe reads the clock twice;
// the second reading's step is its length), 2^20 steps take 1 ms.
func TestSpinItersFor(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{2 * time.Microsecond, 2097}, // 2e-3 of 2^20, rounded down
		{time.Millisecond, 1 << 20},
		{time.Nanosecond, 1}, // rounds down to 0: at least 1
		{10 * time.Millisecond, 10 << 20},
	} {
		clock := fakeClock(time.Microsecond, 5*time.Millisecond, time.Microsecond, time.Millisecond)
		if got := SpinItersFor(tc.d, clock); got != tc.want {
			t.Errorf("SpinItersFor(%s) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestReadsFor checks the memory calibration the same way: 2^16 reads
// timed at 100 µs at best.
func TestReadsFor(t *testing.T) {
	m := NewMem(1<<20, 1)
	clock := fakeClock(time.Microsecond, 300*time.Microsecond, time.Microsecond, 100*time.Microsecond)
	if got, want := m.ReadsFor(2*time.Microsecond, clock), 1310; got != want {
		t.Errorf("ReadsFor(2µs) = %d, want %d (2e-2 of 2^16)", got, want)
	}
}

// latencyShape gives a clock for runs of 2 µs with every 50th taking 30
// µs, and checks what the appended latencies say: a p50 of 2, a p98 of
// 2 and a p99 of 30 (200 of 10 000 runs are slow: rank 9 800 is the last
// fast one), after what lat held.
func latencyShape(t *testing.T, appendRuns func(lat []float64, n int, now func() time.Time) []float64) {
	t.Helper()
	steps := make([]time.Duration, 0, 100)
	for i := range 50 {
		run := 2 * time.Microsecond
		if i == 49 {
			run = 30 * time.Microsecond
		}
		// Each run reads the clock twice: before (a step from the last
		// run's end) and after (the run's length).
		steps = append(steps, 100*time.Nanosecond, run)
	}
	lat := appendRuns([]float64{7}, 10_000, fakeClock(steps...))
	if len(lat) != 10_001 || lat[0] != 7 {
		t.Fatalf("%d latencies starting %g, want 10001 after the 7 there", len(lat), lat[0])
	}
	lat = lat[1:]
	slices.Sort(lat)
	if lat[0] != 2 || lat[9_799] != 2 || lat[9_800] != 30 || lat[9_999] != 30 {
		t.Errorf("sorted latencies: first %g, ranks 9 800-9 801 %g, %g, last %g; want 2, 2, 30, 30", lat[0], lat[9_799], lat[9_800], lat[9_999])
	}
}

func TestAppendSpin(t *testing.T) {
	latencyShape(t, func(lat []float64, n int, now func() time.Time) []float64 {
		return AppendSpin(lat, n, 3, now)
	})
}

func TestMemAppend(t *testing.T) {
	m := NewMem(1<<16, 2)
	latencyShape(t, func(lat []float64, n int, now func() time.Time) []float64 {
		return m.Append(lat, n, 5, now)
	})
	// The reads are at random places of the whole array.
	seen := map[uint32]bool{}
	for range 1000 {
		for _, i := range m.places(8) {
			if int(i) >= len(m.a) {
				t.Fatalf("place %d outside the array of %d words", i, len(m.a))
			}
			seen[i] = true
		}
	}
	if len(seen) < 4000 {
		t.Errorf("8 000 draws over 8 192 words hit %d places, want most of them", len(seen))
	}
	if m.Bytes() != 1<<16 {
		t.Errorf("Bytes() = %d, want %d", m.Bytes(), 1<<16)
	}
}

// TestSpin checks the CPU work is a function of its length only (what
// the sink keeps is deterministic) and that lengths differ.
func TestSpin(t *testing.T) {
	a, b, c := Spin(100), Spin(100), Spin(101)
	if a != b || a == c {
		t.Errorf("Spin(100) = %d, then %d; Spin(101) = %d", a, b, c)
	}
	before := Result()
	AppendSpin(nil, 1, 100, time.Now)
	if Result() != before+a {
		t.Errorf("Result moved from %d to %d after one run of Spin(100) = %d", before, Result(), a)
	}
}

// TestQuantile checks the nearest-rank quantiles: the smallest value with
// at least a share q of the values at or below it.
func TestQuantile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0: 1, 0.1: 1, 0.11: 2, 0.5: 5, 0.51: 6, 0.99: 10, 1: 10} {
		if got := Quantile(sorted, q); got != want {
			t.Errorf("Quantile(1..10, %g) = %g, want %g", q, got, want)
		}
	}
	if got := Quantile(nil, 0.5); got == got {
		t.Errorf("Quantile(nil, 0.5) = %g, want NaN", got)
	}
}
