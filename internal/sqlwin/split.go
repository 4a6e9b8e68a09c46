package sqlwin

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// Error is a failure to split a query, positioned in the original text.
type Error struct {
	// Msg says what is wrong.
	Msg string
	// Near is the offending text as written.
	Near string
	// Offset is the byte offset of Near in the query.
	Offset int
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Near != "" {
		return fmt.Sprintf("%s at offset %d (near %q)", e.Msg, e.Offset, e.Near)
	}
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

// OverMarkerPrefix starts the identifier that Split appends as the last
// argument of every call followed by OVER: `sum(x) OVER w` becomes
// `sum(x, __volga_over_0)`, the index pointing into Result.Overs.
const OverMarkerPrefix = "__volga_over_"

// GroupMarker is the identifier that replaces a tumble(...) or hop(...)
// call in GROUP BY.
const GroupMarker = "__volga_group"

// OverIndex reports whether name is an OVER marker and which.
func OverIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, OverMarkerPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Ident is an identifier as written, with its byte offset. A qualified
// name t.c is kept as its last part, c, with the table name t in
// Qualifier.
type Ident struct {
	Name string
	Pos  int
	// Qualifier is the table name of a qualified column (t in t.c), ""
	// when there is none; QualifierPos is its byte offset.
	Qualifier    string
	QualifierPos int
}

// FrameKind is RANGE or ROWS.
type FrameKind int

const (
	// Range measures a frame in event time.
	Range FrameKind = iota
	// Rows measures a frame in rows.
	Rows
)

// Spec is a parsed window specification: the text between the parentheses
// of OVER (...) or WINDOW w AS (...).
type Spec struct {
	PartitionBy []Ident
	OrderBy     Ident
	Kind        FrameKind
	// Unbounded is UNBOUNDED PRECEDING as the frame start.
	Unbounded bool
	// Preceding is the frame start: milliseconds (Range) or rows (Rows).
	Preceding int64
	// EndPreceding is the frame end in milliseconds before the current
	// row; 0 is CURRENT ROW.
	EndPreceding int64
	// ExcludeCurrent is EXCLUDE CURRENT ROW.
	ExcludeCurrent bool
	// Span covers the parentheses and what is between them.
	Span Span
}

// Over is one aggregate call followed by an OVER clause.
type Over struct {
	// Call spans the call from its function name to its closing
	// parenthesis, e.g. "sum(amount)".
	Call Span
	// Pos is the offset of the OVER keyword; End is the end of the clause.
	Pos, End int
	// Ref names the window for OVER name and OVER (name); empty for an
	// inline specification.
	Ref Ident
	// Spec is the inline specification (nil when Ref is set).
	Spec *Spec
}

// NamedWindow is one entry of the WINDOW clause.
type NamedWindow struct {
	Name Ident
	Spec *Spec
}

// GroupKind is tumble or hop.
type GroupKind int

const (
	// Tumble is tumble(ts, INTERVAL size).
	Tumble GroupKind = iota + 1
	// Hop is hop(ts, INTERVAL slide, INTERVAL size).
	Hop
)

// Group is a tumble(...) or hop(...) call of the GROUP BY clause.
type Group struct {
	Kind    GroupKind
	TimeCol Ident
	// SizeMs and SlideMs are in milliseconds; SlideMs == SizeMs for tumble.
	SizeMs, SlideMs int64
	// Span covers the call.
	Span Span
}

// Result is a query split into what sqlparser can parse and the window
// clauses it cannot.
type Result struct {
	// Query is the original text.
	Query string
	// SQL is the rewritten text for sqlparser.Parse: OVER clauses turned into
	// marker arguments, the WINDOW clause removed, tumble/hop replaced by
	// GroupMarker. Use Offset to map its positions back to Query.
	SQL string
	// Tokens are the tokens of Query, comments excluded.
	Tokens []Token
	// Overs are the OVER clauses in text order; marker i refers to Overs[i].
	Overs []*Over
	// Windows are the WINDOW clause entries in text order.
	Windows []*NamedWindow
	// Group is the tumble/hop call of GROUP BY, nil when there is none.
	Group *Group
	// Select spans the items of the outer select list, split at top-level
	// commas (aliases included).
	Select []Span
	// Where spans the outer WHERE predicate, nil when there is none.
	Where *Span
	// GroupBy spans the items of the outer GROUP BY, nil when there is none.
	GroupBy []Span

	edits []edit
}

type edit struct {
	start, end       int // in Query
	newStart, newEnd int // in SQL
	text             string
}

// Offset maps a byte offset of SQL back to the corresponding offset of
// Query. Offsets inside rewritten text map to the start of what it replaced.
func (r *Result) Offset(pos int) int {
	shift := 0
	for _, e := range r.edits {
		if pos < e.newStart {
			break
		}
		if pos < e.newEnd {
			return e.start
		}
		shift = e.end - e.newEnd
	}
	out := pos + shift
	if out > len(r.Query) {
		out = len(r.Query)
	}
	if out < 0 {
		out = 0
	}
	return out
}

type splitter struct {
	q     string
	toks  []Token
	match []int // index of the matching parenthesis, -1 when unbalanced
	res   *Result
}

// Split tokenizes query, parses its OVER clauses, WINDOW clause and
// tumble/hop group window, and returns the rewritten statement for
// sqlparser.Parse with everything it found. Errors are *Error values.
// Split never panics.
func Split(query string) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &Error{Msg: fmt.Sprintf("internal error while splitting window clauses: %v", r)}
		}
	}()
	toks, err := Tokenize(query)
	if err != nil {
		return nil, err
	}
	s := &splitter{q: query, toks: toks, res: &Result{Query: query, Tokens: toks}}
	s.matchParens()
	if err := s.run(); err != nil {
		return nil, err
	}
	s.addCastEdits()
	s.rewrite()
	return s.res, nil
}

