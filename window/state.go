package window

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testhook"
	"github.com/volga-go/volga/statestore"
)

// Key state in the store, checkpoints and the memory budget.
//
// With Config.Store set, every key's state (its retained rows and the
// sliding state of every window: agg.WindowCodec) can be encoded and
// written to the store under "k/" + the encoded key (EncodeKeyValues's
// encoding). Checkpoint writes the keys changed since the last write and
// returns the rest of the operator's state as meta; Restore reads it back.
// BeginCheckpoint and WriteCheckpoint split a checkpoint so that the keys
// are written while the operator goes on (copy on write).
// With Config.MemoryBudget set, the least recently used keys are written
// and dropped from memory once the resident estimate exceeds the budget,
// and read back when needed. Tiles (lookup caches) are not stored: they
// are rebuilt from the rows on the next lookup that wants them.

// keyPrefix is the store prefix of key states.
const keyPrefix = "k/"

// keyStateVersion is the first byte of an encoded key state.
const keyStateVersion = 1

// keyStateVersionPaged marks a key state followed by its paging section
// (edge rows and page index, see Config.PageRows).
const keyStateVersionPaged = 2

// keyStateFinished is set in the version byte of the state of a key whose
// rows have all come (FinishBefore): a resumed run refuses its rows as
// the run before did. Restore reads it without decoding the state.
const keyStateFinished = 0x80

// ErrIncompatibleCheckpoint is returned (wrapped) by Restore for meta
// written by an operator of a different configuration: another input
// schema, key, argument columns, frames or aggregates.
var ErrIncompatibleCheckpoint = errors.New("window: checkpoint was written by an incompatible operator")

// errCorruptState is returned for a malformed key state or meta.
var errCorruptState = errors.New("window: corrupt operator state")

func (o *Operator) storeKey(id int32) []byte {
	return append([]byte(keyPrefix), o.encs[id]...)
}

// encodeKeyRow returns the encoded key of row i of rec.
func (o *Operator) encodeKeyRow(rec arrow.RecordBatch, i int) string {
	var b []byte
	for _, c := range o.cfg.KeyCols {
		b = AppendKey(b, rec.Column(c), i)
	}
	return string(b)
}

// emptyState reports whether ks holds nothing a fresh state would not:
// no row of the key was ever stored.
func emptyState(ks *keyState) bool {
	return ks.rows.Base == 0 && ks.rows.Len() == 0 && ks.dropped == None && ks.edge == nil && ks.pages == nil
}

// snapshotAge is how long storedState reads through one snapshot of the
// store at most; the snapshot is closed then, even if the operator is
// idle (an open Badger snapshot keeps the versions newer than it from
// compaction). A variable for tests.
var snapshotAge = time.Second

// storedState reads the value of key from the store for the caller of
// Push and Advance, through a snapshot of the store taken at the first
// read and kept for up to snapshotAge: a Badger read waits until the
// store has applied every write committed before it, which, while a
// checkpoint streams its writes, made every key read from the store wait
// (the tasks of the checkpoint workload waited longer than they ran; with
// a snapshot per Push or Advance call still 10 s of a 12 s run). The
// snapshot is taken again after the operator's own writes (evictions,
// forgotten keys, row pages) and once a checkpoint's writes are flushed
// (snapStale), so it holds every state the operator wrote: a key is only
// dropped from memory once the store holds its state.
func (o *Operator) storedState(key []byte) ([]byte, error) {
	sn, ok := o.cfg.Store.(statestore.Snapshotter)
	if !ok {
		return o.cfg.Store.Get(key)
	}
	if o.snapStale.Swap(false) || o.snap != nil && time.Since(o.snapAt) >= snapshotAge {
		o.closeSnapshot()
	}
	if o.snap == nil {
		s, err := sn.Snapshot()
		if errors.Is(err, errors.ErrUnsupported) {
			return o.cfg.Store.Get(key)
		}
		if err != nil {
			return nil, err
		}
		o.snap, o.snapAt = s, time.Now()
		o.snapTimer = time.AfterFunc(snapshotAge, func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.snap == s {
				o.closeSnapshot()
			}
		})
	}
	return o.snap.Get(key)
}

// closeSnapshot closes the snapshot of storedState, if one is open; the
// caller holds the operator's lock.
func (o *Operator) closeSnapshot() {
	if o.snap != nil {
		o.snap.Close()
		o.snap = nil
		o.snapTimer.Stop()
	}
}

// load reads the evicted state of key id from the store and makes it
// resident (clean). A key the store does not hold had an empty state.
func (o *Operator) load(id int32) (*keyState, error) {
	ks, err := o.readState(id, true)
	if err != nil {
		return nil, err
	}
	o.states[id] = ks
	o.kmeta[id] = keyMeta{}
	o.stats.Loaded++
	if o.cfg.MemoryBudget > 0 {
		o.touch(id, ks)
	}
	return ks, nil
}

// ensureResident loads key id if it was evicted and marks it dirty: its
// state is about to change.
func (o *Operator) ensureResident(id int32) error {
	if o.states[id] == nil {
		if _, err := o.load(id); err != nil {
			return err
		}
	}
	if err := o.copyOnWrite(id); err != nil {
		return err
	}
	o.markDirty(id)
	return nil
}

// markDirty marks key id changed since the last checkpoint and lists it
// in dirtyIDs, once while it stays dirty: a checkpoint's barrier step
// then visits the changed keys, not every key.
func (o *Operator) markDirty(id int32) {
	if o.kmeta[id].dirty {
		return
	}
	o.kmeta[id].dirty = true
	if len(o.dirtyIDs) >= 2*len(o.kmeta)+1024 {
		// Evictions clean keys without a checkpoint: without checkpoints
		// to empty it, the list keeps only the keys still dirty.
		// Each kept once: its flag is cleared as it is kept, and set
		// again after.
		kept := o.dirtyIDs[:0]
		for _, d := range o.dirtyIDs {
			if o.kmeta[d].dirty && d != id {
				o.kmeta[d].dirty = false
				kept = append(kept, d)
			}
		}
		for _, d := range kept {
			o.kmeta[d].dirty = true
		}
		o.dirtyIDs = kept
	}
	o.dirtyIDs = append(o.dirtyIDs, id)
}

