package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// TestPushRowsSameAsPush: an operator given its rows of a shared batch
// with PushRows (the batch also holding rows of other keys, which it must
// ignore) emits exactly what an operator pushed a copy of those rows
// emits: in arrival and in event-time order, with late rows dropped and
// applied, and across checkpoints (the pending rows it saves are its own).
func TestPushRowsSameAsPush(t *testing.T) {
	t.Parallel()
	keys := []string{"user_id"}
	for _, lateness := range []int64{0, 2500} {
		for _, batchOrder := range []bool{false, true} {
			if lateness > 0 && batchOrder {
				continue // batch order has no late rows
			}
			for _, seed := range testutil.Seeds(3) {
				t.Run(fmt.Sprintf("lateness=%d/batch=%v/seed=%d", lateness, batchOrder, seed), func(t *testing.T) {
					rng := testutil.Rand(seed)
					frames, tab := ckptInput(rng, keys, lateness, 1000)
					cfg := ckptConfig(t, keys, frames, ckptAggs, lateness, batchOrder)
					steps := ckptSteps(rng, tab, 1000, 0.2)
					want := pushRowsRun(t, cfg, tab, steps, nil, false)
					got := pushRowsRun(t, cfg, tab, steps, rng, true)
					if len(want) == 0 {
						t.Fatal("the reference run emitted nothing")
					}
					diffOutputs(t, "PushRows", got, want)
				})
			}
		}
	}
}

// pushRowsRun drives an operator through steps: with shared, each step's
// rows come in a batch interleaved with foreign rows (other rows of tab,
// which the operator is not given) through PushRows, and every checkpoint
// step round-trips the operator through Checkpoint and Restore; without,
// the rows alone go through Push. Row i has sequence 2i, foreign rows odd
// sequences, so that the batch stays in sequence order.
func pushRowsRun(t *testing.T, cfg window.Config, tab *testutil.Table, steps []step, rng *rand.Rand, shared bool) []string {
	t.Helper()
	var st statestore.Store
	newOp := func() *window.Operator {
		c := cfg
		if shared {
			st = statestore.NewMemory()
			c.Store = st
		}
		op, err := window.New(c, mlSchema)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := newOp()
	defer func() { op.Close() }()
	var out []string
	for _, s := range steps {
		if shared && s.ckpt {
			meta, err := op.Checkpoint()
			if err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
			old := st
			op.Close()
			op = newOp()
			copyStore(t, st, old)
			if err := op.Restore(meta); err != nil {
				t.Fatalf("Restore: %v", err)
			}
		}
		if s.hi > s.lo {
			var vals [][]any
			var sel []int32
			for i := s.lo; i < s.hi; i++ {
				if shared {
					sel = append(sel, int32(len(vals)))
				}
				vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(2*i)))
				if shared && rng.IntN(2) == 0 {
					// A foreign row: another row's values (its key may be
					// one of ours; it still is not ours to take).
					vals = append(vals, append(slices.Clone(tab.Rows[rng.IntN(len(tab.Rows))]), int64(2*i+1)))
				}
			}
			rec := testutil.BuildRecord(nil, mlSchema, vals)
			var outs []arrow.RecordBatch
			var late arrow.RecordBatch
			var err error
			if shared {
				outs, late, err = op.PushRows(rec, sel)
			} else {
				outs, late, err = op.Push(rec)
			}
			rec.Release()
			if err != nil {
				t.Fatalf("Push: %v", err)
			}
			out = append(out, pushOut(outs, late)...)
		}
		if s.wm != watermark.None {
			out = append(out, advanceOut(t, op, s.wm)...)
		}
	}
	return out
}

