package window_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/watermark"
	"github.com/volga-go/volga/window"
)

// keyTypesSchema has GROUP BY keys of the types the engine keys by other
// than int64 and string: bool, int32, uint64 (values above MaxInt64
// too), timestamp[us] and string, all nullable.
var keyTypesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "kb", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ki", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "ku", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "kt", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ks", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// TestGroupReviewKeyTypesRestore: a tumble/hop operator keyed by bool,
// int32, uint64, timestamp and string columns with NULLs, checkpointed
// and restored at random points (the keys are interned again from their
// stored values), emits one row per key and window with the key values
// as they came in, equal to the brute-force count and sum: a restored
// key that interned differently would split its window in two.
func TestGroupReviewKeyTypesRestore(t *testing.T) {
	count, err := agg.Bind("count", []agg.Arg{{Star: true, Col: -1}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	keyCols := []int{2, 3, 4, 5, 6}
	for _, seed := range testutil.Seeds(3) {
		for _, w := range [][2]int64{{1000, 1000}, {1500, 500}} {
			rng := testutil.Rand(seed)
			cfg := window.GroupConfig{TsCol: 0, SeqCol: 1, KeyCols: keyCols, ArgCols: []int{7}, SizeMs: w[0], SlideMs: w[1],
				Aggs: []agg.Func{count, sum}, ResultNames: []string{"n", "s"}}
			mk := func() *window.GroupOperator {
				op, err := window.NewGroup(cfg, keyTypesSchema)
				if err != nil {
					t.Fatal(err)
				}
				return op
			}
			maybe := func(v any) any {
				if rng.IntN(6) == 0 {
					return nil
				}
				return v
			}
			var rows [][]any
			ts := int64(1_700_000_000_000)
			for i := range testutil.Scale(600) {
				ts += int64(rng.IntN(200))
				rows = append(rows, []any{ts, int64(i), maybe(rng.IntN(2) == 0), maybe(int64(rng.IntN(2) - 1)),
					maybe([]uint64{0, 1 << 63, 1<<64 - 1}[rng.IntN(3)]), maybe(int64(rng.IntN(2)) * 1_000_001),
					maybe([]string{"", "a"}[rng.IntN(2)]), maybe(float64(rng.IntN(100)))})
			}
			// Reference: windows by key text and start.
			keyText := func(vals []any) string {
				parts := make([]string, len(vals))
				for j, v := range vals {
					if tm, ok := v.(time.Time); ok {
						v = tm.UnixMicro()
					}
					parts[j] = fmt.Sprintf("%T:%v", v, v)
					if v == nil {
						parts[j] = "NULL"
					}
				}
				return strings.Join(parts, "|")
			}
			type acc struct {
				n int64
				s any
			}
			want := map[string]*acc{}
			for _, r := range rows {
				t0 := r[0].(int64)
				k := make([]any, len(keyCols))
				for j, c := range keyCols {
					k[j] = r[c] // as read back: int32 as int64, timestamps as µs
				}
				for s := floorMul(t0, w[1]); s > t0-w[0]; s -= w[1] {
					id := fmt.Sprintf("%s@%d", keyText(k), s)
					a := want[id]
					if a == nil {
						a = &acc{}
						want[id] = a
					}
					a.n++
					if x := r[7]; x != nil {
						if a.s == nil {
							a.s = 0.0
						}
						a.s = a.s.(float64) + x.(float64)
					}
				}
			}
			op := mk()
			got := map[string]acc{}
			restores := 0
			wm := watermark.None
			emit := func(outs []arrow.RecordBatch) {
				for _, r := range testutil.Rows(outs...) {
					r = r[window.GroupSeqCol+1:]
					id := fmt.Sprintf("%s@%d", keyText(r[:len(keyCols)]), r[len(keyCols)].(int64))
					if _, dup := got[id]; dup {
						t.Errorf("seed %d, window %v: %s emitted twice", seed, w, id)
					}
					got[id] = acc{r[len(keyCols)+2].(int64), r[len(keyCols)+3]}
				}
				releaseAll(outs)
			}
			for lo := 0; lo < len(rows); {
				hi := min(len(rows), lo+1+rng.IntN(30))
				rec := testutil.BuildRecord(nil, keyTypesSchema, rows[lo:hi])
				if _, _, err := op.Push(rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
				lo = hi
				if next := rows[hi-1][0].(int64) - 300; next > wm && rng.IntN(2) == 0 {
					wm = next
					outs, err := op.Advance(context.Background(), wm)
					if err != nil {
						t.Fatal(err)
					}
					emit(outs)
				}
				if rng.IntN(3) == 0 {
					meta, err := op.Checkpoint()
					if err != nil {
						t.Fatal(err)
					}
					op = mk()
					if err := op.Restore(meta); err != nil {
						t.Fatalf("seed %d: Restore: %v", seed, err)
					}
					restores++
				}
			}
			outs, err := op.Advance(context.Background(), watermark.End)
			if err != nil {
				t.Fatal(err)
			}
			emit(outs)
			if restores == 0 {
				t.Fatalf("seed %d: no restore", seed)
			}
			var bad []string
			for id, a := range want {
				if g, ok := got[id]; !ok || g.n != a.n || !testutil.Equal(g.s, a.s) {
					bad = append(bad, fmt.Sprintf("%s: got %+v (%v), want %+v", id, g, ok, *a))
				}
			}
			for id := range got {
				if want[id] == nil {
					bad = append(bad, fmt.Sprintf("%s: emitted, not in the reference", id))
				}
			}
			slices.Sort(bad)
			if len(bad) > 0 {
				t.Errorf("seed %d (VOLGA_SEED=%d to replay), window %v: %d of %d windows differ, e.g.:\n%s", seed, seed, w, len(bad), len(want), strings.Join(bad[max(0, len(bad)-4):], "\n"))
			}
		}
	}
}
