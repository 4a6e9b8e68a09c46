package agg

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const maxU, top = uint64(math.MaxUint64), uint64(1 << 63)

// uintRows makes rows of one uint64 column (column 0) holding vals.
func uintRows(vals ...uint64) *Rows {
	col, _ := NewColumn(arrow.PrimitiveTypes.Uint64)
	for _, v := range vals {
		col.I64 = append(col.I64, int64(v))
		col.Null = append(col.Null, false)
	}
	r := &Rows{Base: 100, Cols: []Column{col}}
	for i := range vals {
		r.Ts = append(r.Ts, int64(i))
	}
	return r
}

func bigUints(vals []uint64) []*big.Int {
	out := make([]*big.Int, len(vals))
	for i, v := range vals {
		out[i] = new(big.Int).SetUint64(v)
	}
	return out
}

// uintWant is what DuckDB gives for fn over the UBIGINT values vals: the
// exact sum (NULL when there are none or beyond BIGINT), the exact mean
// and variance rounded once.
func uintWant(fn string, vals []uint64) any {
	if len(vals) == 0 {
		return nil
	}
	ints := bigUints(vals)
	switch fn {
	case "sum":
		if s := bigSum(ints); s.IsInt64() {
			return s.Int64()
		}
		return nil
	case "avg":
		f, _ := new(big.Rat).SetFrac(bigSum(ints), big.NewInt(int64(len(vals)))).Float64()
		return f
	case "var_samp":
		return exactVariance(ints, true, false)
	case "var_pop":
		return exactVariance(ints, false, false)
	case "stddev_pop":
		return exactVariance(ints, false, true)
	}
	panic(fn)
}

// uintFuncs are the aggregates of numbers that read UBIGINT values.
var uintFuncs = []string{"sum", "avg", "var_samp", "var_pop", "stddev_pop"}

