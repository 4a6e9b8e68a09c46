package pipeline

import (
	"errors"
	"fmt"
	"slices"
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
// and a tumbling window query (GROUP BY user_id, tumble(ts, INTERVAL '1'
// HOUR)) takes its aggregates without a window:
//
//	plan, err := pipeline.From("tx").
//		EventTime("ts").
//		Tumble(time.Hour, "user_id").
//		Select("user_id", "window_start").
//		Agg("spend", pipeline.Sum("amount"), nil).
//		Plan()
//
// Expressions (Where, Select, aggregate arguments) are SQL expression
// text. Errors are collected and returned by Plan.
type Builder struct {
	plan      Plan
	eventTime string
	windows   map[*WindowDef]*WindowSpec
	errs      []error
	noWindow  []string // aggregates added without a window
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

// scalar parses text for Where or Select (method), where an aggregate
// call has no place: it is added with Agg.
func (b *Builder) scalar(method, text string) *Expr {
	e := b.parse(text)
	if e == nil {
		return nil
	}
	if f := aggregateIn(e.AST); f != nil {
		b.errs = append(b.errs, fmt.Errorf("builder: aggregate %s cannot be used in %s (in %s): add it with Agg", strings.ToLower(f.Name.String()), method, e.Text))
		return nil
	}
	return e
}

// Where keeps only rows for which cond (SQL) is TRUE. Several calls are
// combined with AND.
func (b *Builder) Where(cond string) *Builder {
	e := b.scalar("Where", cond)
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
	x := b.scalar("Select", e)
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
// name. In a tumbling or hopping window query (Tumble, Hop) w is nil: the
// aggregate is evaluated per key and window.
func (b *Builder) Agg(name string, call Call, w *WindowDef) *Builder {
	var spec *WindowSpec
	if w == nil {
		b.noWindow = append(b.noWindow, name)
	} else {
		// One spec per *WindowDef shares the window between aggregates;
		// a definition changed since its last use (w.Range(time.Hour)
		// then w.Range(2*time.Hour)) is a new window, as written.
		spec = b.windows[w]
		if spec == nil || spec.Frame != w.frame || spec.OrderBy != w.orderBy || !slices.Equal(spec.PartitionBy, w.partitionBy) {
			if w.err != nil {
				b.errs = append(b.errs, w.err)
			}
			spec = &WindowSpec{PartitionBy: slices.Clone(w.partitionBy), OrderBy: w.orderBy, Frame: w.frame, Pos: -1}
			b.windows[w] = spec
			b.plan.Windows = append(b.plan.Windows, spec)
		}
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
	if g := b.plan.Group; g != nil {
		if len(b.plan.Windows) > 0 {
			return nil, errors.New("builder: a Tumble or Hop pipeline evaluates its aggregates per window: pass a nil window to Agg")
		}
		if b.eventTime == "" {
			return nil, errors.New("builder: Tumble and Hop need the pipeline's EventTime column")
		}
	} else if len(b.noWindow) > 0 {
		return nil, fmt.Errorf("builder: aggregate %q has no window (give it one, or make the pipeline a Tumble or Hop)", b.noWindow[0])
	}
	p := b.plan
	if g := b.plan.Group; g != nil {
		gc := *g
		gc.TimeCol = b.eventTime
		gc.KeyCols = append([]string(nil), g.KeyCols...)
		p.Group = &gc
	}
	// The plan gets copies of the windows and calls, so that neither a
	// later call of the builder nor a user of the plan changes the other.
	copies := make(map[*WindowSpec]*WindowSpec, len(b.plan.Windows))
	p.Windows = nil
	for _, w := range b.plan.Windows {
		c := *w
		c.PartitionBy = slices.Clone(w.PartitionBy)
		if c.OrderBy == "" {
			if b.eventTime == "" {
				return nil, errors.New("builder: a window needs OrderBy or the pipeline an EventTime column")
			}
			c.OrderBy = b.eventTime
		}
		copies[w] = &c
		p.Windows = append(p.Windows, &c)
	}
	p.Items = append([]Item(nil), b.plan.Items...)
	for i, it := range p.Items {
		if it.Agg != nil {
			c := *it.Agg
			c.Args = slices.Clone(it.Agg.Args)
			if c.Window != nil {
				c.Window = copies[c.Window]
			}
			p.Items[i].Agg = &c
		}
	}
	return &p, nil
}

// Tumble makes the pipeline a tumbling window query, SQL's GROUP BY keys,
// tumble(ts, INTERVAL size) with ts the EventTime column: one output row
// per key and window [start, start+size) that received rows, windows
// aligned to the Unix epoch. Select may then name the keys, window_start
// and window_end; aggregates are added with Agg and a nil window.
func (b *Builder) Tumble(size time.Duration, keys ...string) *Builder {
	return b.group(GroupTumble, size, size, keys)
}

// Hop makes the pipeline a hopping window query, SQL's GROUP BY keys,
// hop(ts, INTERVAL slide, INTERVAL size): windows of length size starting
// every slide (slide <= size). See Tumble.
func (b *Builder) Hop(slide, size time.Duration, keys ...string) *Builder {
	return b.group(GroupHop, slide, size, keys)
}

func (b *Builder) group(kind GroupWindowKind, slide, size time.Duration, keys []string) *Builder {
	what := "Tumble"
	if kind == GroupHop {
		what = "Hop"
	}
	switch {
	case b.plan.Group != nil:
		b.errs = append(b.errs, fmt.Errorf("builder: %s: the pipeline already has a tumble or hop window", what))
		return b
	case size <= 0 || slide <= 0 || size%time.Millisecond != 0 || slide%time.Millisecond != 0:
		b.errs = append(b.errs, fmt.Errorf("builder: %s: window sizes must be positive whole milliseconds, got slide %v, size %v", what, slide, size))
	case slide > size:
		b.errs = append(b.errs, fmt.Errorf("builder: Hop: the slide (%v) must not be longer than the size (%v)", slide, size))
	}
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			b.errs = append(b.errs, fmt.Errorf("builder: %s(%q): empty key column name", what, keys))
		}
	}
	b.plan.Group = &GroupWindow{Kind: kind, SizeMs: size.Milliseconds(), SlideMs: slide.Milliseconds(), KeyCols: keys, Pos: -1}
	return b
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
func (w *WindowDef) Unbounded() *WindowDef { return w.UnboundedUntil(0) }

// UnboundedUntil is RANGE BETWEEN UNBOUNDED PRECEDING AND end PRECEDING
// (end 0 is CURRENT ROW): every row of the key at least end older than
// the current row.
func (w *WindowDef) UnboundedUntil(end time.Duration) *WindowDef {
	if end < 0 || end%time.Millisecond != 0 {
		w.err = fmt.Errorf("builder: invalid unbounded frame ending %v preceding: need end >= 0, in whole milliseconds", end)
	}
	ex := w.frame.ExcludeCurrent
	w.frame = Frame{Kind: FrameRange, Unbounded: true, EndPreceding: end.Milliseconds(), ExcludeCurrent: ex}
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
