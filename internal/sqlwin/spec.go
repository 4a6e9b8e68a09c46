package sqlwin

import (
	"math"
	"strconv"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// unitMs maps the interval units of the dialect to milliseconds. MONTH and
// YEAR are left out on purpose: they have no fixed length.
var unitMs = map[string]int64{
	"millisecond": 1, "milliseconds": 1,
	"second": 1000, "seconds": 1000,
	"minute": 60 * 1000, "minutes": 60 * 1000,
	"hour": 3600 * 1000, "hours": 3600 * 1000,
	"day": 86400 * 1000, "days": 86400 * 1000,
}

// specParser walks tokens [i, end) of the splitter.
type specParser struct {
	s   *splitter
	i   int
	end int
}

func (p *specParser) tok() Token {
	if p.i < p.end {
		return p.s.toks[p.i]
	}
	return Token{Type: -1}
}

func (p *specParser) peekWord(w string) bool { return p.i < p.end && p.tok().Is(w) }

func (p *specParser) peekType(typ int) bool { return p.i < p.end && p.tok().Type == typ }

func (p *specParser) accept(typ int) bool {
	if p.peekType(typ) {
		p.i++
		return true
	}
	return false
}

func (p *specParser) acceptWord(w string) bool {
	if p.peekWord(w) {
		p.i++
		return true
	}
	return false
}

// errHere reports an error at the current token, or at the closing
// parenthesis when the specification ended early.
func (p *specParser) errHere(format string, args ...any) *Error {
	return p.s.errAt(p.i, format, args...)
}

func (p *specParser) expectWord(w, context string) error {
	if !p.acceptWord(w) {
		return p.errHere("expected %s %s", strings.ToUpper(w), context)
	}
	return nil
}

// column parses ident or qualifier.ident.
func (p *specParser) column() (Ident, error) {
	t := p.tok()
	if !t.isIdent() {
		return Ident{}, p.errHere("expected a column name")
	}
	p.i++
	id := Ident{Name: t.Text, Pos: t.Start}
	if p.peekType('.') {
		p.i++
		t = p.tok()
		if !t.isIdent() {
			return Ident{}, p.errHere("expected a column name after '.'")
		}
		p.i++
		id = Ident{Name: t.Text, Pos: t.Start, Qualifier: id.Name, QualifierPos: id.Pos}
	}
	return id, nil
}

// parseSpec parses the window specification between the parentheses at
// tokens open and close.
func (s *splitter) parseSpec(open, close int) (*Spec, error) {
	p := &specParser{s: s, i: open + 1, end: close}
	spec := &Spec{Span: Span{s.toks[open].Start, s.toks[close].End}, Unbounded: true}
	if p.i == p.end {
		return nil, s.errAt(open, "empty window specification: PARTITION BY and ORDER BY are required")
	}
	if p.tok().isIdent() && !p.peekWord("rows") {
		return nil, p.errHere("a window specification cannot refine another window; repeat its definition")
	}
	if !p.accept(sqlparser.PARTITION) {
		return nil, p.errHere("a window needs PARTITION BY <key columns>")
	}
	if !p.accept(sqlparser.BY) {
		return nil, p.errHere("expected BY after PARTITION")
	}
	for {
		c, err := p.column()
		if err != nil {
			return nil, err
		}
		spec.PartitionBy = append(spec.PartitionBy, c)
		if !p.accept(',') {
			break
		}
	}
	if !p.accept(sqlparser.ORDER) {
		return nil, p.errHere("a window needs ORDER BY <event-time column>")
	}
	if !p.accept(sqlparser.BY) {
		return nil, p.errHere("expected BY after ORDER")
	}
	c, err := p.column()
	if err != nil {
		return nil, err
	}
	spec.OrderBy = c
	if p.peekType(sqlparser.DESC) {
		return nil, p.errHere("ORDER BY ... DESC is not supported: windows run forward in event time")
	}
	p.accept(sqlparser.ASC)
	if p.peekType(',') {
		return nil, p.errHere("ORDER BY takes exactly one event-time column")
	}
	if p.peekWord("nulls") {
		return nil, p.errHere("NULLS FIRST/LAST is not supported in a window ORDER BY")
	}
	if p.i < p.end && !p.peekWord("exclude") {
		if err := p.frame(spec); err != nil {
			return nil, err
		}
	}
	if p.acceptWord("exclude") {
		switch {
		case p.acceptWord("current"):
			if err := p.expectWord("row", "after EXCLUDE CURRENT"); err != nil {
				return nil, err
			}
			spec.ExcludeCurrent = true
		case p.acceptWord("no"):
			if err := p.expectWord("others", "after EXCLUDE NO"); err != nil {
				return nil, err
			}
		default:
			return nil, p.errHere("only EXCLUDE CURRENT ROW is supported")
		}
	}
	if p.i < p.end {
		return nil, p.errHere("unexpected text in window specification")
	}
	return spec, nil
}

// bound is one end of a frame.
type bound struct {
	kind  int // boundUnbounded, boundCurrent, boundPreceding
	value int64
	tok   int // index of its first token
}

const (
	boundUnbounded = iota
	boundCurrent
	boundPreceding
)

func (p *specParser) frame(spec *Spec) error {
	switch {
	case p.peekWord("range"):
		spec.Kind = Range
	case p.peekWord("rows"):
		spec.Kind = Rows
	case p.peekWord("groups"):
		return p.errHere("GROUPS frames are not supported; use RANGE or ROWS")
	default:
		return p.errHere("expected RANGE or ROWS frame")
	}
	p.i++
	var start, end bound
	var err error
	if p.acceptWord("between") {
		if start, err = p.bound(spec.Kind); err != nil {
			return err
		}
		if !p.accept(sqlparser.AND) {
			return p.errHere("expected AND in BETWEEN ... AND ...")
		}
		if end, err = p.bound(spec.Kind); err != nil {
			return err
		}
	} else {
		if start, err = p.bound(spec.Kind); err != nil {
			return err
		}
		end = bound{kind: boundCurrent}
	}
	switch start.kind {
	case boundCurrent:
		return p.s.errAt(start.tok, "a frame must start at UNBOUNDED PRECEDING or <n> PRECEDING")
	case boundPreceding:
		// ROWS BETWEEN 0 PRECEDING is the current row alone, as in DuckDB;
		// a RANGE frame needs a positive interval.
		if start.value < 0 || start.value == 0 && spec.Kind != Rows {
			return p.s.errAt(start.tok, "the frame size must be positive")
		}
	}
	if end.kind == boundUnbounded {
		return p.s.errAt(end.tok, "a frame cannot end at UNBOUNDED PRECEDING")
	}
	if spec.Kind == Rows {
		if start.kind == boundUnbounded {
			return p.s.errAt(start.tok, "ROWS BETWEEN UNBOUNDED PRECEDING is not supported; use RANGE BETWEEN UNBOUNDED PRECEDING")
		}
		if end.kind != boundCurrent {
			return p.s.errAt(end.tok, "a ROWS frame must end at CURRENT ROW")
		}
		spec.Unbounded = false
		spec.Preceding = start.value
		return nil
	}
	spec.Unbounded = start.kind == boundUnbounded
	spec.Preceding = start.value
	if end.kind == boundPreceding {
		spec.EndPreceding = end.value
		if !spec.Unbounded && end.value > start.value {
			return p.s.errAt(end.tok, "the frame ends before it starts: the end must not be a longer interval than the start")
		}
	}
	return nil
}

// bound parses UNBOUNDED PRECEDING, CURRENT ROW, INTERVAL ... PRECEDING
// (RANGE) or <n> PRECEDING (ROWS). FOLLOWING is rejected.
func (p *specParser) bound(kind FrameKind) (bound, error) {
	b := bound{tok: p.i}
	switch {
	case p.acceptWord("unbounded"):
		b.kind = boundUnbounded
	case p.acceptWord("current"):
		if err := p.expectWord("row", "after CURRENT"); err != nil {
			return b, err
		}
		return bound{kind: boundCurrent, tok: b.tok}, nil
	case p.peekType(sqlparser.INTERVAL):
		if kind == Rows {
			return b, p.errHere("a ROWS frame counts rows: write <n> PRECEDING, not an INTERVAL")
		}
		ms, err := p.interval()
		if err != nil {
			return b, err
		}
		b.kind, b.value = boundPreceding, ms
	case p.peekType(sqlparser.INTEGRAL):
		if kind == Range {
			return b, p.errHere("a RANGE frame is measured in time: write INTERVAL '%s' <unit> PRECEDING", p.tok().Text)
		}
		n, err := strconv.ParseInt(p.tok().Text, 10, 64)
		if err != nil {
			return b, p.errHere("row count out of range")
		}
		p.i++
		b.kind, b.value = boundPreceding, n
	case p.peekType('-'):
		return b, p.errHere("the frame size must be positive")
	default:
		return b, p.errHere("expected UNBOUNDED PRECEDING, CURRENT ROW or <size> PRECEDING")
	}
	if p.peekWord("following") {
		return b, p.errHere("FOLLOWING is not supported: a feature may only look at the past")
	}
	if !p.acceptWord("preceding") {
		return b, p.errHere("expected PRECEDING")
	}
	return b, nil
}

// interval parses INTERVAL '<n>' <unit>, INTERVAL <n> <unit> or
// INTERVAL '<n> <unit>' and returns milliseconds (>= 0).
func (p *specParser) interval() (int64, error) {
	intervalTok := p.i
	p.i++ // INTERVAL
	t := p.tok()
	var num, unit string
	var unitTok = -1
	switch t.Type {
	case sqlparser.STRING:
		fields := strings.Fields(t.Text)
		switch len(fields) {
		case 1:
			num = fields[0]
		case 2:
			num, unit = fields[0], fields[1]
			unitTok = p.i
		default:
			return 0, p.errHere("expected INTERVAL '<n>' <unit>")
		}
	case sqlparser.INTEGRAL:
		num = t.Text
	case sqlparser.FLOAT:
		return 0, p.errHere("an interval must be a whole number of units: use a smaller unit")
	case '-':
		return 0, p.errHere("an interval must be positive")
	default:
		return 0, p.errHere("expected INTERVAL '<n>' <unit>")
	}
	numTok := p.i
	p.i++
	if unit == "" {
		u := p.tok()
		if p.i >= p.end || u.Type == ',' || u.Type == ')' || strings.EqualFold(u.Text, "PRECEDING") || strings.EqualFold(u.Text, "FOLLOWING") || strings.EqualFold(u.Text, "AND") {
			return 0, p.s.errAt(intervalTok, "an interval needs a unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)")
		}
		unit, unitTok = u.Text, p.i
		p.i++
	}
	ms, ok := unitMs[strings.ToLower(unit)]
	if !ok {
		return 0, p.s.errAt(unitTok, "unknown interval unit %q: use MILLISECOND, SECOND, MINUTE, HOUR or DAY", unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		if strings.HasPrefix(num, "-") {
			return 0, p.s.errAt(numTok, "an interval must be positive")
		}
		if _, ferr := strconv.ParseFloat(num, 64); ferr == nil && !strings.Contains(num, "e") {
			return 0, p.s.errAt(numTok, "an interval must be a whole number of units: use a smaller unit")
		}
		return 0, p.s.errAt(numTok, "invalid interval value %q", num)
	}
	if n < 0 {
		return 0, p.s.errAt(numTok, "an interval must be positive")
	}
	if n > math.MaxInt64/ms {
		return 0, p.s.errAt(numTok, "interval too large")
	}
	return n * ms, nil
}