// readState decodes the stored state of key id into a new keyState; it
// changes nothing in the operator, so lookups may call it under the
// shared lock. With own (the caller of Push and Advance only), it reads
// through the operator's snapshot of the store (storedState).
func (o *Operator) readState(id int32, own bool) (*keyState, error) {
	if o.cfg.Store == nil {
		return nil, fmt.Errorf("window: state of key %d is missing", id)
	}
	var v []byte
	var err error
	if own {
		v, err = o.storedState(o.storeKey(id))
	} else {
		v, err = o.cfg.Store.Get(o.storeKey(id))
	}
	if errors.Is(err, statestore.ErrNotFound) {
		return o.newKeyState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("window: reading key state: %w", err)
	}
	ks, err := o.decodeKeyState(v)
	if err != nil {
		return nil, fmt.Errorf("window: key state %q: %w", o.encs[id], err)
	}
	return ks, nil
}

// touch marks ks used now and updates its size estimate.
func (o *Operator) touch(id int32, ks *keyState) {
	o.tick++
	o.kmeta[id].used = o.tick
	o.resize(id, ks)
}

// resize updates the size estimate of ks, the state of key id, and the
// resident total.
func (o *Operator) resize(id int32, ks *keyState) {
	m := &o.kmeta[id]
	sz := o.sizeOf(ks)
	o.resident += sz - m.size
	m.size = sz
}

// Size estimate of a key state: a fixed overhead, 8 bytes of event time
// and the column values per row, and a guess per window.
const (
	keyStateBytes = 160
	windowBytes   = 96
	stringBytes   = 40
)

func (o *Operator) sizeOf(ks *keyState) int64 {
	n := int64(ks.rows.Len())
	if ks.edge != nil {
		n += int64(ks.edge.Len())
	}
	sz := int64(keyStateBytes) + 32*int64(len(ks.pages)) + int64(o.nAggs)*windowBytes + 8*n
	for j := range ks.rows.Cols {
		switch ks.rows.Cols[j].Kind {
		case agg.KindString:
			sz += n * (stringBytes + 1)
		case agg.KindBool:
			sz += 2 * n
		default:
			sz += 9 * n
		}
	}
	return sz
}

// evict writes the least recently used keys to the store and drops them
// from memory until the resident estimate is a fifth below the budget
// (so that evictions come in rounds, not at every call). Clean keys are
// dropped without a write: the store holds their state. Nothing is done
// while writes are not allowed (mayWrite).
func (o *Operator) evict() error {
	budget := o.cfg.MemoryBudget
	if o.resident <= budget || !o.mayWrite() {
		return nil
	}
	target := budget - budget/5
	type cand struct {
		id   int32
		used uint64
	}
	var cands []cand
	for id, ks := range o.states {
		if ks != nil {
			cands = append(cands, cand{int32(id), o.kmeta[id].used})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmpInt(int64(a.used), int64(b.used)) })
	wb, err := statestore.NewWriteBatch(o.cfg.Store)
	if err != nil {
		return fmt.Errorf("window: evicting key state: %w", err)
	}
	defer wb.Cancel()
	for _, c := range cands {
		if o.resident <= target {
			break
		}
		ks := o.states[c.id]
		if err := o.writeKey(wb, c.id, ks); err != nil {
			return err
		}
		o.dropResident(c.id, ks)
		o.stats.Evicted++
	}
	err = wb.Flush()
	o.closeSnapshot()
	if err != nil {
		return fmt.Errorf("window: evicting key state: %w", err)
	}
	return nil
}

// dropResident drops ks, the resident state of key id, from memory; the
// store holds it (the key is clean).
func (o *Operator) dropResident(id int32, ks *keyState) {
	m := &o.kmeta[id]
	o.resident -= m.size
	m.size = 0
	m.newest, m.end = None, ks.rows.End()
	if n := ks.rows.Len(); n > 0 {
		m.newest = ks.rows.Ts[n-1]
	} else if (ks.rows.Base > 0 || ks.probed != None) && ks.edge == nil && !m.quiet {
		// A quiet key's small state, or a key that only served probes
		// (a key just seen has rows pending and none numbered yet).
		m.quiet = true
		o.quietDrops++
		o.quietDropped = max(o.quietDropped, ks.dropped)
	}
	o.states[id] = nil
}

// writeKey adds the write of a dirty key's state (its deletion when it
// is empty) to wb and marks the key clean. It reports whether it wrote.
func (o *Operator) writeKey(wb statestore.WriteBatch, id int32, ks *keyState) error {
	if !o.kmeta[id].dirty {
		return nil
	}
	if err := o.putKey(wb, id, ks); err != nil {
		return err
	}
	o.kmeta[id].dirty = false
	return nil
}

// putKey adds the write of ks, the state of key id, to wb: its deletion
// when it is empty.
func (o *Operator) putKey(wb statestore.WriteBatch, id int32, ks *keyState) error {
	var err error
	if emptyState(ks) {
		err = wb.Delete(o.storeKey(id))
	} else {
		o.encBuf, err = o.appendKeyState(o.encBuf[:0], ks, o.isFinished(id))
		if err == nil {
			err = wb.Set(o.storeKey(id), o.encBuf)
		}
	}
	if err != nil {
		return fmt.Errorf("window: writing key state: %w", err)
	}
	return nil
}

// encodeKeyState encodes a key's rows and window states:
//
//	version byte (1)
//	varint Base, varint dropped, uvarint rows, rows × varint event-time delta
//	uvarint columns, per column: kind byte, null bitmap, the values
//	uvarint windows, per window: uvarint aggregates, per aggregate the
//	  window's agg.WindowCodec encoding, length first
func (o *Operator) encodeKeyState(ks *keyState) ([]byte, error) {
	return o.appendKeyState(nil, ks, false)
}

// appendKeyState appends encodeKeyState's encoding of ks to out, with
// keyStateFinished set when fin.
func (o *Operator) appendKeyState(out []byte, ks *keyState, fin bool) ([]byte, error) {
	start := len(out)
	out, err := o.appendKeyStateData(out, ks)
	if err == nil && fin {
		out[start] |= keyStateFinished
	}
	return out, err
}

