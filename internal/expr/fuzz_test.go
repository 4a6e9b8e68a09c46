package expr

import (
	"testing"
)

// FuzzCompileEval checks that parsing, compiling and evaluating any text
// never panics, and that a successful evaluation has the batch length and
// the announced type.
func FuzzCompileEval(f *testing.F) {
	for _, s := range []string{
		"id + 1", "amount / qty", "id div 0", "ok AND NOT flag OR NULL", "merchant LIKE '%a_\\\\'",
		"CASE qty WHEN 1 THEN 'a' ELSE NULL END", "coalesce(NULL, NULL)", "nullif(NULL, 1)",
		"ts > '2023-01-01T00:00:00Z'", "-(-id)", "abs(-9223372036854775808)", "length(lower(upper(merchant)))",
		"id IN (1, NULL, 2.5)", "cast(merchant as signed)", "cast('2024-01-01' as datetime)", "x'ff'", "1e400",
		"99999999999999999999", "NULL <=> NULL", "NOT NULL", "- NULL", "id BETWEEN NULL AND 3", "CASE WHEN NULL THEN 1 END",
		"amount % 0", "0.0 / 0 >= amount", "id / 0 <=> 1e308 * 10", "id * 1.5 IN (0.0 / 0, amount)", "-9223372036854775808 + -1",
		"id - -9223372036854775808", "9223372036854775807 * 1.0", "-9223372036854775808 % -1",
		"18446744073709551615 + 1", "cast(id as unsigned) * 9223372036854775808 > -1", "coalesce(cast(qty as unsigned), 0) div 0",
		"CASE WHEN ok THEN cast(id as unsigned) ELSE id END", "merchant LIKE 'a$%' ESCAPE '$'", "merchant LIKE 'a\\' ESCAPE '\\'",
		"CAST(amount * 1e18 AS SIGNED)", "cast(-amount as unsigned) % 3", "'x\\' = merchant OR 'y' = merchant",
	} {
		f.Add(s)
	}
	rec := testBatch(f)
	f.Fuzz(func(t *testing.T, s string) {
		ast, err := ParseExpr(s)
		if err != nil {
			return
		}
		e, err := Compile(ast, rec.Schema())
		if err != nil {
			return
		}
		_ = e.String()
		out, err := e.Eval(rec)
		if err != nil {
			return
		}
		defer out.Release()
		if out.Len() != int(rec.NumRows()) {
			t.Fatalf("%q: %d rows, want %d", s, out.Len(), rec.NumRows())
		}
		if out.DataType().ID() != e.Type().ID() {
			t.Fatalf("%q: result %s, Type() %s", s, out.DataType(), e.Type())
		}
	})
}
