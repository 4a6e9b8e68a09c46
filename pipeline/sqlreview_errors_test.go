package pipeline

import (
	"errors"
	"strings"
	"testing"
)

// TestSQLReviewParenErrors checks that a query sqlparser rejects on its
// last token or at its end names the unbalanced parenthesis, with its
// position, rather than "unexpected end of query" (which it said for
// WHERE a > ), whose offender is the ')').
func TestSQLReviewParenErrors(t *testing.T) {
	for _, tt := range []struct {
		q, msg, near string
		line, col    int
	}{
		{"SELECT amount FROM tx WHERE amount > )", "unmatched ')'", ")", 1, 38},
		{"SELECT amount FROM tx WHERE amount > 1)", "unmatched ')'", ")", 1, 39},
		{"SELECT amount FROM tx\nWHERE (amount > 1", "'(' is never closed", "(", 2, 7},
		{"SELECT amount FROM tx WHERE amount IN (1, 2", "'(' is never closed", "(", 1, 39},
		{"SELECT amount FROM tx WHERE (amount > )", "syntax error", ")", 1, 39},
		{"SELECT amount FROM tx WHERE amount >", "unexpected end of query", "", 1, 37},
	} {
		_, err := ParseSQL(tt.q)
		var se *SQLError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a *SQLError", tt.q, err)
			continue
		}
		if !strings.Contains(se.Msg, tt.msg) || se.Near != tt.near || se.Line != tt.line || se.Column != tt.col {
			t.Errorf("%q: %q near %q at %d:%d, want %q near %q at %d:%d", tt.q, se.Msg, se.Near, se.Line, se.Column, tt.msg, tt.near, tt.line, tt.col)
		}
		if tt.near != "" && (se.Offset < 0 || !strings.HasPrefix(tt.q[se.Offset:], tt.near)) {
			t.Errorf("%q: Offset %d does not point at %q", tt.q, se.Offset, tt.near)
		}
	}
}