// appendKeyStateData appends the encoding of ks to out.
func (o *Operator) appendKeyStateData(out []byte, ks *keyState) ([]byte, error) {
	r := &ks.rows
	start := len(out)
	out = append(out, keyStateVersion)
	out = binary.AppendVarint(out, r.Base)
	out = binary.AppendVarint(out, ks.dropped)
	out = binary.AppendUvarint(out, uint64(r.Len()))
	prev := int64(0)
	for _, t := range r.Ts {
		out = binary.AppendVarint(out, t-prev)
		prev = t
	}
	out = binary.AppendUvarint(out, uint64(len(r.Cols)))
	for j := range r.Cols {
		out = appendColumn(out, &r.Cols[j])
	}
	out = binary.AppendUvarint(out, uint64(len(o.cfg.Windows)))
	for w := range o.cfg.Windows {
		ws := o.winAggs(ks, w)
		out = binary.AppendUvarint(out, uint64(len(ws)))
		for _, w := range ws {
			c, ok := w.(agg.WindowCodec)
			if !ok {
				return nil, fmt.Errorf("window: window %T cannot be encoded", w)
			}
			var err error
			if out, err = agg.AppendEncoded(out, c); err != nil {
				return nil, err
			}
		}
	}
	if ks.edge != nil || len(ks.pages) > 0 {
		// Paged key (version 2): the edge rows and the page index.
		out[start] = keyStateVersionPaged
		out = binary.AppendVarint(out, ks.pagedLo)
		e := ks.edge
		if e == nil {
			e = &agg.Rows{Base: r.Base}
			if len(ks.pages) > 0 {
				e.Base = ks.pages[0].from
			}
		}
		out = binary.AppendVarint(out, e.Base)
		out = appendRows(out, e, 0, e.Len())
		out = binary.AppendUvarint(out, uint64(len(ks.pages)))
		for _, pg := range ks.pages {
			for _, v := range []int64{pg.from, pg.to, pg.minTs, pg.maxTs} {
				out = binary.AppendVarint(out, v)
			}
		}
		var err error
		if out, err = o.appendPagedTiles(out, ks); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendColumn appends the values of c: its kind, a null bitmap and the
// values (NULLs included, as stored).
func appendColumn(out []byte, c *agg.Column) []byte {
	out = append(out, byte(c.Kind))
	n := c.Len()
	at := len(out)
	out = append(out, make([]byte, (n+7)/8)...)
	for i, null := range c.Null {
		if null {
			out[at+i/8] |= 1 << (i % 8)
		}
	}
	switch c.Kind {
	case agg.KindInt64:
		for _, v := range c.I64[:n] {
			out = binary.AppendVarint(out, v)
		}
	case agg.KindFloat64:
		for _, v := range c.F64[:n] {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	case agg.KindString:
		for _, v := range c.Str[:n] {
			out = append(binary.AppendUvarint(out, uint64(len(v))), v...)
		}
	case agg.KindBool:
		for _, v := range c.Bool[:n] {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	}
	return out
}

// reader decodes state encodings; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (d *reader) fail() {
	if d.err == nil {
		d.err = errCorruptState
	}
}

func (d *reader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *reader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads an element count no larger than the bytes left allow (each
// element takes at least minSize bytes).
func (d *reader) count(minSize int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/max(minSize, 1)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *reader) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *reader) bytes() []byte {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	return d.take(int(n))
}

func (d *reader) byte() byte {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// decodeColumn reads n values written by appendColumn into c, an empty
// column of the expected kind.
func (d *reader) decodeColumn(c *agg.Column, n int) {
	if k := agg.Kind(d.byte()); d.err == nil && k != c.Kind {
		d.fail()
		return
	}
	bm := d.take((n + 7) / 8)
	if d.err != nil {
		return
	}
	c.Null = make([]bool, n)
	for i := range n {
		c.Null[i] = bm[i/8]&(1<<(i%8)) != 0
	}
	switch c.Kind {
	case agg.KindInt64:
		c.I64 = make([]int64, n)
		for i := range n {
			c.I64[i] = d.varint()
		}
	case agg.KindFloat64:
		b := d.take(8 * n)
		c.F64 = make([]float64, n)
		for i := 0; d.err == nil && i < n; i++ {
			c.F64[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case agg.KindString:
		c.Str = make([]string, n)
		for i := range n {
			c.Str[i] = string(d.bytes())
		}
	case agg.KindBool:
		b := d.take(n)
		c.Bool = make([]bool, n)
		for i := 0; d.err == nil && i < n; i++ {
			switch b[i] {
			case 0:
			case 1:
				c.Bool[i] = true
			default:
				d.fail()
			}
		}
	default:
		d.fail()
	}
}

// decodeKeyState decodes an encoding of encodeKeyState for this
// operator's configuration. Malformed input gives an error, never a
// panic.
func (o *Operator) decodeKeyState(data []byte) (ks *keyState, err error) {
	defer func() {
		if r := recover(); r != nil {
			ks, err = nil, fmt.Errorf("%w: %v", errCorruptState, r)
		}
	}()
	d := reader{b: data}
	version := d.byte() &^ keyStateFinished
	if d.err == nil && version != keyStateVersion && version != keyStateVersionPaged {
		return nil, fmt.Errorf("%w: key state version %d", errCorruptState, version)
	}
	ks = o.newKeyState()
	r := &ks.rows
	r.Base = d.varint()
	ks.dropped = d.varint()
	n := d.count(1)
	if d.err == nil && r.Base < 0 {
		d.fail()
	}
	r.Ts = make([]int64, n)
	prev := int64(0)
	for i := 0; d.err == nil && i < n; i++ {
		prev += d.varint()
		if i > 0 && prev < r.Ts[i-1] {
			d.fail()
		}
		r.Ts[i] = prev
	}
	if nc := d.count(1); d.err == nil && nc != len(r.Cols) {
		d.fail()
	}
	for j := 0; d.err == nil && j < len(r.Cols); j++ {
		d.decodeColumn(&r.Cols[j], n)
	}
	if nw := d.count(1); d.err == nil && nw != len(o.cfg.Windows) {
		d.fail()
	}
	for w := 0; d.err == nil && w < len(o.cfg.Windows); w++ {
		ws := o.winAggs(ks, w)
		if na := d.count(1); d.err == nil && na != len(ws) {
			d.fail()
		}
		for a := 0; d.err == nil && a < len(ws); a++ {
			b := d.bytes()
			if d.err != nil {
				break
			}
			c, ok := ws[a].(agg.WindowCodec)
			if !ok {
				return nil, fmt.Errorf("window: window %T cannot be decoded", ws[a])
			}
			if err := c.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("%w: window %d aggregate %d: %w", errCorruptState, w, a, err)
			}
		}
	}
	if d.err == nil && version == keyStateVersionPaged {
		o.decodePaging(&d, ks)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return ks, nil
}

// fingerprint identifies the parts of the configuration that the stored
// state depends on: the input schema, the event-time, sequence, key,
// argument and probe columns, the frames and the aggregates (names,
// result types and result column names). Lateness, retention, tiling and
// output order may change across a restore.
func (o *Operator) fingerprint() [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "volga-window-v1|")
	for _, f := range o.in.Fields() {
		fmt.Fprintf(h, "%q:%s,", f.Name, f.Type)
	}
	c := &o.cfg
	fmt.Fprintf(h, "|ts=%d|seq=%d|keys=%v|args=%v|probe=%d,%v|", c.TsCol, c.SeqCol, c.KeyCols, c.ArgCols, c.ProbeCol, c.StrictProbes)
	for _, w := range c.Windows {
		fmt.Fprintf(h, "frame=%+v[", w.Frame)
		for _, f := range w.Aggs {
			fmt.Fprintf(h, "%s:%s,", f.Name(), f.ResultType())
		}
		fmt.Fprintf(h, "]")
	}
	fmt.Fprintf(h, "|names=%q", c.ResultNames)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// metaMagic starts the meta of Checkpoint.
const metaMagic = "volga.window.Operator/1\n"

// Checkpoint persists the operator's state as of now: every key state
// changed since the previous checkpoint (or Restore, or its eviction) is
// written to Config.Store (a key whose state is empty again is deleted),
// and the rest — watermark, newest event time, counters, the rows still
// waiting for the watermark (as Arrow IPC) and a fingerprint of the
// configuration — is returned as meta, for Restore. Keys already in the
// store (evicted and not changed since) are not written again, so a
// checkpoint costs what changed. It requires Config.Store.
//
// Checkpoint is BeginCheckpoint followed by WriteCheckpoint until every
// key is written, and the flush of the writes.
func (o *Operator) Checkpoint() ([]byte, error) {
	meta, err := o.BeginCheckpoint()
	if err != nil {
		return nil, err
	}
	for {
		flush, err := o.WriteCheckpoint(0)
		if err != nil {
			return nil, err
		}
		if flush != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			return meta, nil
		}
	}
}

// ckptWrite is a checkpoint begun by BeginCheckpoint whose key states are
// not all encoded yet.
//
// The states are encoded by a goroutine of the checkpoint's own (the
// encoder) while the operator goes on, and by the operator's caller: in
// WriteCheckpoint, and before a key still owed changes (copy on write).
// The encoder reads the states as they were at the barrier, so a key
// must not change in place while the encoder reads it. Each owed key has
// a claim (two bits in claims) that says who may touch its state:
//
//   - keyOwed: nobody has its state as of the barrier yet. The encoder
//     takes it by moving it to keyEncoding; the caller (WriteCheckpoint,
//     copyOnWrite) by moving it to keyDone and encoding it at once.
//   - keyEncoding: the encoder is reading it (its state at the barrier,
//     read from states before the move). A caller about to change it moves it to
//     keyDetached and changes a copy instead (detach): it never waits for
//     the encoder, which may be descheduled in the middle of a key.
//   - keyDetached: the encoder still reads the state of the barrier; the
//     operator holds a copy.
//   - keyDone: written, or not part of the checkpoint.
//
// The encoder and the caller put their records through writers of their
// own (recBuf) into one ckptWriter.
type ckptWrite struct {
	w *ckptWriter
	// ids are the keys changed before the checkpoint; next is the next
	// position in ids to take (by the encoder or WriteCheckpoint).
	ids  []int32
	next atomic.Int64
	// claims holds two bits per key id (see above); keys created after
	// the barrier are beyond it and owed nothing.
	claims []atomic.Uint64
	// states and encs are Operator.states and Operator.encs as of the
	// barrier, and fin the keys finished at the barrier (clustered input,
	// Operator.finished), read by the encoder. While a checkpoint is
	// written no key id is renumbered and encs is only appended to; the
	// state of a key owed changes in states only once the operator has
	// moved the key's claim on (to keyDetached: detach), so the encoder,
	// which reads it before it moves the claim to keyEncoding, reads the
	// state at the barrier.
	states []*keyState
	encs   []string
	fin    []uint64
	// The encoder's side: its records, its scratch, whether it must stop
	// (an abandoned checkpoint), its error, and encoded, closed once it
	// has ended and queued its records.
	encRecs recBuf
	encBuf  []byte
	stop    atomic.Bool
	err     error
	encoded chan struct{}
	// The caller's side: its records (copy on write, WriteCheckpoint).
	recs recBuf
}

// Claims of a key in a checkpoint being written (see ckptWrite).
const (
	keyDone = iota
	keyOwed
	keyEncoding
	keyDetached
)

// claim returns key id's claim.
func (c *ckptWrite) claim(id int32) uint64 {
	if int(id>>5) >= len(c.claims) {
		return keyDone
	}
	return c.claims[id>>5].Load() >> (uint(id&31) * 2) & 3
}

// move sets key id's claim from from to to, if it is from.
func (c *ckptWrite) move(id int32, from, to uint64) bool {
	w, sh := &c.claims[id>>5], uint(id&31)*2
	for {
		old := w.Load()
		if old>>sh&3 != from {
			return false
		}
		if w.CompareAndSwap(old, old&^(3<<sh)|to<<sh) {
			return true
		}
	}
}

// owe sets key id's claim to keyOwed, before the encoder starts.
func (c *ckptWrite) owe(id int32) {
	w := &c.claims[id>>5]
	w.Store(w.Load() | keyOwed<<(uint(id&31)*2))
}

// finished reports whether key id was finished at the barrier.
func (c *ckptWrite) finished(id int32) bool {
	w := int(id >> 6)
	return w < len(c.fin) && c.fin[w]&(1<<(id&63)) != 0
}

// ckptArrays are the arrays of the last checkpoint written, kept for the
// next one (a periodic checkpoint of 50-100 MB allocated as much again in
// chunks).
type ckptArrays struct {
	ids    []int32
	claims []atomic.Uint64
	encBuf []byte
	fin    []uint64
	chunks *chunkPool
}

// BeginCheckpoint starts a checkpoint without writing key states: it
// returns the operator's meta as of now (what Checkpoint returns) and
// records which keys changed since the previous checkpoint. Their states
// as of now are then encoded and written to Config.Store while Push and
// Advance go on, by a goroutine of the checkpoint's own and by
// WriteCheckpoint: before a key still to write changes, its state as of
// the checkpoint is encoded first, or, when that goroutine is encoding it
// at that moment, the operator changes a copy (copy on write), so the
// writes are exactly the state at BeginCheckpoint and the operator never
// waits for that goroutine. While the operator works (Push, Advance) and
// goroutines wait for a CPU, that goroutine encodes a quarter of the time
// at most (2 ms, then a rest), so that it and the store's writes leave
// room for the operator; while the operator is idle, or CPUs are to
// spare, it does not rest. CheckpointEncoded tells when every state is
// encoded. Until the checkpoint is written, the operator makes no other
// writes to the store (evictions and row pages wait, as when
// Config.MayWrite says no); the store holds the checkpoint's state once
// the flush WriteCheckpoint returns has succeeded. Only one checkpoint
// may be in progress. It requires Config.Store.
func (o *Operator) BeginCheckpoint() ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cfg.Store == nil {
		return nil, errors.New("window: Checkpoint needs Config.Store")
	}
	if o.ckpt != nil {
		return nil, errors.New("window: checkpoint: the previous checkpoint is not written yet")
	}
	pend, err := o.pendingIPC()
	if err != nil {
		return nil, fmt.Errorf("window: checkpoint: pending rows: %w", err)
	}
	wb, err := statestore.NewWriteBatch(o.cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("window: checkpoint: %w", err)
	}
	a := o.ckptSpare
	o.ckptSpare = ckptArrays{}
	if a.chunks == nil {
		a.chunks = &chunkPool{}
	}
	nw := (len(o.states) + 31) / 32
	claims := a.claims
	if cap(claims) < nw {
		claims = make([]atomic.Uint64, nw, nw+nw/4)
	}
	claims = claims[:nw]
	clear(claims)
	c := &ckptWrite{
		w: newCkptWriter(wb, a.chunks), claims: claims, ids: a.ids[:0],
		states: o.states, encs: o.encs, fin: append(a.fin[:0], o.finished...), encBuf: a.encBuf,
		encoded: make(chan struct{}),
	}
	// dirtyIDs lists every dirty key (and keys cleaned since, by
	// eviction, which are skipped); a dirty key not resident stays listed.
	// When many keys changed, a walk of every key in order reads their
	// flags sequentially, faster than visiting the listed ones at random.
	take := func(id int32) {
		o.kmeta[id].dirty = false
		c.ids = append(c.ids, id)
		c.owe(id)
	}
	kept := o.dirtyIDs[:0]
	if len(o.dirtyIDs) > len(o.states)/8 {
		for id, ks := range o.states {
			switch {
			case !o.kmeta[id].dirty:
			case ks == nil:
				kept = append(kept, int32(id))
			default:
				take(int32(id))
			}
		}
	} else {
		for _, id := range o.dirtyIDs {
			switch {
			case !o.kmeta[id].dirty:
			case o.states[id] == nil:
				kept = append(kept, id)
			default:
				take(id)
			}
		}
	}
	o.dirtyIDs = kept
	o.ckpt = c
	o.stats.CheckpointKeys = int64(len(c.ids))
	go o.encodeCheckpoint(c)
	fp := o.fingerprint()
	out := append([]byte(metaMagic), fp[:]...)
	for _, v := range []int64{o.wm, o.maxTs, o.stats.RowsIn, o.stats.RowsOut, o.stats.LateDropped, o.stats.LateApplied} {
		out = binary.AppendVarint(out, v)
	}
	out = append(binary.AppendUvarint(out, uint64(len(pend))), pend...)
	if o.finished != nil {
		// Input clustered by key: where the finished rows end (the keys
		// finished are flagged in their states).
		out = append(out, metaFinished)
		out = binary.AppendVarint(out, o.finBelow)
		out = binary.AppendVarint(out, o.finDone)
	}
	if o.forgotDropped != None {
		// Keys were forgotten: lookups of keys not held reaching their
		// rows are refused after a restore too.
		out = append(out, metaForgotten)
		out = binary.AppendVarint(out, o.forgotDropped)
	}
	return out, nil
}

// metaFinished and metaForgotten tag the optional last sections of the
// meta, in this order: finBelow and finDone, present once FinishBefore
// was called; forgotDropped, present once quiet keys were forgotten.
const (
	metaFinished  = 'f'
	metaForgotten = 'g'
)

// encodeCheckpoint is the encoder of checkpoint c: it takes the keys
// still owed, in order, and encodes their states as of the barrier. It
// touches no operator state but the key states it takes, which nothing
// changes meanwhile (see ckptWrite), and what never changes after New.
func (o *Operator) encodeCheckpoint(c *ckptWrite) {
	defer close(c.encoded)
	defer trace.StartRegion(context.Background(), "volga.checkpoint.encode").End()
	pacer := newCkptPacer(&o.working)
	for n := 1; !c.stop.Load(); n++ {
		i := int(c.next.Add(1) - 1)
		if i >= len(c.ids) {
			break
		}
		if n%ckptPaceKeys == 0 {
			pacer.pace()
		}
		id := c.ids[i]
		ks := c.states[id] // before the claim moves: see ckptWrite.states
		if !c.move(id, keyOwed, keyEncoding) {
			continue // written before it changed
		}
		testhook.CheckpointEncode(id)
		var err error
		c.encBuf, err = o.putCkpt(c, &c.encRecs, c.encBuf, id, ks, c.finished(id))
		// keyEncoding or keyDetached: the state read is no longer needed.
		if !c.move(id, keyEncoding, keyDone) {
			c.move(id, keyDetached, keyDone)
		}
		if err != nil {
			c.err = err
			return
		}
	}
	c.w.send(&c.encRecs, false)
}

// CheckpointEncoded returns a channel closed once the goroutine encoding
// the key states of the checkpoint in progress is done, when
// WriteCheckpoint ends it without encoding more (nil when no checkpoint
// is in progress).
func (o *Operator) CheckpointEncoded() <-chan struct{} {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.ckpt == nil {
		return nil
	}
	return o.ckpt.encoded
}

// ckptLockKeys is how many key states WriteCheckpoint writes under the
// write lock before it lets waiting lookups in.
const ckptLockKeys = 16

// WriteCheckpoint encodes key states of the checkpoint begun by
// BeginCheckpoint for about d, beside the checkpoint's own goroutine (all
// of them, and waits for that goroutine, when d <= 0). The encoded
// states go to the store's write batch on another goroutine of the
// checkpoint's own, which touches no operator state, so the store's
// commits never hold the operator up. Once every state is encoded
// WriteCheckpoint ends the checkpoint on the operator's side and returns
// flush, which the caller must call (it may do so on another goroutine):
// it waits until every state is written and the batch flushed, so that
// the store holds the checkpoint's state once it has returned nil. Until
// then WriteCheckpoint returns a nil flush. Without a checkpoint in
// progress it returns a flush that does nothing. On an error the
// checkpoint is abandoned: its keys count as changed again.
func (o *Operator) WriteCheckpoint(d time.Duration) (flush func() error, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.ckpt
	if c == nil {
		return func() error { return nil }, nil
	}
	var start time.Time
	if d > 0 {
		start = time.Now()
	}
	for n := 0; ; n++ {
		i := int(c.next.Add(1) - 1)
		if i >= len(c.ids) {
			break
		}
		id := c.ids[i]
		if c.move(id, keyOwed, keyDone) {
			if err := o.putOwn(c, id); err != nil {
				o.abandonCheckpoint()
				return nil, err
			}
		}
		if n%ckptLockKeys == ckptLockKeys-1 {
			if d > 0 && time.Since(start) >= d {
				break
			}
			o.mu.Unlock()
			o.mu.Lock()
		}
	}
	if d > 0 {
		select {
		case <-c.encoded:
		default:
			return nil, nil
		}
	} else {
		// Nothing else changes the operator meanwhile (only the caller
		// does): lookups may come in.
		o.mu.Unlock()
		<-c.encoded
		o.mu.Lock()
	}
	if c.err != nil {
		err := c.err
		o.abandonCheckpoint()
		return nil, fmt.Errorf("window: writing key state: %w", err)
	}
	o.ckpt = nil
	c.w.send(&c.recs, true)
	o.ckptSpare = ckptArrays{ids: c.ids[:0], claims: c.claims, encBuf: c.encBuf, fin: c.fin[:0], chunks: c.w.pool}
	w := c.w
	return func() error {
		err := <-w.done
		o.snapStale.Store(true)
		if err != nil {
			return fmt.Errorf("window: checkpoint: %w", err)
		}
		return nil
	}, nil
}

// putOwn encodes the state of key id, which the caller has just moved
// from keyOwed to keyDone, into the caller's records of checkpoint c.
func (o *Operator) putOwn(c *ckptWrite, id int32) error {
	var err error
	o.encBuf, err = o.putCkpt(c, &c.recs, o.encBuf, id, o.states[id], c.finished(id))
	if err != nil {
		return fmt.Errorf("window: writing key state: %w", err)
	}
	return nil
}

// putCkpt encodes ks, the state of key id (its deletion when it is
// empty), with buf as scratch and puts it into r, records of checkpoint
// c. It returns buf.
func (o *Operator) putCkpt(c *ckptWrite, r *recBuf, buf []byte, id int32, ks *keyState, fin bool) ([]byte, error) {
	del := emptyState(ks)
	if !del {
		var err error
		if buf, err = o.appendKeyState(buf[:0], ks, fin); err != nil {
			return buf, err
		}
	}
	c.w.put(r, c.encs[id], buf, del)
	return buf, nil
}

// ckptWriter hands the encoded key states of a checkpoint to the store's
// write batch on a goroutine of its own, so that the batch's commits
// (which may wait for the store: a Badger batch blocks while its memtable
// is flushed) never hold the operator up. It touches no operator state:
// each side writing records (the checkpoint's encoder, the operator's
// caller) appends them to a recBuf of its own and queues it every
// ckptChunk bytes; the goroutine writes the queued records in order and,
// once closed, flushes the batch and reports on done.
type ckptWriter struct {
	wb   statestore.WriteBatch
	pool *chunkPool

	mu        sync.Mutex
	queue     [][]byte
	closed    bool
	cancelled bool
	wake      chan struct{}
	done      chan error
}

// ckptChunk is the size of the record chunks a ckptWriter queues.
const ckptChunk = 256 << 10

// errCheckpointAbandoned is the result of a checkpoint write abandoned
// before its flush.
var errCheckpointAbandoned = errors.New("window: checkpoint abandoned")

func newCkptWriter(wb statestore.WriteBatch, pool *chunkPool) *ckptWriter {
	w := &ckptWriter{wb: wb, pool: pool, wake: make(chan struct{}, 1), done: make(chan error, 1)}
	go w.run()
	return w
}

// recBuf holds the records of one writing side not queued yet.
type recBuf struct{ cur []byte }

// chunkPool holds record chunks a ckptWriter has written (the store's
// batch copies what it is given), for the operator side to fill again.
type chunkPool struct {
	mu   sync.Mutex
	free [][]byte
}

// chunkPoolMax is the most chunks a chunkPool keeps.
const chunkPoolMax = 16

func (p *chunkPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c[:0]
	}
	return make([]byte, 0, ckptChunk+ckptChunk/4)
}

func (p *chunkPool) put(c []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < chunkPoolMax && cap(c) >= ckptChunk && cap(c) <= 2*ckptChunk {
		p.free = append(p.free, c)
	}
}

// put adds the write of value (the deletion, with del) under the key
// state key of enc to r. A record is a uvarint key length, the key, and
// a uvarint 0 for a deletion or the value's length + 1 and the value.
func (w *ckptWriter) put(r *recBuf, enc string, value []byte, del bool) {
	if r.cur == nil {
		r.cur = w.pool.get()
	}
	r.cur = binary.AppendUvarint(r.cur, uint64(len(keyPrefix)+len(enc)))
	r.cur = append(append(r.cur, keyPrefix...), enc...)
	if del {
		r.cur = binary.AppendUvarint(r.cur, 0)
	} else {
		r.cur = binary.AppendUvarint(r.cur, uint64(len(value))+1)
		r.cur = append(r.cur, value...)
	}
	if len(r.cur) >= ckptChunk {
		w.send(r, false)
	}
}

// send queues r's records; with last, they are the checkpoint's last (the
// other writer's are queued).
func (w *ckptWriter) send(r *recBuf, last bool) {
	w.mu.Lock()
	if len(r.cur) > 0 {
		w.queue = append(w.queue, r.cur)
		r.cur = nil
	}
	w.closed = w.closed || last
	w.mu.Unlock()
	w.signal()
}

func (w *ckptWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// cancel drops the records not written yet and the batch.
func (w *ckptWriter) cancel() {
	w.mu.Lock()
	w.cancelled = true
	w.mu.Unlock()
	w.signal()
}

func (w *ckptWriter) run() {
	var err error
	for {
		w.mu.Lock()
		q, closed, cancelled := w.queue, w.closed, w.cancelled
		w.queue = nil
		w.mu.Unlock()
		if cancelled {
			w.wb.Cancel()
			w.done <- errCheckpointAbandoned
			return
		}
		for _, c := range q {
			if err == nil {
				err = w.apply(c)
			}
			w.pool.put(c)
		}
		if len(q) > 0 {
			continue
		}
		if closed {
			if err == nil {
				err = w.wb.Flush()
			}
			w.wb.Cancel()
			w.done <- err
			return
		}
		<-w.wake
	}
}

// apply writes the records of one chunk to the batch.
func (w *ckptWriter) apply(c []byte) error {
	for len(c) > 0 {
		kl, n := binary.Uvarint(c)
		key := c[n : n+int(kl)]
		c = c[n+int(kl):]
		vl, n := binary.Uvarint(c)
		c = c[n:]
		var err error
		if vl == 0 {
			err = w.wb.Delete(key)
		} else {
			err = w.wb.Set(key, c[:vl-1])
			c = c[vl-1:]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyOnWrite secures the state of key id as of the checkpoint in
// progress, if it is still owed, before the key changes: it encodes it,
// or, when the checkpoint's encoder is reading it, gives the key a copy
// to change (detach). Callers read o.states[id] again afterwards.
func (o *Operator) copyOnWrite(id int32) error {
	c := o.ckpt
	if c == nil {
		return nil
	}
	for {
		switch c.claim(id) {
		case keyOwed:
			if c.move(id, keyOwed, keyDone) {
				if err := o.putOwn(c, id); err != nil {
					o.abandonCheckpoint()
					return err
				}
				return nil
			}
		case keyEncoding:
			if c.move(id, keyEncoding, keyDetached) {
				if err := o.detach(id); err != nil {
					o.abandonCheckpoint()
					return err
				}
				return nil
			}
		default:
			return nil
		}
	}
}

// detach replaces the state of key id, which the checkpoint's encoder is
// reading, by a copy made through its encoding (what a restore would
// read; the lookup tiles are rebuilt when next needed), so that the key
// can change while the encoder reads the original.
func (o *Operator) detach(id int32) error {
	ks := o.states[id]
	var err error
	if o.encBuf, err = o.appendKeyStateData(o.encBuf[:0], ks); err != nil {
		return fmt.Errorf("window: copying key state: %w", err)
	}
	cp, err := o.decodeKeyState(o.encBuf)
	if err != nil {
		return fmt.Errorf("window: copying key state: %w", err)
	}
	cp.probed = ks.probed
	o.states[id] = cp
	o.stats.CheckpointCopies++
	return nil
}

// abandonCheckpoint drops the checkpoint in progress (after an error, or
// on Close): its encoder is stopped, and its keys count as changed again,
// as the writes already made may not all have reached the store.
func (o *Operator) abandonCheckpoint() {
	c := o.ckpt
	if c == nil {
		return
	}
	c.stop.Store(true)
	<-c.encoded
	for _, id := range c.ids {
		o.markDirty(id)
	}
	c.w.cancel()
	o.ckpt = nil
}

// mayWrite reports whether the operator may write to the store other
// than for a checkpoint: not while a checkpoint is being written, nor
// while Config.MayWrite says no.
func (o *Operator) mayWrite() bool {
	return o.ckpt == nil && (o.cfg.MayWrite == nil || o.cfg.MayWrite())
}

// pendingIPC returns the rows waiting for the watermark, in arrival
// order (batch, then row), as an Arrow IPC stream of the input schema;
// nil when there are none.
func (o *Operator) pendingIPC() ([]byte, error) {
	if o.pend.n == 0 {
		return nil, nil
	}
	all := make([]pendRow, 0, o.pend.n)
	for _, ch := range o.pend.chunks {
		all = append(all, ch...)
	}
	slices.SortFunc(all, func(a, b pendRow) int {
		if a.batch != b.batch {
			return int(a.batch) - int(b.batch)
		}
		return int(a.row) - int(b.row)
	})
	off := map[int32]int32{}
	var recs []arrow.RecordBatch
	var total int32
	rows := make([]int32, len(all))
	for i, p := range all {
		hb := o.held.get(p.batch)
		base, ok := off[p.batch]
		if !ok {
			base = total
			off[p.batch] = base
			recs = append(recs, hb.rec)
			total += int32(hb.rec.NumRows())
		}
		rows[i] = base + hb.recRow(p.row)
	}
	rec, err := arrowutil.TakeConcat(o.mem, o.in, recs, rows)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(o.in), ipc.WithAllocator(o.mem))
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Restore loads the state written by Checkpoint — meta, and the key
// states in Config.Store — into a fresh Operator, before its first Push.
// Without a memory budget every key is read at once; with one, keys stay
// in the store until a row or a lookup needs them. Meta from an operator
// of another configuration is refused (ErrIncompatibleCheckpoint).
func (o *Operator) Restore(meta []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cfg.Store == nil {
		return errors.New("window: Restore needs Config.Store")
	}
	if o.stats.RowsIn != 0 || len(o.states) != 0 || o.wm != None || o.restored {
		return errors.New("window: Restore needs a fresh Operator")
	}
	o.restored = true
	if !bytes.HasPrefix(meta, []byte(metaMagic)) {
		return fmt.Errorf("%w: not the meta of a sliding-window operator", ErrIncompatibleCheckpoint)
	}
	d := reader{b: meta[len(metaMagic):]}
	fp := d.take(32)
	if want := o.fingerprint(); d.err == nil && !bytes.Equal(fp, want[:]) {
		return fmt.Errorf("%w: its schema, keys, frames or aggregates differ from this operator's", ErrIncompatibleCheckpoint)
	}
	var v [6]int64
	for i := range v {
		v[i] = d.varint()
	}
	pend := d.bytes()
	finished := d.err == nil && len(d.b) > 0 && d.b[0] == metaFinished
	var finBelow, finDone int64
	if finished {
		d.byte()
		finBelow, finDone = d.varint(), d.varint()
		if d.err == nil && (finDone < 0 || finDone > finBelow) {
			d.fail()
		}
	}
	forgotDropped := None
	if d.err == nil && len(d.b) > 0 {
		if d.byte() != metaForgotten {
			d.fail()
		}
		forgotDropped = d.varint()
		if d.err == nil && forgotDropped == None {
			d.fail()
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return fmt.Errorf("window: restore: %w", d.err)
	}
	o.keys.restoring(o.in)
	err := o.cfg.Store.Scan([]byte(keyPrefix), func(key, value []byte) error {
		enc := key[len(keyPrefix):]
		id, err := o.keys.insert(enc)
		if err != nil {
			return err
		}
		o.encs = append(o.encs, string(enc))
		o.kmeta = append(o.kmeta, keyMeta{newest: None})
		o.states = append(o.states, nil)
		if len(value) > 0 && value[0]&keyStateFinished != 0 {
			o.markFinished(id)
		}
		// The event times are read for keys left in the store only (the
		// others are decoded whole).
		base, dropped, rows, newest, end, ok := storedHeader(value, o.cfg.MemoryBudget > 0)
		switch {
		case ok && rows == 0 && base > 0:
			// A quiet key's small state: left in the store, as when it
			// was dropped from memory (see dropResident).
			o.kmeta[id].quiet = true
			o.quietDrops++
			o.quietDropped = max(o.quietDropped, dropped)
		case o.cfg.MemoryBudget == 0:
			ks, err := o.decodeKeyState(value)
			if err != nil {
				return fmt.Errorf("window: key state %q: %w", enc, err)
			}
			o.states[id] = ks
		case ok && rows > 0:
			// Left in the store, as if evicted: the sweep of quiet keys
			// replaces it by its small state once it is quiet
			// (replaceEvicted).
			o.kmeta[id].newest, o.kmeta[id].end = newest, end
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("window: restore: %w", err)
	}
	o.wm, o.maxTs = v[0], v[1]
	o.forgotDropped = forgotDropped
	if finished {
		o.finBelow, o.finDone = finBelow, finDone
		if o.finished == nil {
			o.finished = make([]uint64, 0, 64)
		}
	}
	if len(pend) > 0 {
		rd, err := ipc.NewReader(bytes.NewReader(pend), ipc.WithSchema(o.in), ipc.WithAllocator(o.mem))
		if err != nil {
			return fmt.Errorf("window: restore: pending rows: %w", err)
		}
		defer rd.Release()
		for rd.Next() {
			if _, _, err := o.push(rd.RecordBatch(), nil, nil); err != nil {
				return fmt.Errorf("window: restore: pending rows: %w", err)
			}
		}
		if err := rd.Err(); err != nil {
			return fmt.Errorf("window: restore: pending rows: %w", err)
		}
	}
	o.stats.RowsIn, o.stats.RowsOut, o.stats.LateDropped, o.stats.LateApplied = v[2], v[3], v[4], v[5]
	return nil
}

// storedHeader reads the start of a stored key state (see
// encodeKeyState): the number of its first row, its newest dropped row,
// its rows and, when walk is set, the newest of them (None without rows
// or without walk: the event times are read only then), and the number
// its next row would get. ok is false for a state it cannot read that way
// (paged, damaged: decodeKeyState says which).
func storedHeader(value []byte, walk bool) (base, dropped int64, rows int, newest, end int64, ok bool) {
	if len(value) == 0 || value[0]&^keyStateFinished != keyStateVersion {
		return 0, 0, 0, 0, 0, false
	}
	b := value[1:]
	base, n := binary.Varint(b)
	if n <= 0 || base < 0 {
		return 0, 0, 0, 0, 0, false
	}
	b = b[n:]
	if dropped, n = binary.Varint(b); n <= 0 {
		return 0, 0, 0, 0, 0, false
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return 0, 0, 0, 0, 0, false
	}
	b = b[n:]
	newest = None
	for i := uint64(0); walk && i < count; i++ {
		d, n := binary.Varint(b)
		if n <= 0 {
			return 0, 0, 0, 0, 0, false
		}
		b = b[n:]
		if i == 0 {
			newest = d
		} else {
			newest += d
		}
	}
	return base, dropped, int(count), newest, base + int64(count), true
}

// restoring prepares an empty index for insert: the fast path a single key
// column takes follows from its type.
func (k *keyIndex) restoring(in *arrow.Schema) {
	if len(k.cols) != 1 {
		return
	}
	switch in.Field(k.cols[0]).Type.ID() {
	case arrow.INT64:
		k.fastInt = true
	case arrow.STRING:
		k.fastStr = true
	}
}

// insert gives the encoded key enc (as AppendKey makes it) the next id.
func (k *keyIndex) insert(enc []byte) (int32, error) {
	id := k.n
	dup := false
	switch {
	case len(k.cols) == 1 && (k.fastInt || k.fastStr) && len(enc) == 1 && enc[0] == 0:
		dup = k.nullK >= 0
		k.nullK = id
	case k.fastInt:
		if len(enc) < 2 || enc[0] != 1 {
			return 0, fmt.Errorf("%w: key %q", errCorruptState, enc)
		}
		v, n := binary.Varint(enc[1:])
		if n <= 0 || 1+n != len(enc) {
			return 0, fmt.Errorf("%w: key %q", errCorruptState, enc)
		}
		_, dup = k.ints.Get(v)
		k.ints.Put(v, id)
	case k.fastStr:
		if len(enc) < 2 || enc[0] != 6 {
			return 0, fmt.Errorf("%w: key %q", errCorruptState, enc)
		}
		l, n := binary.Uvarint(enc[1:])
		if n <= 0 || uint64(len(enc)-1-n) != l {
			return 0, fmt.Errorf("%w: key %q", errCorruptState, enc)
		}
		s := string(enc[1+n:])
		_, dup = k.strs[s]
		k.strs[s] = id
	default:
		_, dup = k.strs[string(enc)]
		k.strs[string(enc)] = id
	}
	if dup {
		return 0, fmt.Errorf("%w: key %q stored twice", errCorruptState, enc)
	}
	k.n++
	return id, nil
}
