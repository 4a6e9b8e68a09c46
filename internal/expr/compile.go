package expr

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"
)

type compiler struct {
	schema *arrow.Schema
}

var compareFuncs = map[string]string{
	sqlparser.EqualStr:        "equal",
	sqlparser.NotEqualStr:     "not_equal",
	sqlparser.LessThanStr:     "less",
	sqlparser.LessEqualStr:    "less_equal",
	sqlparser.GreaterThanStr:  "greater",
	sqlparser.GreaterEqualStr: "greater_equal",
}

func (c *compiler) compile(e sqlparser.Expr) (node, error) {
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return c.compile(e.Expr)
	case *sqlparser.ColName:
		return c.column(e)
	case *sqlparser.SQLVal:
		return literal(e)
	case sqlparser.BoolVal:
		return &litNode{val: scalar.NewBooleanScalar(bool(e)), text: sqlparser.String(e)}, nil
	case *sqlparser.NullVal:
		return &litNode{val: scalar.MakeNullScalar(tNull), text: "NULL"}, nil
	case *sqlparser.AndExpr:
		return c.logical("and_kleene", e, e.Left, e.Right)
	case *sqlparser.OrExpr:
		return c.logical("or_kleene", e, e.Left, e.Right)
	case *sqlparser.NotExpr:
		x, err := c.boolArg(e.Expr, e)
		if err != nil {
			return nil, err
		}
		return &callNode{fn: "not", args: []node{x}, typ: tBool, text: sqlparser.String(e)}, nil
	case *sqlparser.ComparisonExpr:
		return c.comparison(e)
	case *sqlparser.RangeCond:
		return c.between(e)
	case *sqlparser.IsExpr:
		return c.is(e)
	case *sqlparser.BinaryExpr:
		return c.binary(e)
	case *sqlparser.UnaryExpr:
		return c.unary(e)
	case *sqlparser.CaseExpr:
		return c.caseExpr(e)
	case *sqlparser.FuncExpr:
		return c.function(e)
	case *sqlparser.ConvertExpr:
		return c.cast(e)
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, errorf(ErrUnsupported, e, "subqueries are not supported")
	case *sqlparser.IntervalExpr:
		return nil, errorf(ErrUnsupported, e, "INTERVAL values are not supported in expressions")
	}
	return nil, errorf(ErrUnsupported, e, "unsupported expression")
}

func (c *compiler) column(e *sqlparser.ColName) (node, error) {
	name := e.Name.String()
	idx := -1
	for i, f := range c.schema.Fields() {
		if f.Name == name {
			idx = i
			break
		}
	}
	if idx < 0 {
		for i, f := range c.schema.Fields() {
			if strings.EqualFold(f.Name, name) {
				if idx >= 0 {
					return nil, errorf(ErrUnknownColumn, e, "column name %q is ambiguous: the schema has %q and %q", name, c.schema.Field(idx).Name, f.Name)
				}
				idx = i
			}
		}
	}
	if idx < 0 {
		return nil, errorf(ErrUnknownColumn, e, "unknown column %q", name)
	}
	f := c.schema.Field(idx)
	return &colNode{idx: idx, name: f.Name, typ: f.Type}, nil
}