// TestAdvanceResultsSameAsAdvance: the results AdvanceResults passes (in
// sequence order, without input columns) are those of the rows Advance
// emits, row for row, for an operator fed through PushRows with rows of
// other operators in its batches; and the batches it held are let go.
func TestAdvanceResultsSameAsAdvance(t *testing.T) {
	t.Parallel()
	keys := []string{"user_id"}
	for _, batchOrder := range []bool{false, true} {
		for _, seed := range testutil.Seeds(3) {
			t.Run(fmt.Sprintf("batch=%v/seed=%d", batchOrder, seed), func(t *testing.T) {
				rng := testutil.Rand(seed)
				frames, tab := ckptInput(rng, keys, 0, 1000)
				cfg := ckptConfig(t, keys, frames, ckptAggs, 0, batchOrder)
				steps := ckptSteps(rng, tab, 1000, 0)
				ref, err := window.New(cfg, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Close()
				op, err := window.New(cfg, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer op.Close()
				nIn := mlSchema.NumFields()
				rows := 0
				for _, s := range steps {
					if s.hi > s.lo {
						var vals, own [][]any
						var sel []int32
						for i := s.lo; i < s.hi; i++ {
							row := append(slices.Clone(tab.Rows[i]), int64(2*i))
							own = append(own, row)
							sel = append(sel, int32(len(vals)))
							vals = append(vals, row)
							if rng.IntN(2) == 0 {
								vals = append(vals, append(slices.Clone(tab.Rows[rng.IntN(len(tab.Rows))]), int64(2*i+1)))
							}
						}
						if rng.IntN(4) == 0 {
							// A batch out of sequence order: results are
							// sorted rather than read by batch and row.
							slices.Reverse(vals)
							slices.Reverse(own)
							for k := range sel {
								sel[k] = int32(len(vals)) - 1 - sel[k]
							}
							slices.Reverse(sel)
						}
						for _, push := range []func() ([]arrow.RecordBatch, arrow.RecordBatch, error){
							func() ([]arrow.RecordBatch, arrow.RecordBatch, error) {
								rec := testutil.BuildRecord(nil, mlSchema, own)
								defer rec.Release()
								return ref.Push(rec)
							},
							func() ([]arrow.RecordBatch, arrow.RecordBatch, error) {
								rec := testutil.BuildRecord(nil, mlSchema, vals)
								defer rec.Release()
								return op.PushRows(rec, sel)
							},
						} {
							outs, late, err := push()
							if err != nil || len(outs) > 0 || late != nil {
								t.Fatalf("push: %d batches, late %v, err %v; want none", len(outs), late != nil, err)
							}
						}
					}
					if s.wm == watermark.None {
						continue
					}
					outs, err := ref.Advance(context.Background(), s.wm)
					if err != nil {
						t.Fatal(err)
					}
					want := testutil.Rows(outs...)
					arrowutil.ReleaseAll(outs)
					slices.SortFunc(want, func(a, b []any) int { return int(a[mlSeqCol].(int64) - b[mlSeqCol].(int64)) })
					var got [][]any
					var seqs []int64
					err = op.AdvanceResults(context.Background(), s.wm, func(r *window.Results) error {
						defer r.Release()
						seqs = append(seqs, r.Seq...)
						got = append(got, resultRows(t, r)...)
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("watermark %d: %d rows, want %d", s.wm, len(got), len(want))
					}
					for k := range want {
						if seqs[k] != want[k][mlSeqCol].(int64) {
							t.Fatalf("watermark %d: row %d has sequence %d, want %d", s.wm, k, seqs[k], want[k][mlSeqCol])
						}
						if g, w := fmt.Sprint(got[k]), fmt.Sprint(want[k][nIn:]); g != w {
							t.Fatalf("watermark %d: row %d (seq %d): results\n got %s\nwant %s", s.wm, k, seqs[k], g, w)
						}
					}
					rows += len(got)
				}
				if rows != len(tab.Rows) {
					t.Fatalf("%d rows out, want %d", rows, len(tab.Rows))
				}
				if st := op.Stats(); st.RowsOut != int64(rows) || st.Retained < 0 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

// resultRows gathers r's results into rows of values.
func resultRows(t *testing.T, r *window.Results) [][]any {
	t.Helper()
	if r.Len() == 0 {
		return nil
	}
	var segs []arrowutil.Seg
	for k := range r.Seq {
		segs = arrowutil.AppendSeg(segs, r.Chunk[k], r.Row[k])
	}
	nAgg := len(r.Cols[0])
	fields := make([]arrow.Field, nAgg)
	cols := make([]arrow.Array, nAgg)
	for a := range nAgg {
		srcs := make([]arrow.Array, len(r.Cols))
		for c := range r.Cols {
			srcs[c] = r.Cols[c][a]
		}
		col, err := arrowutil.Gather(memory.DefaultAllocator, srcs[0].DataType(), srcs, segs)
		if err != nil {
			t.Fatal(err)
		}
		defer col.Release()
		cols[a] = col
		fields[a] = arrow.Field{Name: fmt.Sprint(a), Type: col.DataType(), Nullable: true}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(r.Len()))
	defer rec.Release()
	return testutil.Rows(rec)
}
