// Package hostnoise measures what a machine alone does to microsecond
// latencies, so that the tail of a benchmark's latencies can be told
// apart from the library's.
//
// A lookup takes a few microseconds; on a virtual machine whose vCPU is
// taken away now and then (a clock-reading loop on the 2-core VM of
// BENCHMARKS.md lost its CPU 1 300-1 500 times a second, for 20 µs or
// more each time), a p99 of such calls can be the host's interruption
// rather than the call. The package times "null work" of a given length
// in the loop shape the benchmarks time their calls in:
//
//   - CPU work (Spin): integer steps that touch no memory: what
//     interruptions of the CPU alone do;
//   - memory work (Mem): independent random reads over an array of a
//     given size: what the machine does to calls that read memory all
//     over a large heap (TLB and cache misses, and on a VM whatever the
//     host does to the guest's pages).
//
// A latency quantile close to the null work's at the same length and
// moment is the machine's; one well above it is the code's.
package hostnoise

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Quantile is the q-quantile of sorted (nearest rank: the smallest value
// with at least a share q of the values at or below it); NaN when empty.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Spin does iters steps of integer work that the compiler cannot remove
// (its result is returned) and that touches no memory.
func Spin(iters int) uint64 {
	x := uint64(iters) | 1
	for range iters {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// sink keeps the null work's results alive (see Result).
var sink uint64

// Result is the sum of what the null work has computed so far. Nothing
// needs it; it is there so that the work has a reader and stays.
func Result() uint64 { return sink }

// calibrate returns how many units of work take about d, from the
// fastest of five timed runs of probe units by run (the fastest is the
// run the machine interrupted least); at least 1.
func calibrate(d time.Duration, probe int, run func(int), now func() time.Time) int {
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := now()
		run(probe)
		best = min(best, now().Sub(t0))
	}
	if best <= 0 {
		return 1
	}
	return max(1, int(float64(d)/float64(best)*float64(probe)))
}

// SpinItersFor returns how many Spin steps take about d on this CPU,
// timed with now.
func SpinItersFor(d time.Duration, now func() time.Time) int {
	return calibrate(d, 1<<20, func(n int) { sink += Spin(n) }, now)
}

// AppendSpin times n runs of Spin(iters), each alone, and appends their
// latencies in microseconds to lat.
func AppendSpin(lat []float64, n, iters int, now func() time.Time) []float64 {
	for range n {
		t0 := now()
		sink += Spin(iters)
		lat = append(lat, float64(now().Sub(t0).Nanoseconds())/1e3)
	}
	return lat
}

// Mem is an array read at random places: memory null work.
type Mem struct {
	a   []uint64
	idx []uint32 // the places of the next run
	rng *rand.Rand
}

// NewMem returns memory null work over an array of about bytes bytes
// (at least one 8-byte word), every page of it written once so that the
// reads find it mapped.
func NewMem(bytes int64, seed uint64) *Mem {
	n := max(1, min(bytes/8, 1<<32-1))
	a := make([]uint64, n)
	for i := range a {
		a[i] = uint64(i)
	}
	return &Mem{a: a, rng: rand.New(rand.NewPCG(seed, 0x686f7374))}
}

// Bytes is the size of the array.
func (m *Mem) Bytes() int64 { return int64(len(m.a)) * 8 }

// places draws the places of the next run of reads (outside its timing).
func (m *Mem) places(reads int) []uint32 {
	if cap(m.idx) < reads {
		m.idx = make([]uint32, reads)
	}
	idx := m.idx[:reads]
	for i := range idx {
		idx[i] = uint32(m.rng.IntN(len(m.a)))
	}
	return idx
}

// read sums the words at idx: independent loads, which the CPU may
// overlap as it overlaps a call's independent misses.
func (m *Mem) read(idx []uint32) uint64 {
	var s uint64
	for _, i := range idx {
		s += m.a[i]
	}
	return s
}

// ReadsFor returns how many random reads take about d, timed with now.
func (m *Mem) ReadsFor(d time.Duration, now func() time.Time) int {
	const probe = 1 << 16
	idx := slices.Clone(m.places(probe)) // drawn outside the timing
	return calibrate(d, probe, func(n int) { sink += m.read(idx[:n]) }, now)
}

// Append times n runs of reads random reads, each alone (the places are
// drawn before each run's timing starts), and appends their latencies in
// microseconds to lat.
func (m *Mem) Append(lat []float64, n, reads int, now func() time.Time) []float64 {
	for range n {
		idx := m.places(reads)
		t0 := now()
		sink += m.read(idx)
		lat = append(lat, float64(now().Sub(t0).Nanoseconds())/1e3)
	}
	return lat
}
