package window

import (
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// ckptBurst and ckptRest pace the encoder of a checkpoint when it would
// take CPU from its operator: after about ckptBurst of encoding it rests
// ckptRest times as long if, at any of its looks during it (every
// ckptPaceKeys keys), the operator was working (Push, Advance) and
// goroutines waited for a CPU. It then takes about a quarter of a CPU, as
// the slices of writing on the operator's caller did before the encoder
// had a goroutine of its own, and the states it encodes go to the store
// at that pace. At full speed on 2 busy cores the checkpoint workload
// read 80-113 k events/s instead of 97-135 k (four runs each, 2026-12-02):
// the encoders took the tasks' CPUs, and the store's writes kept Badger's
// memtables filling faster than they were flushed. While the operator is
// idle, or CPUs are to spare, the encoder does not rest: the checkpoint
// then ends as soon as it can.
const (
	ckptBurst    = 2 * time.Millisecond
	ckptRest     = 3
	ckptPaceKeys = 16
)

// runnableMetric counts the goroutines waiting for a CPU.
const runnableMetric = "/sched/goroutines/runnable:goroutines"

// ckptPacer paces one encoder (see ckptBurst). It is not safe for
// concurrent use: each encoder has its own.
type ckptPacer struct {
	burst time.Time // when the current burst began
	// waited is set once the encoder was seen in the operator's way
	// during the burst.
	waited bool
	// inTheWay reports whether the operator works while goroutines wait
	// for a CPU.
	inTheWay func() bool
	// rests counts the rests taken.
	rests int
}

// newCkptPacer returns the pacer of an encoder of the operator whose
// working flag is working.
func newCkptPacer(working *atomic.Bool) *ckptPacer {
	s := []metrics.Sample{{Name: runnableMetric}}
	return &ckptPacer{burst: time.Now(), inTheWay: func() bool { return working.Load() && cpusWanted(s) }}
}

// pace is called every ckptPaceKeys keys: it looks whether the encoder is
// in the operator's way, and once the burst has lasted ckptBurst it rests
// if it was at any look during it, and begins a new burst.
func (p *ckptPacer) pace() {
	if !p.waited && p.inTheWay() {
		p.waited = true
	}
	d := time.Since(p.burst)
	if d < ckptBurst {
		return
	}
	if p.waited {
		time.Sleep(ckptRest * d)
		p.rests++
	}
	p.burst, p.waited = time.Now(), false
}

// cpusWanted reports whether goroutines wait for a CPU, reading
// runnableMetric into s; true too when the runtime cannot tell (the
// encoder then rests as it always did). A read costs about 100 ns.
func cpusWanted(s []metrics.Sample) bool {
	metrics.Read(s)
	v := s[0].Value
	return v.Kind() != metrics.KindUint64 || v.Uint64() > 0
}
