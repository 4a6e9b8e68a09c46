package sqlwin

import (
	"sort"
	"strings"

	"github.com/xwb1989/sqlparser"
)

// castTypes maps DuckDB's names of CAST target types, which sqlparser does
// not parse, to the MySQL names it does, with the Arrow type the
// expression compiler gives them: DOUBLE and friends are float64
// (DECIMAL), the integer types int64 (SIGNED), the text types string
// (CHAR), TIMESTAMP timestamp[ms] (DATETIME).
var castTypes = map[string]string{
	"double": "decimal", "float": "decimal", "real": "decimal", "float4": "decimal", "float8": "decimal",
	"bigint": "signed", "int": "signed", "integer": "signed", "int4": "signed", "int8": "signed", "int64": "signed", "long": "signed",
	"ubigint": "unsigned",
	"varchar": "char", "text": "char", "string": "char",
	"timestamp": "datetime",
}

// replacement is text to put in place of query[start:end].
type replacement struct {
	start, end int
	text       string
}

// castRewrites finds the DuckDB type names of CAST(x AS type) in toks and
// returns their sqlparser replacements, in text order.
func castRewrites(toks []Token) []replacement {
	var out []replacement
	for i := 2; i+1 < len(toks); i++ {
		t := toks[i]
		if toks[i-1].Type != sqlparser.AS || toks[i+1].Type != ')' || t.Quoted {
			continue
		}
		to, ok := castTypes[strings.ToLower(t.Text)]
		if !ok {
			continue
		}
		if closesCast(toks, i+1) {
			out = append(out, replacement{start: t.Start, end: t.End, text: to})
		}
	}
	return out
}

// closesCast reports whether the ')' at toks[close] closes a CAST(.
func closesCast(toks []Token, close int) bool {
	depth := 0
	for j := close - 1; j > 0; j-- {
		switch toks[j].Type {
		case ')':
			depth++
		case '(':
			if depth == 0 {
				return toks[j-1].Is("cast")
			}
			depth--
		}
	}
	return false
}

// isTimestampLiteral reports whether toks[i] is the string of a
// TIMESTAMP '...' literal.
func isTimestampLiteral(toks []Token, i int) bool {
	return i > 0 && toks[i].Type == sqlparser.STRING && toks[i-1].Type == sqlparser.TIMESTAMP && !toks[i-1].Quoted
}

// stringRewrites re-encodes the string literals of toks that hold a
// backslash (Token.Escaped) so that sqlparser reads them with the value
// Tokenize gave them, and turns DuckDB's TIMESTAMP '...' literal, which
// sqlparser does not parse, into CAST('...' AS DATETIME).
func stringRewrites(toks []Token) []replacement {
	var out []replacement
	for i, t := range toks {
		switch {
		case isTimestampLiteral(toks, i):
			out = append(out, replacement{start: toks[i-1].Start, end: t.End, text: "cast(" + sqlparserString(t.Text) + " as datetime)"})
		case t.Escaped:
			out = append(out, replacement{start: t.Start, end: t.End, text: sqlparserString(t.Text)})
		}
	}
	return out
}

// rewrites are the CAST type, string and timestamp literal rewrites of
// toks, in text order.
func rewrites(toks []Token) []replacement {
	reps := append(castRewrites(toks), stringRewrites(toks)...)
	sort.Slice(reps, func(i, j int) bool { return reps[i].start < reps[j].start })
	return reps
}

// ExprSQL returns an expression (as the Go builder takes them, without
// SELECT) rewritten for sqlparser: double-quoted identifiers back-quoted,
// DuckDB type names in CAST replaced by the ones sqlparser parses, string
// literals holding a backslash re-encoded so that sqlparser reads each
// backslash as the plain character it is in DuckDB, TIMESTAMP '...'
// literals turned into CAST('...' AS DATETIME). It fails as Tokenize does.
func ExprSQL(text string) (string, error) {
	toks, err := Tokenize(text)
	if err != nil {
		return "", err
	}
	out := SQL(text, toks)
	reps := rewrites(toks)
	for i := len(reps) - 1; i >= 0; i-- {
		r := reps[i]
		out = out[:r.start] + r.text + out[r.end:]
	}
	return out, nil
}

// addCastEdits records the CAST type and string literal rewrites that do
// not fall inside an edit already made (an OVER clause), keeping the edits
// in text order.
func (s *splitter) addCastEdits() {
	reps := rewrites(s.toks)
	if len(reps) == 0 {
		return
	}
	for _, r := range reps {
		inside := false
		for _, e := range s.res.edits {
			if r.start < e.end && e.start < r.end {
				inside = true
				break
			}
		}
		if !inside {
			s.addEdit(r.start, r.end, r.text)
		}
	}
	sort.Slice(s.res.edits, func(i, j int) bool { return s.res.edits[i].start < s.res.edits[j].start })
}
