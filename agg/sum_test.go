package agg

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intRows makes rows of one int64 column (column 0) holding vals.
func intRows(vals ...int64) *Rows {
	col, _ := NewColumn(arrow.PrimitiveTypes.Int64)
	col.I64 = slices.Clone(vals)
	col.Null = make([]bool, len(vals))
	r := &Rows{Base: 100, Cols: []Column{col}}
	for i := range vals {
		r.Ts = append(r.Ts, int64(i))
	}
	return r
}

// exactSum is the sum of vals as DuckDB gives it: exact, NULL (nil) when
// there are none or it does not fit in an int64.
func exactSum(vals []int64) any {
	if len(vals) == 0 {
		return nil
	}
	s := new(big.Int)
	for _, v := range vals {
		s.Add(s, big.NewInt(v))
	}
	if !s.IsInt64() {
		return nil
	}
	return s.Int64()
}

func bindSumInt(t *testing.T, name string) Func {
	t.Helper()
	f, err := Bind(name, []Arg{{Type: arrow.PrimitiveTypes.Int64, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sumWord returns a sum state's result through resultWord (the
// entryListBuilder's path), as result does through AppendResult.
func sumWord(s State) any {
	w, ok := s.(wordResult).resultWord()
	if !ok {
		return nil
	}
	return int64(w)
}

const maxI, minI = math.MaxInt64, math.MinInt64

// TestSumIntOverflowNull: an integer sum is exact, and NULL when it does
// not fit in an int64, through AppendResult and resultWord alike, however
// far the running sum went.
func TestSumIntOverflowNull(t *testing.T) {
	f := bindSumInt(t, "sum")
	for _, c := range []struct {
		vals []int64
		want any
	}{
		{nil, nil},
		{[]int64{maxI}, int64(maxI)},
		{[]int64{minI}, int64(minI)},
		{[]int64{maxI, 1}, nil},
		{[]int64{maxI, maxI, 2}, nil}, // 2^64, 0 wrapped
		{[]int64{minI, minI}, nil},    // -2^64, 0 wrapped
		{[]int64{minI, -1}, nil},
		{[]int64{-maxI, -1}, int64(minI)},
		{[]int64{maxI, 1, -1}, int64(maxI)},
		{[]int64{maxI, maxI, maxI, minI, minI, minI}, int64(-3)},
		{[]int64{minI, minI, maxI, maxI, 2}, int64(0)},
		{[]int64{minI, minI, minI, minI}, nil}, // -2^65: hi is not -1
		{[]int64{maxI, maxI, maxI, maxI, maxI}, nil},
	} {
		if w := exactSum(c.vals); w != c.want {
			t.Fatalf("%v: test table says %v, big.Int %v", c.vals, c.want, w)
		}
		r := intRows(c.vals...)
		s := f.NewState()
		ra := f.NewState().(RangeAdder)
		for a := r.Base; a < r.End(); a++ {
			s.Add(r, a)
		}
		ra.AddRange(r, r.Base, r.End())
		for _, got := range []any{result(f, s), sumWord(s), result(f, ra.(State)), sumWord(ra.(State))} {
			if got != c.want {
				t.Errorf("sum%v = %v, want %v", c.vals, got, c.want)
			}
		}
	}
}

// TestSumIntRetractBackInRange: a sliding sum whose running value left
// the int64 range comes back exact when the rows that took it out leave
// the frame, in a state and in the window of every frame width.
func TestSumIntRetractBackInRange(t *testing.T) {
	f := bindSumInt(t, "sum")
	r := intRows(maxI, maxI, maxI)
	s := f.NewState()
	for a := r.Base; a < r.End(); a++ {
		s.Add(r, a)
	}
	if got := result(f, s); got != nil {
		t.Fatalf("3·MaxInt64 = %v, want NULL", got)
	}
	s.(Retractor).Retract(r, r.Base)
	s.(Retractor).Retract(r, r.Base+1)
	if got := result(f, s); got != int64(maxI) {
		t.Fatalf("3·MaxInt64 - 2·MaxInt64 = %v, want %d", got, int64(maxI))
	}

	vals := []int64{maxI, maxI, 7, -maxI, -maxI, minI, minI, -3, maxI, 1, maxI, maxI, minI, 5}
	r = intRows(vals...)
	for _, name := range []string{"sum", "sum_where"} {
		for width := 1; width <= len(vals); width++ {
			var g Func
			if name == "sum" {
				g = f
			} else {
				g = bindWhereTrue(t, r)
			}
			lo, hi := make([]int64, len(vals)), make([]int64, len(vals))
			for j := range vals {
				lo[j], hi[j] = r.Base+int64(max(0, j-width+1)), r.Base+int64(j+1)
			}
			b := array.NewBuilder(memory.DefaultAllocator, g.ResultType())
			g.NewWindow().Eval(r, lo, hi, nil, b)
			got := b.NewArray()
			b.Release()
			for j := range vals {
				want := exactSum(vals[max(0, j-width+1) : j+1])
				if v := valueOf(got, j); v != want {
					t.Errorf("%s width %d row %d: %v, want %v", name, width, j, v, want)
				}
			}
			got.Release()
		}
	}
}

// bindWhereTrue binds sum_where(column 0, column 1) and gives r a column
// 1 that is TRUE on every row.
func bindWhereTrue(t *testing.T, r *Rows) Func {
	t.Helper()
	r.Cols = r.Cols[:1]
	c, _ := NewColumn(arrow.FixedWidthTypes.Boolean)
	for range r.Len() {
		c.Bool, c.Null = append(c.Bool, true), append(c.Null, false)
	}
	r.Cols = append(r.Cols, c)
	f, err := Bind("sum_where", []Arg{{Type: arrow.PrimitiveTypes.Int64, Col: 0}, {Type: arrow.FixedWidthTypes.Boolean, Col: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSumIntMergeExact: merging partial states (tiles, GROUP BY
// partials) is exact even when each part is beyond int64.
func TestSumIntMergeExact(t *testing.T) {
	f := bindSumInt(t, "sum")
	r := intRows(maxI, maxI, minI, minI, 5)
	part := func(lo, hi int) State { return stateOf(f, r, rowsOf(r, lo, hi)) }
	a, b := part(0, 2), part(2, 4)
	if ga, gb := result(f, a), result(f, b); ga != nil || gb != nil {
		t.Fatalf("2·MaxInt64 = %v, 2·MinInt64 = %v, want NULL twice", ga, gb)
	}
	a.Merge(b)
	if got := result(f, a); got != int64(-2) {
		t.Fatalf("2·MaxInt64 + 2·MinInt64 = %v, want -2", got)
	}
	a.Merge(part(4, 5))
	if got := result(f, a); got != int64(3) {
		t.Fatalf("... + 5 = %v, want 3", got)
	}
	// Parts merge to 2^64, which a 64-bit sum would wrap to 0.
	r = intRows(maxI, maxI, 1, 1)
	c := part(0, 2)
	c.Merge(part(2, 3))
	c.Merge(part(3, 4))
	if got := result(f, c); got != nil {
		t.Fatalf("2·MaxInt64 + 1 + 1 = %v, want NULL", got)
	}
}

func rowsOf(r *Rows, lo, hi int) []int64 {
	var out []int64
	for i := lo; i < hi; i++ {
		out = append(out, r.Base+int64(i))
	}
	return out
}

// oldSumEncoding is how integer sum states were encoded before sums were
// 128-bit: varint n, varint sum.
func oldSumEncoding(n, sum int64) []byte {
	return binary.AppendVarint(binary.AppendVarint(nil, n), sum)
}

// TestSumIntOldEncoding: checkpoints written before sums were 128-bit
// decode to the same sums, and states whose sums fit in an int64 are
// still encoded that way.
func TestSumIntOldEncoding(t *testing.T) {
	f := bindSumInt(t, "sum")
	for _, c := range []struct{ n, sum int64 }{
		{0, 0}, {1, -1}, {3, 42}, {2, maxI}, {2, minI}, {1 << 40, -1 << 50},
	} {
		old := oldSumEncoding(c.n, c.sum)
		s := f.NewState()
		if err := s.UnmarshalBinary(old); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		var want any = c.sum
		if c.n == 0 {
			want = nil
		}
		if got := result(f, s); got != want {
			t.Errorf("%+v: decoded %v, want %v", c, got, want)
		}
		data, err := s.MarshalBinary()
		if err != nil || string(data) != string(old) {
			t.Errorf("%+v: re-encoded %x, %v, want %x", c, data, err, old)
		}
		if got := s.(*sumIntState).sum; got != (int128{hi: c.sum >> 63, lo: uint64(c.sum)}) {
			t.Errorf("%+v: decoded sum %+v", c, got)
		}
	}
	// A decoded old state carries on in 128 bits.
	s := f.NewState()
	if err := s.UnmarshalBinary(oldSumEncoding(1, maxI)); err != nil {
		t.Fatal(err)
	}
	r := intRows(maxI, -maxI)
	s.Add(r, r.Base)
	if got := result(f, s); got != nil {
		t.Fatalf("decoded MaxInt64 + MaxInt64 = %v, want NULL", got)
	}
	s.(Retractor).Retract(r, r.Base)
	if got := result(f, s); got != int64(maxI) {
		t.Fatalf("back to %v, want %d", got, int64(maxI))
	}
}

// checkSumIntCodec checks the encoding of a sum state of n rows summing
// to x: it round-trips exactly, is the old two-varint form exactly when
// x fits in an int64, no proper prefix decodes, and the result is x, or
// NULL when x does not fit.
func checkSumIntCodec(t *testing.T, n int64, x int128) {
	t.Helper()
	s := &sumIntState{n: n, sum: x}
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	v, fits := x.int64()
	if fits != (string(data) == string(oldSumEncoding(n, v))) {
		t.Fatalf("n=%d sum=%+v: encoding %x, old form %x, fits %v", n, x, data, oldSumEncoding(n, v), fits)
	}
	var d sumIntState
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatalf("n=%d sum=%+v: %v", n, x, err)
	}
	if d.n != n || d.sum != x {
		t.Fatalf("n=%d sum=%+v: decoded n=%d sum=%+v", n, x, d.n, d.sum)
	}
	if again, _ := d.AppendBinary([]byte("pre")); string(again[3:]) != string(data) {
		t.Fatalf("n=%d sum=%+v: re-encoding differs", n, x)
	}
	for cut := range len(data) {
		if (&sumIntState{}).UnmarshalBinary(data[:cut]) == nil {
			t.Fatalf("n=%d sum=%+v: prefix of %d of %d bytes decoded", n, x, cut, len(data))
		}
	}
	w, ok := d.resultWord()
	if want := n != 0 && fits; ok != want || ok && int64(w) != v {
		t.Fatalf("n=%d sum=%+v: resultWord %d, %v", n, x, int64(w), ok)
	}
}

// TestSumIntWideEncoding: sums beyond int64 round-trip, and the wide form
// holding a sum that fits (which MarshalBinary never writes) is refused.
func TestSumIntWideEncoding(t *testing.T) {
	for _, x := range []int128{
		{hi: 0, lo: 1 << 63},       // MaxInt64 + 1
		{hi: -1, lo: 1<<63 - 1},    // MinInt64 - 1
		{hi: 1, lo: 0},             // 2^64
		{hi: -2, lo: 0},            // -2^65
		{hi: maxI, lo: 1<<64 - 1},  // the largest
		{hi: minI, lo: 0},          // the smallest
		{hi: 0, lo: 1<<63 - 1},     // fits: old form
		{hi: -1, lo: 1 << 63},      // MinInt64: old form
		{hi: 3, lo: 0xdead_beef_1}, // beyond, positive lo
	} {
		for _, n := range []int64{1, 2, 1 << 62, maxI} {
			checkSumIntCodec(t, n, x)
		}
	}
	for _, v := range []int64{0, -1, 5, maxI, minI} {
		wide := binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(nil, ^int64(2)), v), v>>63)
		if (&sumIntState{}).UnmarshalBinary(wide) == nil {
			t.Errorf("wide form of %d accepted", v)
		}
	}
}

// FuzzSumIntCodec: checkSumIntCodec on arbitrary states, sums beyond
// int64 and in range alike.
func FuzzSumIntCodec(f *testing.F) {
	f.Add(int64(0), int64(0), uint64(0))
	f.Add(int64(2), int64(0), uint64(1<<63))
	f.Add(int64(3), int64(-1), uint64(1<<63-1))
	f.Add(int64(maxI), int64(maxI), uint64(1<<64-1))
	f.Add(int64(1), int64(-1), uint64(1<<64-1))
	// Sums of uint64 values (sumUintState shares the codec): 2^64-1,
	// 2·(2^64-1), 7·(2^64-1) and 3·2^63.
	f.Add(int64(1), int64(0), uint64(1<<64-1))
	f.Add(int64(2), int64(1), uint64(1<<64-2))
	f.Add(int64(7), int64(6), uint64(1<<64-7))
	f.Add(int64(3), int64(1), uint64(1<<63))
	f.Fuzz(func(t *testing.T, n, hi int64, lo uint64) {
		if n < 0 {
			n = ^n // states hold a count
		}
		checkSumIntCodec(t, n, int128{hi: hi, lo: lo})
	})
}

// TestSumInts: sumInts (AddRange of integer sums and averages) counts and
// sums exactly, in chunks of any size, the extremes of int64 included.
func TestSumInts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 200 {
		n := rng.IntN(300)
		vals, nulls := make([]int64, n), make([]bool, n)
		var cnt int64
		want := new(big.Int)
		for i := range vals {
			switch rng.IntN(4) {
			case 0:
				vals[i] = maxI
			case 1:
				vals[i] = minI
			case 2:
				vals[i] = int64(rng.Uint64())
			default:
				vals[i] = rng.Int64N(100) - 50
			}
			if nulls[i] = trial%3 != 0 && rng.IntN(3) == 0; !nulls[i] {
				cnt++
				want.Add(want, big.NewInt(vals[i]))
			}
		}
		for _, chunk := range []int{1, 2, 7, 64, math.MaxInt32} {
			k, sum := sumIntsChunked(vals, nulls, chunk, false)
			got := new(big.Int).Lsh(big.NewInt(sum.hi), 64)
			got.Add(got, new(big.Int).SetUint64(sum.lo))
			if k != cnt || got.Cmp(want) != 0 {
				t.Fatalf("trial %d chunk %d: %d values summing to %v, want %d, %v", trial, chunk, k, got, cnt, want)
			}
		}
	}
}
