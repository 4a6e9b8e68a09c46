package window

import (
	"bytes"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
)

// groupMetaMagic starts the meta of GroupOperator.Checkpoint.
const groupMetaMagic = "volga.window.GroupOperator/1\n"

// fingerprint identifies the configuration the state depends on: input
// schema, columns, aggregates, window size and slide, time type.
func (g *GroupOperator) fingerprint() [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "volga-group-v1|")
	for _, f := range g.in.Fields() {
		fmt.Fprintf(h, "%q:%s,", f.Name, f.Type)
	}
	c := &g.cfg
	fmt.Fprintf(h, "|ts=%d|seq=%d|keys=%v|args=%v|size=%d|slide=%d|time=%s|", c.TsCol, c.SeqCol, c.KeyCols, c.ArgCols, c.SizeMs, c.SlideMs, c.TimeType)
	for _, f := range c.Aggs {
		fmt.Fprintf(h, "%s:%s,", f.Name(), f.ResultType())
	}
	fmt.Fprintf(h, "|names=%q", c.ResultNames)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// groupClusteredTag starts the last section of the meta of an operator
// configured Clustered: finBelow, finDone, and each key's first and last
// row (sequence numbers).
const groupClusteredTag = 'c'

// Checkpoint returns the operator's whole state as meta: the watermark
// and counters, the keys, every open window's aggregate states, and the
// rows waiting for the watermark. It needs no store (GroupConfig has
// none): a tumble/hop operator holds one state per key and open window.
func (g *GroupOperator) Checkpoint() ([]byte, error) {
	fp := g.fingerprint()
	out := append([]byte(groupMetaMagic), fp[:]...)
	for _, v := range []int64{g.wm, g.stats.RowsIn, g.stats.RowsOut, g.stats.LateDropped, g.stats.LateApplied, int64(g.nextID)} {
		out = binary.AppendVarint(out, v)
	}
	nk := int(g.keys.n)
	out = binary.AppendUvarint(out, uint64(nk))
	for j := range g.keyVals {
		out = appendColumn(out, &g.keyVals[j])
	}
	var keys []groupKey
	for start, sw := range g.wins {
		for _, ref := range sw.list {
			keys = append(keys, groupKey{key: int64(ref.key), start: start})
		}
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		if a.start != b.start {
			return cmpInt(a.start, b.start)
		}
		return int(a.key) - int(b.key)
	})
	out = binary.AppendUvarint(out, uint64(len(keys)))
	for _, k := range keys {
		w := g.wins[k.start].byKey.get(int32(k.key))
		out = binary.AppendUvarint(out, uint64(k.key))
		out = binary.AppendVarint(out, k.start)
		out = binary.AppendVarint(out, w.minSeq)
		for _, st := range w.states {
			b, err := st.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("window: checkpoint: %w", err)
			}
			out = append(binary.AppendUvarint(out, uint64(len(b))), b...)
		}
	}
	ids := make([]int32, 0, len(g.held))
	for id := range g.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out = binary.AppendUvarint(out, uint64(len(ids)))
	for _, id := range ids {
		hb := g.held[id]
		out = binary.AppendVarint(out, int64(id))
		out = binary.AppendUvarint(out, uint64(hb.left))
		out = binary.AppendUvarint(out, uint64(hb.rows.Len()))
		for _, t := range hb.rows.Ts {
			out = binary.AppendVarint(out, t)
		}
		for j := range hb.rows.Cols {
			out = appendColumn(out, &hb.rows.Cols[j])
		}
	}
	out = binary.AppendUvarint(out, uint64(len(g.pend)))
	for _, p := range g.pend {
		out = binary.AppendVarint(out, p.ts)
		out = binary.AppendVarint(out, p.seq)
		out = binary.AppendUvarint(out, uint64(p.key))
		out = binary.AppendVarint(out, int64(p.batch))
		out = binary.AppendUvarint(out, uint64(p.row))
	}
	if g.cfg.Clustered {
		out = append(out, groupClusteredTag)
		out = binary.AppendVarint(out, g.finBelow)
		out = binary.AppendVarint(out, g.finDone)
		for id := range nk {
			out = binary.AppendVarint(out, g.firstSeq[id])
			out = binary.AppendUvarint(out, uint64(g.lastSeq[id]-g.firstSeq[id]))
		}
	}
	return out, nil
}

