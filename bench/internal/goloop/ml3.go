package goloop

import (
	"slices"
	"strings"

	"github.com/volga-go/volga/bench/internal/workload"
)

// ML3 computes the ml-3 features (workload.ML3Query) with a hand-written
// loop over an event stream in event-time order, folding every output row
// into a checksum:
//
//   - topn_frequency(merchant, 5) over 7 days: per-user merchant counts of
//     the 7-day window; the top 5 are selected from them for each output
//     row (a user has a few dozen merchants in 7 days);
//   - sum_cate(amount, merchant) over 24 hours: per-user merchant sums and
//     counts of the 24-hour window (an entry leaves with its last row);
//   - top1_ratio(merchant) over 30 days: per-user merchant counts plus a
//     histogram of those counts, so the largest count is known in O(1) as
//     rows enter and leave.
//
// As in Features4, rows with equal event times are peers: the whole group
// enters its users' windows before any of its outputs are computed.
type ML3 struct {
	users  map[int64]*ml3User
	merch  map[string]int32 // merchant -> index into names
	names  []string
	hashes []uint64
	group  []ml3Pending
	ts     int64
	sum    workload.ML3Checksum
	top    []catEntry // scratch for the top-n selection
}

type ml3Pending struct {
	id int64
	u  *ml3User
}

type ml3Entry struct {
	ts       int64
	amount   float64
	merchant int32
}

// catEntry is one merchant of a window: its count and, for sum_cate, the
// sum of its amounts.
type catEntry struct {
	merchant int32
	n        int32
	sum      float64
}

// counter is a small per-window map merchant -> entry, kept as a slice:
// a user has few merchants per window, so a linear scan beats hashing.
type counter []catEntry

// add adds amount to merchant and returns the merchant's new count.
func (c *counter) add(m int32, amount float64) int32 {
	for i := range *c {
		if e := &(*c)[i]; e.merchant == m {
			e.n++
			e.sum += amount
			return e.n
		}
	}
	*c = append(*c, catEntry{merchant: m, n: 1, sum: amount})
	return 1
}

// remove takes amount away from merchant and returns its new count; an
// entry whose count drops to 0 leaves.
func (c *counter) remove(m int32, amount float64) int32 {
	for i := range *c {
		if e := &(*c)[i]; e.merchant == m {
			e.n--
			e.sum -= amount
			n := e.n
			if n == 0 {
				(*c)[i] = (*c)[len(*c)-1]
				*c = (*c)[:len(*c)-1]
			}
			return n
		}
	}
	panic("goloop: removing a merchant that is not in the window")
}

type ml3User struct {
	buf  []ml3Entry
	base int
	// Start of each window: the first entry inside it.
	start24h, start7d, start30d int
	c24h, c7d, c30d             counter
	// hist30d[n] is the number of merchants with count n in the 30-day
	// window; max30d the largest n with hist30d[n] > 0.
	hist30d []int32
	max30d  int32
}

func (u *ml3User) at(i int) ml3Entry { return u.buf[i-u.base] }
func (u *ml3User) end() int          { return u.base + len(u.buf) }

func (u *ml3User) histMove(from, to int32) {
	if int(to) >= len(u.hist30d) {
		u.hist30d = append(u.hist30d, make([]int32, int(to)+1-len(u.hist30d))...)
	}
	if from > 0 {
		u.hist30d[from]--
	}
	if to > 0 {
		u.hist30d[to]++
	}
	if to > u.max30d {
		u.max30d = to
	}
	for u.max30d > 0 && u.hist30d[u.max30d] == 0 {
		u.max30d--
	}
}

// add appends an event at time t and slides every window to end at t.
func (u *ml3User) add(t int64, amount float64, m int32) {
	u.buf = append(u.buf, ml3Entry{t, amount, m})
	u.c24h.add(m, amount)
	u.c7d.add(m, amount)
	n := u.c30d.add(m, amount)
	u.histMove(n-1, n)
	for ; u.at(u.start24h).ts < t-dayMs; u.start24h++ {
		e := u.at(u.start24h)
		u.c24h.remove(e.merchant, e.amount)
	}
	for ; u.at(u.start7d).ts < t-7*dayMs; u.start7d++ {
		e := u.at(u.start7d)
		u.c7d.remove(e.merchant, e.amount)
	}
	for ; u.at(u.start30d).ts < t-30*dayMs; u.start30d++ {
		e := u.at(u.start30d)
		n := u.c30d.remove(e.merchant, e.amount)
		u.histMove(n+1, n)
	}
	if dead := u.start30d - u.base; dead > 32 && dead > len(u.buf)/2 {
		u.buf = append(u.buf[:0], u.buf[dead:]...)
		u.base = u.start30d
	}
}

// NewML3 returns an empty computation.
func NewML3() *ML3 {
	return &ML3{users: make(map[int64]*ml3User, 1<<16), merch: map[string]int32{}}
}

// Add feeds one event. Events must come in ts order.
func (f *ML3) Add(id, userID, ts int64, amount float64, merchant string) {
	if len(f.group) > 0 && ts != f.ts {
		f.flush()
	}
	f.ts = ts
	m, ok := f.merch[merchant]
	if !ok {
		m = int32(len(f.names))
		f.merch[merchant] = m
		f.names = append(f.names, merchant)
		f.hashes = append(f.hashes, workload.Hash64(merchant))
	}
	u := f.users[userID]
	if u == nil {
		u = &ml3User{}
		f.users[userID] = u
	}
	u.add(ts, amount, m)
	f.group = append(f.group, ml3Pending{id, u})
}

// flush emits the outputs of the current group of equal-ts rows.
func (f *ML3) flush() {
	for _, p := range f.group {
		u := p.u
		// top1_ratio: merchant is never NULL in features-4, so every row of
		// the window counts.
		f.sum.AddRow(p.id, float64(u.max30d)/float64(u.end()-u.start30d))
		// topn_frequency: count descending, ties by value ascending.
		f.top = append(f.top[:0], u.c7d...)
		slices.SortFunc(f.top, func(a, b catEntry) int {
			if a.n != b.n {
				return int(b.n - a.n)
			}
			return strings.Compare(f.names[a.merchant], f.names[b.merchant])
		})
		for i, e := range f.top[:min(5, len(f.top))] {
			f.sum.AddTopn(i, f.hashes[e.merchant], int64(e.n))
		}
		for _, e := range u.c24h {
			f.sum.AddCate(f.hashes[e.merchant], e.sum)
		}
	}
	f.group = f.group[:0]
}

// Finish emits the last group and returns the checksum of all outputs.
func (f *ML3) Finish() workload.ML3Checksum {
	f.flush()
	return f.sum
}