func bindUint(t testing.TB, fn string) Func {
	t.Helper()
	f, err := Bind(fn, []Arg{{Type: arrow.PrimitiveTypes.Uint64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// uintCases are UBIGINT value lists around 2^63 and 2^64-1, where a
// signed reading is negative and a 64-bit sum wraps.
var uintCases = [][]uint64{
	{},
	{top - 1},
	{top},
	{maxU},
	{top - 1, 1},
	{top - 2, 1},
	{maxU, 1},         // 2^64: 0 when wrapped
	{maxU, maxU},      // 2^65 - 2
	{maxU, maxU - 2},  // variance 2, mean 2^64 - 2
	{top, top},        // 2^64: 0 when wrapped
	{top, top + 1, 5}, // mean above 2^62
	{0, maxU},
	{maxU, maxU, maxU, maxU, maxU, maxU, maxU},
	{1, 2, 3, top - 7},
}

// TestUintAggregates: sum, avg and the variances of uint64 values read
// them as unsigned, exactly, through Add, AddRange (sumUints),
// resultWord, merged parts and sliding windows that retract.
func TestUintAggregates(t *testing.T) {
	for _, fn := range uintFuncs {
		f := bindUint(t, fn)
		for _, vals := range uintCases {
			want := uintWant(fn, vals)
			r := uintRows(vals...)
			s := stateOf(f, r, rowsOf(r, 0, len(vals)))
			if got := result(f, s); !approxEqual(got, want, 1e-15) {
				t.Errorf("%s%v = %v, want %v", fn, vals, got, want)
			}
			if ra, ok := f.NewState().(RangeAdder); ok {
				ra.AddRange(r, r.Base, r.End())
				if got := result(f, ra.(State)); !approxEqual(got, want, 1e-15) {
					t.Errorf("%s%v by AddRange = %v, want %v", fn, vals, got, want)
				}
			}
			if wr, ok := s.(wordResult); ok {
				w, valid := wr.resultWord()
				var got any
				switch {
				case !valid:
				case fn == "sum":
					got = int64(w)
				default:
					got = math.Float64frombits(w)
				}
				if !approxEqual(got, want, 1e-15) {
					t.Errorf("%s%v by resultWord = %v, want %v", fn, vals, got, want)
				}
			}
			for cut := range len(vals) + 1 {
				m := stateOf(f, r, rowsOf(r, 0, cut))
				m.Merge(stateOf(f, r, rowsOf(r, cut, len(vals))))
				if got := result(f, m); !approxEqual(got, want, 1e-15) {
					t.Errorf("%s%v merged at %d = %v, want %v", fn, vals, cut, got, want)
				}
			}
		}
	}
}

// TestUintSliding: windows of every width over values around 2^63 and
// 2^64-1, which retract the rows that leave, give each frame's exact
// answer; so do the _where forms.
func TestUintSliding(t *testing.T) {
	vals := []uint64{maxU, maxU, 7, top, top - 1, 1, maxU - 3, 0, top + 5, 2, 3, maxU, top - 9, 4}
	r := uintRows(vals...)
	cond, _ := NewColumn(arrow.FixedWidthTypes.Boolean)
	for i := range vals {
		cond.Bool, cond.Null = append(cond.Bool, i%3 != 1), append(cond.Null, false)
	}
	r.Cols = append(r.Cols, cond)
	for _, fn := range uintFuncs {
		for _, where := range []bool{false, true} {
			name, args := fn, []Arg{{Type: arrow.PrimitiveTypes.Uint64, Col: 0}}
			if where {
				name += "_where"
				args = append(args, Arg{Type: arrow.FixedWidthTypes.Boolean, Col: 1})
			}
			f, err := Bind(name, args)
			if err != nil {
				if where && fn != "sum" && fn != "avg" {
					continue // no var_samp_where
				}
				t.Fatal(err)
			}
			for width := 1; width <= len(vals); width++ {
				lo, hi := make([]int64, len(vals)), make([]int64, len(vals))
				for j := range vals {
					lo[j], hi[j] = r.Base+int64(max(0, j-width+1)), r.Base+int64(j+1)
				}
				b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
				f.NewWindow().Eval(r, lo, hi, nil, b)
				got := b.NewArray()
				b.Release()
				for j := range vals {
					var frame []uint64
					for k := max(0, j-width+1); k <= j; k++ {
						if !where || cond.Bool[k] {
							frame = append(frame, vals[k])
						}
					}
					if g, w := valueOf(got, j), uintWant(fn, frame); !approxEqual(g, w, 1e-15) {
						t.Errorf("%s width %d row %d: %v, want %v", name, width, j, g, w)
					}
				}
				got.Release()
			}
		}
	}
}

// TestUintOrder: min, max, top and first/last of uint64 values order
// them as unsigned and give them back as uint64.
func TestUintOrder(t *testing.T) {
	vals := []uint64{5, maxU, top, top - 1, 0, maxU - 1, top + 1}
	r := uintRows(vals...)
	rows := rowsOf(r, 0, len(vals))
	u := Arg{Type: arrow.PrimitiveTypes.Uint64, Col: 0}
	for _, c := range []struct {
		fn   string
		args []Arg
		want any
	}{
		{"min", []Arg{u}, uint64(0)},
		{"max", []Arg{u}, maxU},
		{"first_value", []Arg{u}, uint64(5)},
		{"last_value", []Arg{u}, top + 1},
		{"top", []Arg{u, constArg(int64(4))}, []any{maxU, maxU - 1, top + 1, top}},
		{"approx_percentile", []Arg{u, constArg(1.0)}, float64(maxU)},
		{"approx_percentile", []Arg{u, constArg(0.5)}, float64(top)},
	} {
		f, err := Bind(c.fn, c.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := result(f, stateOf(f, r, rows)); !approxEqual(got, c.want, 0) {
			t.Errorf("%s = %v, want %v", c.fn, got, c.want)
		}
		b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
		f.NewWindow().Eval(r, []int64{r.Base}, []int64{r.End()}, nil, b)
		got := b.NewArray()
		b.Release()
		if g := valueOf(got, 0); !approxEqual(g, c.want, 0) {
			t.Errorf("%s window = %v, want %v", c.fn, g, c.want)
		}
		got.Release()
	}
	col := &r.Cols[0]
	if got := col.Float(1); got != float64(maxU) {
		t.Errorf("Column.Float of 2^64-1 = %v", got)
	}
}

// TestSumUints: sumUints (AddRange of uint64 sums and averages) counts
// and sums exactly, in chunks of any size, as unsigned.
func TestSumUints(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	for trial := range 200 {
		n := rng.IntN(300)
		vals, nulls := make([]int64, n), make([]bool, n)
		var cnt int64
		want := new(big.Int)
		for i := range vals {
			var v uint64
			switch rng.IntN(4) {
			case 0:
				v = maxU - rng.Uint64N(3)
			case 1:
				v = top + rng.Uint64N(3) - 1
			case 2:
				v = rng.Uint64()
			default:
				v = rng.Uint64N(100)
			}
			vals[i] = int64(v)
			if nulls[i] = trial%3 != 0 && rng.IntN(3) == 0; !nulls[i] {
				cnt++
				want.Add(want, new(big.Int).SetUint64(v))
			}
		}
		for _, chunk := range []int{1, 2, 7, 64, math.MaxInt32} {
			k, sum := sumIntsChunked(vals, nulls, chunk, true)
			if got := int128Big(sum); k != cnt || got.Cmp(want) != 0 {
				t.Fatalf("trial %d chunk %d: %d values summing to %v, want %d, %v", trial, chunk, k, got, cnt, want)
			}
		}
	}
}

func int128Big(x int128) *big.Int {
	v := new(big.Int).Lsh(big.NewInt(x.hi), 64)
	return v.Add(v, new(big.Int).SetUint64(x.lo))
}

// TestSumUintOldEncoding: a uint64 sum state encodes as an int64 one
// does (the old two-varint form while the sum fits in an int64), so
// checkpoints written before uint64 values were read as unsigned still
// decode, and a decoded state carries on unsigned.
func TestSumUintOldEncoding(t *testing.T) {
	f := bindUint(t, "sum")
	s := f.NewState()
	if err := s.UnmarshalBinary(oldSumEncoding(2, 40)); err != nil {
		t.Fatal(err)
	}
	if got := result(f, s); got != int64(40) {
		t.Fatalf("decoded %v, want 40", got)
	}
	r := uintRows(maxU, 2)
	s.Add(r, r.Base)
	if got := result(f, s); got != nil {
		t.Fatalf("40 + 2^64-1 = %v, want NULL", got)
	}
	data, _ := s.MarshalBinary()
	d := f.NewState()
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	d.(Retractor).Retract(r, r.Base)
	d.Add(r, r.Base+1)
	if got := result(f, d); got != int64(42) {
		t.Fatalf("after decoding, retracting 2^64-1 and adding 2: %v, want 42", got)
	}
	if want := (int128{hi: 1, lo: 39}); s.(*sumUintState).sum != want {
		t.Fatalf("40 + 2^64-1 held as %+v, want %+v", s.(*sumUintState).sum, want)
	}
}

// FuzzSumUint: three uint64 values summed, averaged and their variance
// taken by a state, encoded (checkSumIntCodec for the sum), decoded,
// one retracted and one merged back, against big.Int arithmetic.
func FuzzSumUint(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0))
	f.Add(maxU, maxU, maxU)
	f.Add(top, top, uint64(1))
	f.Add(top-1, uint64(1), uint64(0))
	f.Add(maxU, uint64(1), top)
	f.Fuzz(func(t *testing.T, a, b, c uint64) {
		vals := []uint64{a, b, c}
		r := uintRows(vals...)
		for _, fn := range uintFuncs {
			g := bindUint(t, fn)
			s := stateOf(g, r, rowsOf(r, 0, 3))
			if got, want := result(g, s), uintWant(fn, vals); !approxEqual(got, want, 1e-15) {
				t.Fatalf("%s%v = %v, want %v", fn, vals, got, want)
			}
			if fn == "sum" {
				checkSumIntCodec(t, 3, s.(*sumUintState).sum)
			}
			data, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			d := g.NewState()
			if err := d.UnmarshalBinary(data); err != nil {
				t.Fatalf("%s%v: %v", fn, vals, err)
			}
			d.(Retractor).Retract(r, r.Base+1)
			if got, want := result(g, d), uintWant(fn, []uint64{a, c}); !approxEqual(got, want, 1e-15) {
				t.Fatalf("%s%v decoded, %d retracted = %v, want %v", fn, vals, b, got, want)
			}
			d.Merge(stateOf(g, r, rowsOf(r, 1, 2)))
			if got, want := result(g, d), uintWant(fn, vals); !approxEqual(got, want, 1e-15) {
				t.Fatalf("%s%v decoded, retracted and merged back = %v, want %v", fn, vals, got, want)
			}
		}
	})
}