func (s *splitter) matchParens() {
	s.match = make([]int, len(s.toks))
	var stack []int
	for i, t := range s.toks {
		s.match[i] = -1
		switch t.Type {
		case '(':
			stack = append(stack, i)
		case ')':
			if n := len(stack); n > 0 {
				s.match[i], s.match[stack[n-1]] = stack[n-1], i
				stack = stack[:n-1]
			}
		}
	}
}

func (s *splitter) errAt(i int, format string, args ...any) *Error {
	if i >= len(s.toks) {
		return &Error{Msg: fmt.Sprintf(format, args...), Offset: len(s.q)}
	}
	t := s.toks[i]
	return &Error{Msg: fmt.Sprintf(format, args...), Near: s.q[t.Start:t.End], Offset: t.Start}
}

func (s *splitter) addEdit(start, end int, text string) {
	s.res.edits = append(s.res.edits, edit{start: start, end: end, text: text})
}

// rewrite applies the edits, which are recorded in text order and never
// overlap.
func (s *splitter) rewrite() {
	src := SQL(s.q, s.toks) // double-quoted identifiers back-quoted
	var b strings.Builder
	last := 0
	for i := range s.res.edits {
		e := &s.res.edits[i]
		b.WriteString(src[last:e.start])
		e.newStart = b.Len()
		b.WriteString(e.text)
		e.newEnd = b.Len()
		last = e.end
	}
	b.WriteString(src[last:])
	s.res.SQL = b.String()
}

// clause keywords that end a top-level WHERE or GROUP BY.
func (s *splitter) endsClause(i int) bool {
	t := s.toks[i]
	switch t.Type {
	case sqlparser.GROUP, sqlparser.HAVING, sqlparser.ORDER, sqlparser.LIMIT, ';', sqlparser.UNION, sqlparser.FOR, sqlparser.LOCK:
		return true
	}
	return s.isWindowClause(i)
}

// isWindowClause reports whether token i starts `WINDOW name AS (`.
func (s *splitter) isWindowClause(i int) bool {
	return i+3 < len(s.toks) && s.toks[i].Type == sqlparser.ID && s.toks[i].Is("window") &&
		s.toks[i+1].isIdent() && s.toks[i+2].Type == sqlparser.AS && s.toks[i+3].Type == '('
}

