package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// TestGroupReviewCorruptMetaNoPanic: a GroupOperator restored from meta
// with any one byte changed either refuses it or keeps working: Push,
// Advance to the end and Checkpoint neither panic nor hang.
func TestGroupReviewCorruptMetaNoPanic(t *testing.T) {
	cfg := GroupConfig{TsCol: 0, SeqCol: 1, KeyCols: []int{2, 4}, ArgCols: []int{3, 4}, SizeMs: 100, SlideMs: 50, AllowedLateness: 30}
	for _, name := range []string{"sum", "max", "first_value"} {
		fn, err := agg.Bind(name, []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Aggs = append(cfg.Aggs, fn)
	}
	for _, clustered := range []bool{false, true} {
		c := cfg
		c.Clustered = clustered
		batches := budgetBatches(7, 4, 3, 60)
		defer func() {
			for _, b := range batches {
				b.Release()
			}
		}()
		g, err := NewGroup(c, tileSchema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range batches[:2] {
			if _, _, err := g.Push(r); err != nil {
				t.Fatal(err)
			}
			outs, err := g.Advance(context.Background(), r.Column(0).(interface{ Value(int) int64 }).Value(int(r.NumRows())-1)-20)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				o.Release()
			}
		}
		meta, err := g.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if len(g.pend) == 0 || len(g.wins) == 0 {
			t.Fatalf("clustered %v: the meta holds %d rows waiting and %d starts; want some of each", clustered, len(g.pend), len(g.wins))
		}
		accepted := 0
		for i := len(groupMetaMagic) + 32; i < len(meta); i++ {
			for _, x := range []byte{1, 2, 0x80} {
				bad := append([]byte(nil), meta...)
				bad[i] ^= x
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("clustered %v: meta with byte %d xor %#x: panic %v\n%s", clustered, i, x, r, debug.Stack())
						}
					}()
					h, err := NewGroup(c, tileSchema)
					if err != nil {
						t.Fatal(err)
					}
					if h.Restore(bad) != nil {
						return
					}
					accepted++
					if _, late, err := h.Push(batches[2]); err == nil && late != nil {
						late.Release()
					}
					outs, _ := h.Advance(context.Background(), End)
					for _, o := range outs {
						o.Release()
					}
					if _, err := h.Checkpoint(); err != nil {
						_ = fmt.Sprint(err)
					}
				}()
			}
		}
		t.Logf("clustered %v: %d corrupt metas accepted of %d", clustered, accepted, 3*(len(meta)-len(groupMetaMagic)-32))
	}
}

// TestGroupReviewRestoreBatchNumbers: an operator restored from meta
// whose next batch number is one of a batch holding waiting rows (as
// corrupt meta may say, and as the numbers do once they wrap around
// after 2^32 batches) emits what one restored from the true meta emits:
// the next batch pushed no longer takes the held batch's place (its
// waiting rows were then read from the new batch, past its end).
func TestGroupReviewRestoreBatchNumbers(t *testing.T) {
	cfg := GroupConfig{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, SizeMs: 100, SlideMs: 100}
	for _, name := range []string{"count", "sum", "first_value"} {
		arg := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
		if name == "count" {
			arg = agg.Arg{Star: true, Col: -1}
		}
		fn, err := agg.Bind(name, []agg.Arg{arg})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Aggs = append(cfg.Aggs, fn)
	}
	batches := budgetBatches(9, 3, 2, 40)
	// A short batch after them, in time.
	b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
	last := batches[1].Column(0).(*array.Int64).Value(39)
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(last + 50 + int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(80 + i))
		b.Field(2).(*array.Int64Builder).Append(int64(i))
		b.Field(3).(*array.Float64Builder).Append(float64(1000 + i))
		b.Field(4).(*array.StringBuilder).Append("z")
	}
	batches = append(batches, b.NewRecordBatch())
	b.Release()
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	g, err := NewGroup(cfg, tileSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range batches[:2] {
		if _, _, err := g.Push(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.held) != 2 || g.nextID != 2 {
		t.Fatalf("%d batches held, next number %d; want 2 and 2", len(g.held), g.nextID)
	}
	meta, err := g.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	// The sixth number after the fingerprint is the next batch number.
	at := len(groupMetaMagic) + 32
	for range 5 {
		_, n := binary.Varint(meta[at:])
		at += n
	}
	if v, n := binary.Varint(meta[at:]); v != 2 || n != 1 {
		t.Fatalf("next batch number read as %d (%d bytes)", v, n)
	}
	// run restores meta, pushes the short batch, and returns the windows
	// as text and the rows they count.
	run := func(meta []byte) ([]string, int64) {
		h, err := NewGroup(cfg, tileSchema)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Restore(meta); err != nil {
			t.Fatal(err)
		}
		if _, late, err := h.Push(batches[2]); err != nil || late != nil {
			t.Fatalf("Push: late %v, %v", late, err)
		}
		outs, err := h.Advance(context.Background(), End)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		var total int64
		for _, o := range outs {
			for i := range int(o.NumRows()) {
				total += o.Column(4 + len(cfg.KeyCols)).(*array.Int64).Value(i) // count(*), after the keys, window_start and window_end
				var cells []string
				for _, c := range o.Columns() {
					cells = append(cells, c.ValueStr(i))
				}
				rows = append(rows, fmt.Sprint(cells))
			}
			o.Release()
		}
		return rows, total
	}
	want, total := run(meta)
	// Every row of the three batches in its one window.
	if total != 83 {
		t.Fatalf("the true meta's windows count %d rows, want 83:\n%s", total, strings.Join(want, "\n"))
	}
	for _, next := range []int64{0, 1, math.MaxInt32} {
		bad := append(binary.AppendVarint(append([]byte(nil), meta[:at]...), next), meta[at+1:]...)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("next batch number %d: panic %v", next, r)
				}
			}()
			if got, _ := run(bad); !slices.Equal(got, want) {
				t.Errorf("next batch number %d: windows\n%s\nwant\n%s", next, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}()
	}
}
