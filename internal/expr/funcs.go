package expr

import (
	"strings"

	"github.com/xwb1989/sqlparser"
)

// Functions lists the scalar functions Compile knows, lower case.
var Functions = []string{"abs", "coalesce", "ifnull", "nullif", "lower", "upper", "length"}

func (c *compiler) function(e *sqlparser.FuncExpr) (node, error) {
	name := strings.ToLower(e.Name.String())
	if !e.Qualifier.IsEmpty() {
		return nil, errorf(ErrUnknownFunction, e, "unknown function %s.%s", e.Qualifier.String(), e.Name.String())
	}
	if e.Distinct {
		return nil, errorf(ErrUnsupported, e, "DISTINCT is only allowed in aggregates")
	}
	arity := map[string][2]int{
		"abs": {1, 1}, "coalesce": {1, -1}, "ifnull": {2, 2}, "nullif": {2, 2},
		"lower": {1, 1}, "upper": {1, 1}, "length": {1, 1},
	}
	want, ok := arity[name]
	if !ok {
		return nil, errorf(ErrUnknownFunction, e, "unknown function %s", name)
	}
	if len(e.Exprs) < want[0] || (want[1] >= 0 && len(e.Exprs) > want[1]) {
		switch {
		case want[1] < 0:
			return nil, errorf(ErrArity, e, "%s takes at least %d argument(s), got %d", name, want[0], len(e.Exprs))
		case want[0] == want[1]:
			return nil, errorf(ErrArity, e, "%s takes %d argument(s), got %d", name, want[0], len(e.Exprs))
		}
	}
	args := make([]node, len(e.Exprs))
	for i, se := range e.Exprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok || !ae.As.IsEmpty() {
			return nil, errorf(ErrUnsupported, e, "invalid argument %s", sqlparser.String(se))
		}
		n, err := c.compile(ae.Expr)
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	text := sqlparser.String(e)
	switch name {
	case "abs":
		x := args[0]
		if isNull(x.dtype()) {
			return x, nil
		}
		if !isNumeric(x.dtype()) {
			return nil, errorf(ErrType, e, "abs needs a number, not %s", x.dtype())
		}
		if isUint64(x.dtype()) {
			return x, nil // DuckDB's abs of a UBIGINT is the value itself
		}
		x, err := coerce(x, normal(x.dtype()), e)
		if err != nil {
			return nil, err
		}
		return &callNode{fn: "abs", args: []node{x}, typ: x.dtype(), text: text}, nil
	case "coalesce", "ifnull":
		t, err := resultType(args, e, name)
		if err != nil {
			return nil, err
		}
		vals, err := coerceAll(args, t, e)
		if err != nil {
			return nil, err
		}
		return &pickNode{vals: vals, typ: t, text: text}, nil
	case "nullif":
		eq, err := c.compareNodes(sqlparser.EqualStr, args[0], args[1], e)
		if err != nil {
			return nil, err
		}
		t := normal(args[0].dtype())
		x, err := coerce(args[0], t, e)
		if err != nil {
			return nil, err
		}
		null, _ := coerce(&litNode{val: nullScalar(), text: "NULL"}, t, e)
		return &pickNode{conds: []node{eq}, vals: []node{null}, els: x, typ: t, text: text}, nil
	case "lower", "upper", "length":
		x := args[0]
		if !isString(x.dtype()) && !isNull(x.dtype()) {
			return nil, errorf(ErrType, e, "%s needs a string, not %s", name, x.dtype())
		}
		x, err := coerce(x, tString, e)
		if err != nil {
			return nil, err
		}
		s := &strNode{child: x, text: text}
		switch name {
		case "lower":
			s.mapper = strings.ToLower
		case "upper":
			s.mapper = strings.ToUpper
		default:
			s.length = true
		}
		return s, nil
	}
	return nil, errorf(ErrUnknownFunction, e, "unknown function %s", name)
}