// Restore loads meta written by Checkpoint into a fresh GroupOperator,
// before its first Push. Meta of an operator of another configuration
// is refused (ErrIncompatibleCheckpoint).
func (g *GroupOperator) Restore(meta []byte) (err error) {
	defer g.publish()
	if g.stats.RowsIn != 0 || g.keys.n != 0 || g.wm != None {
		return errors.New("window: Restore needs a fresh GroupOperator")
	}
	if !bytes.HasPrefix(meta, []byte(groupMetaMagic)) {
		return fmt.Errorf("%w: not the meta of a tumble/hop operator", ErrIncompatibleCheckpoint)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("window: restore: %w: %v", errCorruptState, r)
		}
	}()
	d := reader{b: meta[len(groupMetaMagic):]}
	fp := d.take(32)
	if want := g.fingerprint(); d.err == nil && !bytes.Equal(fp, want[:]) {
		return fmt.Errorf("%w: its schema, keys, window or aggregates differ from this operator's", ErrIncompatibleCheckpoint)
	}
	var v [6]int64
	for i := range v {
		v[i] = d.varint()
	}
	nk := d.count(0)
	keyVals := make([]agg.Column, len(g.keyVals))
	for j := range keyVals {
		keyVals[j] = agg.Column{Type: g.keyVals[j].Type, Kind: g.keyVals[j].Kind}
		d.decodeColumn(&keyVals[j], nk)
	}
	type keyWin struct {
		k groupKey
		w *groupWin
	}
	var wins []keyWin
	nw := d.count(3)
	for i := 0; d.err == nil && i < nw; i++ {
		k := groupKey{key: int64(d.uvarint()), start: d.varint()}
		w := g.newWin(d.varint())
		if d.err == nil && (k.key < 0 || int(k.key) >= nk) {
			d.fail()
		}
		for a := range g.cfg.Aggs {
			b := d.bytes()
			if d.err != nil {
				break
			}
			if err := w.states[a].UnmarshalBinary(b); err != nil {
				return fmt.Errorf("window: restore: %w: %w", errCorruptState, err)
			}
		}
		wins = append(wins, keyWin{k, w})
	}
	held := map[int32]*groupHeld{}
	nh := d.count(3)
	for i := 0; d.err == nil && i < nh; i++ {
		id := int32(d.varint())
		hb := &groupHeld{left: int(d.uvarint())}
		n := d.count(1)
		hb.rows.Ts = make([]int64, n)
		for r := range n {
			hb.rows.Ts[r] = d.varint()
		}
		hb.rows.Cols = make([]agg.Column, len(g.cfg.ArgCols))
		for j, c := range g.cfg.ArgCols {
			col, cerr := agg.NewColumn(g.in.Field(c).Type)
			if cerr != nil {
				return cerr
			}
			hb.rows.Cols[j] = col
			d.decodeColumn(&hb.rows.Cols[j], n)
		}
		held[id] = hb
	}
	np := d.count(5)
	pend := make([]groupPend, 0, np)
	for i := 0; d.err == nil && i < np; i++ {
		p := groupPend{ts: d.varint(), seq: d.varint(), key: int32(d.uvarint()), batch: int32(d.varint()), row: int32(d.uvarint())}
		hb := held[p.batch]
		if d.err == nil && (hb == nil || p.key < 0 || int(p.key) >= nk || p.row < 0 || int(p.row) >= hb.rows.Len()) {
			d.fail()
		}
		pend = append(pend, p)
	}
	// Each held batch counts the rows waiting in it (advance lets the
	// batch go when its count reaches 0, and a row waiting in a batch let
	// go would be read through nil).
	if d.err == nil {
		left := make(map[int32]int, len(held))
		for _, p := range pend {
			left[p.batch]++
		}
		for id, hb := range held {
			if hb.left != left[id] {
				d.fail()
			}
		}
	}
	clustered := d.err == nil && len(d.b) > 0 && d.b[0] == groupClusteredTag
	if d.err == nil && clustered != g.cfg.Clustered {
		if clustered {
			return fmt.Errorf("%w: written by a run over input clustered by key (ClusteredBy); this one is not", ErrIncompatibleCheckpoint)
		}
		return fmt.Errorf("%w: this run's input is clustered by key (ClusteredBy); the checkpoint's run was not", ErrIncompatibleCheckpoint)
	}
	var finBelow, finDone int64
	var firstSeq, lastSeq []int64
	if clustered {
		d.byte()
		finBelow, finDone = d.varint(), d.varint()
		if d.err == nil && (finDone < 0 || finDone > finBelow) {
			d.fail()
		}
		// Two numbers a key, at least a byte each.
		firstSeq, lastSeq = make([]int64, 0, min(nk, len(d.b)/2)), make([]int64, 0, min(nk, len(d.b)/2))
		for i := 0; d.err == nil && i < nk; i++ {
			f := d.varint()
			span := d.uvarint()
			if d.err == nil && (f < 0 || span > math.MaxInt64-uint64(f)) {
				d.fail()
			}
			firstSeq = append(firstSeq, f)
			lastSeq = append(lastSeq, f+int64(span))
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return fmt.Errorf("window: restore: %w", d.err)
	}
	// The key index: intern the key values in id order.
	if err := g.internKeys(g.keys, keyVals, nk); err != nil {
		return fmt.Errorf("window: restore: %w", err)
	}
	g.keyVals = keyVals
	// Windows in the order written (by start, then key), each opened
	// once.
	for _, kw := range wins {
		k := kw.k
		sw := g.wins[k.start]
		if sw == nil {
			sw = &startWins{}
			g.wins[k.start] = sw
			heap.Push(&g.starts, k.start)
		}
		if sw.byKey.get(int32(k.key)) != nil {
			return fmt.Errorf("window: restore: %w: window %d of key %d stored twice", errCorruptState, k.start, k.key)
		}
		sw.byKey.put(int32(k.key), kw.w)
		sw.list = append(sw.list, winRef{w: kw.w, key: int32(k.key)})
	}
	g.held = held
	g.pend = pend
	g.firstSeq, g.lastSeq, g.finBelow, g.finDone = firstSeq, lastSeq, finBelow, finDone
	g.wm = v[0]
	g.stats.RowsIn, g.stats.RowsOut, g.stats.LateDropped, g.stats.LateApplied = v[1], v[2], v[3], v[4]
	g.nextID = int32(v[5])
	return nil
}

