package pipeline

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/sqlwin"
	"github.com/xwb1989/sqlparser"
)

// IsAggregate reports whether name (any case) is an aggregate function of
// the SQL dialect, as registered in package agg. The planner uses it to
// recognise an aggregate written without OVER (an error outside GROUP BY)
// and the aggregates of a GROUP BY query.
func IsAggregate(name string) bool {
	_, ok := agg.Lookup(name)
	return ok
}

// ParseSQL parses one SELECT of the Volga SQL dialect (SPEC section 2) into
// an unbound logical plan. It checks the shape of the query (one source
// table, windowed aggregates as whole select items, known window names,
// supported clauses and frames) but not the columns and functions, which
// the binder checks against the source schema.
//
// Output names: the alias when there is one, else the column name for a
// plain column reference, else the item's text as written (for an
// aggregate, the call without its OVER clause, e.g. "sum(amount)").
//
// Every error is a *SQLError naming the offending text with its line and
// column. ParseSQL never panics.
func ParseSQL(query string) (plan *Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			plan, err = nil, &SQLError{Msg: fmt.Sprintf("internal error while parsing the query: %v", r), Offset: -1}
		}
	}()
	if strings.TrimSpace(query) == "" {
		return nil, &SQLError{Msg: "empty query", Offset: -1}
	}
	res, err := sqlwin.Split(query)
	if err != nil {
		var we *sqlwin.Error
		if errors.As(err, &we) {
			return nil, newSQLError(query, we.Offset, we.Near, "%s", we.Msg)
		}
		return nil, &SQLError{Msg: err.Error(), Offset: -1}
	}
	if len(res.Tokens) == 0 {
		return nil, &SQLError{Msg: "empty query", Offset: -1}
	}
	p := &planner{q: query, res: res, plan: &Plan{SQL: query}, named: map[string]*WindowSpec{}}
	if res.Tokens[0].Type != sqlparser.SELECT {
		return nil, p.errTok(0, "only SELECT statements are supported")
	}
	stmt, err := sqlparser.Parse(res.SQL)
	if err != nil {
		return nil, p.parseError(err)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		if _, isUnion := stmt.(*sqlparser.Union); isUnion {
			return nil, p.errWord("union", "UNION is not supported: a pipeline reads one table")
		}
		return nil, p.errTok(0, "only SELECT statements are supported")
	}
	if err := p.build(sel); err != nil {
		return nil, err
	}
	return p.plan, nil
}

type planner struct {
	q     string
	res   *sqlwin.Result
	plan  *Plan
	named map[string]*WindowSpec // lower-cased name -> spec, once used
	// qualifiers are the names a column may be qualified with: the
	// table's alias, or without one its name (and schema.name).
	qualifiers []string
}

// errTok positions an error at token i of the query.
func (p *planner) errTok(i int, format string, args ...any) *SQLError {
	if i < 0 || i >= len(p.res.Tokens) {
		return newSQLError(p.q, len(p.q), "", format, args...)
	}
	t := p.res.Tokens[i]
	return newSQLError(p.q, t.Start, p.q[t.Start:t.End], format, args...)
}

// errSpan positions an error at a span of the query.
func (p *planner) errSpan(s sqlwin.Span, format string, args ...any) *SQLError {
	return newSQLError(p.q, s.Start, shorten(s.Text(p.q)), format, args...)
}

