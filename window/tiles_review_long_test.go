package window_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// tileReviewAggs are aggregates of every kind lookups merge tiles for:
// retractable, merge-only, order-sensitive, ML and approximate ones (the
// approximate ones exact at the few hundred values of these frames).
var tileReviewAggs = []testutil.Agg{
	{Func: "count"}, {Func: "count", Arg: "price"}, {Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"},
	{Func: "avg", Arg: "price"}, {Func: "min", Arg: "price"}, {Func: "max", Arg: "category"},
	{Func: "var_samp", Arg: "price"}, {Func: "stddev_pop", Arg: "amount"},
	{Func: "first_value", Arg: "category"}, {Func: "last_value", Arg: "price"},
	{Func: "count_distinct", Arg: "tag"}, {Func: "top", Arg: "price", Param: int64(3)},
	{Func: "topn_frequency", Arg: "tag", Param: int64(2)}, {Func: "top1_ratio", Arg: "category"},
	{Func: "count_where", Cond: "flag"}, {Func: "sum_where", Arg: "amount", Cond: "flag"},
	{Func: "max_where", Arg: "price", Cond: "flag"},
	{Func: "count_cate", Arg: "amount", Cate: "category"}, {Func: "avg_cate", Arg: "price", Cate: "tag"},
	{Func: "min_cate_where", Arg: "category", Cond: "flag", Cate: "tag"},
	{Func: "ew_avg", Arg: "price", Param: 0.1}, {Func: "drawdown", Arg: "price"},
	{Func: "approx_percentile", Arg: "score", Param: 0.4}, {Func: "approx_count_distinct", Arg: "price"},
}

// TestTileReviewLongFramesMatchReference: lookups over a 30-day frame
// (6-hour tiles), a 7 days + 13 ms frame ending 1 h 7 ms back (hour tiles
// that do not divide it) and a 30-day frame of 7-minute tiles equal the
// brute-force aggregates over the key's rows in the frame, as rows arrive
// over two months and old rows and tiles go with the retention. Rows fall
// on tile boundaries (times in whole 6 minutes), and lookups are made at
// and next to tile boundaries, with frames starting on one and next to
// one, in the served range. Frames hold several hundred rows, so every
// lookup merges tiles.
func TestTileReviewLongFramesMatchReference(t *testing.T) {
	const (
		hour = int64(3600_000)
		day  = 24 * hour
	)
	frames := []testutil.Frame{
		{Preceding: 30 * day},
		{Preceding: 7*day + 13, EndPreceding: hour + 7},
		{Preceding: 30 * day},
	}
	tiles := []int64{6 * hour, hour, 7 * 60_000} // 0: the operator's pick, checked below
	if window.TileSize(frames[0].Preceding) != tiles[0] || window.TileSize(frames[1].Preceding) != tiles[1] {
		t.Fatalf("TileSize picks %d and %d ms", window.TileSize(frames[0].Preceding), window.TileSize(frames[1].Preceding))
	}
	const retention = 10 * day
	for _, seed := range testutil.Seeds(2) {
		for fi, f := range frames {
			t.Run(fmt.Sprintf("seed=%d/frame=%d", seed, fi), func(t *testing.T) {
				t.Parallel()
				rng := testutil.Rand(seed)
				ev := testutil.DefaultEvents(4000) // not scaled down: two months of rows are needed
				ev.Users, ev.NullKeys = 3, false
				if f.Preceding < 30*day {
					ev.Users = 1 // several hundred rows a frame here too
				}
				ev.Start = 78704 * 6 * hour // on a 6-hour boundary
				ev.StepMs = 6 * 60_000
				tab := testutil.MLEvents(rng, ev)
				cfg := window.Config{TsCol: mlTsCol, SeqCol: mlSeqCol, KeyCols: []int{mlSchema.FieldIndices("user_id")[0]},
					Retention: retention}
				if fi == 2 {
					cfg.TileSize = tiles[2]
				}
				for _, c := range mlArgCols {
					cfg.ArgCols = append(cfg.ArgCols, mlSchema.FieldIndices(c)[0])
				}
				spec := window.Spec{Frame: window.Frame{Preceding: f.Preceding, EndPreceding: f.EndPreceding}}
				for _, a := range tileReviewAggs {
					spec.Aggs = append(spec.Aggs, bindML(t, a))
					cfg.ResultNames = append(cfg.ResultNames, a.Name())
				}
				cfg.Windows = []window.Spec{spec}
				op, err := window.New(cfg, mlSchema)
				if err != nil {
					t.Fatal(err)
				}
				defer op.Close()
				tc, uc := tab.Col("ts"), tab.Col("user_id")
				tile := tiles[fi]
				lookups, big := 0, 0
				for lo := 0; lo < len(tab.Rows); {
					hi := min(len(tab.Rows), lo+50+rng.IntN(200))
					vals := make([][]any, 0, hi-lo)
					for i := lo; i < hi; i++ {
						vals = append(vals, append(slices.Clone(tab.Rows[i]), int64(i)))
					}
					rec := testutil.BuildRecord(nil, mlSchema, vals)
					_, late, err := op.Push(rec)
					rec.Release()
					if err != nil {
						t.Fatal(err)
					}
					if late != nil {
						if late.NumRows() > 0 {
							t.Fatalf("seed %d: %d rows late", seed, late.NumRows())
						}
						late.Release()
					}
					// Rows at the newest time may follow in the next batch.
					wm := tab.Rows[hi-1][tc].(int64) - 1
					outs, err := op.Advance(context.Background(), wm)
					if err != nil {
						t.Fatal(err)
					}
					releaseAll(outs)
					lo = hi
					if wm-tab.Rows[0][tc].(int64) < 31*day {
						continue
					}
					for range 6 {
						user := int64(1 + rng.IntN(ev.Users))
						// A time in the served range, moved onto or next to
						// a tile boundary, or so that the frame starts on or
						// next to one.
						at := wm - rng.Int64N(retention)
						switch rng.IntN(4) {
						case 1:
							at = floorMul(at, tile) + int64(rng.IntN(3)-1)
						case 2:
							at = floorMul(at-f.Preceding, tile) + f.Preceding + int64(rng.IntN(3)-1)
						case 3:
							at = floorMul(at-f.EndPreceding, tile) + f.EndPreceding + int64(rng.IntN(3)-1)
						}
						at = min(max(at, wm-retention), wm)
						enc, err := window.EncodeKeyValues(nil, op.KeyTypes(), []any{user})
						if err != nil {
							t.Fatal(err)
						}
						got, err := rdLookup(op, enc, at, nil, nil)
						if err != nil {
							if errors.Is(err, window.ErrTooOld) {
								t.Fatalf("seed %d: Lookup(%d, %d) at watermark %d, retention %d: %v", seed, user, at, wm, retention, err)
							}
							t.Fatal(err)
						}
						// The key's rows with at-preceding <= ts <= at-end,
						// in (time, arrival) order.
						var rows []int
						for i := range lo {
							r := tab.Rows[i]
							if ts := r[tc].(int64); r[uc] == user && ts <= wm && at-f.Preceding <= ts && ts <= at-f.EndPreceding {
								rows = append(rows, i)
							}
						}
						slices.SortStableFunc(rows, func(a, b int) int { return cmp.Compare(tab.Rows[a][tc].(int64), tab.Rows[b][tc].(int64)) })
						if len(rows) > 256 {
							big++
						}
						for k, a := range tileReviewAggs {
							if want := testutil.Aggregate(tab, a, rows); !testutil.Equal(got[k], want) {
								t.Fatalf("seed %d (VOLGA_SEED=%d to replay): Lookup(user %d, %d) at watermark %d, %d rows in frame %s: %s = %v, want %v",
									seed, seed, user, at, wm, len(rows), f, a.SQL(), got[k], want)
							}
						}
						lookups++
					}
				}
				if lookups == 0 || big < lookups*3/4 {
					t.Fatalf("seed %d: %d lookups, %d of them over more than 256 rows (tiled)", seed, lookups, big)
				}
			})
		}
	}
}
