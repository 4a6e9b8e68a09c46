package agg

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Test columns of randRows.
const (
	colInt    = iota // int64, small range with duplicates, a few huge values
	colFloat         // float64, duplicates and spread values
	colStr           // string, 8 distinct values
	colBool          // bool
	colTs            // timestamp[ms]
	colI32           // int32
	colU64           // uint64 spanning the full range
	colCond          // bool condition (NULLs too)
	colCat           // string category, 5 values
	colCatInt        // int64 category, 5 values
	colDrift         // float64 drifting upwards (stress for variance)
	colBig           // int64, a quarter of them near ±2^62: sums leave int64
	colUBig          // uint64 clustered near 0, 2^63 and 2^64-1, some anywhere
	numCols
)

var colTypes = [numCols]arrow.DataType{
	arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float64,
	arrow.BinaryTypes.String,
	arrow.FixedWidthTypes.Boolean,
	arrow.FixedWidthTypes.Timestamp_ms,
	arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Uint64,
	arrow.FixedWidthTypes.Boolean,
	arrow.BinaryTypes.String,
	arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float64,
	arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint64,
}

func colArg(c int) Arg   { return Arg{Type: colTypes[c], Col: c} }
func starArg() Arg       { return Arg{Col: -1, Star: true} }
func constArg(v any) Arg { return constArgT(v) }
func constArgT(v any) Arg {
	a := Arg{Col: -1, IsConst: true, Const: v}
	switch v.(type) {
	case int64:
		a.Type = arrow.PrimitiveTypes.Int64
	case float64:
		a.Type = arrow.PrimitiveTypes.Float64
	case string:
		a.Type = arrow.BinaryTypes.String
	case bool:
		a.Type = arrow.FixedWidthTypes.Boolean
	default:
		a.Type = arrow.Null
	}
	return a
}

// randRows makes n rows of every test column, with NULLs and duplicates,
// starting at a non-zero Base.
func randRows(rng *rand.Rand, n int) *Rows {
	r := &Rows{Base: rng.Int64N(1000)}
	ts := int64(1_700_000_000_000)
	drift := 1e6
	for range n {
		ts += rng.Int64N(3)
		r.Ts = append(r.Ts, ts)
	}
	nullP := []float64{0.15, 0.2, 0.5}[rng.IntN(3)]
	if rng.IntN(5) == 0 {
		nullP = 0
	}
	// colBig draws from a generator of its own, so that adding it left
	// the other columns and the callers' later draws as they were.
	bigRng := rand.New(rand.NewPCG(uint64(n), uint64(r.Base)))
	ubigRng := rand.New(rand.NewPCG(uint64(n), uint64(r.Base)^0x75626967)) // "ubig"
	for c := range numCols {
		col, _ := NewColumn(colTypes[c])
		rng := rng
		switch c {
		case colBig:
			rng = bigRng
		case colUBig:
			rng = ubigRng
		}
		for range n {
			if rng.Float64() < nullP {
				col.AppendNull()
				continue
			}
			col.Null = append(col.Null, false)
			switch c {
			case colInt:
				v := rng.Int64N(21) - 10
				if rng.IntN(50) == 0 {
					v = rng.Int64N(1<<62) - 1<<61
				}
				col.I64 = append(col.I64, v)
			case colFloat:
				var v float64
				switch rng.IntN(3) {
				case 0:
					v = float64(rng.IntN(10)) * 0.5
				case 1:
					v = rng.NormFloat64()*1e3 + 1e4
				default:
					v = -rng.ExpFloat64() * 1e-3
				}
				col.F64 = append(col.F64, v)
			case colStr:
				col.Str = append(col.Str, fmt.Sprintf("s%d", rng.IntN(8)))
			case colBool, colCond:
				col.Bool = append(col.Bool, rng.IntN(2) == 0)
			case colTs:
				col.I64 = append(col.I64, ts-rng.Int64N(1e6))
			case colI32:
				col.I64 = append(col.I64, rng.Int64N(100)-50)
			case colU64:
				col.I64 = append(col.I64, int64(rng.Uint64()>>rng.IntN(64)))
			case colCat:
				col.Str = append(col.Str, fmt.Sprintf("c%d", rng.IntN(5)))
			case colCatInt:
				col.I64 = append(col.I64, rng.Int64N(5))
			case colDrift:
				drift += 1 + rng.Float64()
				col.F64 = append(col.F64, drift+rng.NormFloat64())
			case colBig:
				v := rng.Int64N(2001) - 1000
				if rng.IntN(4) == 0 {
					v = 1<<62 + rng.Int64N(1<<61)
					if rng.IntN(2) == 0 {
						v = -v
					}
				}
				col.I64 = append(col.I64, v)
			case colUBig:
				// Duplicates within each cluster; sums of the small ones
				// and those just below 2^63 fit in int64 or just do not.
				var v uint64
				switch rng.IntN(10) {
				case 0, 1, 2, 3:
					v = rng.Uint64N(20)
				case 4, 5:
					v = 1<<63 - 10 + rng.Uint64N(20)
				case 6, 7, 8:
					v = math.MaxUint64 - rng.Uint64N(20)
				default:
					v = rng.Uint64()
				}
				col.I64 = append(col.I64, int64(v))
			}
		}
		r.Cols = append(r.Cols, col)
	}
	return r
}

