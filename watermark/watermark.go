package watermark

import (
	"fmt"
	"math"
	"sync"
	"time"
)

const (
	// None is the watermark before any row has been seen: it is below
	// every event time, so nothing is late and nothing may be emitted.
	None int64 = math.MinInt64
	// End is the final watermark of a bounded source (+∞): every pending
	// row may be emitted and every later row is late.
	End int64 = math.MaxInt64
)

// Format renders a watermark for logs: "none", "end", or the RFC 3339 UTC
// time with milliseconds.
func Format(wm int64) string {
	switch wm {
	case None:
		return "none"
	case End:
		return "end"
	}
	return time.UnixMilli(wm).UTC().Format(time.RFC3339Nano)
}

// Bounded generates the watermark of one input under a maximum
// out-of-orderness: Current is the largest event time observed minus the
// bound. It is not safe for concurrent use; one goroutine (the one reading
// the partition) owns it.
type Bounded struct {
	bound    int64
	max      int64
	finished bool
}

// NewBounded returns a generator tolerating rows less than maxOutOfOrder
// behind the newest row seen. A negative bound is treated as zero. The
// bound is kept in whole milliseconds, rounded up (CeilMillis): event
// times are whole milliseconds, so a row is behind max - maxOutOfOrder
// exactly when it is at or behind max minus the bound rounded up.
func NewBounded(maxOutOfOrder time.Duration) *Bounded {
	return &Bounded{bound: CeilMillis(maxOutOfOrder), max: None}
}

// CeilMillis returns d in whole milliseconds, rounded up; 0 for d <= 0.
// Bounds on event times (whole milliseconds) given as durations convert
// so: a time t is behind w - d exactly when t <= w - CeilMillis(d).
func CeilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := d.Milliseconds()
	if d > time.Duration(ms)*time.Millisecond {
		ms++
	}
	return ms
}

// Bound returns the out-of-orderness bound in milliseconds.
func (b *Bounded) Bound() int64 { return b.bound }

// Observe records the event time ts (epoch milliseconds) of one row.
func (b *Bounded) Observe(ts int64) {
	if ts > b.max {
		b.max = ts
	}
}

// ObserveMax records a batch of event times at once, as read from the
// event-time column of a record batch. It is equivalent to calling Observe
// for each value, without the per-call overhead.
func (b *Bounded) ObserveMax(ts []int64) {
	m := b.max
	for _, v := range ts {
		if v > m {
			m = v
		}
	}
	b.max = m
}

// Max returns the largest event time observed, or None.
func (b *Bounded) Max() int64 { return b.max }

// Finish marks the input as exhausted (the end of a bounded source): from
// then on Current returns End.
func (b *Bounded) Finish() { b.finished = true }

// Current returns the watermark: None before any row, End after Finish,
// and otherwise the largest event time seen minus the bound (saturating at
// None+1 so that a real watermark is never confused with None).
func (b *Bounded) Current() int64 {
	if b.finished {
		return End
	}
	if b.max == None {
		return None
	}
	if b.max == End {
		return End
	}
	if b.max < None+1+b.bound {
		return None + 1
	}
	return b.max - b.bound
}

// Option configures a Combiner.
type Option func(*config)

type config struct {
	idle time.Duration
	now  func() time.Time
}

// WithIdleTimeout sets how long an input may go without Update or Touch
// before it stops holding the combined watermark back. Zero (the default)
// disables idle detection: every input always counts.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.idle = d }
}

// WithClock replaces time.Now as the source of wall-clock time used for
// idle detection.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// Combiner merges the watermarks of a fixed number of inputs: the combined
// watermark is the minimum over the inputs that are neither idle nor set
// aside (SetAway). An input is
// idle when it has had no Update or Touch for longer than the idle timeout;
// it becomes active again with its next Update or Touch.
//
// The combined watermark is monotone: when an idle input wakes up behind
// it, Current does not go back, and the rows that input carries at or below
// the watermark are late. When every input is idle, Current keeps its last
// value (there is no evidence that time has advanced).
//
// A Combiner is safe for concurrent use.
type Combiner struct {
	mu      sync.Mutex
	cfg     config
	wms     []int64
	touched []time.Time
	// away marks inputs set aside with SetAway: they hold nothing back.
	away []bool
	last int64
}

// NewCombiner returns a Combiner over n inputs, all starting at None. The
// idle clock of every input starts now. It panics if n < 1, which is a
// programming error.
func NewCombiner(n int, opts ...Option) *Combiner {
	if n < 1 {
		panic(fmt.Sprintf("watermark: NewCombiner needs at least one input, got %d", n))
	}
	c := &Combiner{cfg: config{now: time.Now}, wms: make([]int64, n), touched: make([]time.Time, n), away: make([]bool, n), last: None}
	for _, o := range opts {
		o(&c.cfg)
	}
	now := c.cfg.now()
	for i := range c.wms {
		c.wms[i] = None
		c.touched[i] = now
	}
	return c
}

// Inputs returns the number of inputs.
func (c *Combiner) Inputs() int { return len(c.wms) }

func (c *Combiner) check(input int) {
	if input < 0 || input >= len(c.wms) {
		panic(fmt.Sprintf("watermark: input %d out of range [0,%d)", input, len(c.wms)))
	}
}

// Update records watermark wm for input and marks the input active. A value
// lower than the input's previous watermark is ignored (per-input
// watermarks never decrease either). It returns the combined watermark
// after the update. Update panics if input is out of range, like a slice
// index.
func (c *Combiner) Update(input int, wm int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check(input)
	if wm > c.wms[input] {
		c.wms[input] = wm
	}
	c.touched[input] = c.cfg.now()
	return c.currentLocked()
}

// Touch marks input active without changing its watermark, for an input
// that delivered data that did not advance event time. Touch panics if
// input is out of range.
func (c *Combiner) Touch(input int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check(input)
	c.touched[input] = c.cfg.now()
}

// SetAway sets input aside (away true) or back: an input set aside holds
// nothing back, idle or not, as when a partition of a Kafka topic is read
// by another member of a consumer group. Back, it counts again with the
// watermark it had (None if it never had one), and restarts its idle
// clock: like an idle input waking up, it cannot move Current back, so
// until it catches up its rows at or below Current are late. SetAway
// panics if input is out of range.
func (c *Combiner) SetAway(input int, away bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check(input)
	if c.away[input] && !away {
		c.touched[input] = c.cfg.now()
	}
	c.away[input] = away
}

// Input returns the last watermark recorded for input.
func (c *Combiner) Input(input int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check(input)
	return c.wms[input]
}

// Idle reports whether input currently counts as idle. An input that has
// reached End is never reported idle: it simply never holds anything back.
func (c *Combiner) Idle(input int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check(input)
	return c.idleLocked(input, c.cfg.now())
}

func (c *Combiner) idleLocked(i int, now time.Time) bool {
	return c.cfg.idle > 0 && c.wms[i] != End && now.Sub(c.touched[i]) > c.cfg.idle
}

// Current returns the combined watermark: the minimum over the active
// inputs, never lower than any value returned before.
func (c *Combiner) Current() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.currentLocked()
}

func (c *Combiner) currentLocked() int64 {
	now := c.cfg.now()
	min, active := End, false
	for i, wm := range c.wms {
		if c.away[i] || c.idleLocked(i, now) {
			continue
		}
		active = true
		if wm < min {
			min = wm
		}
	}
	if active && min > c.last {
		c.last = min
	}
	return c.last
}
