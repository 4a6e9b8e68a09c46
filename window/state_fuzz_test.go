package window

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/statestore"
)

// fuzzOperator is an operator with every window kind (retract, stack,
// min/max deque, first/last edge, count(*), percentile skip list), fed
// some rows, and encodings of its key states.
func fuzzOperator(tb testing.TB) (*Operator, [][]byte) {
	cfg := budgetConfig(tb, true)
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	for _, name := range []string{"drawdown", "last_value", "approx_percentile", "ew_avg"} {
		args := []agg.Arg{amount}
		if name == "approx_percentile" || name == "ew_avg" {
			args = append(args, agg.Arg{IsConst: true, Const: 0.5, Col: -1, Type: arrow.PrimitiveTypes.Float64})
		}
		f, err := agg.Bind(name, args)
		if err != nil {
			tb.Fatal(err)
		}
		for w := range cfg.Windows {
			cfg.Windows[w].Aggs = append(cfg.Windows[w].Aggs, f)
		}
	}
	cfg.Store = statestore.NewMemory()
	op, err := New(cfg, tileSchema)
	if err != nil {
		tb.Fatal(err)
	}
	recs := budgetBatches(5, 6, 3, 40)
	for _, r := range recs {
		if _, _, err := op.Push(r); err != nil {
			tb.Fatal(err)
		}
		outs, err := op.Advance(context.Background(), r.Column(0).(interface{ Value(int) int64 }).Value(int(r.NumRows())-1)-3)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range outs {
			o.Release()
		}
		r.Release()
	}
	var encs [][]byte
	for _, ks := range op.states {
		b, err := op.encodeKeyState(ks)
		if err != nil {
			tb.Fatal(err)
		}
		encs = append(encs, b)
	}
	return op, encs
}

// TestKeyStateRoundTrip: decoding an encoded key state and encoding it
// again gives the same bytes.
func TestKeyStateRoundTrip(t *testing.T) {
	op, encs := fuzzOperator(t)
	defer op.Close()
	for i, b := range encs {
		ks, err := op.decodeKeyState(b)
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		again, err := op.encodeKeyState(ks)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Errorf("key %d: re-encoding differs (%d vs %d bytes)", i, len(again), len(b))
		}
		// Flagged finished, the same state with the flag in its first byte.
		fin, err := op.appendKeyState(nil, ks, true)
		if err != nil {
			t.Fatal(err)
		}
		if fin[0] != b[0]|keyStateFinished || string(fin[1:]) != string(b[1:]) {
			t.Errorf("key %d: the finished flag changed more than the version byte", i)
		}
		if ks2, err := op.decodeKeyState(fin); err != nil {
			t.Errorf("key %d: flagged state: %v", i, err)
		} else if again, _ := op.encodeKeyState(ks2); string(again) != string(b) {
			t.Errorf("key %d: flagged state decodes to another state", i)
		}
	}
}

// FuzzRestoreMetaTrailer: whatever follows the pending rows in an
// operator's meta (the FinishBefore and forgotten-keys sections, or
// garbage) gives Restore an error or a state it can checkpoint again and
// restore from with the same sections, never a panic. (The pending
// rows are Arrow IPC, left alone: arrow-go's reader trusts the sizes in a
// damaged schema and may allocate without bound.)
func FuzzRestoreMetaTrailer(f *testing.F) {
	op, _ := fuzzOperator(f)
	defer op.Close()
	op.FinishBefore(3, false) // finBelow 3, finDone 0
	meta, err := op.BeginCheckpoint()
	if err != nil {
		f.Fatal(err)
	}
	op.abandonCheckpoint()
	trailer := []byte{metaFinished, 6, 0} // zigzag varints 3 and 0
	if !bytes.HasSuffix(meta, trailer) {
		f.Fatalf("meta ends %x, want the FinishBefore section %x", meta[max(len(meta)-8, 0):], trailer)
	}
	head := meta[:len(meta)-len(trailer)]
	f.Add(trailer)
	f.Add([]byte{})
	f.Add([]byte{metaFinished, 2, 2})
	f.Add([]byte{metaFinished, 2, 4})
	f.Add([]byte{'x', 0, 0})
	f.Add([]byte{metaFinished, 6, 0, metaForgotten, 200, 1})
	f.Add([]byte{metaForgotten, 3})
	f.Add([]byte{metaForgotten, 1, metaFinished, 6, 0})
	f.Fuzz(func(t *testing.T, tail []byte) {
		cfg := op.cfg
		cfg.Store = statestore.NewMemory()
		o, err := New(cfg, op.in)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if err := o.Restore(append(slices.Clip(head), tail...)); err != nil {
			return
		}
		if o.finDone > o.finBelow {
			t.Fatalf("restored finDone %d above finBelow %d", o.finDone, o.finBelow)
		}
		again, err := o.Checkpoint()
		if err != nil {
			t.Fatalf("restored operator does not checkpoint: %v", err)
		}
		o2, err := New(cfg, op.in)
		if err != nil {
			t.Fatal(err)
		}
		defer o2.Close()
		if err := o2.Restore(again); err != nil {
			t.Fatalf("checkpoint of a restored operator does not restore: %v", err)
		}
		if o2.finBelow != o.finBelow || o2.finDone != o.finDone || o2.forgotDropped != o.forgotDropped {
			t.Fatalf("restored again (%d, %d, %d), want (%d, %d, %d)", o2.finBelow, o2.finDone, o2.forgotDropped, o.finBelow, o.finDone, o.forgotDropped)
		}
	})
}