func cloneRows(r *Rows) *Rows {
	c := &Rows{Base: r.Base, Ts: slices.Clone(r.Ts)}
	for _, col := range r.Cols {
		c.Cols = append(c.Cols, Column{Type: col.Type, Kind: col.Kind,
			I64: slices.Clone(col.I64), F64: slices.Clone(col.F64), Str: slices.Clone(col.Str),
			Bool: slices.Clone(col.Bool), Null: slices.Clone(col.Null)})
	}
	return c
}

// dropBelow drops the rows below a, as the window operator does.
func dropBelow(r *Rows, a int64) {
	n := int(a - r.Base)
	if n <= 0 {
		return
	}
	n = min(n, r.Len())
	for i := range r.Cols {
		r.Cols[i].DropFront(n)
	}
	r.Ts = DropFront(r.Ts, n)
	r.Base += int64(n)
}

// frames is a sequence of frames [lo, hi) minus ex.
type frames struct {
	lo, hi, ex []int64
	// unbounded: the lower bound never moves, and the caller drops the
	// rows the frame has absorbed (below hi, but not the next ex).
	unbounded bool
}

// randFrames makes a sequence of frames like the window operator's: one
// per row, lo and hi non-decreasing, peers beyond the current row, frames
// ending before the current row, jumps, and EXCLUDE CURRENT ROW (always,
// never, or for some rows only).
func randFrames(rng *rand.Rand, r *Rows) frames {
	n := r.Len()
	base := r.Base
	end := base + int64(n)
	mode := rng.IntN(5)
	exMode := rng.IntN(3) // 0 none, 1 always, 2 sometimes
	w := int64(1 + rng.IntN(40))
	var f frames
	var lo, hi int64 = base, base
	for j := range n {
		cur := base + int64(j)
		h := cur + 1
		if rng.IntN(4) == 0 {
			h += rng.Int64N(4)
		}
		var l int64
		switch mode {
		case 0: // ROWS w PRECEDING
			l = cur + 1 - w
		case 1: // jittery RANGE
			l = cur - rng.Int64N(w)
		case 2: // UNBOUNDED
			l = base
		case 3: // ends before the current row
			l = cur - w
			h = cur - rng.Int64N(3)
		case 4: // sparse jumps
			l = cur - rng.Int64N(3)
			if rng.IntN(10) == 0 {
				l = cur
			}
		}
		hi = max(hi, min(h, end))
		lo = min(max(lo, l, base), hi)
		f.lo = append(f.lo, lo)
		f.hi = append(f.hi, hi)
		ex := int64(-1)
		if exMode == 1 || exMode == 2 && rng.IntN(3) != 0 {
			ex = cur
		}
		f.ex = append(f.ex, ex)
	}
	if exMode == 0 {
		f.ex = nil
	}
	// Mixed EXCLUDE patterns make two-queue windows rebuild from rows the
	// unbounded policy would have dropped; the operator never mixes.
	f.unbounded = mode == 2 && exMode != 2
	return f
}

// frameRows lists the rows of frame j.
func (f frames) frameRows(j int) []int64 {
	var out []int64
	for a := f.lo[j]; a < f.hi[j]; a++ {
		if f.ex != nil && f.ex[j] == a {
			continue
		}
		out = append(out, a)
	}
	return out
}

