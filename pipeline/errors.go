package pipeline

import (
	"fmt"
	"unicode/utf8"

	"github.com/volga-go/volga/internal/sqlwin"
)

// SQLError is a compile-time error in a SQL pipeline: what is wrong, the
// offending text and where it is. ParseSQL returns only *SQLError errors,
// and the binder reports unknown columns and functions with it too (see
// Plan.ErrorAt).
type SQLError struct {
	// Msg says what is wrong, e.g. `unknown window "w2"`.
	Msg string
	// Near is the offending text as written in the query ("" at the end of
	// the query).
	Near string
	// Offset is the byte offset of Near in the query, -1 when unknown.
	Offset int
	// Line and Column locate Offset, both starting at 1 (0 when unknown).
	// Column counts characters (runes), not bytes.
	Line, Column int
	// Built is true for an error in a pipeline written with the Builder,
	// which has no SQL text: Near is then the expression or column given
	// to the Builder.
	Built bool
}

// Error renders the error as
//
//	sql: unknown window "w2" at line 3, column 14 (near "w2")
//
// or, for a pipeline written with the Builder,
//
//	builder: unknown column "amt" (table tx has user_id, ts, amount) (in "amt")
func (e *SQLError) Error() string {
	if e.Built {
		if e.Near != "" {
			return fmt.Sprintf("builder: %s (in %q)", e.Msg, e.Near)
		}
		return "builder: " + e.Msg
	}
	s := "sql: " + e.Msg
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	}
	if e.Near != "" {
		s += fmt.Sprintf(" (near %q)", e.Near)
	} else if e.Line > 0 {
		s += " (at the end of the query)"
	}
	return s
}

// Locate converts a byte offset of sql into a 1-based line and column.
// Lines are separated by '\n'; the column counts runes. An offset out of
// range is clamped to the text.
func Locate(sql string, offset int) (line, col int) {
	if offset < 0 {
		offset = 0
	}
	if offset > len(sql) {
		offset = len(sql)
	}
	line, col = 1, 1
	for i := 0; i < offset; {
		r, size := utf8.DecodeRuneInString(sql[i:])
		if i+size > offset {
			break
		}
		i += size
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// newSQLError builds an error located at offset of query; near is the
// offending text.
func newSQLError(query string, offset int, near, format string, args ...any) *SQLError {
	e := &SQLError{Msg: fmt.Sprintf(format, args...), Near: near, Offset: offset}
	if offset >= 0 && query != "" {
		e.Line, e.Column = Locate(query, offset)
	}
	return e
}

// ErrorAt returns a *SQLError with the message format/args, positioned at
// the first occurrence of text in the plan's SQL. text is matched as whole
// tokens (identifiers case-insensitively), so ErrorAt("amount", ...) does
// not land on "amount_usd", and multi-token text such as "t.amount" or
// "sum(x)" works too. When the plan was built in Go, or text does not
// occur, the error carries no position. Binders use it for errors found
// after parsing:
//
//	return plan.ErrorAt(name, "unknown column %q", name)
func (p *Plan) ErrorAt(text string, format string, args ...any) error {
	return p.ErrorAfter(0, text, format, args...)
}

// ErrorAfter is ErrorAt for the first occurrence of text at or after byte
// offset from, typically the Pos of the Expr being bound, so that the error
// points at the right one of several occurrences. It falls back to the
// first occurrence anywhere, and when text does not occur at all (sqlparser
// renders some expressions differently from how they were written) to
// offset from itself, when that is positive.
func (p *Plan) ErrorAfter(from int, text string, format string, args ...any) error {
	sp := sqlwin.Span{Start: -1}
	if p != nil && p.SQL != "" && text != "" {
		if from < 0 {
			from = 0
		}
		sp = sqlwin.FindSpan(p.SQL, text, from)
		if sp.Start < 0 && from > 0 {
			sp = sqlwin.FindSpan(p.SQL, text, 0)
		}
	}
	sql := ""
	if p != nil {
		sql = p.SQL
	}
	if sp.Start < 0 && from > 0 && from < len(sql) {
		return newSQLError(sql, from, sqlwin.NearText(sql, from), format, args...)
	}
	if sp.Start < 0 {
		return &SQLError{Msg: fmt.Sprintf(format, args...), Near: text, Offset: -1, Built: sql == ""}
	}
	// Near is the text as written, which sqlparser's rendering may not be.
	return newSQLError(sql, sp.Start, sp.Text(sql), format, args...)
}
