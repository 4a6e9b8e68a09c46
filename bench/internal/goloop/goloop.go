// Package goloop computes the features of the features-4 and ml-3
// workloads (ML3, in ml3.go) with hand-written Go loops: what an engineer
// would write without an engine, and the floor the engine's batch mode
// should approach.
//
// The input must be ordered by event time (the generated event log is).
// Each user keeps one deque of (ts, amount) covering the longest window
// (7 days) and, per window, the index where that window starts, running
// sums, and a monotonic deque for the 1-hour max. Rows with the same event
// time are peers: RANGE ... CURRENT ROW frames include them all, so a group
// of equal-ts rows is first added to its users' state and only then are
// the group's outputs computed.
package goloop

import (
	"github.com/volga-go/volga/bench/internal/workload"
)

const (
	hourMs = int64(3_600_000)
	dayMs  = 24 * hourMs
)

type entry struct {
	ts     int64
	amount float64
}

// user is the state of one user. Entries are numbered absolutely from the
// first ever added; buf[i-base] holds entry i.
type user struct {
	buf  []entry
	base int
	// Start of each window: the first entry inside it.
	start1h, start24h, start7d int
	sum1h, sum7d               float64
	// maxq holds entry numbers of the 1-hour window whose amounts decrease
	// strictly from front to back: the front is the window's maximum.
	maxq []int
}

func (u *user) at(i int) entry { return u.buf[i-u.base] }
func (u *user) end() int       { return u.base + len(u.buf) }

// add appends an event at time t and slides every window to end at t.
func (u *user) add(t int64, amount float64) {
	u.buf = append(u.buf, entry{t, amount})
	n := u.end() - 1
	u.sum1h += amount
	u.sum7d += amount
	for len(u.maxq) > 0 && u.at(u.maxq[len(u.maxq)-1]).amount <= amount {
		u.maxq = u.maxq[:len(u.maxq)-1]
	}
	u.maxq = append(u.maxq, n)

	for ; u.at(u.start1h).ts < t-hourMs; u.start1h++ {
		u.sum1h -= u.at(u.start1h).amount
	}
	for len(u.maxq) > 0 && u.maxq[0] < u.start1h {
		u.maxq = u.maxq[1:]
	}
	for u.at(u.start24h).ts < t-dayMs {
		u.start24h++
	}
	for ; u.at(u.start7d).ts < t-7*dayMs; u.start7d++ {
		u.sum7d -= u.at(u.start7d).amount
	}
	// Drop entries older than the longest window; compact when more than
	// half of the buffer is dead.
	if dead := u.start7d - u.base; dead > 32 && dead > len(u.buf)/2 {
		u.buf = append(u.buf[:0], u.buf[dead:]...)
		u.base = u.start7d
	}
}

// Features4 computes features-4 over an event stream fed row by row
// through Add, folding every output row into a checksum.
type Features4 struct {
	users map[int64]*user
	group []pending
	ts    int64
	sum   workload.Features4Checksum
}

type pending struct {
	id int64
	u  *user
}

// NewFeatures4 returns an empty computation.
func NewFeatures4() *Features4 {
	return &Features4{users: make(map[int64]*user, 1<<16)}
}

// Add feeds one event. Events must come in ts order.
func (f *Features4) Add(id, userID, ts int64, amount float64) {
	if len(f.group) > 0 && ts != f.ts {
		f.flush()
	}
	f.ts = ts
	u := f.users[userID]
	if u == nil {
		u = &user{}
		f.users[userID] = u
	}
	u.add(ts, amount)
	f.group = append(f.group, pending{id, u})
}

// flush emits the outputs of the current group of equal-ts rows, whose
// users' windows now contain all of the group's peers.
func (f *Features4) flush() {
	for _, p := range f.group {
		u := p.u
		n24 := int64(u.end() - u.start24h)
		n7 := float64(u.end() - u.start7d)
		f.sum.Add(p.id, u.sum1h, n24, u.sum7d/n7, u.at(u.maxq[0]).amount)
	}
	f.group = f.group[:0]
}

// Finish emits the last group and returns the checksum of all outputs.
func (f *Features4) Finish() workload.Features4Checksum {
	f.flush()
	return f.sum
}
