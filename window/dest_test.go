package window_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/internal/arrowutil"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// numericAggs returns the aggregates of aggs whose results can be written
// in place (window.Scatterable).
func numericAggs(t *testing.T, keys []string, aggs []testutil.Agg) []testutil.Agg {
	t.Helper()
	var out []testutil.Agg
	for _, a := range aggs {
		op, err := window.New(ckptConfig(t, keys, testutil.Frames[:1], []testutil.Agg{a}, 0, false), mlSchema)
		if err != nil {
			t.Fatal(err)
		}
		if window.Scatterable(op.ResultTypes()[0]) {
			out = append(out, a)
		}
		op.Close()
	}
	return out
}

// TestPushRowsToSameAsAdvance: two operators sharing batches, each given
// its own keys' rows, write the results of most batches into the batches'
// Dests (PushRowsTo) and report the rows done, and the others' in their
// result arrays (PushRows); put together by sequence number, they are the
// results one operator given every row emits, NULLs included, whether a
// release's results are built in one chunk or several.
func TestPushRowsToSameAsAdvance(t *testing.T) {
	t.Parallel()
	keys := []string{"user_id"}
	aggs := numericAggs(t, keys, ckptAggs)
	if len(aggs) < 8 {
		t.Fatalf("only %d numeric aggregates", len(aggs))
	}
	for _, batchOrder := range []bool{false, true} {
		for _, seed := range testutil.Seeds(3) {
			t.Run(fmt.Sprintf("batch=%v/seed=%d", batchOrder, seed), func(t *testing.T) {
				rng := testutil.Rand(seed)
				frames, tab := ckptInput(rng, keys, 0, 1000)
				cfg := ckptConfig(t, keys, frames, aggs, 0, batchOrder)
				steps := ckptSteps(rng, tab, 1000, 0)
				ref, err := window.New(cfg, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Close()
				var ops [2]*window.Operator
				for i := range ops {
					if ops[i], err = window.New(cfg, mlSchema); err != nil {
						t.Fatal(err)
					}
					defer ops[i].Close()
				}
				// Releases of several result chunks, each written
				// into the Dests as it is finished.
				window.SetChunkRows(ops[0], 3)
				types := ref.ResultTypes()
				nIn := mlSchema.NumFields()
				userCol := mlSchema.FieldIndices("user_id")[0]
				type pending struct {
					rec   arrow.RecordBatch
					dst   *window.Dest
					rows  int
					nulls [][]int32
				}
				var dests []*pending
				byDest := map[*window.Dest]*pending{}
				inPlace, nulls, batches := 0, 0, 0
				// want: the reference's rows; got: sequence number, then
				// results.
				var want, got [][]any
				for _, s := range steps {
					if s.hi > s.lo {
						var vals [][]any
						for i := s.lo; i < s.hi; i++ {
							vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(2*i)))
						}
						rec := testutil.BuildRecord(nil, mlSchema, vals)
						outs, late, err := ref.Push(rec)
						if err != nil || len(outs) > 0 || late != nil {
							t.Fatalf("push: %d batches, late %v, err %v; want none", len(outs), late != nil, err)
						}
						var dst *window.Dest
						if batches++; batches%4 != 0 {
							if dst, err = window.NewDest(types, int(rec.NumRows())); err != nil {
								t.Fatal(err)
							}
							rec.Retain()
							p := &pending{rec: rec, dst: dst}
							dests = append(dests, p)
							byDest[dst] = p
						}
						users := rec.Column(userCol).(*array.Int64)
						for i, op := range ops {
							var sel []int32
							for r := range int(rec.NumRows()) {
								if mine := users.IsNull(r) || users.Value(r)%2 == 0; mine == (i == 0) {
									sel = append(sel, int32(r))
								}
							}
							if dst != nil {
								outs, late, err = op.PushRowsTo(rec, sel, dst)
							} else {
								outs, late, err = op.PushRows(rec, sel)
							}
							if err != nil || len(outs) > 0 || late != nil {
								t.Fatalf("push: %d batches, late %v, err %v; want none", len(outs), late != nil, err)
							}
						}
						rec.Release()
					}
					if s.wm == watermark.None {
						continue
					}
					outs, err := ref.Advance(context.Background(), s.wm)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, testutil.Rows(outs...)...)
					arrowutil.ReleaseAll(outs)
					for _, op := range ops {
						err = op.AdvanceResults(context.Background(), s.wm, func(r *window.Results) error {
							defer r.Release()
							for k, res := range resultRows(t, r) {
								got = append(got, append([]any{r.Seq[k]}, res...))
							}
							for _, d := range r.Done {
								p := byDest[d.Dest]
								if p == nil {
									t.Fatal("Done of an unknown Dest")
								}
								p.rows += d.Rows
								if d.Nulls != nil {
									if p.nulls == nil {
										p.nulls = make([][]int32, len(types))
									}
									for a, n := range d.Nulls {
										p.nulls[a] = append(p.nulls[a], n...)
									}
								}
							}
							return nil
						})
						if err != nil {
							t.Fatal(err)
						}
					}
					// Batches whose every row is done give their results.
					for len(dests) > 0 && dests[0].rows == dests[0].dst.Rows() {
						p := dests[0]
						dests = dests[1:]
						cols := append([]arrow.Array{p.rec.Column(mlSeqCol)}, p.dst.Arrays(p.nulls)...)
						fields := make([]arrow.Field, len(cols))
						for c, col := range cols {
							fields[c] = arrow.Field{Name: fmt.Sprint(c), Type: col.DataType(), Nullable: true}
							if c > 0 {
								nulls += col.NullN()
							}
						}
						res := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, p.rec.NumRows())
						got = append(got, testutil.Rows(res)...)
						res.Release()
						inPlace += int(p.rec.NumRows())
						arrowutil.ReleaseAll(cols[1:])
						p.rec.Release()
					}
				}
				// The rows of a batch may be released at several
				// watermarks: the batch is done at the last.
				slices.SortFunc(want, func(a, b []any) int { return int(a[mlSeqCol].(int64) - b[mlSeqCol].(int64)) })
				slices.SortFunc(got, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
				if len(got) != len(tab.Rows) || len(want) != len(tab.Rows) || len(dests) > 0 {
					t.Fatalf("%d rows out, reference %d, want %d; %d batches not done", len(got), len(want), len(tab.Rows), len(dests))
				}
				for k := range want {
					if got[k][0] != want[k][mlSeqCol] {
						t.Fatalf("row %d has sequence %d, want %d", k, got[k][0], want[k][mlSeqCol])
					}
					if g, w := fmt.Sprint(got[k][1:]), fmt.Sprint(want[k][nIn:]); g != w {
						t.Fatalf("row %d (seq %d): results\n got %s\nwant %s", k, got[k][0], g, w)
					}
				}
				rows := len(got)
				if inPlace == 0 || inPlace == rows || nulls == 0 {
					t.Fatalf("%d of %d rows written in place, %d NULLs: want some of each", inPlace, rows, nulls)
				}
			})
		}
	}
}

