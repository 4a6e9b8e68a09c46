package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"

	"github.com/volga-go/volga/internal/expr"
)

// Builder writes a pipeline in Go. It produces the same Plan as the SQL
// front end, so a pipeline written either way runs identically:
//
//	w := pipeline.Over("user_id").Range(time.Hour)
//	plan, err := pipeline.From("tx").
//		EventTime("ts").
//		Where("amount > 0").
//		Select("id", "user_id", "ts").
//		Agg("spend_1h", pipeline.Sum("amount"), w).
//		Plan()
//
// Expressions (Where, Select, aggregate arguments) are SQL expression
// text. Errors are collected and returned by Plan.
type Builder struct {
	plan      Plan
	eventTime string
	windows   map[*WindowDef]*WindowSpec
	errs      []error
}

// From starts a pipeline over the named source table.
func From(table string) *Builder {
	return &Builder{plan: Plan{Table: table}, windows: map[*WindowDef]*WindowSpec{}}
}

// EventTime names the event-time column: a timestamp or int64 epoch
// milliseconds. Windows without OrderBy use it.
func (b *Builder) EventTime(col string) *Builder {
	b.eventTime = col
	return b
}

func (b *Builder) parse(text string) *Expr {
	ast, err := expr.ParseExpr(text)
	if err != nil {
		b.errs = append(b.errs, err)
		return nil
	}
	return &Expr{AST: ast, Text: strings.TrimSpace(text), Pos: -1}
}

// Where keeps only rows for which cond (SQL) is TRUE. Several calls are
// combined with AND.
func (b *Builder) Where(cond string) *Builder {
	e := b.parse(cond)
	if e == nil {
		return b
	}
	if b.plan.Where == nil {
		b.plan.Where = e
	} else {
		b.plan.Where = &Expr{
			AST:  &sqlparser.AndExpr{Left: b.plan.Where.AST, Right: e.AST},
			Text: b.plan.Where.Text + " AND " + e.Text, Pos: -1,
		}
	}
	return b
}

// Select adds output columns: column names or SQL expressions, named after
// their text (use SelectAs to name an expression).
func (b *Builder) Select(exprs ...string) *Builder {
	for _, s := range exprs {
		b.SelectAs("", s)
	}
	return b
}

// SelectAs adds the SQL expression e as output column name.
func (b *Builder) SelectAs(name, e string) *Builder {
	x := b.parse(e)
	if x == nil {
		return b
	}
	if name == "" {
		name = x.Text
		if cn, ok := x.AST.(*sqlparser.ColName); ok {
			name = cn.Name.String()
		}
	}
	b.plan.Items = append(b.plan.Items, Item{Name: name, Expr: x})
	return b
}

// Agg adds the aggregate call evaluated over window w as output column
// name.
func (b *Builder) Agg(name string, call Call, w *WindowDef) *Builder {
	if w == nil {
		b.errs = append(b.errs, fmt.Errorf("builder: aggregate %q has no window", name))
		return b
	}
	spec, ok := b.windows[w]
	if !ok {
		if w.err != nil {
			b.errs = append(b.errs, w.err)
		}
		spec = &WindowSpec{PartitionBy: w.partitionBy, OrderBy: w.orderBy, Frame: w.frame, Pos: -1}
		b.windows[w] = spec
		b.plan.Windows = append(b.plan.Windows, spec)
	}
	ac := &AggCall{Func: strings.ToLower(call.Func), Star: call.Star, Distinct: call.Distinct, Window: spec, Pos: -1}
	var texts []string
	if call.Star {
		texts = append(texts, "*")
	}
	for _, a := range call.Args {
		var text string
		switch v := a.(type) {
		case string:
			text = v
		case Literal:
			text = sqlQuote(string(v))
		case int:
			text = strconv.Itoa(v)
		case int64:
			text = strconv.FormatInt(v, 10)
		case float64:
			text = strconv.FormatFloat(v, 'g', -1, 64)
		case bool:
			text = strconv.FormatBool(v)
		default:
			b.errs = append(b.errs, fmt.Errorf("builder: %s: unsupported argument %v of type %T", call.Func, a, a))
			continue
		}
		e := b.parse(text)
		if e == nil {
			continue
		}
		ac.Args = append(ac.Args, e)
		texts = append(texts, e.Text)
	}
	prefix := ""
	if call.Distinct {
		prefix = "DISTINCT "
	}
	ac.Text = fmt.Sprintf("%s(%s%s)", ac.Func, prefix, strings.Join(texts, ", "))
	if name == "" {
		name = ac.Text
	}
	b.plan.Items = append(b.plan.Items, Item{Name: name, Agg: ac})
	return b
}