// errWord positions an error at the first top-level occurrence of the
// keyword w (outside parentheses), or the first anywhere.
func (p *planner) errWord(w string, format string, args ...any) *SQLError {
	depth, first := 0, -1
	for i, t := range p.res.Tokens {
		switch t.Type {
		case '(':
			depth++
		case ')':
			depth--
		}
		if t.Is(w) {
			if depth == 0 {
				return p.errTok(i, format, args...)
			}
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 {
		return p.errTok(first, format, args...)
	}
	return &SQLError{Msg: fmt.Sprintf(format, args...), Offset: -1}
}

// errExpr positions an error at the text of an AST node, found through
// its canonical rendering when it has no recorded span.
func (p *planner) errExpr(n sqlparser.SQLNode, near sqlwin.Span, format string, args ...any) *SQLError {
	if near.End > near.Start {
		return p.errSpan(near, format, args...)
	}
	text := sqlparser.String(n)
	if off := sqlwin.FindTokens(p.res.Tokens, text, 0); off >= 0 {
		return newSQLError(p.q, off, text, format, args...)
	}
	return &SQLError{Msg: fmt.Sprintf(format, args...), Near: text, Offset: -1}
}

func shorten(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

var positionRE = regexp.MustCompile(`^(.*?) at position (\d+)(?: near '(.*)')?$`)

// parseError converts a sqlparser error ("syntax error at position N near
// 'x'") into a *SQLError positioned in the original query.
func (p *planner) parseError(err error) *SQLError {
	m := positionRE.FindStringSubmatch(err.Error())
	if m == nil {
		return &SQLError{Msg: err.Error(), Offset: -1}
	}
	pos, _ := strconv.Atoi(m[2])
	// The tokenizer reports the position one past the end of the token it
	// stopped at.
	end := p.res.Offset(pos - 1)
	msg := m[1]
	for i := len(p.res.Tokens) - 1; i >= 0; i-- {
		t := p.res.Tokens[i]
		if t.Start < end {
			if m[3] == "" && end >= len(p.q) {
				break
			}
			return newSQLError(p.q, t.Start, p.q[t.Start:t.End], "%s", msg)
		}
	}
	// sqlparser names no token when it fails on the last one, or at the
	// end: an unbalanced parenthesis is the likely cause, and the one to
	// point at (SELECT a FROM t WHERE a > ) failed "at the end of the
	// query").
	if i := p.unbalancedParen(); i >= 0 {
		if p.res.Tokens[i].Type == ')' {
			return p.errTok(i, "%s: unmatched ')'", msg)
		}
		return p.errTok(i, "%s: '(' is never closed", msg)
	}
	if n := len(p.res.Tokens); n > 0 && p.res.Tokens[n-1].Type == ')' {
		return p.errTok(n-1, "%s", msg)
	}
	return newSQLError(p.q, len(p.q), "", "%s: unexpected end of query", msg)
}

// unbalancedParen returns the index of the first ')' of the query without
// a '(' before it, else of the first '(' never closed, else -1.
func (p *planner) unbalancedParen() int {
	var open []int
	for i, t := range p.res.Tokens {
		switch t.Type {
		case '(':
			open = append(open, i)
		case ')':
			if len(open) == 0 {
				return i
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return open[0]
	}
	return -1
}

// build fills the plan from the parsed SELECT.
func (p *planner) build(sel *sqlparser.Select) error {
	if sel.Distinct != "" {
		return p.errWord("distinct", "SELECT DISTINCT is not supported")
	}
	if sel.Cache != "" || sel.Hints != "" {
		return p.errTok(1, "query hints are not supported")
	}
	if sel.Lock != "" {
		return p.errWord("for", "locking clauses are not supported")
	}
	if sel.Having != nil {
		return p.errWord("having", "HAVING is not supported")
	}
	if len(sel.OrderBy) > 0 {
		return p.errWord("order", "ORDER BY on the outer query is not supported: output follows input order")
	}
	if sel.Limit != nil {
		return p.errWord("limit", "LIMIT is not supported")
	}
	if err := p.checkSubqueries(sel); err != nil {
		return err
	}
	if err := p.from(sel.From); err != nil {
		return err
	}
	if err := p.checkQualifiers(sel); err != nil {
		return err
	}
	if sel.Where != nil {
		if err := p.where(sel.Where.Expr); err != nil {
			return err
		}
	}
	if len(sel.GroupBy) > 0 {
		if err := p.groupBy(sel.GroupBy); err != nil {
			return err
		}
	}
	return p.items(sel.SelectExprs)
}

func (p *planner) checkSubqueries(sel *sqlparser.Select) error {
	var found bool
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery, *sqlparser.ExistsExpr:
			found = true
			return false, nil
		}
		return true, nil
	}, sel.SelectExprs, sel.Where, sel.GroupBy, sel.From)
	if !found {
		return nil
	}
	for i, t := range p.res.Tokens {
		if i > 0 && t.Type == sqlparser.SELECT {
			return p.errTok(i, "subqueries are not supported")
		}
	}
	return p.errWord("exists", "subqueries are not supported")
}

func (p *planner) from(from sqlparser.TableExprs) error {
	if len(from) != 1 {
		return p.errWord("from", "a pipeline reads exactly one table")
	}
	switch t := from[0].(type) {
	case *sqlparser.JoinTableExpr:
		for _, w := range []string{"join", "straight_join"} {
			if err := p.errWord(w, "JOIN is not supported: a pipeline reads one table"); err.Offset >= 0 {
				return err
			}
		}
		return p.errWord("from", "JOIN is not supported: a pipeline reads one table")
	case *sqlparser.ParenTableExpr:
		return p.errWord("from", "parenthesised table expressions are not supported")
	case *sqlparser.AliasedTableExpr:
		name, ok := t.Expr.(sqlparser.TableName)
		if !ok {
			return p.errWord("from", "a pipeline reads from a table name")
		}
		if t.Hints != nil || len(t.Partitions) > 0 {
			return p.errWord("from", "table hints and partitions are not supported")
		}
		p.plan.Table = name.Name.String()
		if !name.Qualifier.IsEmpty() {
			p.plan.Table = name.Qualifier.String() + "." + p.plan.Table
		}
		if t.As.IsEmpty() {
			p.qualifiers = []string{name.Name.String(), p.plan.Table}
		} else {
			p.qualifiers = []string{t.As.String()}
		}
		return nil
	default:
		return p.errWord("from", "unsupported FROM clause")
	}
}

// checkQualifiers rejects a column qualified with anything but the
// table's alias, or its name when it has none, as DuckDB does: in
// SELECT u.k FROM t, u.k is an unknown column, not k.
func (p *planner) checkQualifiers(sel *sqlparser.Select) error {
	known := func(q string) bool {
		for _, k := range p.qualifiers {
			if strings.EqualFold(q, k) {
				return true
			}
		}
		return false
	}
	usage := func(q string) string {
		if len(p.qualifiers) == 1 {
			return fmt.Sprintf("unknown table %q: the table is named %s in this query", q, p.qualifiers[0])
		}
		return fmt.Sprintf("unknown table %q: the query reads table %s", q, p.plan.Table)
	}
	var bad *sqlparser.ColName
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if c, ok := n.(*sqlparser.ColName); ok && !c.Qualifier.IsEmpty() {
			q := c.Qualifier.Name.String()
			if !c.Qualifier.Qualifier.IsEmpty() {
				q = c.Qualifier.Qualifier.String() + "." + q
			}
			if !known(q) {
				bad = c
				return false, errStopWalk
			}
		}
		return true, nil
	}, sel.SelectExprs, sel.Where, sel.GroupBy)
	if bad != nil {
		q := bad.Qualifier.Name.String()
		if !bad.Qualifier.Qualifier.IsEmpty() {
			q = bad.Qualifier.Qualifier.String() + "." + q
		}
		return p.errExpr(bad, sqlwin.Span{}, "%s", usage(q))
	}
	var idents []sqlwin.Ident
	specIdents := func(s *sqlwin.Spec) {
		if s != nil {
			idents = append(append(idents, s.PartitionBy...), s.OrderBy)
		}
	}
	for _, w := range p.res.Windows {
		specIdents(w.Spec)
	}
	for _, o := range p.res.Overs {
		specIdents(o.Spec)
	}
	if p.res.Group != nil {
		idents = append(idents, p.res.Group.TimeCol)
	}
	for _, id := range idents {
		if id.Qualifier != "" && !known(id.Qualifier) {
			return newSQLError(p.q, id.QualifierPos, id.Qualifier, "%s", usage(id.Qualifier))
		}
	}
	return nil
}