// FuzzDecodeKeyState: corrupt key states give an error, never a panic;
// what decodes encodes again, and its header as Restore reads it
// (storedHeader) agrees with it.
func FuzzDecodeKeyState(f *testing.F) {
	op, encs := fuzzOperator(f)
	defer op.Close()
	for _, b := range encs {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{keyStateVersion})
	f.Add([]byte{9, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		base, dropped, rows, newest, end, hdr := storedHeader(data, true)
		ks, err := op.decodeKeyState(data)
		if err != nil {
			return
		}
		if _, err := op.encodeKeyState(ks); err != nil {
			t.Fatalf("decoded state does not encode: %v", err)
		}
		// The header Restore reads agrees with the state decoded.
		if data[0]&^keyStateFinished != keyStateVersion {
			return
		}
		r := &ks.rows
		want := None
		if r.Len() > 0 {
			want = r.Ts[r.Len()-1]
		}
		if !hdr || base != r.Base || dropped != ks.dropped || rows != r.Len() || newest != want || end != r.End() {
			t.Fatalf("header (%d, %d, %d, %d, %d, %v), state (%d, %d, %d, %d, %d)", base, dropped, rows, newest, end, hdr, r.Base, ks.dropped, r.Len(), want, r.End())
		}
	})
}

// FuzzGroupRestore: corrupt GroupOperator meta gives an error, never a
// panic.
func FuzzGroupRestore(f *testing.F) {
	cfg := GroupConfig{TsCol: 0, SeqCol: 1, KeyCols: []int{2, 4}, ArgCols: []int{3, 4}, SizeMs: 100, SlideMs: 50}
	for _, name := range []string{"sum", "max", "first_value"} {
		fn, err := agg.Bind(name, []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
		if err != nil {
			f.Fatal(err)
		}
		cfg.Aggs = append(cfg.Aggs, fn)
	}
	// Metas of an operator of each kind, clustered (whose meta ends with
	// the keys' first and last rows) or not.
	for _, clustered := range []bool{false, true} {
		c := cfg
		c.Clustered = clustered
		g, err := NewGroup(c, tileSchema)
		if err != nil {
			f.Fatal(err)
		}
		for _, r := range budgetBatches(6, 5, 2, 30) {
			if _, _, err := g.Push(r); err != nil {
				f.Fatal(err)
			}
			outs, _ := g.Advance(context.Background(), r.Column(0).(interface{ Value(int) int64 }).Value(int(r.NumRows())-1)-20)
			for _, o := range outs {
				o.Release()
			}
			r.Release()
			meta, err := g.Checkpoint()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(meta)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, clustered := range []bool{false, true} {
			c := cfg
			c.Clustered = clustered
			g, err := NewGroup(c, tileSchema)
			if err != nil {
				t.Fatal(err)
			}
			if g.Restore(data) != nil {
				continue
			}
			if clustered && (len(g.firstSeq) != int(g.keys.n) || len(g.lastSeq) != int(g.keys.n) || g.finDone > g.finBelow) {
				t.Fatalf("restored %d keys with %d first and %d last rows, finDone %d, finBelow %d", g.keys.n, len(g.firstSeq), len(g.lastSeq), g.finDone, g.finBelow)
			}
		}
	})
}