func literal(v *sqlparser.SQLVal) (node, error) {
	text := sqlparser.String(v)
	switch v.Type {
	case sqlparser.StrVal:
		return &litNode{val: scalar.NewStringScalar(string(v.Val)), text: text}, nil
	case sqlparser.IntVal:
		n, err := strconv.ParseInt(string(v.Val), 10, 64)
		if err != nil {
			// Beyond int64: uint64 up to 2^64-1, so that u = 18446744073709551615
			// compares exactly; a float64 beyond that.
			if u, uerr := strconv.ParseUint(string(v.Val), 10, 64); uerr == nil {
				return &litNode{val: scalar.NewUint64Scalar(u), text: text}, nil
			}
			f, ferr := strconv.ParseFloat(string(v.Val), 64)
			if ferr != nil {
				return nil, errorf(ErrType, v, "invalid integer literal")
			}
			return &litNode{val: scalar.NewFloat64Scalar(f), text: text}, nil
		}
		return &litNode{val: scalar.NewInt64Scalar(n), text: text}, nil
	case sqlparser.FloatVal:
		f, err := strconv.ParseFloat(string(v.Val), 64)
		if err != nil {
			return nil, errorf(ErrType, v, "invalid number literal")
		}
		return &litNode{val: scalar.NewFloat64Scalar(f), text: text}, nil
	case sqlparser.HexNum:
		n, err := strconv.ParseInt(string(v.Val), 0, 64)
		if err != nil {
			return nil, errorf(ErrType, v, "invalid hexadecimal literal")
		}
		return &litNode{val: scalar.NewInt64Scalar(n), text: text}, nil
	case sqlparser.ValArg:
		return nil, errorf(ErrUnsupported, v, "placeholders are not supported")
	}
	return nil, errorf(ErrUnsupported, v, "unsupported literal")
}

// boolArg compiles an operand of AND/OR/NOT, which must be boolean (or NULL).
func (c *compiler) boolArg(e sqlparser.Expr, parent sqlparser.SQLNode) (node, error) {
	n, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	if isNull(n.dtype()) {
		return coerce(n, tBool, parent)
	}
	if !isBool(n.dtype()) {
		return nil, errorf(ErrType, parent, "%s is %s, not boolean", sqlparser.String(e), n.dtype())
	}
	return n, nil
}

func (c *compiler) logical(fn string, e sqlparser.Expr, l, r sqlparser.Expr) (node, error) {
	a, err := c.boolArg(l, e)
	if err != nil {
		return nil, err
	}
	b, err := c.boolArg(r, e)
	if err != nil {
		return nil, err
	}
	return &callNode{fn: fn, args: []node{a, b}, typ: tBool, text: sqlparser.String(e)}, nil
}

