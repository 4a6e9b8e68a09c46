package window

import (
	"fmt"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/inttable"
	"github.com/volga-go/volga/statestore"
)

// keyForgetMin is the least number of keys an OVER operator forgets at
// once (see maybeForgetKeys; Operator.forgetMin, set by tests, replaces
// it): quiet keys hold at most about 10 MB (or as much as the live keys'
// entries) before they are forgotten, and the work of forgetting, linear
// in the keys held, is spread over at least that many.
const keyForgetMin = 1 << 16

// canForget reports whether an operator of cfg may forget quiet keys (see
// maybeForgetKeys): with every frame swept (RANGE, bounded, no row
// paging), and with no aggregate whose value depends on the rows'
// absolute numbers (agg.RangeEvaluator: a key that came back would be
// numbered from 0 again, and its frames grouped otherwise than by a run
// that kept it, by a rounding).
func canForget(cfg Config, sweepable bool) bool {
	if !sweepable {
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

// maybeForgetKeys forgets quiet keys that were let go: without a store
// the parked ones (see park), with one those dropped from memory once a
// checkpoint had written their small state (see sweepQuiet), whose
// stored state it deletes. Each kept its entry in the key index, its id
// and 16 bytes besides (with a store, its encoded key and bookkeeping in
// memory and its small state in the store), about 150 bytes in all, for
// good, so that a stream whose keys come and go (sessions, devices,
// requests) grew by that much with every key it had ever seen. Once at
// least as many keys are quiet as not (and at least keyForgetMin), the
// live ones get new ids, dense and in the order of their old ones, and
// the quiet ones are dropped (renumbering the ids held by rel, the rows
// being released, and by the pending rows; a quiet key with rows pending
// is kept). The work is linear in the keys and the pending rows, once per
// as many keys forgotten. With a store it waits until the operator may
// write (mayWrite): the deletions go into the next checkpoint, and a
// restore from it does not see the keys either.
//
// A key that comes back later is new again: its frames start empty, as
// they would have (a quiet key has no row any frame still to come can
// reach), and it is numbered from 0, which changes no aggregate's value
// (canForget). Lookups of a key not held, or seen anew since keys were
// forgotten (one of them back, perhaps), whose frames reach the newest
// row of a forgotten key (at most that of any key dropped quiet, with a
// store) are refused (ErrTooOld), as they were for the key kept; a lookup
// at a time still served (Config.Retention) never reaches one. Called
// with the lock held, after sweepQuiet.
func (o *Operator) maybeForgetKeys(rel []pendRow) error {
	n := len(o.states)
	least := keyForgetMin
	if o.forgetMin > 0 {
		least = o.forgetMin
	}
	quiet := o.nParked
	if o.cfg.Store != nil {
		quiet = o.quietDrops
	}
	if !o.forgetOK || !o.sweepable || o.finished != nil || quiet < max(least, n-quiet) || n < o.forgetAt {
		return nil
	}
	if o.cfg.Store != nil && !o.mayWrite() {
		return nil
	}
	live := newLiveKeys(n)
	for id, ks := range o.states {
		if !o.forgettable(int32(id), ks) {
			live.mark(int32(id))
		}
	}
	// A quiet key with rows pending is made present when they are
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
		// Quiet keys came back: try again once more keys came.
		o.forgetAt = n + least
		return nil
	}
	return o.forgetKeys(live, rel)
}

// forgettable reports whether key id, of state ks (nil when not
// resident), is quiet and let go: parked, or dropped from memory quiet
// and clean.
func (o *Operator) forgettable(id int32, ks *keyState) bool {
	if ks != nil {
		return false
	}
	if o.cfg.Store == nil {
		_, parked := o.parkedOf(id)
		return parked
	}
	m := &o.kmeta[id]
	return m.quiet && !m.dirty
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
// drops the others, which are quiet and let go; with a store, it deletes
// their stored states first.
func (o *Operator) forgetKeys(live *liveKeys, rel []pendRow) error {
	newID := live.renumbering()
	nlive := live.n
	if o.cfg.Store != nil {
		if err := o.deleteForgotten(newID); err != nil {
			return err
		}
		o.forgotDropped = max(o.forgotDropped, o.quietDropped)
	}
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
			if isParked {
				o.forgotDropped = max(o.forgotDropped, p.dropped)
			}
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
		if p != (parkedKey{}) {
			o.nParked++
		}
	}
	if o.cfg.Store != nil {
		o.renumberStored(newID, nlive)
	}
	o.forgetAt = 0
	for _, ch := range o.pend.chunks {
		for i := range ch {
			ch[i].key = newID[ch[i].key]
		}
	}
	o.recountPending()
	for i := range rel {
		rel[i].key = newID[rel[i].key]
	}
	o.keys.renumber(newID, int32(nlive))
	o.sweepAt = sweepAt
	o.stats.ForgottenKeys += int64(len(newID) - nlive)
	return nil
}

// deleteForgotten deletes the stored states of the keys newID drops.
func (o *Operator) deleteForgotten(newID []int32) error {
	wb, err := statestore.NewWriteBatch(o.cfg.Store)
	if err != nil {
		return fmt.Errorf("window: forgetting quiet keys: %w", err)
	}
	defer wb.Cancel()
	for id, to := range newID {
		if to < 0 {
			if err := wb.Delete(o.storeKey(int32(id))); err != nil {
				return fmt.Errorf("window: forgetting quiet keys: %w", err)
			}
		}
	}
	err = wb.Flush()
	o.closeSnapshot()
	if err != nil {
		return fmt.Errorf("window: forgetting quiet keys: %w", err)
	}
	return nil
}

// renumberStored renumbers the store-backed bookkeeping by newID: the
// encoded keys, their metadata, the keys listed dirty; the scratch of the
// last checkpoint is let go.
func (o *Operator) renumberStored(newID []int32, nlive int) {
	encs := make([]string, nlive)
	kmeta := make([]keyMeta, nlive)
	o.quietDrops = 0
	for id, to := range newID {
		if to >= 0 {
			encs[to], kmeta[to] = o.encs[id], o.kmeta[id]
			if kmeta[to].quiet && o.states[to] == nil {
				o.quietDrops++
			}
		}
	}
	o.encs, o.kmeta = encs, kmeta
	dirty := o.dirtyIDs[:0]
	for _, id := range o.dirtyIDs {
		if to := newID[id]; to >= 0 {
			dirty = append(dirty, to)
		}
	}
	o.dirtyIDs = dirty
	o.ckptSpare.ids, o.ckptSpare.claims, o.ckptSpare.fin = nil, nil, nil
}

// renumber gives key id the id newID[id], or drops it when that is -1;
// n is the number of keys left, numbered 0..n-1.
func (k *keyIndex) renumber(newID []int32, n int32) {
	if k.ints.Len() > 0 {
		var t inttable.Table
		t.Reserve(int(n))
		for key, id := range k.ints.All() {
			if id = newID[id]; id >= 0 {
				t.Put(key, id)
			}
		}
		k.ints = t
	}
	strs := make(map[string]int32, min(int(n), len(k.strs)))
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