func (s *splitter) run() error {
	toks := s.toks
	depth := 0
	selectStart := -1 // first token of the current top-level select item
	inSelect := false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.Type {
		case '(':
			depth++
			continue
		case ')':
			depth--
			if i+1 < len(toks) && toks[i+1].Type == sqlparser.ID && toks[i+1].Is("over") {
				next, err := s.parseOver(i)
				if err != nil {
					return err
				}
				i = next - 1
			}
			continue
		case ';':
			if depth == 0 {
				for j := i + 1; j < len(toks); j++ {
					if toks[j].Type != ';' {
						return s.errAt(j, "multiple statements are not supported")
					}
				}
			}
		}
		if t.Type == sqlparser.ID && t.Is("over") && i+1 < len(toks) && (toks[i+1].isIdent() || toks[i+1].Type == '(') {
			return s.errAt(i, "OVER must follow an aggregate call such as sum(x)")
		}
		if depth != 0 {
			continue
		}
		switch {
		case t.Type == sqlparser.SELECT && i == 0:
			inSelect = true
			selectStart = i + 1
		case inSelect && (t.Type == ',' || t.Type == sqlparser.FROM):
			if selectStart < i {
				s.res.Select = append(s.res.Select, Span{toks[selectStart].Start, toks[i-1].End})
			}
			selectStart = i + 1
			if t.Type == sqlparser.FROM {
				inSelect = false
			}
		case t.Type == sqlparser.WHERE && s.res.Where == nil:
			j, d := i+1, 0
			for ; j < len(toks); j++ {
				if toks[j].Type == '(' {
					d++
				} else if toks[j].Type == ')' {
					d--
				} else if d == 0 && s.endsClause(j) {
					break
				}
			}
			if j > i+1 {
				s.res.Where = &Span{toks[i+1].Start, toks[j-1].End}
			}
		case t.Type == sqlparser.GROUP && i+1 < len(toks) && toks[i+1].Type == sqlparser.BY && s.res.GroupBy == nil:
			next, err := s.parseGroupBy(i + 2)
			if err != nil {
				return err
			}
			i = next - 1
		case s.isWindowClause(i):
			next, err := s.parseWindowClause(i)
			if err != nil {
				return err
			}
			i = next - 1
		}
	}
	return nil
}

// parseOver parses the OVER clause after the ')' at token close and
// returns the index of the first token after it.
func (s *splitter) parseOver(close int) (int, error) {
	open := s.match[close]
	overTok := close + 1
	if open < 1 || !s.toks[open-1].isIdent() || s.toks[open-1].Quoted {
		return 0, s.errAt(overTok, "OVER must follow an aggregate call such as sum(x)")
	}
	nameTok := open - 1
	if nameTok > 0 && s.toks[nameTok-1].Type == '.' {
		return 0, s.errAt(nameTok-1, "qualified function names are not supported before OVER")
	}
	o := &Over{Call: Span{s.toks[nameTok].Start, s.toks[close].End}, Pos: s.toks[overTok].Start}
	i := overTok + 1
	if i >= len(s.toks) {
		return 0, s.errAt(overTok, "OVER needs a window name or a window specification in parentheses")
	}
	switch t := s.toks[i]; {
	case t.isIdent():
		o.Ref = Ident{Name: t.Text, Pos: t.Start}
		o.End = t.End
		i++
	case t.Type == '(':
		end := s.match[i]
		if end < 0 {
			return 0, s.errAt(i, "unbalanced parenthesis in OVER clause")
		}
		if end == i+2 && s.toks[i+1].isIdent() && !s.toks[i+1].Is("rows") {
			o.Ref = Ident{Name: s.toks[i+1].Text, Pos: s.toks[i+1].Start}
		} else {
			spec, err := s.parseSpec(i, end)
			if err != nil {
				return 0, err
			}
			o.Spec = spec
		}
		o.End = s.toks[end].End
		i = end + 1
	default:
		return 0, s.errAt(i, "OVER needs a window name or a window specification in parentheses")
	}
	idx := len(s.res.Overs)
	s.res.Overs = append(s.res.Overs, o)
	marker := OverMarkerPrefix + strconv.Itoa(idx) + ")"
	if close != open+1 {
		marker = ", " + marker
	}
	s.addEdit(s.toks[close].Start, o.End, marker)
	return i, nil
}

