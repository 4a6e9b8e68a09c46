package window

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
)

// tileSchema: ts (ms), seq, key, amount (float, NULLs), cat (string).
var tileSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func tileOperator(t *testing.T, frames []Frame, minRows int) *Operator {
	t.Helper()
	bind := func(name string, args ...agg.Arg) agg.Func { return bindFunc(t, name, args...) }
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	cat := agg.Arg{Type: arrow.BinaryTypes.String, Col: 1}
	var specs []Spec
	for _, f := range frames {
		specs = append(specs, Spec{Frame: f, Aggs: []agg.Func{
			bind("count", agg.Arg{Star: true, Col: -1}), bind("sum", amount), bind("avg", amount),
			bind("max", amount), bind("min", cat), bind("first_value", amount), bind("last_value", cat),
			bind("var_samp", amount), bind("count_distinct", cat),
			bind("topn_frequency", cat, agg.Arg{IsConst: true, Const: int64(2), Col: -1, Type: arrow.PrimitiveTypes.Int64}),
			bind("sum_cate", amount, cat), bind("drawdown", amount),
		}})
	}
	op, err := New(Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4}, Windows: specs,
		TileMinRows: minRows, Retention: math.MaxInt64 / 4}, tileSchema)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestTiledLookupsEqualUntiled: lookups that merge tiles give the results
// of adding every row of the frame, for every RANGE frame kind, with rows
// arriving (and tiles extended) between lookups; floats within 1e-12
// relative, since merged sums add in another order.
func TestTiledLookupsEqualUntiled(t *testing.T) {
	frames := []Frame{
		{Preceding: 3600_000},
		{Preceding: 3600_000, ExcludeCurrent: true},
		{Preceding: 6 * 3600_000, EndPreceding: 600_000},
	}
	for seed := uint64(1); seed <= 2; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		tiled, plain := tileOperator(t, frames, 1), tileOperator(t, frames, -1)
		var ts, seq int64 = 1_700_000_000_000, 0
		for round := 0; round < 4; round++ {
			b := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
			for i := 0; i < 800; i++ {
				ts += int64(rng.IntN(12000))
				b.Field(0).(*array.Int64Builder).Append(ts)
				b.Field(1).(*array.Int64Builder).Append(seq)
				seq++
				b.Field(2).(*array.Int64Builder).Append(int64(rng.IntN(3)))
				if rng.IntN(8) == 0 {
					b.Field(3).AppendNull()
				} else {
					b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100000)) / 100)
				}
				b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("c%d", rng.IntN(6)))
			}
			rec := b.NewRecordBatch()
			for _, op := range []*Operator{tiled, plain} {
				if _, _, err := op.Push(rec); err != nil {
					t.Fatal(err)
				}
				outs, err := op.Advance(context.Background(), ts-10_000)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					o.Release()
				}
			}
			rec.Release()
			for q := 0; q < 25; q++ {
				key := []any{int64(rng.IntN(3))}
				at := ts - 10_000 - int64(rng.IntN(3*3600_000))
				enc, err := EncodeKeyValues(nil, tiled.KeyTypes(), key)
				if err != nil {
					t.Fatal(err)
				}
				got, errT := lookupValues(tiled, enc, at)
				want, errP := lookupValues(plain, enc, at)
				if (errT == nil) != (errP == nil) {
					t.Fatalf("tiled error %v, untiled error %v", errT, errP)
				}
				for i := range want {
					if !closeEnough(got[i], want[i]) {
						t.Fatalf("seed %d round %d: lookup(key %v, t %d) result %d: tiled %v, untiled %v", seed, round, key, at, i, got[i], want[i])
					}
				}
			}
		}
		used := 0
		for _, ks := range tiled.states {
			if ks.tiles != nil {
				used++
			}
		}
		if used == 0 {
			t.Fatal("no lookup used tiles")
		}
		tiled.Close()
		plain.Close()
	}
}

func lookupValues(op *Operator, key []byte, at int64) ([]any, error) {
	types := op.ResultTypes()
	bld := make([]array.Builder, len(types))
	for i, dt := range types {
		bld[i] = array.NewBuilder(memory.DefaultAllocator, dt)
	}
	if _, err := op.Lookup(key, at, nil, bld); err != nil {
		return nil, err
	}
	out := make([]any, len(bld))
	for i, b := range bld {
		a := b.NewArray()
		out[i] = a.ValueStr(0)
		if f, ok := a.(*array.Float64); ok && f.IsValid(0) {
			out[i] = f.Value(0)
		}
		a.Release()
		b.Release()
	}
	return out, nil
}

func closeEnough(a, b any) bool {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if ok1 && ok2 {
		return x == y || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// BenchmarkTileBuild times a key's first lookup over a 30-day frame of
// 20 000 rows, which builds its tiles (6-hour ones, about 120) for count,
// sum, avg and max: ns/op is per lookup, rows-ns the cost a row.
func BenchmarkTileBuild(b *testing.B) {
	amount := agg.Arg{Type: arrow.PrimitiveTypes.Float64, Col: 0}
	aggs := []agg.Func{bindFunc(b, "count", agg.Arg{Star: true, Col: -1}), bindFunc(b, "sum", amount),
		bindFunc(b, "avg", amount), bindFunc(b, "max", amount)}
	op := openOp(b, Config{TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3, 4},
		Windows:   []Spec{{Frame: Frame{Preceding: 30 * 86_400_000}, Aggs: aggs}},
		Retention: math.MaxInt64 / 4})
	defer op.Close()
	const rows = 20_000
	rng := rand.New(rand.NewPCG(9, 9))
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tileSchema)
	var ts int64 = 1_700_000_000_000
	for i := range rows {
		ts += int64(rng.IntN(2 * 30 * 86_400_000 / rows))
		bld.Field(0).(*array.Int64Builder).Append(ts)
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
		bld.Field(2).(*array.Int64Builder).Append(7)
		bld.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
		bld.Field(4).(*array.StringBuilder).Append("c")
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	push(b, op, rec)
	advanceDiscard(b, op, ts)
	key, err := EncodeKeyValues(nil, op.KeyTypes(), []any{int64(7)})
	if err != nil {
		b.Fatal(err)
	}
	id, ok := op.keys.find(key)
	if !ok || op.states[id] == nil || op.states[id].rows.Len() < rows/2 {
		b.Fatal("the key's rows are not held")
	}
	held := op.states[id].rows.Len()
	res := make([]array.Builder, len(aggs))
	for i, f := range aggs {
		res[i] = array.NewBuilder(memory.DefaultAllocator, f.ResultType())
		defer res[i].Release()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op.states[id].tiles = nil // the next lookup builds them again
		if _, err := op.Lookup(key, ts, nil, res); err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			r.NewArray().Release()
		}
	}
	b.StopTimer()
	if op.states[id].tiles == nil {
		b.Fatal("the lookup built no tiles")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(held), "rows-ns")
}