// evalWindow runs a fresh Window over the frames in random chunks, on a
// copy of r from which rows below the lower bound are dropped after each
// call, and returns the results and the window.
func evalWindow(f Func, r *Rows, fr frames, rng *rand.Rand) (arrow.Array, Window) {
	w := f.NewWindow()
	wr := cloneRows(r)
	b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer b.Release()
	n := len(fr.lo)
	for start := 0; start < n; {
		end := min(n, start+1+rng.IntN(50))
		var ex []int64
		if fr.ex != nil {
			ex = fr.ex[start:end]
		}
		w.Eval(wr, fr.lo[start:end], fr.hi[start:end], ex, b)
		drop := fr.lo[end-1]
		if fr.unbounded {
			drop = fr.hi[end-1]
			if fr.ex != nil && end < n && fr.ex[end] >= 0 {
				drop = min(drop, fr.ex[end])
			}
		}
		dropBelow(wr, drop)
		start = end
	}
	return b.NewArray(), w
}

// bruteForce aggregates every frame with a fresh state.
func bruteForce(f Func, r *Rows, fr frames) arrow.Array {
	b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer b.Release()
	for j := range fr.lo {
		s := f.NewState()
		for _, a := range fr.frameRows(j) {
			s.Add(r, a)
		}
		s.AppendResult(b)
	}
	return b.NewArray()
}

// result returns the value of one state as a Go value.
func result(f Func, s State) any {
	b := array.NewBuilder(memory.DefaultAllocator, f.ResultType())
	defer b.Release()
	s.AppendResult(b)
	arr := b.NewArray()
	defer arr.Release()
	return valueOf(arr, 0)
}

// valueOf converts element i of arr to a Go value: nil, int64, uint64,
// float64, string, bool, []any (lists; structs as their fields), or
// [][2]any (maps).
func valueOf(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Map:
		s, e := a.ValueOffsets(i)
		out := [][2]any{}
		for k := s; k < e; k++ {
			out = append(out, [2]any{valueOf(a.Keys(), int(k)), valueOf(a.Items(), int(k))})
		}
		return out
	case *array.List:
		s, e := a.ValueOffsets(i)
		out := []any{}
		for k := s; k < e; k++ {
			out = append(out, valueOf(a.ListValues(), int(k)))
		}
		return out
	case *array.Struct:
		out := []any{}
		for k := range a.NumField() {
			out = append(out, valueOf(a.Field(k), i))
		}
		return out
	}
	panic(fmt.Sprintf("valueOf: unsupported %T", arr))
}

// approxEqual compares Go values, floats within 1e-9 relative.
func approxEqual(a, b any, tol float64) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		return x == y || math.Abs(x-y) <= tol*max(math.Abs(x), math.Abs(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !approxEqual(x[i], y[i], tol) {
				return false
			}
		}
		return true
	case [][2]any:
		y, ok := b.([][2]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !approxEqual(x[i][0], y[i][0], tol) || !approxEqual(x[i][1], y[i][1], tol) {
				return false
			}
		}
		return true
	}
	return a == b
}

// colValue is the Go value of row a of column c as results carry it.
func colValue(r *Rows, c int, a int64) any {
	col := &r.Cols[c]
	v := col.Value(int(a - r.Base))
	if v != nil && col.Type.ID() == arrow.UINT64 {
		return uint64(v.(int64))
	}
	return v
}

// aggCase is one bound aggregate under test with its naive oracle.
type aggCase struct {
	name string
	args []Arg
	// tune, if set, adjusts the bound Func (tests of internal modes).
	tune   func(Func)
	oracle func(r *Rows, rows []int64) any
	// ordered: results depend on the order of rows (first_value ...).
	ordered bool
	// tol is the float tolerance against the oracle (default 1e-9).
	tol float64
	// noOracle skips the oracle for frames (approximate functions check
	// their bounds elsewhere).
	noOracle bool
}

func (c aggCase) String() string {
	s := c.name + "("
	for i, a := range c.args {
		if i > 0 {
			s += ","
		}
		switch {
		case a.Star:
			s += "*"
		case a.IsConst:
			s += fmt.Sprint(a.Const)
		default:
			s += fmt.Sprintf("c%d:%s", a.Col, a.Type)
		}
	}
	return s + ")"
}

