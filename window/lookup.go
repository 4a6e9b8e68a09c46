package window

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/agg"
)

// ErrTooOld is returned by Lookup when the frame at the requested time
// reaches rows the operator no longer holds: it keeps rows back to the
// longest frame before the newest released row (plus the allowed
// lateness and the lookup retention), not the whole history.
var ErrTooOld = errors.New("window: lookup time is older than the state kept for this key")

// ErrUnboundedLookup is returned by Lookup for a query with an UNBOUNDED
// PRECEDING frame: the operator does not keep every row of such frames.
var ErrUnboundedLookup = errors.New("window: lookups over UNBOUNDED PRECEDING frames are not supported")

// KeyTypes are the Arrow types of the key columns, in order.
func (o *Operator) KeyTypes() []arrow.DataType {
	out := make([]arrow.DataType, len(o.cfg.KeyCols))
	for j, c := range o.cfg.KeyCols {
		out[j] = o.in.Field(c).Type
	}
	return out
}

// Lookup computes every aggregate for one key as of time t (ms): over the
// key's rows released so far (event time <= the watermark), in the frame a
// row at t would have, without that row (SPEC section 6). The key is
// encoded with EncodeKeyValues. cand, when not nil, is one row of argument
// values (position 0 of cand, laid out like the operator's argument
// columns) counted in its own frame as if inserted, except under EXCLUDE
// CURRENT ROW; it is not stored. One value per aggregate is appended to
// bld, in result-column order. A key with no rows gets the empty-frame
// values. Lookup is safe for concurrent use with Push and Advance.
func (o *Operator) Lookup(key []byte, t int64, cand *agg.Rows, bld []array.Builder) (watermark int64, err error) {
	return o.LookupWith(key, t, cand, bld, nil)
}

// NewLookupStates returns one state per aggregate of the operator
// (indexed [window][aggregate]), for LookupWith to reuse.
func (o *Operator) NewLookupStates() [][]agg.State {
	out := make([][]agg.State, len(o.cfg.Windows))
	for w, spec := range o.cfg.Windows {
		out[w] = make([]agg.State, len(spec.Aggs))
		for a, fn := range spec.Aggs {
			out[w][a] = fn.NewState()
		}
	}
	return out
}

// LookupWith is Lookup evaluating into states, made by NewLookupStates of
// an operator of the same configuration (nil: fresh states): they are
// reset and reused, so a lookup allocates nothing for them. states must
// not be used by two lookups at once.
func (o *Operator) LookupWith(key []byte, t int64, cand *agg.Rows, bld []array.Builder, states [][]agg.State) (watermark int64, err error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if len(bld) != o.nAggs {
		return o.wm, fmt.Errorf("window: Lookup needs %d builders, got %d", o.nAggs, len(bld))
	}
	if states != nil && len(states) != len(o.cfg.Windows) {
		return o.wm, fmt.Errorf("window: Lookup needs states for %d windows, got %d", len(o.cfg.Windows), len(states))
	}
	var ks *keyState
	if id, ok := o.keys.find(key); !ok && o.forgotDropped != None {
		// Not held: perhaps forgotten (maybeForgetKeys), its rows dropped
		// up to forgotDropped at the latest, as a parked key's.
		ks = parkedView(parkedKey{dropped: o.forgotDropped})
	} else if ok {
		ks = o.states[id]
		if ks == nil && o.cfg.Store == nil {
			p, ok := o.parkedOf(id)
			if !ok {
				return o.wm, ErrKeyDropped
			}
			ks = parkedView(p)
		}
		if ks == nil {
			// Evicted: decode a private copy; ingest, which could
			// change the store, waits for the shared lock.
			var err error
			if ks, err = o.readState(id, false); err != nil {
				return o.wm, err
			}
			o.lookupLoads.Add(1)
		}
		if ks.edge != nil || len(ks.pages) > 0 {
			return o.wm, o.lookupPaged(id, ks, t, cand, bld, states)
		}
	}
	k := 0
	tilesLocked := false
	for w, spec := range o.cfg.Windows {
		f := spec.Frame
		if f.Unbounded {
			return o.wm, ErrUnboundedLookup
		}
		var lo, hi int64
		if ks != nil {
			r := &ks.rows
			hiEnd := t - f.EndPreceding
			if f.Rows {
				hiEnd = t
			}
			h := sort.Search(r.Len(), func(i int) bool { return r.Ts[i] > hiEnd })
			var l int
			switch {
			case f.Rows:
				// The row at t would come after every row with ts <= t;
				// its n preceding rows end there (a candidate is the
				// current row, on top of them).
				l = h - int(f.Preceding)
				if l < 0 {
					if ks.dropped != None {
						return o.wm, ErrTooOld
					}
					l = 0
				}
			default:
				start := t - f.Preceding
				if ks.dropped != None && ks.dropped >= start {
					return o.wm, ErrTooOld
				}
				l = sort.Search(r.Len(), func(i int) bool { return r.Ts[i] >= start })
			}
			lo, hi = r.Base+int64(l), r.Base+int64(max(h, l))
		}
		useCand := cand != nil && !f.ExcludeCurrent && (f.Rows || f.EndPreceding == 0)
		var tiles *tileSet
		if ks != nil && !f.Rows && hi-lo > int64(o.tileMin) {
			if !tilesLocked {
				o.lockTiles(ks)
				defer ks.tiles.mu.Unlock()
				tilesLocked = true
			}
			tiles = o.tilesFor(ks, w, spec)
		}
		r := &noRows
		if ks != nil {
			r = &ks.rows
		}
		c := cand
		if !useCand {
			c = nil
		}
		k = evalAggs(spec.Aggs, r, tiles, lo, hi, c, bld, k, states, w)
	}
	return o.wm, nil
}

