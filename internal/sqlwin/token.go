package sqlwin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// Token is one token of a query as produced by sqlparser's tokenizer, with
// its byte span in the query.
type Token struct {
	// Type is the sqlparser token id (sqlparser.ID, sqlparser.STRING,
	// sqlparser.INTEGRAL, a keyword id, or the byte value of a one-character
	// token such as '(' or ',').
	Type int
	// Text is the value the tokenizer returned: an identifier as written,
	// a keyword lower-cased, a string literal without quotes, or the
	// raw text for operators and punctuation.
	Text string
	// Start and End delimit the token in the query: query[Start:End].
	Start, End int
	// Quoted is true for a `back-quoted` or "double-quoted" identifier,
	// which is never a keyword. A double-quoted identifier has Type
	// sqlparser.ID (sqlparser itself would read it as a string, as MySQL
	// does; the dialect follows DuckDB and standard SQL here).
	Quoted bool
	// Escaped is true for a 'string literal' holding a backslash. Text is
	// then its value as standard SQL and DuckDB read it, each backslash a
	// plain character, and Split and ExprSQL re-encode it for sqlparser,
	// which would read \n, \t, \% or \' as MySQL escapes.
	Escaped bool
}

// standardString scans the 'single-quoted' string literal at query[start]
// as standard SQL and DuckDB do: it ends at the first quote not doubled,
// a doubled quote is one quote and a backslash is an ordinary character.
// ok is false when the literal is not terminated.
func standardString(query string, start int) (t Token, ok bool) {
	var b strings.Builder
	for i := start + 1; i < len(query); i++ {
		switch c := query[i]; {
		case c == '\'' && i+1 < len(query) && query[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == '\'':
			return Token{Type: sqlparser.STRING, Text: b.String(), Start: start, End: i + 1,
				Escaped: strings.IndexByte(query[start:i], '\\') >= 0}, true
		default:
			b.WriteByte(c)
		}
	}
	return Token{}, false
}

// sqlparserString renders s as a string literal sqlparser reads back as s.
func sqlparserString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// Span is a half-open byte range [Start, End) of a query.
type Span struct {
	Start, End int
}

// Text returns the part of query the span covers, or "" when the span is
// out of range.
func (s Span) Text(query string) string {
	if s.Start < 0 || s.End > len(query) || s.Start > s.End {
		return ""
	}
	return query[s.Start:s.End]
}

// Is reports whether the token is the unquoted word w (a keyword or an
// identifier), compared case-insensitively.
func (t Token) Is(w string) bool {
	if t.Quoted {
		return false
	}
	switch t.Type {
	case '(', ')', ',', ';', '.', sqlparser.STRING, sqlparser.INTEGRAL, sqlparser.FLOAT:
		return false
	}
	return strings.EqualFold(t.Text, w)
}

// isIdent reports whether the token can name a column, table or window:
// a plain or quoted identifier, but not a reserved keyword.
func (t Token) isIdent() bool {
	return t.Type == sqlparser.ID
}

// Tokenize splits query into tokens with sqlparser's own tokenizer,
// dropping comments. It fails on text the tokenizer rejects (an
// unterminated string, a stray character) and on MySQL-isms that would
// silently change the meaning of a query written for DuckDB or standard
// SQL: /*! ... */ comments, whose contents the tokenizer would splice into
// the statement; // and # comments, which would swallow the rest of the
// line (in DuckDB // is integer division); and the || and && operators,
// which sqlparser reads as OR and AND (|| concatenates strings in DuckDB).
// A "double-quoted" token is an identifier, as in DuckDB; SQL turns it into
// the back-quoted form sqlparser expects. A 'string literal' is read as in
// DuckDB and standard SQL, a backslash an ordinary character: the
// tokenizer's MySQL escapes would turn '\n' into a newline, drop the
// backslash of '\%' and carry 'x\' on past its closing quote (Token.Escaped).
// It never panics.
func Tokenize(query string) (toks []Token, err error) {
	defer func() {
		if r := recover(); r != nil {
			toks, err = nil, &Error{Msg: fmt.Sprintf("cannot tokenize query: %v", r), Offset: 0}
		}
	}()
	tk := sqlparser.NewStringTokenizer(query)
	base := 0 // where tk started in query
	prevEnd := 0
	for {
		typ, val := tk.Scan()
		end := base + tk.Position - 1
		if end > len(query) {
			end = len(query)
		}
		start := prevEnd
		for start < end && isBlank(query[start]) {
			start++
		}
		if (typ == sqlparser.STRING || typ == sqlparser.LEX_ERROR) && start < len(query) && query[start] == '\'' {
			if t, ok := standardString(query, start); ok && (t.End != end || t.Escaped) {
				// The tokenizer read MySQL backslash escapes into the
				// string, and maybe past its end: keep the string as
				// standard SQL and DuckDB read it, and go on after it.
				toks = append(toks, t)
				prevEnd, base = t.End, t.End
				tk = sqlparser.NewStringTokenizer(query[base:])
				continue
			}
		}
		if typ == 0 {
			if strings.TrimSpace(query[start:]) != "" {
				return nil, &Error{Msg: "unexpected text", Near: NearText(query, start), Offset: start}
			}
			return toks, nil
		}
		if end < start || strings.HasPrefix(query[start:], "/*!") {
			return nil, &Error{Msg: "MySQL-specific comments /*! ... */ are not supported", Near: "/*!", Offset: start}
		}
		prevEnd = end
		switch typ {
		case sqlparser.COMMENT:
			if query[start] == '#' || strings.HasPrefix(query[start:], "//") {
				return nil, &Error{Msg: "only -- and /* */ comments are supported (// and # are not)", Near: NearText(query, start), Offset: start}
			}
			continue
		case sqlparser.OR, sqlparser.AND:
			switch query[start:end] {
			case "||":
				return nil, &Error{Msg: "the || operator is not supported: write OR for the logical or", Near: "||", Offset: start}
			case "&&":
				return nil, &Error{Msg: "the && operator is not supported: write AND for the logical and", Near: "&&", Offset: start}
			}
		case sqlparser.LEX_ERROR:
			msg := "invalid token"
			switch query[start] {
			case '\'', '"':
				msg = "unterminated string literal"
			case '`':
				msg = "unterminated quoted identifier"
			case '/':
				msg = "unterminated comment"
			}
			return nil, &Error{Msg: msg, Near: NearText(query, start), Offset: start}
		}
		t := Token{Type: typ, Text: string(val), Start: start, End: end}
		if val == nil && typ != sqlparser.STRING { // '' is an empty string
			t.Text = query[start:end]
		}
		t.Quoted = query[start] == '`'
		if typ == sqlparser.STRING && query[start] == '"' {
			if end-start == 2 {
				return nil, &Error{Msg: "empty quoted identifier", Near: NearText(query, start), Offset: start}
			}
			// SQL re-quotes it with backquotes in place, so the text between
			// the quotes must be the name itself, free of backquotes.
			if end-start != len(t.Text)+2 || strings.ContainsRune(t.Text, '`') {
				return nil, &Error{Msg: "a double-quoted identifier cannot contain quotes, backquotes or backslashes", Near: NearText(query, start), Offset: start}
			}
			// Re-quoted, "a"`b` would become `a``b`, one identifier.
			if start > 0 && query[start-1] == '`' || end < len(query) && query[end] == '`' {
				return nil, &Error{Msg: "a double-quoted identifier cannot touch a back-quoted one: separate them with a space", Near: NearText(query, start), Offset: start}
			}
			t.Type, t.Quoted = sqlparser.ID, true
		}
		toks = append(toks, t)
	}
}

// SQL returns query with each double-quoted identifier of toks (the tokens
// Tokenize returned for query) re-quoted with backquotes, the form
// sqlparser reads as an identifier. The text keeps its length, so byte
// offsets into it are offsets into query.
func SQL(query string, toks []Token) string {
	var b []byte
	for _, t := range toks {
		if t.Quoted && query[t.Start] == '"' {
			if b == nil {
				b = []byte(query)
			}
			b[t.Start], b[t.End-1] = '`', '`'
		}
	}
	if b == nil {
		return query
	}
	return string(b)
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// NearText returns a short excerpt of query starting at offset, for error
// messages: the rest of the line, at most 20 bytes.
func NearText(query string, offset int) string {
	if offset < 0 || offset >= len(query) {
		return ""
	}
	s := query[offset:]
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 20 {
		s = s[:20]
		for len(s) > 0 && s[len(s)-1] >= 0x80 { // do not cut a UTF-8 sequence
			s = s[:len(s)-1]
		}
	}
	return s
}

// Find returns the byte offset of the first occurrence of text in query at
// or after byte offset from, matching whole tokens (identifiers and
// keywords case-insensitively, so Find(q, "amount", 0) does not match
// "amount_usd"). It returns -1 when text does not occur, or when either
// string cannot be tokenized.
func Find(query, text string, from int) int {
	return FindSpan(query, text, from).Start
}

// FindSpan is Find returning the span of the occurrence in query, which
// may be written differently from text (<> for !=, other case, other
// spacing, quotes); its Start is -1 when there is none.
func FindSpan(query, text string, from int) Span {
	qt, err := Tokenize(query)
	if err != nil {
		return Span{-1, -1}
	}
	return findTokens(qt, text, from)
}

// FindTokens is Find over an already tokenized query.
func FindTokens(qt []Token, text string, from int) int {
	return findTokens(qt, text, from).Start
}

func findTokens(qt []Token, text string, from int) Span {
	tt, err := Tokenize(text)
	if err != nil || len(tt) == 0 {
		return Span{-1, -1}
	}
	i := sort.Search(len(qt), func(i int) bool { return qt[i].Start >= from })
	for ; i+len(tt) <= len(qt); i++ {
		ok := true
		for j := range tt {
			a, b := qt[i+j], tt[j]
			if a.Type != b.Type || !sameText(a, b) {
				ok = false
				break
			}
		}
		if ok {
			return Span{qt[i].Start, qt[i+len(tt)-1].End}
		}
	}
	return Span{-1, -1}
}

func sameText(a, b Token) bool {
	switch a.Type {
	case sqlparser.STRING:
		return a.Text == b.Text
	case sqlparser.NE: // <> and !=, which sqlparser renders as !=
		return true
	}
	return strings.EqualFold(a.Text, b.Text)
}

// In returns the tokens of toks that lie inside span s.
func In(toks []Token, s Span) []Token {
	i := sort.Search(len(toks), func(i int) bool { return toks[i].Start >= s.Start })
	j := i
	for j < len(toks) && toks[j].End <= s.End {
		j++
	}
	return toks[i:j]
}

// SplitArgs splits the arguments of a call written as name(a, b, ...) and
// spanning s: it returns the name token and one span per argument (split at
// commas outside nested parentheses, trimmed to their tokens). ok is false
// when s is not exactly one call. f() has no arguments.
func SplitArgs(toks []Token, s Span) (name Token, args []Span, ok bool) {
	ts := In(toks, s)
	if len(ts) < 3 || ts[1].Type != '(' || ts[len(ts)-1].Type != ')' {
		return Token{}, nil, false
	}
	if ts[0].Type == '(' || ts[0].Type == ')' || ts[0].Type == ',' {
		return Token{}, nil, false
	}
	inner := ts[2 : len(ts)-1]
	depth := 0
	first := 0
	for i, t := range inner {
		switch t.Type {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return Token{}, nil, false // the first '(' closed before the end
			}
		case ',':
			if depth == 0 {
				if i == first {
					return Token{}, nil, false
				}
				args = append(args, Span{inner[first].Start, inner[i-1].End})
				first = i + 1
			}
		}
	}
	if depth != 0 {
		return Token{}, nil, false
	}
	if first < len(inner) {
		args = append(args, Span{inner[first].Start, inner[len(inner)-1].End})
	} else if len(inner) > 0 {
		return Token{}, nil, false // trailing comma
	}
	return ts[0], args, true
}