func (c aggCase) bind(t testing.TB) Func {
	t.Helper()
	f, err := Bind(c.name, c.args)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	if c.tune != nil {
		c.tune(f)
	}
	return f
}

func (c aggCase) tolerance() float64 {
	if c.tol == 0 {
		return 1e-9
	}
	return c.tol
}

// raceEnabled is set by race_test.go under -race, which makes every step
// much slower.
var raceEnabled bool

// seeds scales the number of random trials down for -short and -race.
func seeds(n uint64) uint64 {
	if testing.Short() || raceEnabled {
		return max(n/5, 4)
	}
	return n
}

// runCases runs the whole regime on every case.
func runCases(t *testing.T, cases []aggCase) {
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkWindow(t, c)
			checkMerge(t, c)
			checkRetract(t, c)
			checkEncoding(t, c)
			checkReset(t, c)
			checkNewStates(t, c)
			checkRangeAdd(t, c)
		})
	}
}

// checkWindow compares Window.Eval with a fresh state per frame and with
// the oracle.
func checkWindow(t *testing.T, c aggCase) {
	f := c.bind(t)
	for seed := range seeds(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := randRows(rng, 1+rng.IntN(300))
		fr := randFrames(rng, r)
		got, win := evalWindow(f, r, fr, rng)
		if c, ok := win.(WindowCodec); ok {
			data, err := c.MarshalBinary()
			if err != nil {
				t.Fatalf("seed %d: window MarshalBinary: %v", seed, err)
			}
			checkAppendEncoded(t, c, data, fmt.Sprintf("seed %d: window %T", seed, win))
		}
		want := bruteForce(f, r, fr)
		for j := range fr.lo {
			g, w := valueOf(got, j), valueOf(want, j)
			if !approxEqual(g, w, 1e-9) {
				t.Fatalf("seed %d frame %d [%d,%d) minus %v: window %v, fresh state %v", seed, j, fr.lo[j], fr.hi[j], exAt(fr, j), g, w)
			}
			if c.oracle != nil && !c.noOracle {
				o := c.oracle(r, fr.frameRows(j))
				if !approxEqual(w, o, c.tolerance()) {
					t.Fatalf("seed %d frame %d [%d,%d): state %v, oracle %v", seed, j, fr.lo[j], fr.hi[j], w, o)
				}
			}
		}
		got.Release()
		want.Release()
	}
}

func stateOf(f Func, r *Rows, rows []int64) State {
	s := f.NewState()
	for _, a := range rows {
		s.Add(r, a)
	}
	return s
}

// checkMerge checks that merging states of consecutive parts equals the
// state of the whole, in either association, commutatively for
// order-insensitive functions, and that Merge leaves its argument alone.
func checkMerge(t *testing.T, c aggCase) {
	f := c.bind(t)
	for seed := range seeds(60) {
		rng := rand.New(rand.NewPCG(seed, 11))
		r := randRows(rng, 1+rng.IntN(120))
		n := int64(r.Len())
		i := rng.Int64N(n + 1)
		j := i + rng.Int64N(n-i+1)
		rows := func(l, h int64) []int64 {
			var out []int64
			for a := l; a < h; a++ {
				out = append(out, r.Base+a)
			}
			return out
		}
		p1, p2, p3 := rows(0, i), rows(i, j), rows(j, n)
		want := result(f, stateOf(f, r, rows(0, n)))

		b := stateOf(f, r, p2)
		bBefore := result(f, b)
		left := stateOf(f, r, p1)
		left.Merge(b)
		if got := result(f, b); !approxEqual(got, bBefore, 0) {
			t.Fatalf("seed %d: Merge modified its argument: %v -> %v", seed, bBefore, got)
		}
		left.Merge(stateOf(f, r, p3))
		bc := stateOf(f, r, p2)
		bc.Merge(stateOf(f, r, p3))
		right := stateOf(f, r, p1)
		right.Merge(bc)
		if got := result(f, left); !approxEqual(got, want, c.tolerance()) {
			t.Fatalf("seed %d: (A+B)+C = %v, whole = %v", seed, got, want)
		}
		if got := result(f, right); !approxEqual(got, want, c.tolerance()) {
			t.Fatalf("seed %d: A+(B+C) = %v, whole = %v", seed, got, want)
		}
		if !c.ordered {
			rev := stateOf(f, r, p3)
			rev.Merge(stateOf(f, r, p1))
			rev.Merge(stateOf(f, r, p2))
			if got := result(f, rev); !approxEqual(got, want, c.tolerance()) {
				t.Fatalf("seed %d: C+A+B = %v, whole = %v", seed, got, want)
			}
		}
		// Merging with empty states changes nothing.
		e := f.NewState()
		e.Merge(stateOf(f, r, rows(0, n)))
		e.Merge(f.NewState())
		if got := result(f, e); !approxEqual(got, want, c.tolerance()) {
			t.Fatalf("seed %d: empty+whole+empty = %v, whole = %v", seed, got, want)
		}
	}
}