// TestDestErrors: a Dest that does not fit the batch or the operator is
// refused, and so are result types that cannot be written in place.
func TestDestErrors(t *testing.T) {
	keys := []string{"user_id"}
	op, err := window.New(ckptConfig(t, keys, testutil.Frames[:1], numericAggs(t, keys, ckptAggs)[:3], 0, false), mlSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	types := op.ResultTypes()
	rec := testutil.BuildRecord(nil, mlSchema, nil)
	defer rec.Release()
	for name, tc := range map[string]struct {
		types []arrow.DataType
		rows  int
		want  string
	}{
		"rows":  {types, 5, "a Dest of 5 rows for a batch of 0"},
		"count": {types[:2], 0, "a Dest of 2 results for an operator of 3"},
		"type":  {[]arrow.DataType{types[0], types[1], arrow.PrimitiveTypes.Int16}, 0, "result 2 of the Dest is int16"},
	} {
		dst, err := window.NewDest(tc.types, tc.rows)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := op.PushRowsTo(rec, nil, dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one with %q", name, err, tc.want)
		}
	}
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean, arrow.ListOf(arrow.PrimitiveTypes.Int64)} {
		if window.Scatterable(dt) {
			t.Errorf("Scatterable(%s) = true", dt)
		}
		if _, err := window.NewDest([]arrow.DataType{dt}, 3); err == nil || !strings.Contains(err.Error(), "cannot be written in place") {
			t.Errorf("NewDest(%s): err = %v", dt, err)
		}
	}
}
