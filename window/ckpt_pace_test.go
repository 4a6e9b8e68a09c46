package window

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestCkptPacerRestsOnlyWhenInTheWay: a burst of encoding is followed
// by a rest of ckptRest times its length once it lasted ckptBurst, if the
// encoder was in the operator's way at any look during it, and by none
// if it never was; the next burst looks afresh.
func TestCkptPacerRestsOnlyWhenInTheWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			answers []bool // of the looks, in order
			asks    int    // looks in the first burst
			rest    bool
		}{
			{"never waited", []bool{false, false, false, true}, 3, false},
			{"waited once", []bool{false, true, false}, 2, true},
			{"waited at first", []bool{true, false}, 1, true},
		} {
			asked := 0
			p := newCkptPacer(new(atomic.Bool))
			p.inTheWay = func() bool { a := tc.answers[asked]; asked++; return a }
			p.pace() // at the burst's start
			time.Sleep(ckptBurst / 2)
			p.pace()
			time.Sleep(ckptBurst / 2) // the burst has lasted ckptBurst
			start := time.Now()
			p.pace()
			rested := time.Since(start)
			wantRest, wantRests := time.Duration(0), 0
			if tc.rest {
				wantRest, wantRests = ckptRest*ckptBurst, 1
			}
			if asked != tc.asks || rested != wantRest || p.rests != wantRests {
				t.Errorf("%s: looked %d times, rested %v (%d rests), want %d looks, %v (%d)", tc.name, asked, rested, p.rests, tc.asks, wantRest, wantRests)
			}
			if !p.burst.Equal(time.Now()) || p.waited {
				t.Errorf("%s: the next burst begins at %v (waited %v), want now (%v) and afresh", tc.name, p.burst, p.waited, time.Now())
			}
			p.pace() // the next burst looks again
			if asked != tc.asks+1 {
				t.Errorf("%s: the next burst did not look", tc.name)
			}
		}
	})
}

// TestCkptPacerInTheWay: the runtime counts runnable goroutines (so the
// pacing adapts); with more goroutines spinning than there are Ps the
// encoder is in the way of a working operator, and never of an idle one.
func TestCkptPacerInTheWay(t *testing.T) {
	s := []metrics.Sample{{Name: runnableMetric}}
	metrics.Read(s)
	if k := s[0].Value.Kind(); k != metrics.KindUint64 {
		t.Fatalf("%s: kind %v, want a count", runnableMetric, k)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	spinners := runtime.GOMAXPROCS(0) + 2
	for range spinners {
		wg.Go(func() {
			for !stop.Load() {
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	var working atomic.Bool
	p := newCkptPacer(&working)
	for range 1000 {
		if p.inTheWay() {
			t.Fatal("in the way of an idle operator")
		}
	}
	working.Store(true)
	for deadline := time.Now().Add(5 * time.Second); !p.inTheWay(); {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines spinning on %d Ps: never in the way of the working operator", spinners, runtime.GOMAXPROCS(0))
		}
		runtime.Gosched()
	}
}