// checkRetract checks that retracting added rows restores the result.
func checkRetract(t *testing.T, c aggCase) {
	f := c.bind(t)
	if !f.Retractable() {
		if _, ok := f.NewState().(Retractor); ok {
			t.Logf("%v: state implements Retractor but the function says it is not retractable", c)
		}
		return
	}
	for seed := range seeds(60) {
		rng := rand.New(rand.NewPCG(seed, 13))
		r := randRows(rng, 2+rng.IntN(150))
		n := int64(r.Len())
		var keep, extra []int64
		for a := r.Base; a < r.Base+n; a++ {
			if rng.IntN(2) == 0 {
				keep = append(keep, a)
			} else {
				extra = append(extra, a)
			}
		}
		want := result(f, stateOf(f, r, keep))
		s := f.NewState()
		// Interleave: extra rows are added among the kept ones and then
		// retracted in random order.
		all := slices.Concat(keep, extra)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		if c.ordered {
			slices.Sort(all)
		}
		for _, a := range all {
			s.Add(r, a)
		}
		rng.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
		for _, a := range extra {
			s.(Retractor).Retract(r, a)
		}
		if got := result(f, s); !approxEqual(got, want, c.tolerance()) {
			t.Fatalf("seed %d: after add+retract %v, want %v", seed, got, want)
		}
		for _, a := range keep {
			s.(Retractor).Retract(r, a)
		}
		if got, want := result(f, s), result(f, f.NewState()); !approxEqual(got, want, 0) {
			t.Fatalf("seed %d: retracted to empty: %v, want %v", seed, got, want)
		}
	}
}

// checkReset checks that a state emptied by Reset, then given more rows,
// answers and encodes exactly like a new state given those rows alone
// (the GROUP BY operator recycles the states of emitted windows).
func checkReset(t *testing.T, c aggCase) {
	f := c.bind(t)
	for seed := range seeds(40) {
		rng := rand.New(rand.NewPCG(seed, 23))
		r := randRows(rng, 1+rng.IntN(120))
		var before, after []int64
		for a := r.Base; a < r.End(); a++ {
			if rng.IntN(2) == 0 {
				before = append(before, a)
			} else {
				after = append(after, a)
			}
		}
		s := stateOf(f, r, before)
		if rng.IntN(2) == 0 {
			// A state that was read (results, encodings) before.
			result(f, s)
			if _, err := s.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
		}
		s.Reset()
		for _, a := range after {
			s.Add(r, a)
		}
		sameAsFresh(t, f, s, stateOf(f, r, after), fmt.Sprintf("seed %d: reset state", seed))
	}
}

// sameAsFresh fails t (naming got as what) unless state got answers and
// encodes exactly like fresh, a state made by NewState and given the same
// rows.
func sameAsFresh(t *testing.T, f Func, got, fresh State, what string) {
	t.Helper()
	if g, w := result(f, got), result(f, fresh); !approxEqual(g, w, 0) {
		t.Fatalf("%s: %v, a new state %v", what, g, w)
	}
	gd, err1 := got.MarshalBinary()
	wd, err2 := fresh.MarshalBinary()
	if err1 != nil || err2 != nil || string(gd) != string(wd) {
		t.Fatalf("%s encodes differently from a new state (%v, %v)", what, err1, err2)
	}
}

