package window

import (
	"math"
	"slices"

	"github.com/volga-go/volga/agg"
)

// quietSweepMin is how many keys a sweep step may look at, at least (as
// many as the rows it releases if more; see sweepQuiet): what it owes
// beyond waits for the next step.
const quietSweepMin = 4096

// quietHorizon returns the event time below which no row of any key is
// needed any more, given wm, the watermark before the release under way:
// no frame of a row still to come (pending rows are after wm, late rows
// within the allowed lateness after wm minus it) and no lookup at a time
// still served (down to the newest row released minus Config.Retention)
// reaches below it. ok is false when rows are needed whatever their age:
// ROWS and UNBOUNDED frames, row paging (Config.PageRows), no watermark
// yet, the End watermark.
func (o *Operator) quietHorizon(wm int64) (h int64, ok bool) {
	if !o.sweepable || wm == End || wm == None || o.wm == End {
		return 0, false
	}
	if o.cfg.Retention > 0 && o.maxTs == None {
		return 0, false // nothing released: no key holds rows
	}
	edge, _ := o.heldEdge(wm)
	edge = min(edge, wm)
	if edge < math.MinInt64/2+o.maxPrec {
		return 0, false
	}
	return edge - o.maxPrec, true
}

// sweepQuiet lets go of the state of quiet keys: keys whose newest row is
// below the horizon (quietHorizon), so that no frame still to come and no
// lookup still served reads any of their rows. A key's rows are trimmed
// when it gets new rows; a key that gets none kept the rows of its last
// frames, and its aggregates' tables, for good (a stream whose keys come
// and go grew with every key it had seen). Such a key's rows are dropped
// and its windows made anew, as if it had just been trimmed to nothing:
// its next row starts from an empty frame, as it would have, and lookups
// reaching the dropped rows are refused (ErrTooOld) as for any trimmed
// row. Its entry (id, key value) stays; what a fresh state weighs (about
// a kilobyte with a few aggregates: windows, column headers) does not:
// without a store the key is parked (16 bytes, see park; parked keys
// are forgotten altogether once many, see maybeForgetKeys), with one it
// is dropped from memory on a later visit once clean (a checkpoint wrote
// its small state) and no checkpoint is being written.
//
// The keys are walked in id order from where the last step stopped, a
// full round per maxPrec of watermark progress (at most quietSweepMin keys
// or the rows released, whichever is more, per step; the rest is owed to
// the next): a key quiet for a frame's length is let go within about
// another. Called with the lock held, when the watermark moves from prev
// to o.wm, before the rows it releases are processed.
func (o *Operator) sweepQuiet(prev int64, released int) error {
	h, ok := o.quietHorizon(prev)
	if !ok || len(o.states) == 0 {
		return nil
	}
	if o.wm > prev {
		o.sweepOwed += float64(len(o.states)) * float64(o.wm-prev) / float64(max(o.maxPrec, 1))
		o.sweepOwed = min(o.sweepOwed, float64(len(o.states)))
	}
	n := min(int(o.sweepOwed), max(quietSweepMin, released))
	if n <= 0 {
		return nil
	}
	o.sweepOwed -= float64(n)
	for range n {
		if o.sweepAt >= len(o.states) {
			o.sweepAt = 0
		}
		id := int32(o.sweepAt)
		o.sweepAt++
		ks := o.states[id]
		if ks == nil {
			if o.kmeta != nil && o.kmeta[id].newest != None && o.kmeta[id].newest < h {
				if err := o.replaceEvicted(id); err != nil {
					return err
				}
			}
			continue
		}
		if ks.rows.Len() == 0 {
			// Let go before (it had rows: a key just seen, its rows
			// still pending, has none yet), or a key that never had a
			// row but served probes (a backfill's spine: an entity with
			// no event yet), whose fresh state, about a kilobyte, it
			// would keep to the end, once its probes are below the
			// horizon too. With a store, once the store holds what is
			// left (a checkpoint wrote it; a fresh state is held as no
			// state at all), it need not stay in memory; without one,
			// a probe-only key is parked like a quiet key.
			probeOnly := ks.rows.Base == 0 && ks.probed != None && ks.probed < h && ks.edge == nil
			switch {
			case o.kmeta != nil && (ks.rows.Base > 0 || probeOnly) && !o.kmeta[id].dirty && ks.edge == nil && o.mayWrite():
				o.dropResident(id, ks)
			case o.cfg.Store == nil && probeOnly:
				o.park(id, ks)
				o.stats.QuietKeys++
			}
			continue
		}
		if ks.rows.Ts[ks.rows.Len()-1] >= h {
			continue
		}
		if o.cfg.Store == nil {
			o.park(id, ks)
		} else {
			if err := o.ensureResident(id); err != nil {
				return err
			}
			ks = o.states[id] // copy on write may replace it
			o.forgetRows(ks)
			if o.cfg.MemoryBudget > 0 {
				o.resize(id, ks)
			}
		}
		o.stats.QuietKeys++
	}
	return nil
}

