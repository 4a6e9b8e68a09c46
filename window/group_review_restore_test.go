package window

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

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