// markerIn returns the index of the first OVER marker in n, or -1.
func markerIn(n sqlparser.SQLNode) int {
	idx := -1
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if c, ok := n.(*sqlparser.ColName); ok {
			if i, ok := sqlwin.OverIndex(c.Name.String()); ok && c.Qualifier.IsEmpty() {
				idx = i
				return false, errStopWalk
			}
		}
		return true, nil
	}, n)
	return idx
}

var errStopWalk = errors.New("stop")

// aggregateIn returns the first call of an aggregate function in n.
func aggregateIn(n sqlparser.SQLNode) *sqlparser.FuncExpr {
	var found *sqlparser.FuncExpr
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if f, ok := n.(*sqlparser.FuncExpr); ok && f.Qualifier.IsEmpty() && IsAggregate(f.Name.String()) {
			found = f
			return false, errStopWalk
		}
		return true, nil
	}, n)
	return found
}

// overSpan is the span of windowed call number i, with its OVER clause.
func (p *planner) overSpan(i int) sqlwin.Span {
	if i < 0 || i >= len(p.res.Overs) {
		return sqlwin.Span{}
	}
	o := p.res.Overs[i]
	return sqlwin.Span{Start: o.Call.Start, End: o.End}
}

func (p *planner) where(e sqlparser.Expr) error {
	var span sqlwin.Span
	if p.res.Where != nil {
		span = *p.res.Where
	}
	if i := markerIn(e); i >= 0 {
		return p.errSpan(p.overSpan(i), "window functions are not allowed in WHERE")
	}
	if f := aggregateIn(e); f != nil {
		return p.errExpr(f, sqlwin.Span{}, "aggregate functions are not allowed in WHERE")
	}
	p.plan.Where = p.expr(e, span)
	return nil
}