// internKeys interns the n key values of cols into keys, empty, so that
// key i gets id i; a value stored twice is errCorruptState.
func (g *GroupOperator) internKeys(keys *keyIndex, cols []agg.Column, n int) error {
	if n == 0 {
		return nil
	}
	rec, err := g.keyRecord(cols, n)
	if err != nil {
		return err
	}
	ids, err := keys.intern(rec, func(int32, int) {})
	rec.Release()
	if err != nil {
		return err
	}
	for i, id := range ids {
		if int(id) != i {
			return fmt.Errorf("%w: key %d stored twice", errCorruptState, i)
		}
	}
	return nil
}

// keyRecord builds a batch of the input schema whose key columns hold
// the n key values of cols (the other columns are NULL).
func (g *GroupOperator) keyRecord(cols []agg.Column, n int) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, g.in.NumFields())
	defer arrowutil.ReleaseAll(arrs)
	for i, f := range g.in.Fields() {
		b := array.NewBuilder(g.mem, f.Type)
		if j := slices.Index(g.cfg.KeyCols, i); j >= 0 {
			for r := range n {
				agg.AppendValue(b, &cols[j], r)
			}
		} else {
			b.AppendNulls(n)
		}
		arrs[i] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(g.in, arrs, int64(n)), nil
}