// evalAggs appends to bld[k:] the value of each aggregate of a window over
// rows [lo, hi) of r (read through r.At), merging tiles when given, plus
// the candidate row cand when not nil; it returns the next k. states, when
// not nil, are reused (window w's).
func evalAggs(aggs []agg.Func, r *agg.Rows, tiles *tileSet, lo, hi int64, cand *agg.Rows, bld []array.Builder, k int, states [][]agg.State, w int) int {
	for ai, fn := range aggs {
		var st agg.State
		if states != nil {
			st = states[w][ai]
			st.Reset()
		} else {
			st = fn.NewState()
		}
		switch re, ok := fn.(agg.RangeEvaluator); {
		case ok:
			// The Func's own grouping of the frame (ew_avg): the same
			// bits as its Window; it adds the candidate itself.
			re.EvalRange(st, r, lo, hi, cand)
			st.AppendResult(bld[k])
			k++
			continue
		case tiles != nil:
			evalTiled(st, r, tiles, ai, lo, hi)
		default:
			addRows(st, r, lo, hi)
		}
		if cand != nil {
			st.Add(cand, 0)
		}
		st.AppendResult(bld[k])
		k++
	}
	return k
}

// noRows are the rows of a key without any.
var noRows agg.Rows

// lockTiles creates the key's tile holder if needed and locks it. Several
// lookups of one key may run at once under the operator's shared lock;
// ingest holds that lock exclusively, so rows do not change meanwhile.
func (o *Operator) lockTiles(ks *keyState) {
	o.tilesInit.Lock()
	if ks.tiles == nil {
		ks.tiles = &keyTiles{sets: make([]*tileSet, len(o.cfg.Windows))}
	}
	kt := ks.tiles
	o.tilesInit.Unlock()
	kt.mu.Lock()
}

// tilesFor returns the key's up-to-date tiles for window w, building them
// on first use; the caller holds the key's tile lock (lockTiles).
func (o *Operator) tilesFor(ks *keyState, w int, spec Spec) *tileSet {
	ts := ks.tiles.sets[w]
	if ts == nil {
		size := o.cfg.TileSize
		if size <= 0 {
			size = TileSize(spec.Frame.Preceding)
		}
		ts = &tileSet{size: size, built: ks.rows.Base}
		ks.tiles.sets[w] = ts
	}
	ts.extend(&ks.rows, ks.rows.Base, ks.rows.End(), spec.Aggs)
	return ts
}

// ResultTypes are the types of the aggregates, in result-column order.
func (o *Operator) ResultTypes() []arrow.DataType {
	var out []arrow.DataType
	for _, spec := range o.cfg.Windows {
		for _, f := range spec.Aggs {
			out = append(out, f.ResultType())
		}
	}
	return out
}

// ArgColumns returns empty columns laid out like the operator's argument
// columns, for building a Lookup candidate.
func (o *Operator) ArgColumns() []agg.Column {
	cols := make([]agg.Column, len(o.cfg.ArgCols))
	for j, c := range o.cfg.ArgCols {
		col, err := agg.NewColumn(o.in.Field(c).Type)
		if err != nil {
			col = agg.Column{Type: o.in.Field(c).Type, Kind: agg.KindString}
		}
		cols[j] = col
	}
	return cols
}