// expr wraps an AST with its text and position; span may be empty when
// unknown, and then the canonical rendering is used.
func (p *planner) expr(e sqlparser.Expr, span sqlwin.Span) *Expr {
	if span.End > span.Start {
		return &Expr{AST: e, Text: span.Text(p.q), Pos: span.Start}
	}
	return &Expr{AST: e, Text: sqlparser.String(e), Pos: -1}
}

func (p *planner) groupBy(items sqlparser.GroupBy) error {
	g := &GroupWindow{Pos: -1}
	spanOf := func(i int) sqlwin.Span {
		if len(p.res.GroupBy) == len(items) {
			return p.res.GroupBy[i]
		}
		return sqlwin.Span{}
	}
	seen := false
	for i, it := range items {
		c, ok := it.(*sqlparser.ColName)
		if !ok {
			return p.errExpr(it, spanOf(i), "GROUP BY supports only key columns and one tumble(...) or hop(...) window")
		}
		if c.Qualifier.IsEmpty() && c.Name.String() == sqlwin.GroupMarker {
			seen = true
			continue
		}
		if _, isOver := sqlwin.OverIndex(c.Name.String()); isOver {
			return p.errExpr(it, spanOf(i), "window functions are not allowed in GROUP BY")
		}
		g.KeyCols = append(g.KeyCols, c.Name.String())
	}
	if !seen || p.res.Group == nil {
		return p.errWord("group", "GROUP BY needs a tumble(ts, INTERVAL ...) or hop(ts, INTERVAL slide, INTERVAL size) window")
	}
	w := p.res.Group
	g.TimeCol = w.TimeCol.Name
	g.SizeMs, g.SlideMs = w.SizeMs, w.SlideMs
	g.Pos = w.Span.Start
	g.Kind = GroupTumble
	if w.Kind == sqlwin.Hop {
		g.Kind = GroupHop
	}
	p.plan.Group = g
	return nil
}