// checkNewStates checks that states made together by NewStates answer and
// encode exactly like states made by NewState, each given its own rows
// (the GROUP BY operator allocates its windows' states together).
func checkNewStates(t *testing.T, c aggCase) {
	f := c.bind(t)
	for seed := range seeds(20) {
		rng := rand.New(rand.NewPCG(seed, 29))
		r := randRows(rng, 1+rng.IntN(120))
		states := make([]State, 1+rng.IntN(5))
		NewStates(f, states)
		parts := make([][]int64, len(states))
		for a := r.Base; a < r.End(); a++ {
			k := rng.IntN(len(states))
			parts[k] = append(parts[k], a)
			states[k].Add(r, a)
		}
		for k, s := range states {
			sameAsFresh(t, f, s, stateOf(f, r, parts[k]), fmt.Sprintf("seed %d: state %d of NewStates", seed, k))
		}
	}
}

// checkEncoding checks MarshalBinary/UnmarshalBinary round trips, that the
// decoded state carries on like the original, and that truncated or
// padded encodings are rejected.
func checkEncoding(t *testing.T, c aggCase) {
	f := c.bind(t)
	for seed := range seeds(40) {
		rng := rand.New(rand.NewPCG(seed, 17))
		r := randRows(rng, 1+rng.IntN(120))
		n := int64(r.Len())
		k := rng.Int64N(n + 1)
		var first, rest []int64
		for a := r.Base; a < r.Base+n; a++ {
			if a < r.Base+k {
				first = append(first, a)
			} else {
				rest = append(rest, a)
			}
		}
		s := stateOf(f, r, first)
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		s2 := f.NewState()
		// Decoding replaces whatever the state held.
		s2.Add(r, r.Base)
		if err := s2.UnmarshalBinary(data); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if g, w := result(f, s2), result(f, s); !approxEqual(g, w, 0) {
			t.Fatalf("seed %d: decoded %v, encoded %v", seed, g, w)
		}
		data2, _ := s2.MarshalBinary()
		if string(data2) != string(data) {
			t.Fatalf("seed %d: re-encoding differs", seed)
		}
		checkAppendEncoded(t, s, data, fmt.Sprintf("seed %d: state", seed))
		for _, a := range rest {
			s.Add(r, a)
			s2.Add(r, a)
		}
		if g, w := result(f, s2), result(f, s); !approxEqual(g, w, 0) {
			t.Fatalf("seed %d: after more rows decoded %v, original %v", seed, g, w)
		}
		refuseTruncated(t, f, data, seed)
		if err := f.NewState().UnmarshalBinary(append(slices.Clone(data), 0)); err == nil {
			t.Fatalf("seed %d: encoding with a trailing byte accepted", seed)
		}
	}
}

// redecoded decodes s's encoding into a new state of f, which must
// refuse every truncation of it.
func redecoded(t *testing.T, f Func, s State, seed uint64) State {
	t.Helper()
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d := f.NewState()
	if err := d.UnmarshalBinary(data); err != nil {
		t.Fatalf("seed %d: decoding: %v", seed, err)
	}
	refuseTruncated(t, f, data, seed)
	return d
}

// refuseTruncated checks that a state of f refuses every prefix of data,
// an encoding.
func refuseTruncated(t *testing.T, f Func, data []byte, seed uint64) {
	t.Helper()
	for cut := range len(data) {
		if err := f.NewState().UnmarshalBinary(data[:cut]); err == nil {
			t.Fatalf("seed %d: truncated encoding (%d of %d bytes) accepted", seed, cut, len(data))
		}
	}
}

// checkAppendEncoded checks that AppendEncoded appends m's encoding,
// data, preceded by its length, behind a prefix or none.
func checkAppendEncoded(t *testing.T, m encoding.BinaryMarshaler, data []byte, what string) {
	t.Helper()
	for _, prefix := range [][]byte{nil, []byte("pre")} {
		got, err := AppendEncoded(slices.Clone(prefix), m)
		if err != nil {
			t.Fatalf("%s: AppendEncoded: %v", what, err)
		}
		want := append(binary.AppendUvarint(slices.Clone(prefix), uint64(len(data))), data...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: AppendEncoded =\n%x\nwant\n%x", what, got, want)
		}
	}
}

func exAt(f frames, j int) int64 {
	if f.ex == nil {
		return -1
	}
	return f.ex[j]
}
