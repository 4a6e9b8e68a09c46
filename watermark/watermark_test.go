package watermark

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestBounded(t *testing.T) {
	b := NewBounded(5 * time.Second)
	if got := b.Current(); got != None {
		t.Fatalf("before any row: got %d, want None", got)
	}
	b.Observe(100_000)
	if got := b.Current(); got != 95_000 {
		t.Fatalf("got %d, want 95000", got)
	}
	b.Observe(90_000) // out of order: no effect
	if got := b.Current(); got != 95_000 {
		t.Fatalf("after older row: got %d, want 95000", got)
	}
	b.ObserveMax([]int64{101_000, 120_000, 99_000})
	if got, max := b.Current(), b.Max(); got != 115_000 || max != 120_000 {
		t.Fatalf("after batch: got %d max %d, want 115000 120000", got, max)
	}
	b.ObserveMax(nil)
	if got := b.Current(); got != 115_000 {
		t.Fatalf("empty batch moved the watermark: %d", got)
	}
	b.Finish()
	if got := b.Current(); got != End {
		t.Fatalf("after Finish: got %d, want End", got)
	}
}

func TestBoundedSaturates(t *testing.T) {
	b := NewBounded(time.Hour)
	b.Observe(None + 10)
	if got := b.Current(); got != None+1 {
		t.Fatalf("got %d, want None+1", got)
	}
	z := NewBounded(-time.Second)
	if z.Bound() != 0 {
		t.Fatalf("negative bound kept: %d", z.Bound())
	}
	z.Observe(End)
	if z.Current() != End {
		t.Fatalf("End observed: got %d", z.Current())
	}
}

func TestCombinerMinimum(t *testing.T) {
	c := NewCombiner(3)
	if got := c.Current(); got != None {
		t.Fatalf("initial: got %d", got)
	}
	c.Update(0, 10)
	c.Update(1, 20)
	if got := c.Current(); got != None {
		t.Fatalf("input 2 unseen: got %d, want None", got)
	}
	if got := c.Update(2, 5); got != 5 {
		t.Fatalf("got %d, want 5", got)
	}
	c.Update(2, 3) // a per-input regression is ignored
	if got := c.Input(2); got != 5 {
		t.Fatalf("input watermark went back: %d", got)
	}
	c.Update(2, 30)
	if got := c.Current(); got != 10 {
		t.Fatalf("got %d, want 10", got)
	}
	c.Update(0, End)
	c.Update(1, End)
	c.Update(2, End)
	if got := c.Current(); got != End {
		t.Fatalf("all ended: got %d, want End", got)
	}
}

// fakeClock is a manually advanced clock for WithClock.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time          { return f.t }
func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }

func TestCombinerIdleWithClock(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	c := NewCombiner(2, WithIdleTimeout(10*time.Second), WithClock(clk.now))
	c.Update(0, 100)
	c.Update(1, 50)
	if got := c.Current(); got != 50 {
		t.Fatalf("got %d, want 50", got)
	}
	clk.advance(8 * time.Second)
	c.Update(0, 200)
	clk.advance(3 * time.Second) // input 1 silent for 11s > 10s
	if !c.Idle(1) || c.Idle(0) {
		t.Fatalf("idle flags: 0=%v 1=%v", c.Idle(0), c.Idle(1))
	}
	if got := c.Current(); got != 200 {
		t.Fatalf("idle input still holds back: got %d, want 200", got)
	}
	// Input 1 wakes up behind the combined watermark: no regression.
	if got := c.Update(1, 60); got != 200 {
		t.Fatalf("combined went back to %d", got)
	}
	c.Update(0, 300)
	c.Update(1, 250)
	if got := c.Current(); got != 250 {
		t.Fatalf("got %d, want 250", got)
	}
	// All idle: stays where it was.
	clk.advance(time.Minute)
	if got := c.Current(); got != 250 {
		t.Fatalf("all idle: got %d, want 250", got)
	}
	// Touch revives an input without moving it.
	c.Touch(1)
	if c.Idle(1) || c.Input(1) != 250 {
		t.Fatalf("touch: idle=%v wm=%d", c.Idle(1), c.Input(1))
	}
}

func TestCombinerIdleSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCombiner(2, WithIdleTimeout(time.Second))
		c.Update(0, 1_000)
		// Input 1 never delivers anything: after the timeout it is idle.
		if got := c.Current(); got != None {
			t.Fatalf("got %d, want None", got)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := c.Current(); got != None {
			// input 0 is idle too now: nothing active, stay.
			t.Fatalf("got %d, want None", got)
		}
		c.Update(0, 2_000)
		if got := c.Current(); got != 2_000 {
			t.Fatalf("got %d, want 2000", got)
		}
	})
}

func TestCombinerEndNeverIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCombiner(2, WithIdleTimeout(time.Second))
		c.Update(0, End)
		time.Sleep(2 * time.Second)
		if c.Idle(0) {
			t.Fatal("an input at End reported idle")
		}
		if got := c.Update(1, 42); got != 42 {
			t.Fatalf("got %d, want 42", got)
		}
	})
}

func TestCombinerMonotoneConcurrent(t *testing.T) {
	c := NewCombiner(4)
	done := make(chan struct{})
	for in := 0; in < 4; in++ {
		go func() {
			for v := int64(0); v < 1000; v++ {
				c.Update(in, v)
			}
			done <- struct{}{}
		}()
	}
	prev := None
	for finished := 0; finished < 4; {
		select {
		case <-done:
			finished++
		default:
		}
		cur := c.Current()
		if cur < prev {
			t.Fatalf("combined watermark went back: %d after %d", cur, prev)
		}
		prev = cur
	}
	if got := c.Current(); got != 999 {
		t.Fatalf("final: got %d, want 999", got)
	}
}

func TestCombinerPanicsOnBadInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an out-of-range input")
		}
	}()
	NewCombiner(1).Update(1, 0)
}

func TestFormat(t *testing.T) {
	for wm, want := range map[int64]string{None: "none", End: "end", 1704276000500: "2024-01-03T10:00:00.5Z"} {
		if got := Format(wm); got != want {
			t.Errorf("Format(%d) = %q, want %q", wm, got, want)
		}
	}
}

// TestCombinerAway: an input set aside holds nothing back, with or
// without an idle timeout, and never having had a watermark; set back, it
// counts again with its watermark (holding Current where it is until it
// catches up) and its idle clock restarted.
func TestCombinerAway(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	c := NewCombiner(3, WithClock(clk.now))
	c.Update(0, 100)
	if got := c.Current(); got != None {
		t.Fatalf("inputs 1 and 2 at None: got %d", got)
	}
	c.SetAway(1, true)
	c.SetAway(2, true)
	if got := c.Current(); got != 100 {
		t.Fatalf("1 and 2 away: got %d, want 100", got)
	}
	c.Update(0, 150)
	c.SetAway(2, false) // back, at None: Current stays at 150
	if got := c.Current(); got != 150 {
		t.Fatalf("2 back at None: got %d, want 150", got)
	}
	c.Update(0, 300)
	if got := c.Current(); got != 150 {
		t.Fatalf("2 back holds Current: got %d, want 150", got)
	}
	if got := c.Update(2, 200); got != 200 {
		t.Fatalf("2 at 200: got %d, want 200", got)
	}
	if c.Input(1) != None {
		t.Fatalf("input 1 moved while away: %d", c.Input(1))
	}

	// With an idle timeout: setting an input back restarts its idle clock.
	d := NewCombiner(2, WithIdleTimeout(10*time.Second), WithClock(clk.now))
	d.Update(0, 10)
	d.Update(1, 5)
	d.SetAway(1, true)
	clk.advance(time.Minute)
	d.Update(0, 20)
	d.SetAway(1, false)
	if d.Idle(1) {
		t.Fatal("input 1 idle right after it was set back")
	}
	if got := d.Current(); got != 20 {
		t.Fatalf("got %d, want 20 (input 1 at 5 cannot move Current back)", got)
	}
	d.Update(0, 40)
	if got := d.Current(); got != 20 {
		t.Fatalf("input 1 back at 5 holds Current: got %d, want 20", got)
	}
	clk.advance(11 * time.Second)
	d.Update(0, 50)
	if got := d.Current(); got != 50 {
		t.Fatalf("input 1 idle again: got %d, want 50", got)
	}
}

func TestBoundedRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {-time.Millisecond, 0}, {time.Microsecond, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {time.Second, 1000}} {
		b := NewBounded(c.d)
		if b.Bound() != c.want || CeilMillis(c.d) != c.want {
			t.Errorf("NewBounded(%v).Bound() = %d, CeilMillis %d, want %d", c.d, b.Bound(), CeilMillis(c.d), c.want)
		}
		// A row less than d behind the newest is on time, one at least
		// d behind is late.
		b.Observe(1000)
		for ts := int64(990); ts <= 1000; ts++ {
			late := ts <= b.Current()
			if want := time.Duration(1000-ts)*time.Millisecond >= c.d; late != want {
				t.Errorf("bound %v: row at %d late %v, want %v", c.d, ts, late, want)
			}
		}
	}
}