// items builds the output columns.
func (p *planner) items(exprs sqlparser.SelectExprs) error {
	spans := p.res.Select
	if len(spans) != len(exprs) {
		spans = make([]sqlwin.Span, len(exprs))
	}
	for i, se := range exprs {
		span := spans[i]
		switch se := se.(type) {
		case *sqlparser.StarExpr:
			return p.errExpr(se, span, "SELECT * is not supported: list the output columns")
		case *sqlparser.Nextval:
			return p.errExpr(se, span, "NEXT VALUE is not supported")
		case *sqlparser.AliasedExpr:
			item, err := p.item(se, span)
			if err != nil {
				return err
			}
			p.plan.Items = append(p.plan.Items, item)
		default:
			return p.errExpr(se, span, "unsupported select item")
		}
	}
	return nil
}

// exprSpan strips "[AS] alias" from the span of a select item.
func (p *planner) exprSpan(span sqlwin.Span, alias string) sqlwin.Span {
	if alias == "" || span.End <= span.Start {
		return span
	}
	toks := sqlwin.In(p.res.Tokens, span)
	n := len(toks)
	if n < 2 {
		return span
	}
	n-- // the alias
	if toks[n-1].Type == sqlparser.AS {
		n--
	}
	if n == 0 {
		return span
	}
	return sqlwin.Span{Start: toks[0].Start, End: toks[n-1].End}
}

func (p *planner) item(ae *sqlparser.AliasedExpr, span sqlwin.Span) (Item, error) {
	alias := ae.As.String()
	es := p.exprSpan(span, alias)
	f, isFunc := ae.Expr.(*sqlparser.FuncExpr)
	over := -1
	if isFunc {
		if n := len(f.Exprs); n > 0 {
			if a, ok := f.Exprs[n-1].(*sqlparser.AliasedExpr); ok {
				if c, ok := a.Expr.(*sqlparser.ColName); ok && c.Qualifier.IsEmpty() {
					if idx, ok := sqlwin.OverIndex(c.Name.String()); ok {
						over = idx
					}
				}
			}
		}
	}
	if over < 0 {
		if i := markerIn(ae.Expr); i >= 0 {
			return Item{}, p.errSpan(es, "an expression around a windowed aggregate (%s) is not supported: select the aggregate on its own and compute on its output", p.overSpan(i).Text(p.q))
		}
	}
	if over >= 0 {
		if p.plan.Group != nil {
			return Item{}, p.errSpan(p.overSpan(over), "OVER cannot be used in a GROUP BY query")
		}
		return p.aggItem(f, alias, over, es)
	}
	if isFunc && f.Qualifier.IsEmpty() && IsAggregate(f.Name.String()) {
		if p.plan.Group == nil {
			return Item{}, p.errSpan(es, "aggregate %s needs an OVER clause (or a GROUP BY with tumble/hop)", strings.ToLower(f.Name.String()))
		}
		return p.aggItem(f, alias, -1, es)
	}
	if agg := aggregateIn(ae.Expr); agg != nil {
		if p.plan.Group == nil {
			return Item{}, p.errExpr(agg, sqlwin.Span{}, "aggregate %s needs an OVER clause (or a GROUP BY with tumble/hop)", strings.ToLower(agg.Name.String()))
		}
		return Item{}, p.errSpan(es, "an expression around an aggregate is not supported: select the aggregate on its own")
	}
	e := p.expr(ae.Expr, es)
	name := alias
	if name == "" {
		if c, ok := ae.Expr.(*sqlparser.ColName); ok {
			name = c.Name.String()
		} else {
			name = e.Text
		}
	}
	return Item{Name: name, Expr: e}, nil
}

