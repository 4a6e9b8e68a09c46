package window

import (
	"fmt"

	"github.com/volga-go/volga/agg"
)

// groupCompactMin is the least number of keys a GROUP BY operator forgets
// at once (see maybeCompactKeys).
var groupCompactMin = 1 << 20

// maybeCompactKeys forgets the keys with no open window and no row
// waiting. A tumble/hop operator gives every key it sees an id, and kept
// its value and its entry in the key index for good: a stream whose keys
// come and go (sessions, devices, users active for a while) held every key
// it had ever seen, and wrote them all to every checkpoint. The keys are
// counted once as many new ones have come as the operator held live ones
// at the last count (and at least groupCompactMin): counting is linear in
// the open windows and the rows waiting, so its cost is spread over the
// new keys. When at least as many are dead as live (and at least
// groupCompactMin), the live ones get new ids, dense and in the order of
// their old ones, and the dead ones are dropped; a key that comes back
// later is new again. Output does not depend on key ids (windows go out
// by start, then by their first row), so results are unchanged.
//
// Input clustered by key keeps its keys: its finish point is checked
// against each key's first and last row (FinishBefore).
func (g *GroupOperator) maybeCompactKeys() error {
	n := int(g.keys.n)
	if g.cfg.Clustered || n < max(g.compactAt, groupCompactMin) {
		return nil
	}
	live := newLiveKeys(n)
	for _, sw := range g.wins {
		sw.byKey.each(func(id int32, _ *groupWin) { live.mark(id) })
	}
	for _, p := range g.pend {
		live.mark(p.key)
	}
	g.compactAt = n + max(live.n, groupCompactMin)
	if dead := n - live.n; dead < max(live.n, groupCompactMin) {
		return nil
	}
	return g.compactKeys(live)
}

// compactKeys renumbers the keys marked live 0..live.n-1 in their order
// and drops the others.
func (g *GroupOperator) compactKeys(live *liveKeys) error {
	newID, nlive := live.renumbering(), live.n
	vals := make([]agg.Column, len(g.keyVals))
	for j := range g.keyVals {
		vals[j] = agg.Column{Type: g.keyVals[j].Type, Kind: g.keyVals[j].Kind}
		for id, to := range newID {
			if to >= 0 {
				vals[j].AppendFrom(&g.keyVals[j], id)
			}
		}
	}
	keys := newKeyIndex(g.cfg.KeyCols)
	if err := g.internKeys(keys, vals, nlive); err != nil {
		return fmt.Errorf("window: forgetting keys: %w", err)
	}
	for _, sw := range g.wins {
		byKey := newWinTable(sw.byKey.len())
		sw.byKey.each(func(id int32, w *groupWin) { byKey.put(newID[id], w) })
		sw.byKey = byKey
		for i := range sw.list {
			sw.list[i].key = newID[sw.list[i].key]
		}
	}
	for i := range g.pend {
		g.pend[i].key = newID[g.pend[i].key]
	}
	g.keys, g.keyVals = keys, vals
	g.forgotten += int64(len(newID) - nlive)
	return nil
}