// unify converts two operands to their common type. A uint64 operand and
// a signed integer one (a column, or a negative literal) have none that
// holds both: each becomes its normal type, int64 or uint64, and
// compareNode compares them exactly.
func unify(a, b node, at sqlparser.SQLNode, what string) (node, node, error) {
	if ta, tb := a.dtype(), b.dtype(); isInt(ta) && isInt(tb) && isUint64(ta) != isUint64(tb) && !unsignedPair(a, b) {
		x, err := coerce(a, normal(ta), at)
		if err != nil {
			return nil, nil, err
		}
		y, err := coerce(b, normal(tb), at)
		if err != nil {
			return nil, nil, err
		}
		return x, y, nil
	}
	if unsignedPair(a, b) {
		x, err := coerce(a, tUint64, at)
		if err != nil {
			return nil, nil, err
		}
		y, err := coerce(b, tUint64, at)
		if err != nil {
			return nil, nil, err
		}
		return x, y, nil
	}
	t, ok := commonType(a.dtype(), b.dtype())
	if !ok {
		return nil, nil, errorf(ErrType, at, "cannot %s %s and %s", what, a.dtype(), b.dtype())
	}
	if isNull(t) {
		t = tBool
	}
	if t.ID() == arrow.FLOAT64 {
		a, b = asFloat32(a, b), asFloat32(b, a)
	}
	// Only a literal string can become a timestamp at compile time.
	for _, side := range []node{a, b} {
		if t.ID() == arrow.TIMESTAMP && isString(side.dtype()) {
			if _, lit := side.(*litNode); !lit {
				return nil, nil, errorf(ErrType, at, "cannot %s a timestamp and a string column; CAST the string first", what)
			}
		}
	}
	x, err := coerce(a, t, at)
	if err != nil {
		return nil, nil, err
	}
	y, err := coerce(b, t, at)
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// asFloat32 returns lit rounded to the nearest float32 when it is a number
// literal compared with a float32 value (other), as DuckDB casts the literal
// to FLOAT there: a float32 column holding 0.1 equals 0.1 (as float64 it is
// 0.10000000149011612). Comparing in float64 after the rounding is
// comparing in float32. Anything else is returned as it is.
func asFloat32(lit, other node) node {
	l, ok := lit.(*litNode)
	if !ok || other.dtype().ID() != arrow.FLOAT32 || !l.val.IsValid() || !isNumeric(l.val.DataType()) {
		return lit
	}
	v, err := castScalar(l.val, tFloat64)
	if err != nil {
		return lit
	}
	f := float64(float32(v.(*scalar.Float64).Value))
	return &litNode{val: scalar.NewFloat64Scalar(f), text: l.text}
}

func (c *compiler) compareNodes(op string, l, r node, at sqlparser.SQLNode) (node, error) {
	x, y, err := unify(l, r, at, "compare")
	if err != nil {
		return nil, err
	}
	text := sqlparser.String(at)
	if op == sqlparser.NullSafeEqualStr {
		return &boolTestNode{l: x, r: y, text: text}, nil
	}
	return compareNode(op, x, y, text), nil
}

func (c *compiler) comparison(e *sqlparser.ComparisonExpr) (node, error) {
	l, err := c.compile(e.Left)
	if err != nil {
		return nil, err
	}
	switch e.Operator {
	case sqlparser.InStr, sqlparser.NotInStr:
		tuple, ok := e.Right.(sqlparser.ValTuple)
		if !ok {
			return nil, errorf(ErrUnsupported, e, "IN needs a list of values")
		}
		var acc node
		for _, v := range tuple {
			r, err := c.compile(v)
			if err != nil {
				return nil, err
			}
			eq, err := c.compareNodes(sqlparser.EqualStr, l, r, e)
			if err != nil {
				return nil, err
			}
			if acc == nil {
				acc = eq
			} else {
				acc = &callNode{fn: "or_kleene", args: []node{acc, eq}, typ: tBool, text: sqlparser.String(e)}
			}
		}
		if acc == nil {
			return nil, errorf(ErrUnsupported, e, "IN needs at least one value")
		}
		if e.Operator == sqlparser.NotInStr {
			acc = &callNode{fn: "not", args: []node{acc}, typ: tBool, text: sqlparser.String(e)}
		}
		return acc, nil
	case sqlparser.LikeStr, sqlparser.NotLikeStr:
		escape := rune(-1)
		if e.Escape != nil {
			esc, ok := e.Escape.(*sqlparser.SQLVal)
			if !ok || esc.Type != sqlparser.StrVal || utf8.RuneCount(esc.Val) > 1 {
				return nil, errorf(ErrUnsupported, e, "the LIKE escape must be a string literal of one character")
			}
			if len(esc.Val) > 0 {
				escape, _ = utf8.DecodeRune(esc.Val)
			}
		}
		pat, ok := e.Right.(*sqlparser.SQLVal)
		if !ok || pat.Type != sqlparser.StrVal {
			return nil, errorf(ErrUnsupported, e, "the LIKE pattern must be a string literal")
		}
		if isNull(l.dtype()) {
			return &litNode{val: scalar.MakeNullScalar(tBool), text: "NULL"}, nil
		}
		if !isString(l.dtype()) {
			return nil, errorf(ErrType, e, "LIKE needs a string, not %s", l.dtype())
		}
		l, _ = coerce(l, tString, e)
		re, err := likeRegexp(string(pat.Val), escape)
		if err != nil {
			return nil, errorf(ErrUnsupported, e, "invalid LIKE pattern: %v", err)
		}
		return &boolTestNode{child: l, re: re, negate: e.Operator == sqlparser.NotLikeStr, text: sqlparser.String(e)}, nil
	}
	if _, ok := compareFuncs[e.Operator]; !ok && e.Operator != sqlparser.NullSafeEqualStr {
		return nil, errorf(ErrUnsupported, e, "unsupported operator %s", strings.ToUpper(e.Operator))
	}
	r, err := c.compile(e.Right)
	if err != nil {
		return nil, err
	}
	return c.compareNodes(e.Operator, l, r, e)
}

func (c *compiler) between(e *sqlparser.RangeCond) (node, error) {
	x, err := c.compile(e.Left)
	if err != nil {
		return nil, err
	}
	from, err := c.compile(e.From)
	if err != nil {
		return nil, err
	}
	to, err := c.compile(e.To)
	if err != nil {
		return nil, err
	}
	ge, err := c.compareNodes(sqlparser.GreaterEqualStr, x, from, e)
	if err != nil {
		return nil, err
	}
	le, err := c.compareNodes(sqlparser.LessEqualStr, x, to, e)
	if err != nil {
		return nil, err
	}
	text := sqlparser.String(e)
	var n node = &callNode{fn: "and_kleene", args: []node{ge, le}, typ: tBool, text: text}
	if e.Operator == sqlparser.NotBetweenStr {
		n = &callNode{fn: "not", args: []node{n}, typ: tBool, text: text}
	}
	return n, nil
}

func (c *compiler) is(e *sqlparser.IsExpr) (node, error) {
	x, err := c.compile(e.Expr)
	if err != nil {
		return nil, err
	}
	text := sqlparser.String(e)
	if isNull(x.dtype()) && (e.Operator == sqlparser.IsNullStr || e.Operator == sqlparser.IsNotNullStr) {
		// Every value of a NULL-typed expression (NULL, coalesce(NULL,
		// NULL), a CASE whose branches are all NULL) is NULL. (arrow-go's
		// is_null kernel says false for every row of a NullArray.)
		return &litNode{val: scalar.NewBooleanScalar(e.Operator == sqlparser.IsNullStr), text: text}, nil
	}
	switch e.Operator {
	case sqlparser.IsNullStr:
		return &callNode{fn: "is_null", args: []node{x}, typ: tBool, text: text}, nil
	case sqlparser.IsNotNullStr:
		return &callNode{fn: "is_not_null", args: []node{x}, typ: tBool, text: text}, nil
	}
	if !isBool(x.dtype()) && !isNull(x.dtype()) {
		return nil, errorf(ErrType, e, "%s needs a boolean, not %s", strings.ToUpper(e.Operator), x.dtype())
	}
	t := &boolTestNode{child: x, text: text}
	switch e.Operator {
	case sqlparser.IsTrueStr:
		t.want = true
	case sqlparser.IsNotTrueStr:
		t.want, t.negate = true, true
	case sqlparser.IsFalseStr:
	case sqlparser.IsNotFalseStr:
		t.negate = true
	default:
		return nil, errorf(ErrUnsupported, e, "unsupported operator %s", e.Operator)
	}
	return t, nil
}

func (c *compiler) binary(e *sqlparser.BinaryExpr) (node, error) {
	l, err := c.compile(e.Left)
	if err != nil {
		return nil, err
	}
	r, err := c.compile(e.Right)
	if err != nil {
		return nil, err
	}
	text := sqlparser.String(e)
	for _, side := range []node{l, r} {
		if !isNumeric(side.dtype()) && !isNull(side.dtype()) {
			return nil, errorf(ErrType, e, "operator %s needs numbers, not %s (%s)", e.Operator, side.dtype(), side.String())
		}
	}
	t := tInt64
	switch {
	case isFloat(l.dtype()) || isFloat(r.dtype()):
		t = tFloat64
	case unsignedPair(l, r):
		// uint64 arithmetic, as DuckDB's UBIGINT: an overflow, below 0
		// too, is an error.
		t = tUint64
	}
	switch e.Operator {
	case sqlparser.PlusStr, sqlparser.MinusStr, sqlparser.MultStr:
		fn := map[string]string{sqlparser.PlusStr: "add", sqlparser.MinusStr: "subtract", sqlparser.MultStr: "multiply"}[e.Operator]
		if l, err = coerce(l, t, e); err != nil {
			return nil, err
		}
		if r, err = coerce(r, t, e); err != nil {
			return nil, err
		}
		if t.ID() == arrow.INT64 || t.ID() == arrow.UINT64 {
			return &intArithNode{op: e.Operator, l: l, r: r, typ: t, text: text}, nil
		}
		return &callNode{fn: fn, args: []node{l, r}, typ: t, text: text}, nil
	case sqlparser.DivStr:
		// DuckDB semantics: / is floating-point division, also on integers.
		t = tFloat64
	case sqlparser.IntDivStr:
		if isFloat(t) {
			return nil, errorf(ErrType, e, "DIV needs integers")
		}
	case sqlparser.ModStr:
	default:
		return nil, errorf(ErrUnsupported, e, "unsupported operator %s", e.Operator)
	}
	if l, err = coerce(l, t, e); err != nil {
		return nil, err
	}
	if r, err = coerce(r, t, e); err != nil {
		return nil, err
	}
	op := e.Operator
	if op == sqlparser.IntDivStr {
		op = "div"
	}
	return &arithOp{op: op, l: l, r: r, typ: t, text: text}, nil
}

func (c *compiler) unary(e *sqlparser.UnaryExpr) (node, error) {
	x, err := c.compile(e.Expr)
	if err != nil {
		return nil, err
	}
	switch e.Operator {
	case sqlparser.UPlusStr:
		if !isNumeric(x.dtype()) && !isNull(x.dtype()) {
			return nil, errorf(ErrType, e, "unary + needs a number, not %s", x.dtype())
		}
		return x, nil
	case sqlparser.UMinusStr:
		if isNull(x.dtype()) {
			return x, nil
		}
		if !isNumeric(x.dtype()) {
			return nil, errorf(ErrType, e, "unary - needs a number, not %s", x.dtype())
		}
		if l, ok := x.(*litNode); ok && l.val.IsValid() && isUint64(l.val.DataType()) {
			// An integer literal beyond int64: -9223372036854775808 is
			// MinInt64, anything larger a float64.
			v := l.val.(*scalar.Uint64).Value
			if v == 1<<63 {
				return &litNode{val: scalar.NewInt64Scalar(math.MinInt64), text: sqlparser.String(e)}, nil
			}
			return &litNode{val: scalar.NewFloat64Scalar(-float64(v)), text: sqlparser.String(e)}, nil
		}
		// A negative number literal stays a literal (so that it can take
		// the type of what it is compared with, see asFloat32).
		if l, ok := x.(*litNode); ok && l.val.IsValid() {
			switch v := l.val.(type) {
			case *scalar.Float64:
				return &litNode{val: scalar.NewFloat64Scalar(-v.Value), text: sqlparser.String(e)}, nil
			case *scalar.Int64:
				if v.Value != math.MinInt64 {
					return &litNode{val: scalar.NewInt64Scalar(-v.Value), text: sqlparser.String(e)}, nil
				}
			}
		}
		t := normal(x.dtype())
		if isUint64(t) {
			t = tInt64 // a uint64 negated is an int64 (or an overflow)
		}
		if x, err = coerce(x, t, e); err != nil {
			return nil, err
		}
		return &callNode{fn: "negate", args: []node{x}, typ: x.dtype(), text: sqlparser.String(e)}, nil
	case sqlparser.BangStr:
		x, err := c.boolArg(e.Expr, e)
		if err != nil {
			return nil, err
		}
		return &callNode{fn: "not", args: []node{x}, typ: tBool, text: sqlparser.String(e)}, nil
	}
	return nil, errorf(ErrUnsupported, e, "unsupported operator %s", e.Operator)
}

// resultType folds the common type of value nodes (CASE branches, coalesce
// arguments).
// A non-negative integer literal takes the type of uint64 values, as in
// DuckDB: coalesce(u, 0) is uint64.
func resultType(vals []node, at sqlparser.SQLNode, what string) (arrow.DataType, error) {
	hasUint := false
	for _, v := range vals {
		hasUint = hasUint || isUint64(v.dtype())
	}
	t := tNull
	for _, v := range vals {
		if hasUint && nonNegIntLit(v) && !isUint64(v.dtype()) {
			continue // coerceAll converts it to t, which holds it
		}
		nt, ok := commonType(t, v.dtype())
		if !ok {
			return nil, errorf(ErrType, at, "%s mixes %s and %s", what, t, v.dtype())
		}
		t = nt
	}
	return t, nil
}

func coerceAll(vals []node, t arrow.DataType, at sqlparser.SQLNode) ([]node, error) {
	out := make([]node, len(vals))
	for i, v := range vals {
		n, err := coerce(v, t, at)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) caseExpr(e *sqlparser.CaseExpr) (node, error) {
	var operand node
	if e.Expr != nil {
		var err error
		if operand, err = c.compile(e.Expr); err != nil {
			return nil, err
		}
	}
	p := &pickNode{text: sqlparser.String(e)}
	for _, w := range e.Whens {
		var cond node
		var err error
		if operand != nil {
			v, err := c.compile(w.Cond)
			if err != nil {
				return nil, err
			}
			if cond, err = c.compareNodes(sqlparser.EqualStr, operand, v, e); err != nil {
				return nil, err
			}
		} else if cond, err = c.boolArg(w.Cond, e); err != nil {
			return nil, err
		}
		val, err := c.compile(w.Val)
		if err != nil {
			return nil, err
		}
		p.conds = append(p.conds, cond)
		p.vals = append(p.vals, val)
	}
	if len(p.conds) == 0 {
		return nil, errorf(ErrUnsupported, e, "CASE needs at least one WHEN")
	}
	all := p.vals
	if e.Else != nil {
		els, err := c.compile(e.Else)
		if err != nil {
			return nil, err
		}
		p.els = els
		all = append(append([]node(nil), p.vals...), els)
	}
	t, err := resultType(all, e, "CASE")
	if err != nil {
		return nil, err
	}
	p.typ = t
	if p.vals, err = coerceAll(p.vals, t, e); err != nil {
		return nil, err
	}
	if p.els != nil {
		if p.els, err = coerce(p.els, t, e); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// castTypes maps the CAST target types sqlparser accepts to Arrow types.
func castType(ct *sqlparser.ConvertType) (arrow.DataType, bool) {
	switch strings.ToLower(ct.Type) {
	case "signed", "signed integer", "integer":
		return tInt64, true
	case "unsigned", "unsigned integer":
		return arrow.PrimitiveTypes.Uint64, true
	case "decimal":
		return tFloat64, true
	case "char", "nchar":
		return tString, true
	case "datetime":
		return arrow.FixedWidthTypes.Timestamp_ms, true
	case "date":
		return arrow.FixedWidthTypes.Date32, true
	}
	return nil, false
}

func (c *compiler) cast(e *sqlparser.ConvertExpr) (node, error) {
	x, err := c.compile(e.Expr)
	if err != nil {
		return nil, err
	}
	t, ok := castType(e.Type)
	if !ok {
		return nil, errorf(ErrUnsupported, e, "CAST to %s is not supported (use SIGNED, UNSIGNED, DECIMAL, CHAR, DATETIME or DATE)", strings.ToUpper(e.Type.Type))
	}
	if l, ok := x.(*litNode); ok {
		if t.ID() == arrow.TIMESTAMP && isString(l.dtype()) {
			return coerce(x, t, e)
		}
	}
	if isString(t) && (isFloat(x.dtype()) || x.dtype().ID() == arrow.TIMESTAMP) {
		return &toStringNode{child: x, text: sqlparser.String(e)}, nil
	}
	if isFloat(x.dtype()) && (t.ID() == arrow.INT64 || t.ID() == arrow.UINT64) {
		if x, err = coerce(x, tFloat64, e); err != nil {
			return nil, err
		}
		return &floatToIntNode{child: x, to: t, text: sqlparser.String(e)}, nil
	}
	opts := compute.SafeCastOptions(t)
	opts.AllowFloatTruncate = true // an integer beyond 2^53 rounds to a float64
	return &castNode{child: x, to: t, text: sqlparser.String(e), opts: opts}, nil
}
