package window

import (
	"github.com/volga-go/volga/agg"
)

// keyForgetMin is the least number of keys an OVER operator forgets at
// once (see maybeForgetKeys; Operator.forgetMin, set by tests, replaces
// it): parked keys hold at most about 10 MB (or as much as the live keys'
// entries) before they are forgotten, and the work of forgetting, linear
// in the keys held, is spread over at least that many.
const keyForgetMin = 1 << 16

// canForget reports whether an operator of cfg may forget parked keys
// (see maybeForgetKeys): without a store (a store holds what a quiet key
// keeps, and its checkpoints name it), with every frame swept (RANGE,
// bounded), and with no aggregate whose value depends on the rows'
// absolute numbers (agg.RangeEvaluator: a key that came back would be
// numbered from 0 again, and its frames grouped otherwise than by a run
// that kept it, by a rounding).
func canForget(cfg Config, sweepable bool) bool {
	if cfg.Store != nil || !sweepable {
		return false
	}
	for _, w := range cfg.Windows {
		for _, f := range w.Aggs {
			if _, ok := f.(agg.RangeEvaluator); ok {
				return false
			}
		}
	}
	return true
}

// maybeForgetKeys forgets parked keys (quiet keys let go without a store,
// see park): each kept its entry in the key index, its id and 16 bytes
// besides, about 150 bytes in all, for good, so that a stream whose keys
// come and go (sessions, devices, requests) grew by that much with every
// key it had ever seen. Once at least as many keys are parked as not (and
// at least keyForgetMin), the live ones get new ids, dense and in the
// order of their old ones, and the parked ones are dropped (renumbering
// the ids held by rel, the rows being released, and by the pending rows;
// a parked key with rows pending is kept). The work is linear in the keys
// and the pending rows, once per as many keys forgotten. A key that comes
// back later is new again: its frames start empty, as they would have (a
// parked key has no row any frame still to come can reach), and it is
// numbered from 0, which changes no aggregate's value (canForget).
// Lookups of a key not held whose frames reach the newest row of a
// forgotten key are refused (ErrTooOld), as they were for the key
// parked; a lookup at a time still served (Config.Retention) never
// reaches one. Called with the lock held, after sweepQuiet.
func (o *Operator) maybeForgetKeys(rel []pendRow) {
	n := len(o.states)
	least := keyForgetMin
	if o.forgetMin > 0 {
		least = o.forgetMin
	}
	if !o.forgetOK || !o.sweepable || o.finished != nil || o.nParked < max(least, n-o.nParked) || n < o.forgetAt {
		return
	}
	live := newLiveKeys(n)
	for id, ks := range o.states {
		if _, parked := o.parkedOf(int32(id)); ks != nil || !parked {
			live.mark(int32(id))
		}
	}
	// A parked key with rows pending is made present when they are
	// released.
	for _, ch := range o.pend.chunks {
		for _, p := range ch {
			live.mark(p.key)
		}
	}
	for _, p := range rel {
		live.mark(p.key)
	}
	if dead := n - live.n; dead < max(live.n, least) {
		// Parked keys with rows pending: try again once more keys came.
		o.forgetAt = n + least
		return
	}
	o.forgetKeys(live, rel)
}

// liveKeys marks the keys an operator keeps when it forgets the others.
type liveKeys struct {
	live []bool // by key id
	n    int    // keys marked
}

func newLiveKeys(n int) *liveKeys { return &liveKeys{live: make([]bool, n)} }

func (l *liveKeys) mark(id int32) {
	if !l.live[id] {
		l.live[id] = true
		l.n++
	}
}

// renumbering returns the new id of every key: the live ones 0..n-1 in
// their order, -1 for the others.
func (l *liveKeys) renumbering() []int32 {
	newID := make([]int32, len(l.live))
	m := int32(0)
	for id, ok := range l.live {
		newID[id] = -1
		if ok {
			newID[id] = m
			m++
		}
	}
	return newID
}

// forgetKeys renumbers the keys marked live 0..live.n-1 in their order and
// drops the others, which are parked.
func (o *Operator) forgetKeys(live *liveKeys, rel []pendRow) {
	newID := live.renumbering()
	nlive := live.n
	sweepAt := 0 // the sweep goes on from the next live key
	for id := len(newID) - 1; id >= o.sweepAt && id >= 0; id-- {
		if newID[id] >= 0 {
			sweepAt = int(newID[id])
		}
	}
	states := make([]*keyState, nlive)
	var parked []parkedKey
	for id, to := range newID {
		p, isParked := o.parkedOf(int32(id))
		if to < 0 {
			o.forgotDropped = max(o.forgotDropped, p.dropped)
			continue
		}
		states[to] = o.states[id]
		if isParked {
			if parked == nil {
				parked = make([]parkedKey, nlive)
			}
			parked[to] = p
		}
	}
	o.states, o.parked = states, parked
	o.nParked = 0
	for _, p := range parked {
		if p.end > 0 {
			o.nParked++
		}
	}
	o.forgetAt = 0
	for _, ch := range o.pend.chunks {
		for i := range ch {
			ch[i].key = newID[ch[i].key]
		}
	}
	for i := range rel {
		rel[i].key = newID[rel[i].key]
	}
	o.keys.renumber(newID, int32(nlive))
	o.sweepAt = sweepAt
	o.stats.ForgottenKeys += int64(len(newID) - nlive)
}

// renumber gives key id the id newID[id], or drops it when that is -1;
// n is the number of keys left, numbered 0..n-1.
func (k *keyIndex) renumber(newID []int32, n int32) {
	if k.ints.len() > 0 {
		var t intTable
		for _, s := range k.ints.slots {
			if s.id != 0 {
				if id := newID[s.id-1]; id >= 0 {
					t.put(s.key, id)
				}
			}
		}
		k.ints = t
	}
	strs := make(map[string]int32, n)
	for s, id := range k.strs {
		if id = newID[id]; id >= 0 {
			strs[s] = id
		}
	}
	k.strs = strs
	if k.nullK >= 0 {
		k.nullK = newID[k.nullK]
	}
	k.n = n
}
