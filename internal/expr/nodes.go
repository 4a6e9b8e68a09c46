package expr

import (
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"

	"github.com/volga-go/volga/internal/arrowutil"
)

// node is one operator of a compiled expression. eval returns an array of
// ev.n rows that the caller releases.
type node interface {
	eval(ev *evalCtx) (arrow.Array, error)
	dtype() arrow.DataType
	String() string
}

// evalAll evaluates nodes, releasing what was built when one fails.
func evalAll(ev *evalCtx, nodes []node) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(nodes))
	for _, n := range nodes {
		a, err := n.eval(ev)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// colNode reads a column of the batch.
type colNode struct {
	idx  int
	name string
	typ  arrow.DataType
}

func (c *colNode) dtype() arrow.DataType { return c.typ }
func (c *colNode) String() string        { return c.name }
func (c *colNode) eval(ev *evalCtx) (arrow.Array, error) {
	if c.idx >= int(ev.rec.NumCols()) {
		return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("record batch has no column %d (%s)", c.idx, c.name), Text: c.name}
	}
	a := ev.rec.Column(c.idx)
	if !arrow.TypeEqual(a.DataType(), c.typ) {
		return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("column %s is %s in the batch but was compiled as %s", c.name, a.DataType(), c.typ), Text: c.name}
	}
	a.Retain()
	return a, nil
}

// litNode is a constant, broadcast to the batch length.
type litNode struct {
	val  scalar.Scalar
	text string
}

func (l *litNode) dtype() arrow.DataType { return l.val.DataType() }
func (l *litNode) String() string        { return l.text }
func (l *litNode) eval(ev *evalCtx) (arrow.Array, error) {
	if isNull(l.val.DataType()) {
		return array.NewNull(ev.n), nil
	}
	return scalar.MakeArrayFromScalar(l.val, ev.n, ev.mem)
}

// castNode converts a computed value with the compute cast kernels.
type castNode struct {
	child node
	to    arrow.DataType
	text  string
	opts  *compute.CastOptions
}

func (c *castNode) dtype() arrow.DataType { return c.to }
func (c *castNode) String() string        { return c.text }
func (c *castNode) eval(ev *evalCtx) (arrow.Array, error) {
	a, err := c.child.eval(ev)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if isNull(a.DataType()) {
		return array.MakeArrayOfNull(ev.mem, c.to, ev.n), nil
	}
	opts := c.opts
	if opts == nil {
		opts = compute.SafeCastOptions(c.to)
	}
	out, err := compute.CastArray(ev.ctx, a, opts)
	if err != nil {
		return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("cannot cast %s to %s: %v", a.DataType(), c.to, err), Text: c.text}
	}
	return out, nil
}

// callNode applies an arrow compute function; literal arguments are passed
// as scalars, not materialized.
type callNode struct {
	fn   string
	args []node
	typ  arrow.DataType
	text string
}

func (c *callNode) dtype() arrow.DataType { return c.typ }
func (c *callNode) String() string        { return c.text }
func (c *callNode) eval(ev *evalCtx) (arrow.Array, error) {
	datums := make([]compute.Datum, len(c.args))
	var owned []arrow.Array
	defer func() { releaseAll(owned) }()
	for i, a := range c.args {
		if l, ok := a.(*litNode); ok && !isNull(l.val.DataType()) {
			datums[i] = compute.NewDatumWithoutOwning(l.val)
			continue
		}
		arr, err := a.eval(ev)
		if err != nil {
			return nil, err
		}
		owned = append(owned, arr)
		datums[i] = compute.NewDatumWithoutOwning(arr)
	}
	return callKernel(ev, c.fn, c.text, datums...)
}

// callKernel calls the arrow compute function fn on datums and returns its
// result as an array of ev.n rows (a scalar result broadcast).
func callKernel(ev *evalCtx, fn, text string, datums ...compute.Datum) (arrow.Array, error) {
	out, err := compute.CallFunction(ev.ctx, fn, nil, datums...)
	if err != nil {
		return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("%s failed: %v", fn, err), Text: text}
	}
	defer out.Release()
	switch d := out.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(d.Value, ev.n, ev.mem)
	}
	return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("%s returned %s", fn, out.Kind()), Text: text}
}

