package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute/exec"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/volga-go/volga/internal/sqlwin"
	"github.com/xwb1989/sqlparser"
)

// Expr is a compiled scalar expression bound to a schema.
type Expr interface {
	// Eval evaluates the expression on every row of rec, whose schema
	// must have the fields the expression was compiled against (same names
	// and types at the same positions). The result has rec.NumRows() rows
	// and type Type(); the caller owns it and must Release it.
	Eval(rec arrow.RecordBatch) (arrow.Array, error)
	// Type is the Arrow type of the result.
	Type() arrow.DataType
	// String renders the expression in SQL.
	String() string
}

// ErrorKind classifies compile errors.
type ErrorKind int

const (
	// ErrUnknownColumn is a column the schema does not have (or has twice,
	// in different case).
	ErrUnknownColumn ErrorKind = iota + 1
	// ErrUnknownFunction is a function the evaluator does not know.
	ErrUnknownFunction
	// ErrArity is a function called with the wrong number of arguments.
	ErrArity
	// ErrType is an operator or function applied to values of the wrong
	// type.
	ErrType
	// ErrUnsupported is SQL the evaluator does not implement (subqueries,
	// placeholders, intervals, ...).
	ErrUnsupported
	// ErrEval is a failure while evaluating, such as an integer overflow.
	ErrEval
)

// Error is a compile or evaluation error. Text is the offending part of the
// expression as sqlparser renders it (a column name, a call, an operator
// application), which callers use to position the error in the query.
type Error struct {
	Kind ErrorKind
	Msg  string
	Text string
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Text == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s (in %s)", e.Msg, e.Text)
}

func errorf(kind ErrorKind, n sqlparser.SQLNode, format string, args ...any) *Error {
	text := ""
	if n != nil {
		text = sqlparser.String(n)
	}
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Text: text}
}

// ParseExpr parses a standalone SQL scalar expression, as written in the
// Go builder's Where("amount > 10") or Select("amount * 2"). Errors are
// *Error values of kind ErrUnsupported naming the text.
func ParseExpr(text string) (e sqlparser.Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, &Error{Kind: ErrUnsupported, Msg: fmt.Sprintf("cannot parse expression: %v", r), Text: text}
		}
	}()
	if strings.TrimSpace(text) == "" {
		return nil, &Error{Kind: ErrUnsupported, Msg: "empty expression", Text: text}
	}
	rewritten, terr := sqlwin.ExprSQL(text)
	if terr != nil { // a *sqlwin.Error, which names the offset
		return nil, &Error{Kind: ErrUnsupported, Msg: "invalid expression: " + terr.Error(), Text: text}
	}
	stmt, perr := sqlparser.Parse("select " + rewritten)
	if perr != nil {
		return nil, &Error{Kind: ErrUnsupported, Msg: "invalid expression: " + strings.Replace(perr.Error(), "at position", "at offset", 1), Text: text}
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || len(sel.SelectExprs) != 1 || sel.From == nil || len(sel.From) != 1 {
		return nil, &Error{Kind: ErrUnsupported, Msg: "not a single expression", Text: text}
	}
	if tn, ok := sel.From[0].(*sqlparser.AliasedTableExpr); !ok || sqlparser.String(tn) != "dual" ||
		sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil || sel.Limit != nil || sel.Distinct != "" {
		return nil, &Error{Kind: ErrUnsupported, Msg: "not a single expression", Text: text}
	}
	ae, ok := sel.SelectExprs[0].(*sqlparser.AliasedExpr)
	if !ok || !ae.As.IsEmpty() {
		return nil, &Error{Kind: ErrUnsupported, Msg: "not a single expression", Text: text}
	}
	return ae.Expr, nil
}

// Compile binds e to schema and returns its vectorized evaluator. Column
// names are matched case-insensitively (an exact match wins; two fields
// differing only in case make the name ambiguous); a qualifier (t.col) is
// ignored because a pipeline reads one table. Errors are *Error values.
// Compile never panics.
func Compile(e sqlparser.Expr, schema *arrow.Schema) (out Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &Error{Kind: ErrUnsupported, Msg: fmt.Sprintf("internal error compiling expression: %v", r), Text: safeString(e)}
		}
	}()
	if e == nil {
		return nil, &Error{Kind: ErrUnsupported, Msg: "nil expression"}
	}
	if schema == nil {
		return nil, &Error{Kind: ErrUnsupported, Msg: "nil schema", Text: sqlparser.String(e)}
	}
	c := &compiler{schema: schema}
	n, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	return &compiled{root: n, schema: schema, mem: memory.DefaultAllocator}, nil
}

func safeString(e sqlparser.Expr) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	if e == nil {
		return ""
	}
	return sqlparser.String(e)
}

type compiled struct {
	root   node
	schema *arrow.Schema
	mem    memory.Allocator
}

func (c *compiled) Type() arrow.DataType { return c.root.dtype() }
func (c *compiled) String() string       { return c.root.String() }

func (c *compiled) Eval(rec arrow.RecordBatch) (out arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &Error{Kind: ErrEval, Msg: fmt.Sprintf("internal error evaluating expression: %v", r), Text: c.root.String()}
		}
	}()
	if rec == nil {
		return nil, &Error{Kind: ErrEval, Msg: "nil record batch", Text: c.root.String()}
	}
	ev := &evalCtx{ctx: exec.WithAllocator(context.Background(), c.mem), mem: c.mem, rec: rec, n: int(rec.NumRows())}
	arr, err := c.root.eval(ev)
	if err != nil {
		var ee *Error
		if errors.As(err, &ee) {
			return nil, ee
		}
		return nil, &Error{Kind: ErrEval, Msg: err.Error(), Text: c.root.String()}
	}
	return arr, nil
}

// evalCtx carries what evaluating one batch needs.
type evalCtx struct {
	ctx context.Context
	mem memory.Allocator
	rec arrow.RecordBatch
	n   int
}