// replaceEvicted makes the state of key id, evicted to the store and
// quiet, the state forgetRows would leave, without reading the stored
// one: no row held, the next numbered as it would have been (aggregates
// such as ew_avg weigh rows by number: a new numbering changed their
// last bits), the newest dropped row's time kept for lookups
// (ErrTooOld). It is resident and dirty, so the store's
// copy is overwritten by the next checkpoint or eviction. An evicted key
// is clean, so no checkpoint being written owes its old state.
func (o *Operator) replaceEvicted(id int32) error {
	if err := o.copyOnWrite(id); err != nil {
		return err
	}
	ks := o.smallState(o.kmeta[id].newest, o.kmeta[id].end)
	o.states[id] = ks
	o.kmeta[id].newest = None
	o.markDirty(id)
	if o.cfg.MemoryBudget > 0 {
		o.resize(id, ks)
	}
	o.stats.QuietKeys++
	return nil
}

// smallState returns the state a key is left with once its rows are let
// go: no row held, the next numbered end (aggregates such as ew_avg weigh
// rows by number), dropped the newest dropped row's time (for lookups:
// ErrTooOld).
func (o *Operator) smallState(dropped, end int64) *keyState {
	ks := o.newKeyState()
	ks.dropped = dropped
	ks.rows.Base = end
	return ks
}

// parkedKey is what a quiet key keeps of its state once let go without a
// store (Operator.parked): the arguments of smallState. The zero value
// marks a key not parked: a parked key had rows (end is at least 1) or
// only served probes (end 0, dropped None).
type parkedKey struct {
	dropped, end int64
}

// park lets go of quiet key id's state ks, without a store: a fresh state
// with its windows and column headers is about a kilobyte, so the key
// keeps 16 bytes (parkedKey) and gets its small state back when it has
// rows again (present); a lookup reads the 16 bytes (parkedView).
func (o *Operator) park(id int32, ks *keyState) {
	if n := len(o.states); len(o.parked) < n {
		o.parked = slices.Grow(o.parked, n-len(o.parked))[:n]
	}
	r := &ks.rows
	dropped := ks.dropped
	if r.Len() > 0 {
		dropped = max(dropped, r.Ts[r.Len()-1])
	}
	o.parked[id] = parkedKey{dropped: dropped, end: r.End()}
	o.nParked++
	o.states[id] = nil
}

// parkedOf returns what parked key id kept; ok is false for a key not
// parked.
func (o *Operator) parkedOf(id int32) (p parkedKey, ok bool) {
	if int(id) < len(o.parked) && o.parked[id] != (parkedKey{}) {
		return o.parked[id], true
	}
	return parkedKey{}, false
}

// parkedView returns what a lookup of a key parked as p reads: no row,
// the next numbered p.end, p.dropped (ErrTooOld for frames reaching it).
// Lookups read no aggregate window, so none is made.
func parkedView(p parkedKey) *keyState {
	return &keyState{rows: agg.Rows{Base: p.end}, dropped: p.dropped}
}

// present makes key id's state resident before it changes: read from the
// store if it was evicted (ensureResident) or, without a store, made from
// what it kept if it was parked.
func (o *Operator) present(id int32) error {
	if o.cfg.Store != nil {
		return o.ensureResident(id)
	}
	if o.states[id] == nil {
		if p, ok := o.parkedOf(id); ok {
			o.states[id] = o.smallState(p.dropped, p.end)
			o.parked[id] = parkedKey{}
			o.nParked--
		}
	}
	return nil
}

// forgetRows drops every row of ks and makes its windows anew.
func (o *Operator) forgetRows(ks *keyState) {
	r := &ks.rows
	n := r.Len()
	ks.dropped = max(ks.dropped, r.Ts[n-1])
	r.Base += int64(n)
	r.Ts = nil
	for j := range r.Cols {
		r.Cols[j] = agg.Column{Type: r.Cols[j].Type, Kind: r.Cols[j].Kind}
	}
	o.resetWindows(ks)
	ks.tiles = nil
}