// parseWindowClause parses WINDOW name AS (spec) [, ...] starting at token
// i (the WINDOW word) and returns the index after it.
func (s *splitter) parseWindowClause(i int) (int, error) {
	start := s.toks[i].Start
	i++
	for {
		if i+2 >= len(s.toks) || !s.toks[i].isIdent() || s.toks[i+1].Type != sqlparser.AS || s.toks[i+2].Type != '(' {
			return 0, s.errAt(i, "expected name AS (window specification) in WINDOW clause")
		}
		name := Ident{Name: s.toks[i].Text, Pos: s.toks[i].Start}
		for _, w := range s.res.Windows {
			if strings.EqualFold(w.Name.Name, name.Name) {
				return 0, s.errAt(i, "window %q is defined twice", name.Name)
			}
		}
		open := i + 2
		end := s.match[open]
		if end < 0 {
			return 0, s.errAt(open, "unbalanced parenthesis in WINDOW clause")
		}
		spec, err := s.parseSpec(open, end)
		if err != nil {
			return 0, err
		}
		s.res.Windows = append(s.res.Windows, &NamedWindow{Name: name, Spec: spec})
		i = end + 1
		if i < len(s.toks) && s.toks[i].Type == ',' {
			i++
			continue
		}
		break
	}
	if i < len(s.toks) {
		switch s.toks[i].Type {
		case sqlparser.WHERE, sqlparser.GROUP, sqlparser.HAVING:
			return 0, s.errAt(i, "the WINDOW clause must come after WHERE and GROUP BY")
		}
		if s.isWindowClause(i) {
			return 0, s.errAt(i, "only one WINDOW clause is allowed; separate definitions with commas")
		}
	}
	s.addEdit(start, s.toks[i-1].End, " ")
	return i, nil
}

// parseGroupBy scans the GROUP BY list starting at token i, records its
// items, and replaces a tumble/hop call by GroupMarker.
func (s *splitter) parseGroupBy(i int) (int, error) {
	itemStart := i
	depth := 0
	for ; i <= len(s.toks); i++ {
		if i < len(s.toks) {
			switch s.toks[i].Type {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			}
		}
		if depth != 0 {
			continue
		}
		if i < len(s.toks) && s.toks[i].Type != ',' && !s.endsClause(i) {
			continue
		}
		if i == itemStart {
			return 0, s.errAt(i, "empty GROUP BY item")
		}
		item := Span{s.toks[itemStart].Start, s.toks[i-1].End}
		s.res.GroupBy = append(s.res.GroupBy, item)
		t := s.toks[itemStart]
		if (t.Is("tumble") || t.Is("hop")) && t.Type == sqlparser.ID && itemStart+1 < i && s.toks[itemStart+1].Type == '(' {
			if s.res.Group != nil {
				return 0, s.errAt(itemStart, "only one tumble or hop window is allowed in GROUP BY")
			}
			g, err := s.parseGroupCall(itemStart, i)
			if err != nil {
				return 0, err
			}
			s.res.Group = g
			s.addEdit(g.Span.Start, g.Span.End, GroupMarker)
		}
		if i == len(s.toks) || s.toks[i].Type != ',' {
			return i, nil
		}
		itemStart = i + 1
	}
	return len(s.toks), nil
}

// parseGroupCall parses tumble(ts, INTERVAL ...) or hop(ts, INTERVAL slide,
// INTERVAL size) occupying tokens [i, end).
func (s *splitter) parseGroupCall(i, end int) (*Group, error) {
	name := s.toks[i]
	g := &Group{Kind: Tumble}
	usage := "tumble(time_column, INTERVAL '<n>' <unit>)"
	if name.Is("hop") {
		g.Kind = Hop
		usage = "hop(time_column, INTERVAL <slide>, INTERVAL <size>)"
	}
	closeTok := s.match[i+1]
	if closeTok != end-1 {
		return nil, s.errAt(i, "expected %s", usage)
	}
	g.Span = Span{name.Start, s.toks[closeTok].End}
	p := &specParser{s: s, i: i + 2, end: closeTok}
	col, err := p.column()
	if err != nil {
		return nil, s.errAt(p.i, "expected %s", usage)
	}
	g.TimeCol = col
	var sizes []int64
	for p.i < p.end {
		if !p.accept(',') {
			return nil, s.errAt(p.i, "expected %s", usage)
		}
		if !p.peekType(sqlparser.INTERVAL) {
			return nil, s.errAt(p.i, "expected %s", usage)
		}
		at := p.i
		ms, err := p.interval()
		if err != nil {
			return nil, err
		}
		if ms <= 0 {
			return nil, s.errAt(at, "a %s window needs a positive interval", strings.ToLower(name.Text))
		}
		sizes = append(sizes, ms)
	}
	switch {
	case g.Kind == Tumble && len(sizes) == 1:
		g.SizeMs, g.SlideMs = sizes[0], sizes[0]
	case g.Kind == Hop && len(sizes) == 2:
		g.SlideMs, g.SizeMs = sizes[0], sizes[1]
	default:
		return nil, s.errAt(i, "wrong number of arguments: expected %s", usage)
	}
	return g, nil
}