// arithOp is a division or remainder, with DuckDB's rules for a zero
// divisor: / is float64 division and gives +Inf, -Inf or NaN (0/0) as
// IEEE 754 does; % on float64 is math.Mod (NaN for a zero divisor); DIV and
// % on int64 give NULL for a zero divisor and fail on MinInt64 and -1, whose
// quotient overflows.
type arithOp struct {
	op   string // "/", "div", "%"
	l, r node   // already coerced to typ (float64 for "/")
	typ  arrow.DataType
	text string
}

func (a *arithOp) dtype() arrow.DataType { return a.typ }
func (a *arithOp) String() string        { return a.text }
func (a *arithOp) eval(ev *evalCtx) (arrow.Array, error) {
	arrs, err := evalAll(ev, []node{a.l, a.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	if a.typ.ID() == arrow.FLOAT64 {
		l, r := arrs[0].(*array.Float64), arrs[1].(*array.Float64)
		b := array.NewFloat64Builder(ev.mem)
		defer b.Release()
		b.Reserve(ev.n)
		for i := 0; i < ev.n; i++ {
			if l.IsNull(i) || r.IsNull(i) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			x, y := l.Value(i), r.Value(i)
			switch a.op {
			case "/":
				b.UnsafeAppend(x / y)
			default:
				b.UnsafeAppend(math.Mod(x, y))
			}
		}
		return b.NewArray(), nil
	}
	if isUint64(a.typ) {
		l, r := arrs[0].(*array.Uint64), arrs[1].(*array.Uint64)
		b := array.NewUint64Builder(ev.mem)
		defer b.Release()
		b.Reserve(ev.n)
		for i := 0; i < ev.n; i++ {
			if l.IsNull(i) || r.IsNull(i) || r.Value(i) == 0 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			if a.op == "%" {
				b.UnsafeAppend(l.Value(i) % r.Value(i))
			} else {
				b.UnsafeAppend(l.Value(i) / r.Value(i))
			}
		}
		return b.NewArray(), nil
	}
	l, r := arrs[0].(*array.Int64), arrs[1].(*array.Int64)
	b := array.NewInt64Builder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if l.IsNull(i) || r.IsNull(i) || r.Value(i) == 0 {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		x, y := l.Value(i), r.Value(i)
		if x == math.MinInt64 && y == -1 {
			// Go defines MinInt64 % -1 as 0 and MinInt64 / -1 as
			// MinInt64; DuckDB reports both as an overflow.
			return nil, &Error{Kind: ErrEval, Msg: "integer overflow in division of -9223372036854775808 by -1", Text: a.text}
		}
		if a.op == "%" {
			b.UnsafeAppend(x % y)
		} else {
			b.UnsafeAppend(x / y)
		}
	}
	return b.NewArray(), nil
}

// intArithNode is + - * on int64 or uint64, failing on overflow as DuckDB
// does (for uint64, a result below 0 too). (arrow-go v18.8.0's checked
// "add" and "subtract" kernels miss the overflows that wrap across the
// sign bit, such as -9223372036854775808 + -1 and 1 - -9223372036854775808,
// and return the wrapped value.)
type intArithNode struct {
	op   string         // "+", "-", "*"
	l, r node           // of type typ
	typ  arrow.DataType // int64 or uint64
	text string
}

func (a *intArithNode) dtype() arrow.DataType { return a.typ }
func (a *intArithNode) String() string        { return a.text }
func (a *intArithNode) eval(ev *evalCtx) (arrow.Array, error) {
	arrs, err := evalAll(ev, []node{a.l, a.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	if isUint64(a.typ) {
		return a.evalUint(ev, arrs[0].(*array.Uint64), arrs[1].(*array.Uint64))
	}
	l, r := arrs[0].(*array.Int64), arrs[1].(*array.Int64)
	b := array.NewInt64Builder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if l.IsNull(i) || r.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		v, ok := checkedInt(a.op, l.Value(i), r.Value(i))
		if !ok {
			return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("integer overflow in %d %s %d", l.Value(i), a.op, r.Value(i)), Text: a.text}
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray(), nil
}

func (a *intArithNode) evalUint(ev *evalCtx, l, r *array.Uint64) (arrow.Array, error) {
	b := array.NewUint64Builder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if l.IsNull(i) || r.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		v, ok := checkedUint(a.op, l.Value(i), r.Value(i))
		if !ok {
			return nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("integer overflow in %d %s %d (uint64)", l.Value(i), a.op, r.Value(i)), Text: a.text}
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray(), nil
}

// checkedUint computes x op y, reporting false on uint64 overflow or a
// result below 0.
func checkedUint(op string, x, y uint64) (uint64, bool) {
	switch op {
	case "+":
		s, carry := bits.Add64(x, y, 0)
		return s, carry == 0
	case "-":
		d, borrow := bits.Sub64(x, y, 0)
		return d, borrow == 0
	}
	hi, lo := bits.Mul64(x, y)
	return lo, hi == 0
}

// checkedInt computes x op y, reporting false on int64 overflow.
func checkedInt(op string, x, y int64) (int64, bool) {
	switch op {
	case "+":
		s := x + y
		return s, (x >= 0) != (y >= 0) || (s >= 0) == (x >= 0)
	case "-":
		d := x - y
		return d, (x >= 0) == (y >= 0) || (d >= 0) == (x >= 0)
	}
	if x == 0 || y == 0 {
		return 0, true
	}
	if (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		return 0, false
	}
	p := x * y
	return p, p/y == x
}

// floatCmpNode compares two float64 operands as DuckDB does: NaN equals
// NaN and is greater than every other value (+Inf included), -0 equals 0,
// and otherwise the IEEE 754 order applies. NULL on either side gives NULL.
// (arrow's comparison kernels follow IEEE 754, where every comparison with
// NaN is false.)
type floatCmpNode struct {
	op   string // a key of compareFuncs
	l, r node   // float64
	text string
}

func (c *floatCmpNode) dtype() arrow.DataType { return tBool }
func (c *floatCmpNode) String() string        { return c.text }
func (c *floatCmpNode) eval(ev *evalCtx) (arrow.Array, error) {
	arrs, err := evalAll(ev, []node{c.l, c.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	l, r := arrs[0].(*array.Float64), arrs[1].(*array.Float64)
	if !hasNaN(l.Float64Values()) && !hasNaN(r.Float64Values()) {
		// Without NaN, IEEE 754 order is DuckDB's: arrow's kernel, which
		// is several times faster than the loop below.
		return callKernel(ev, compareFuncs[c.op], c.text,
			compute.NewDatumWithoutOwning(l), compute.NewDatumWithoutOwning(r))
	}
	b := array.NewBooleanBuilder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if l.IsNull(i) || r.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		b.UnsafeAppend(cmpResult(c.op, compareFloat(l.Value(i), r.Value(i))))
	}
	return b.NewArray(), nil
}

// hasNaN reports whether vs holds a NaN (in a NULL slot too, which only
// costs the slower path).
func hasNaN(vs []float64) bool {
	for _, v := range vs {
		if v != v {
			return true
		}
	}
	return false
}

// compareFloat orders x and y with NaN above everything, equal to itself.
func compareFloat(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// cmpResult applies comparison operator op to the outcome c of a
// three-way comparison.
func cmpResult(op string, c int) bool {
	switch op {
	case sqlparser.EqualStr, sqlparser.NullSafeEqualStr:
		return c == 0
	case sqlparser.NotEqualStr:
		return c != 0
	case sqlparser.LessThanStr:
		return c < 0
	case sqlparser.LessEqualStr:
		return c <= 0
	case sqlparser.GreaterThanStr:
		return c > 0
	case sqlparser.GreaterEqualStr:
		return c >= 0
	}
	panic("expr: unknown comparison operator " + op)
}

// compareNode compares two operands already converted to one type (or an
// int64 and a uint64, see unify): with DuckDB's NaN rules for float64,
// exactly for an int64 and a uint64, with arrow's kernels otherwise.
func compareNode(op string, x, y node, text string) node {
	if x.dtype().ID() == arrow.FLOAT64 {
		return &floatCmpNode{op: op, l: x, r: y, text: text}
	}
	if isUint64(x.dtype()) != isUint64(y.dtype()) && isInt(x.dtype()) && isInt(y.dtype()) {
		return &mixedIntCmpNode{op: op, l: x, r: y, text: text}
	}
	return &callNode{fn: compareFuncs[op], args: []node{x, y}, typ: tBool, text: text}
}

// mixedIntCmpNode compares an int64 with a uint64 exactly, as DuckDB does
// (through HUGEINT): a negative int64 is below every uint64. Converting
// either side to the other's type would fail or wrap for some values.
type mixedIntCmpNode struct {
	op   string
	l, r node // one int64, the other uint64
	text string
}

func (c *mixedIntCmpNode) dtype() arrow.DataType { return tBool }
func (c *mixedIntCmpNode) String() string        { return c.text }
func (c *mixedIntCmpNode) eval(ev *evalCtx) (arrow.Array, error) {
	arrs, err := evalAll(ev, []node{c.l, c.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	// cmp compares an int64 with a uint64.
	cmp := func(x int64, y uint64) int {
		switch {
		case x < 0 || uint64(x) < y:
			return -1
		case uint64(x) > y:
			return 1
		}
		return 0
	}
	b := array.NewBooleanBuilder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if arrs[0].IsNull(i) || arrs[1].IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		var o int
		if s, ok := arrs[0].(*array.Int64); ok {
			o = cmp(s.Value(i), arrs[1].(*array.Uint64).Value(i))
		} else {
			o = -cmp(arrs[1].(*array.Int64).Value(i), arrs[0].(*array.Uint64).Value(i))
		}
		b.UnsafeAppend(cmpResult(c.op, o))
	}
	return b.NewArray(), nil
}

// pickNode chooses, row by row, the value of one of its sources: CASE,
// coalesce and nullif.
type pickNode struct {
	// conds are boolean; for CASE, source i is taken where conds[i] is
	// TRUE (the first such). With no conds (coalesce) the first non-NULL
	// source is taken.
	conds []node
	vals  []node // coerced to typ
	els   node   // may be nil: NULL
	typ   arrow.DataType
	text  string
}

func (p *pickNode) dtype() arrow.DataType { return p.typ }
func (p *pickNode) String() string        { return p.text }
func (p *pickNode) eval(ev *evalCtx) (arrow.Array, error) {
	vals := p.vals
	if p.els != nil {
		vals = append(append([]node(nil), p.vals...), p.els)
	}
	// choice[i] is the source row i takes: -1 NULL, undecided while the
	// conditions (CASE) or sources (coalesce) are walked.
	choice := make([]int, ev.n)
	for i := range choice {
		choice[i] = -1
	}
	srcs := make([]arrow.Array, 0, len(vals))
	defer func() { releaseAll(srcs) }()
	if p.conds == nil {
		// coalesce: source j matters to the rows every earlier source left
		// NULL.
		for j, v := range vals {
			a, err := evalLazy(ev, v, func() []int32 { return undecided(choice, -1) })
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, a)
			for i, c := range choice {
				if c < 0 && a.IsValid(i) {
					choice[i] = j
				}
			}
		}
		return pick(ev, p.typ, srcs, choice)
	}
	// CASE: condition j matters to the rows no earlier condition took;
	// value j to the rows condition j took; ELSE to the rows none took.
	decided := make([]bool, ev.n)
	for j, cn := range p.conds {
		c, err := evalLazy(ev, cn, func() []int32 { return open(decided) })
		if err != nil {
			return nil, err
		}
		b := c.(*array.Boolean)
		for i := range choice {
			if !decided[i] && b.IsValid(i) && b.Value(i) {
				choice[i], decided[i] = j, true
			}
		}
		c.Release()
	}
	if p.els != nil {
		for i := range choice {
			if !decided[i] {
				choice[i] = len(p.vals)
			}
		}
	}
	for j, v := range vals {
		a, err := evalLazy(ev, v, func() []int32 { return undecided(choice, j) })
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, a)
	}
	return pick(ev, p.typ, srcs, choice)
}

// undecided returns the rows whose choice is c.
func undecided(choice []int, c int) []int32 {
	var rows []int32
	for i, x := range choice {
		if x == c {
			rows = append(rows, int32(i))
		}
	}
	return rows
}

// open returns the rows not decided.
func open(decided []bool) []int32 {
	var rows []int32
	for i, d := range decided {
		if !d {
			rows = append(rows, int32(i))
		}
	}
	return rows
}

// evalLazy evaluates n on the whole batch, the fast way. When that fails,
// it evaluates n again on only the rows that need its value (rows()) and
// returns their values in place, NULL elsewhere: as in DuckDB, an error
// in a branch of a CASE or an argument of coalesce that no row needs (a
// CAST of the text a WHEN clause ruled out, an overflow) is no error.
func evalLazy(ev *evalCtx, n node, rows func() []int32) (arrow.Array, error) {
	a, err := n.eval(ev)
	if err == nil {
		return a, nil
	}
	idx := rows()
	if len(idx) == ev.n {
		return nil, err
	}
	if len(idx) == 0 {
		return array.MakeArrayOfNull(ev.mem, n.dtype(), ev.n), nil
	}
	sub, terr := arrowutil.Take(ev.mem, ev.rec, idx)
	if terr != nil {
		return nil, terr
	}
	defer sub.Release()
	part, err := n.eval(&evalCtx{ctx: ev.ctx, mem: ev.mem, rec: sub, n: len(idx)})
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return scatter(ev, n.dtype(), part, idx)
}

// scatter returns an array of ev.n rows with part's row k at idx[k] and
// NULL elsewhere.
func scatter(ev *evalCtx, t arrow.DataType, part arrow.Array, idx []int32) (arrow.Array, error) {
	if isNull(t) {
		return array.NewNull(ev.n), nil
	}
	bld := array.NewBuilder(ev.mem, t)
	defer bld.Release()
	bld.Reserve(ev.n)
	k := 0
	for i := 0; i < ev.n; i++ {
		if k < len(idx) && int(idx[k]) == i {
			if err := appendValue(bld, t, part, k); err != nil {
				return nil, err
			}
			k++
			continue
		}
		bld.AppendNull()
	}
	return bld.NewArray(), nil
}

// pick builds an array of type t taking row i from srcs[choice[i]], NULL
// where choice[i] < 0.
func pick(ev *evalCtx, t arrow.DataType, srcs []arrow.Array, choice []int) (arrow.Array, error) {
	if isNull(t) {
		return array.NewNull(ev.n), nil
	}
	bld := array.NewBuilder(ev.mem, t)
	defer bld.Release()
	bld.Reserve(ev.n)
	for i, c := range choice {
		if c < 0 {
			bld.AppendNull()
			continue
		}
		if err := appendValue(bld, t, srcs[c], i); err != nil {
			return nil, err
		}
	}
	return bld.NewArray(), nil
}

// appendValue appends row i of src (of type t) to bld.
func appendValue(bld array.Builder, t arrow.DataType, src arrow.Array, i int) error {
	if src.IsNull(i) {
		bld.AppendNull()
		return nil
	}
	switch b := bld.(type) {
	case *array.Int64Builder:
		b.Append(src.(*array.Int64).Value(i))
	case *array.Float64Builder:
		b.Append(src.(*array.Float64).Value(i))
	case *array.StringBuilder:
		b.Append(src.(*array.String).Value(i))
	case *array.BooleanBuilder:
		b.Append(src.(*array.Boolean).Value(i))
	case *array.TimestampBuilder:
		b.Append(src.(*array.Timestamp).Value(i))
	default:
		if err := bld.AppendValueFromString(src.ValueStr(i)); err != nil {
			return &Error{Kind: ErrEval, Msg: fmt.Sprintf("cannot copy a %s value: %v", t, err)}
		}
	}
	return nil
}

// strNode maps each string (lower, upper) or its length.
type strNode struct {
	child  node // string
	mapper func(string) string
	length bool // result is int64 character count
	text   string
}

func (s *strNode) dtype() arrow.DataType {
	if s.length {
		return tInt64
	}
	return tString
}
func (s *strNode) String() string { return s.text }
func (s *strNode) eval(ev *evalCtx) (arrow.Array, error) {
	a, err := s.child.eval(ev)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	in := a.(*array.String)
	if s.length {
		b := array.NewInt64Builder(ev.mem)
		defer b.Release()
		b.Reserve(ev.n)
		for i := 0; i < ev.n; i++ {
			if in.IsNull(i) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(int64(utf8.RuneCountInString(in.Value(i))))
		}
		return b.NewArray(), nil
	}
	b := array.NewStringBuilder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	for i := 0; i < ev.n; i++ {
		if in.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(s.mapper(in.Value(i)))
	}
	return b.NewArray(), nil
}

// boolTestNode is IS [NOT] TRUE / FALSE (never NULL), or a LIKE match
// (NULL in, NULL out).
type boolTestNode struct {
	child node
	// for IS [NOT] TRUE/FALSE
	want, negate bool
	// for LIKE
	re *regexp.Regexp
	// for <=>: the two sides
	l, r node
	text string
}

func (t *boolTestNode) dtype() arrow.DataType { return tBool }
func (t *boolTestNode) String() string        { return t.text }
func (t *boolTestNode) eval(ev *evalCtx) (arrow.Array, error) {
	b := array.NewBooleanBuilder(ev.mem)
	defer b.Release()
	b.Reserve(ev.n)
	switch {
	case t.l != nil: // null-safe equality: l <=> r
		eq := compareNode(sqlparser.EqualStr, t.l, t.r, t.text)
		arrs, err := evalAll(ev, []node{t.l, t.r, eq})
		if err != nil {
			return nil, err
		}
		defer releaseAll(arrs)
		res := arrs[2].(*array.Boolean)
		for i := 0; i < ev.n; i++ {
			ln, rn := arrs[0].IsNull(i), arrs[1].IsNull(i)
			switch {
			case ln || rn:
				b.UnsafeAppend(ln && rn)
			default:
				b.UnsafeAppend(res.Value(i))
			}
		}
	case t.re != nil:
		a, err := t.child.eval(ev)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		s := a.(*array.String)
		for i := 0; i < ev.n; i++ {
			if s.IsNull(i) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(t.re.MatchString(s.Value(i)) != t.negate)
		}
	default:
		a, err := t.child.eval(ev)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		for i := 0; i < ev.n; i++ {
			v := false
			if bb, ok := a.(*array.Boolean); ok && bb.IsValid(i) {
				v = bb.Value(i) == t.want
			}
			b.UnsafeAppend(v != t.negate)
		}
	}
	return b.NewArray(), nil
}

// likeRegexp translates a LIKE pattern: % is any run of characters, _ one
// character, and the escape character (none when escape < 0) makes the
// next character literal. As in DuckDB, there is no escape character
// unless ESCAPE names one: a backslash is an ordinary character. A
// pattern ending in the escape character is an error, as in DuckDB.
func likeRegexp(pattern string, escape rune) (*regexp.Regexp, error) {
	var sb strings.Builder
	sb.WriteString(`(?s)^`)
	escaped := false
	for _, r := range pattern {
		switch {
		case escaped:
			sb.WriteString(regexp.QuoteMeta(string(r)))
			escaped = false
		case r == escape:
			escaped = true
		case r == '%':
			sb.WriteString(`.*`)
		case r == '_':
			sb.WriteString(`.`)
		default:
			sb.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if escaped {
		return nil, fmt.Errorf("the pattern ends with the escape character %q", escape)
	}
	sb.WriteString(`$`)
	return regexp.Compile(sb.String())
}