// Plan returns the logical plan, or every error met while building it.
func (b *Builder) Plan() (*Plan, error) {
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}
	if b.plan.Table == "" {
		return nil, errors.New("builder: From needs a table name")
	}
	if len(b.plan.Items) == 0 {
		return nil, errors.New("builder: the pipeline selects nothing")
	}
	p := b.plan
	p.Items = append([]Item(nil), b.plan.Items...)
	p.Windows = append([]*WindowSpec(nil), b.plan.Windows...)
	for _, w := range p.Windows {
		if w.OrderBy == "" {
			if b.eventTime == "" {
				return nil, errors.New("builder: a window needs OrderBy or the pipeline an EventTime column")
			}
			w.OrderBy = b.eventTime
		}
	}
	return &p, nil
}

// EventTimeColumn is the column given to EventTime ("" when none).
func (b *Builder) EventTimeColumn() string { return b.eventTime }

// Literal is a string constant argument of an aggregate (plain strings are
// expressions, usually column names).
type Literal string

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Call is an aggregate function call for the builder: the SQL function
// name and its arguments. A string argument is a SQL expression (usually a
// column name); Literal, int, int64, float64 and bool are constants.
type Call struct {
	Func     string
	Args     []any
	Star     bool
	Distinct bool
}

// Fn calls any aggregate of the dialect by name, e.g.
// Fn("topn_frequency", "merchant", 3).
func Fn(name string, args ...any) Call { return Call{Func: name, Args: args} }

// CountAll is count(*).
func CountAll() Call { return Call{Func: "count", Star: true} }

// Count is count(x): the non-NULL values of x.
func Count(x string) Call { return Fn("count", x) }

// CountDistinct is count(DISTINCT x).
func CountDistinct(x string) Call { return Call{Func: "count", Args: []any{x}, Distinct: true} }

// Sum is sum(x).
func Sum(x string) Call { return Fn("sum", x) }

// Avg is avg(x).
func Avg(x string) Call { return Fn("avg", x) }

// Min is min(x).
func Min(x string) Call { return Fn("min", x) }

// Max is max(x).
func Max(x string) Call { return Fn("max", x) }

// WindowDef describes a keyed sliding window for the builder. Methods
// return the receiver, so a definition reads as one expression. Use one
// *WindowDef for several aggregates to share the window.
type WindowDef struct {
	partitionBy []string
	orderBy     string
	frame       Frame
	err         error
}

// Over starts a window partitioned by the given key columns, with the
// frame RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW until a frame
// method changes it.
func Over(partitionBy ...string) *WindowDef {
	w := &WindowDef{partitionBy: partitionBy, frame: Frame{Kind: FrameRange, Unbounded: true}}
	if len(partitionBy) == 0 {
		w.err = errors.New("builder: Over needs at least one key column (a window needs PARTITION BY)")
	}
	for _, c := range partitionBy {
		if strings.TrimSpace(c) == "" {
			w.err = fmt.Errorf("builder: Over(%q): empty key column name", partitionBy)
		}
	}
	return w
}

// OrderBy sets the event-time column (default: the pipeline's EventTime).
func (w *WindowDef) OrderBy(col string) *WindowDef {
	w.orderBy = col
	return w
}

// Range is RANGE BETWEEN d PRECEDING AND CURRENT ROW.
func (w *WindowDef) Range(d time.Duration) *WindowDef { return w.RangeBetween(d, 0) }

// RangeBetween is RANGE BETWEEN start PRECEDING AND end PRECEDING (end 0
// is CURRENT ROW).
func (w *WindowDef) RangeBetween(start, end time.Duration) *WindowDef {
	if start <= 0 || end < 0 || end > start || start%time.Millisecond != 0 || end%time.Millisecond != 0 {
		w.err = fmt.Errorf("builder: invalid range frame [%v, %v] preceding: need 0 <= end <= start, start > 0, in whole milliseconds", start, end)
	}
	ex := w.frame.ExcludeCurrent
	w.frame = Frame{Kind: FrameRange, Preceding: start.Milliseconds(), EndPreceding: end.Milliseconds(), ExcludeCurrent: ex}
	return w
}

// Unbounded is RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
func (w *WindowDef) Unbounded() *WindowDef {
	ex := w.frame.ExcludeCurrent
	w.frame = Frame{Kind: FrameRange, Unbounded: true, ExcludeCurrent: ex}
	return w
}

// Rows is ROWS BETWEEN n PRECEDING AND CURRENT ROW.
func (w *WindowDef) Rows(n int) *WindowDef {
	if n < 0 {
		w.err = fmt.Errorf("builder: ROWS frame needs n >= 0, got %d", n)
	}
	ex := w.frame.ExcludeCurrent
	w.frame = Frame{Kind: FrameRows, Preceding: int64(n), ExcludeCurrent: ex}
	return w
}

// ExcludeCurrent is EXCLUDE CURRENT ROW: each row's frame leaves the row
// itself out (its peers stay), the leak-free form for training data.
func (w *WindowDef) ExcludeCurrent() *WindowDef {
	w.frame.ExcludeCurrent = true
	return w
}