// aggItem builds an aggregate item; over is the index of its OVER clause,
// -1 inside a GROUP BY query, where the call is the whole item expression
// spanning es.
func (p *planner) aggItem(f *sqlparser.FuncExpr, alias string, over int, es sqlwin.Span) (Item, error) {
	args := f.Exprs
	call := es
	if over >= 0 {
		args = args[:len(args)-1]
		call = p.res.Overs[over].Call
	}
	fn := strings.ToLower(f.Name.String())
	if !f.Qualifier.IsEmpty() {
		return Item{}, p.errExpr(f, call, "qualified function names are not supported")
	}
	ac := &AggCall{Func: fn, Distinct: f.Distinct, Pos: -1}
	if call.End > call.Start {
		ac.Text, ac.Pos = call.Text(p.q), call.Start
	} else {
		ac.Text = sqlparser.String(f)
	}
	if f.Distinct && fn != "count" {
		return Item{}, p.errExpr(f, call, "DISTINCT is only supported in count(DISTINCT x); use count_distinct or approx_count_distinct")
	}
	var argSpans []sqlwin.Span
	if call.End > call.Start {
		if _, spans, ok := sqlwin.SplitArgs(p.res.Tokens, call); ok && len(spans) == len(args) {
			argSpans = spans
			if f.Distinct && len(spans) > 0 {
				if ts := sqlwin.In(p.res.Tokens, spans[0]); len(ts) > 1 && ts[0].Type == sqlparser.DISTINCT {
					argSpans[0].Start = ts[1].Start
				}
			}
		}
	}
	for j, a := range args {
		var as sqlwin.Span
		if argSpans != nil {
			as = argSpans[j]
		}
		switch a := a.(type) {
		case *sqlparser.StarExpr:
			if j != 0 || !strings.HasPrefix(fn, "count") || !a.TableName.IsEmpty() {
				return Item{}, p.errExpr(a, as, "* is only allowed as the first argument of count(*) and count_where(*, c)")
			}
			ac.Star = true
		case *sqlparser.AliasedExpr:
			if !a.As.IsEmpty() {
				return Item{}, p.errExpr(a, as, "aliases are not allowed in function arguments")
			}
			if i := markerIn(a.Expr); i >= 0 {
				return Item{}, p.errSpan(p.overSpan(i), "window functions cannot be nested in an aggregate")
			}
			if inner := aggregateIn(a.Expr); inner != nil {
				return Item{}, p.errExpr(inner, sqlwin.Span{}, "aggregates cannot be nested")
			}
			ac.Args = append(ac.Args, p.expr(a.Expr, as))
		default:
			return Item{}, p.errExpr(a, as, "unsupported function argument")
		}
	}
	if ac.Distinct && (ac.Star || len(ac.Args) != 1) {
		return Item{}, p.errExpr(f, call, "count(DISTINCT x) takes exactly one argument")
	}
	if over >= 0 {
		w, err := p.window(p.res.Overs[over])
		if err != nil {
			return Item{}, err
		}
		ac.Window = w
	}
	name := alias
	if name == "" {
		name = ac.Text
	}
	return Item{Name: name, Agg: ac}, nil
}

// window returns the plan's window for an OVER clause, sharing one
// *WindowSpec per named window.
func (p *planner) window(o *sqlwin.Over) (*WindowSpec, error) {
	if o.Spec != nil {
		w := convertSpec("", o.Spec)
		p.plan.Windows = append(p.plan.Windows, w)
		return w, nil
	}
	key := strings.ToLower(o.Ref.Name)
	if w, ok := p.named[key]; ok {
		return w, nil
	}
	for _, nw := range p.res.Windows {
		if strings.EqualFold(nw.Name.Name, o.Ref.Name) {
			w := convertSpec(nw.Name.Name, nw.Spec)
			p.named[key] = w
			p.plan.Windows = append(p.plan.Windows, w)
			return w, nil
		}
	}
	return nil, newSQLError(p.q, o.Ref.Pos, o.Ref.Name, "unknown window %q", o.Ref.Name)
}

func convertSpec(name string, s *sqlwin.Spec) *WindowSpec {
	w := &WindowSpec{Name: name, OrderBy: s.OrderBy.Name, Pos: s.Span.Start}
	for _, c := range s.PartitionBy {
		w.PartitionBy = append(w.PartitionBy, c.Name)
	}
	w.Frame = Frame{
		Kind:           FrameRange,
		Unbounded:      s.Unbounded,
		Preceding:      s.Preceding,
		EndPreceding:   s.EndPreceding,
		ExcludeCurrent: s.ExcludeCurrent,
	}
	if s.Kind == sqlwin.Rows {
		w.Frame.Kind = FrameRows
		w.Frame.Unbounded = false
		w.Frame.EndPreceding = 0
	}
	return w
}
