package expr

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testBatch has 5 rows with NULLs in every column but ts.
func testBatch(t testing.TB) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "Amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4, 5}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{10, 0, 2.5, 0, -4}, []bool{true, true, true, false, true})
	b.Field(2).(*array.Int32Builder).AppendValues([]int32{3, 0, 7, 1, 0}, []bool{true, true, false, true, true})
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"Shop", "café", "", "x", "AbC"}, []bool{true, true, false, true, true})
	b.Field(4).(*array.BooleanBuilder).AppendValues([]bool{true, true, true, false, false}, []bool{true, false, true, true, false})
	b.Field(5).(*array.BooleanBuilder).AppendValues([]bool{true, false, false, false, true}, []bool{false, true, false, true, true})
	b.Field(6).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1700000000000, 1700000001000, 1700000002000, 1700000003000, 1700000004000}, nil)
	return b.NewRecordBatch()
}

// render turns an array into strings, "NULL" for nulls.
func render(a arrow.Array) []string {
	out := make([]string, a.Len())
	for i := range out {
		if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
			out[i] = "NULL"
		} else {
			out[i] = a.ValueStr(i)
		}
	}
	return out
}

func TestEval(t *testing.T) {
	rec := testBatch(t)
	defer rec.Release()
	tests := []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"id", arrow.PrimitiveTypes.Int64, "1 2 3 4 5"},
		{"t.ID", arrow.PrimitiveTypes.Int64, "1 2 3 4 5"},
		{"amount", arrow.PrimitiveTypes.Float64, "10 0 2.5 NULL -4"},
		{"42", arrow.PrimitiveTypes.Int64, "42 42 42 42 42"},
		{"1.5", arrow.PrimitiveTypes.Float64, "1.5 1.5 1.5 1.5 1.5"},
		{"'s'", arrow.BinaryTypes.String, "s s s s s"},
		{"TRUE", arrow.FixedWidthTypes.Boolean, "true true true true true"},
		{"NULL", arrow.Null, "NULL NULL NULL NULL NULL"},
		{"id + 1", arrow.PrimitiveTypes.Int64, "2 3 4 5 6"},
		{"id + qty", arrow.PrimitiveTypes.Int64, "4 2 NULL 5 5"},
		{"id * amount", arrow.PrimitiveTypes.Float64, "10 0 7.5 NULL -20"},
		{"id - 0.5", arrow.PrimitiveTypes.Float64, "0.5 1.5 2.5 3.5 4.5"},
		{"-id", arrow.PrimitiveTypes.Int64, "-1 -2 -3 -4 -5"},
		{"id / 2", arrow.PrimitiveTypes.Float64, "0.5 1 1.5 2 2.5"},
		{"id / qty", arrow.PrimitiveTypes.Float64, "0.3333333333333333 +Inf NULL 4 +Inf"},
		{"amount / 0", arrow.PrimitiveTypes.Float64, "+Inf NaN +Inf NULL -Inf"},
		{"id div 2", arrow.PrimitiveTypes.Int64, "0 1 1 2 2"},
		{"id % qty", arrow.PrimitiveTypes.Int64, "1 NULL NULL 0 NULL"},
		{"amount % 3", arrow.PrimitiveTypes.Float64, "1 0 2.5 NULL -1"},
		{"id > 2", arrow.FixedWidthTypes.Boolean, "false false true true true"},
		{"amount >= qty", arrow.FixedWidthTypes.Boolean, "true true NULL NULL false"},
		{"merchant = 'x'", arrow.FixedWidthTypes.Boolean, "false false NULL true false"},
		{"merchant != 'x'", arrow.FixedWidthTypes.Boolean, "true true NULL false true"},
		{"qty <=> NULL", arrow.FixedWidthTypes.Boolean, "false false true false false"},
		{"ok AND flag", arrow.FixedWidthTypes.Boolean, "NULL false NULL false NULL"},
		{"ok OR flag", arrow.FixedWidthTypes.Boolean, "true NULL true false true"},
		{"ok AND NULL", arrow.FixedWidthTypes.Boolean, "NULL NULL NULL false NULL"},
		{"NOT ok", arrow.FixedWidthTypes.Boolean, "false NULL false true NULL"},
		{"ok IS NULL", arrow.FixedWidthTypes.Boolean, "false true false false true"},
		{"amount IS NOT NULL", arrow.FixedWidthTypes.Boolean, "true true true false true"},
		{"ok IS TRUE", arrow.FixedWidthTypes.Boolean, "true false true false false"},
		{"ok IS NOT FALSE", arrow.FixedWidthTypes.Boolean, "true true true false true"},
		{"id IN (1, 3)", arrow.FixedWidthTypes.Boolean, "true false true false false"},
		{"qty NOT IN (0, 1)", arrow.FixedWidthTypes.Boolean, "true false NULL false false"},
		{"id IN (1, NULL)", arrow.FixedWidthTypes.Boolean, "true NULL NULL NULL NULL"},
		{"id BETWEEN 2 AND 4", arrow.FixedWidthTypes.Boolean, "false true true true false"},
		{"id NOT BETWEEN 2 AND 4", arrow.FixedWidthTypes.Boolean, "true false false false true"},
		{"merchant LIKE 'S%'", arrow.FixedWidthTypes.Boolean, "true false NULL false false"},
		{"merchant NOT LIKE '_'", arrow.FixedWidthTypes.Boolean, "true true NULL false true"},
		{"CASE WHEN amount > 1 THEN 'big' WHEN amount IS NULL THEN 'none' ELSE 'small' END", arrow.BinaryTypes.String, "big small big none small"},
		{"CASE WHEN ok THEN id END", arrow.PrimitiveTypes.Int64, "1 NULL 3 NULL NULL"},
		{"CASE WHEN ok THEN id ELSE amount END", arrow.PrimitiveTypes.Float64, "1 0 3 NULL -4"},
		{"CASE qty WHEN 0 THEN 'zero' WHEN 1 THEN 'one' ELSE 'many' END", arrow.BinaryTypes.String, "many zero many one zero"},
		{"coalesce(amount, qty, -1)", arrow.PrimitiveTypes.Float64, "10 0 2.5 1 -4"},
		{"coalesce(merchant, 'n/a')", arrow.BinaryTypes.String, "Shop café n/a x AbC"},
		{"ifnull(qty, 99)", arrow.PrimitiveTypes.Int64, "3 0 99 1 0"},
		{"nullif(qty, 0)", arrow.PrimitiveTypes.Int64, "3 NULL NULL 1 NULL"},
		{"abs(amount)", arrow.PrimitiveTypes.Float64, "10 0 2.5 NULL 4"},
		{"ABS(qty - 5)", arrow.PrimitiveTypes.Int64, "2 5 NULL 4 5"},
		{"lower(merchant)", arrow.BinaryTypes.String, "shop café NULL x abc"},
		{"upper(merchant)", arrow.BinaryTypes.String, "SHOP CAFÉ NULL X ABC"},
		{"length(merchant)", arrow.PrimitiveTypes.Int64, "4 4 NULL 1 3"},
		{"cast(amount as signed)", arrow.PrimitiveTypes.Int64, "10 0 2 NULL -4"},
		{"cast(id as char)", arrow.BinaryTypes.String, "1 2 3 4 5"},
		{"ts >= '2023-11-14T22:13:21Z'", arrow.FixedWidthTypes.Boolean, "false true true true true"},
		{"ts < '2023-11-14 22:13:22'", arrow.FixedWidthTypes.Boolean, "true true false false false"},
		{"(id + 1) * 2 > 6 AND merchant IS NOT NULL", arrow.FixedWidthTypes.Boolean, "false false false true true"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ast, err := ParseExpr(tt.expr)
			if err != nil {
				t.Fatalf("ParseExpr: %v", err)
			}
			e, err := Compile(ast, rec.Schema())
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if !arrow.TypeEqual(e.Type(), tt.typ) {
				t.Errorf("Type() = %s, want %s", e.Type(), tt.typ)
			}
			out, err := e.Eval(rec)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			defer out.Release()
			if !arrow.TypeEqual(out.DataType(), e.Type()) {
				t.Errorf("result type %s, Type() %s", out.DataType(), e.Type())
			}
			if got := strings.Join(render(out), " "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	rec := testBatch(t)
	defer rec.Release()
	tests := []struct {
		expr string
		kind ErrorKind
		msg  string
		text string
	}{
		{"nope + 1", ErrUnknownColumn, `unknown column "nope"`, "nope"},
		{"frobnicate(id)", ErrUnknownFunction, "unknown function frobnicate", "frobnicate(id)"},
		{"sum(id)", ErrUnknownFunction, "unknown function sum", "sum(id)"},
		{"abs(id, 2)", ErrArity, "abs takes 1 argument(s), got 2", "abs(id, 2)"},
		{"coalesce()", ErrArity, "coalesce takes at least 1 argument(s), got 0", "coalesce()"},
		{"merchant + 1", ErrType, "operator + needs numbers", "merchant + 1"},
		{"id AND ok", ErrType, "is int64, not boolean", "id and ok"},
		{"id = 'x'", ErrType, "cannot compare int64 and utf8", "id = 'x'"},
		{"lower(id)", ErrType, "lower needs a string", "lower(id)"},
		{"CASE WHEN ok THEN 1 ELSE 'x' END", ErrType, "CASE mixes int64 and utf8", ""},
		{"ts > 'yesterday'", ErrType, "is not an RFC 3339 timestamp", ""},
		{"id = ?", ErrUnsupported, "placeholders are not supported", ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ast, err := ParseExpr(tt.expr)
			if err != nil {
				t.Fatalf("ParseExpr: %v", err)
			}
			_, err = Compile(ast, rec.Schema())
			var ee *Error
			if !errors.As(err, &ee) {
				t.Fatalf("Compile error = %v, want *Error", err)
			}
			if ee.Kind != tt.kind || !strings.Contains(ee.Msg, tt.msg) || (tt.text != "" && ee.Text != tt.text) {
				t.Errorf("got kind %d msg %q text %q; want kind %d msg ~%q text %q", ee.Kind, ee.Msg, ee.Text, tt.kind, tt.msg, tt.text)
			}
		})
	}
}

func TestParseExprErrors(t *testing.T) {
	for _, s := range []string{"", "   ", "a +", "a from t", "a; drop table t", "a as b", "select 1", "(a"} {
		if _, err := ParseExpr(s); err == nil {
			t.Errorf("ParseExpr(%q) succeeded", s)
		}
	}
}

func TestAmbiguousColumn(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "A", Type: arrow.PrimitiveTypes.Int64}, {Name: "Bb", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ast, _ := ParseExpr("A + a")
	if _, err := Compile(ast, schema); err != nil {
		t.Errorf("exact matches must win: %v", err)
	}
	ast, _ = ParseExpr("bB")
	if _, err := Compile(ast, schema); err != nil {
		t.Errorf("case-insensitive match: %v", err)
	}
	schema = arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "A", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ast, _ = ParseExpr("aa + 1")
	if _, err := Compile(ast, schema); err == nil {
		t.Error("want unknown column")
	}
}

func TestEvalOverflowAndSchemaMismatch(t *testing.T) {
	rec := testBatch(t)
	defer rec.Release()
	ast, _ := ParseExpr("id * 9223372036854775807")
	e, err := Compile(ast, rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.Eval(rec); err == nil {
		out.Release()
		t.Error("want an overflow error")
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	ast, _ = ParseExpr("id")
	e, err = Compile(ast, other)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.Eval(rec); err == nil {
		out.Release()
		t.Error("want a schema mismatch error")
	}
}

// TestNoLeaks checks that evaluation releases every intermediate buffer.
// (A number-to-string CAST is left out: arrow-go v18.8.0's cast kernel for it
// keeps 320 bytes of a checked allocator; with the default Go allocator that
// memory is garbage collected.)
func TestNoLeaks(t *testing.T) {
	rec := testBatch(t)
	defer rec.Release()
	for _, s := range []string{"id + qty * 2 > 3 AND ok", "CASE WHEN ok THEN merchant ELSE lower(merchant) END", "coalesce(amount / qty, 0)", "cast(amount as signed)", "id IN (1, 2)", "NOT ok", "qty <=> 1", "merchant LIKE 'a%'", "ts > '2023-11-14T22:13:21Z'", "abs(-id)",
		"amount >= qty", "amount <=> id * 1.5", "id / qty", "amount % 0", "id % qty", "id div qty"} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ast, _ := ParseExpr(s)
		e, err := Compile(ast, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		e.(*compiled).mem = mem
		out, err := e.Eval(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Release()
		if mem.CurrentAlloc() != 0 {
			t.Errorf("%s leaks %d bytes", s, mem.CurrentAlloc())
		}
	}
}

// edgeBatch has integers beyond 2^53 and at the int64 limits, zero
// divisors, NaN, ±Inf, -0 and NULLs:
//
//	i                  j     f     g
//	9007199254740993   0     1.5   0
//	MaxInt64           -1    NaN   NaN
//	MinInt64           2     -0    +Inf
//	-7                 NULL  -2.5  -0
//	0                  0     NULL  1
func edgeBatch(t testing.TB) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "j", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "g", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	negZero := math.Copysign(0, -1)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1<<53 + 1, math.MaxInt64, math.MinInt64, -7, 0}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{0, -1, 2, 0, 0}, []bool{true, true, true, false, true})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1.5, math.NaN(), negZero, -2.5, 0}, []bool{true, true, true, true, false})
	b.Field(3).(*array.Float64Builder).AppendValues([]float64{0, math.NaN(), math.Inf(1), negZero, 1}, nil)
	return b.NewRecordBatch()
}

// nanBatch pairs NaN with everything a comparison can meet.
func nanBatch(t testing.TB) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "g", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	nan, inf := math.NaN(), math.Inf(1)
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{nan, nan, 1, inf, math.Copysign(0, -1), 0}, []bool{true, true, true, true, true, false})
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{nan, inf, nan, nan, 0, nan}, nil)
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{math.MaxInt64, math.MinInt64, 1, 0, 0, 0}, nil)
	return b.NewRecordBatch()
}

func evalString(t *testing.T, rec arrow.RecordBatch, s string, typ arrow.DataType) string {
	t.Helper()
	ast, err := ParseExpr(s)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", s, err)
	}
	e, err := Compile(ast, rec.Schema())
	if err != nil {
		t.Fatalf("Compile(%q): %v", s, err)
	}
	if !arrow.TypeEqual(e.Type(), typ) {
		t.Errorf("%s: Type() = %s, want %s", s, e.Type(), typ)
	}
	out, err := e.Eval(rec)
	if err != nil {
		t.Fatalf("Eval(%q): %v", s, err)
	}
	defer out.Release()
	return strings.Join(render(out), " ")
}

// TestWideningRounds checks that an integer meeting a float is rounded to
// the nearest float64 (DuckDB's implicit BIGINT -> DOUBLE), not refused
// beyond 2^53: 9007199254740993 becomes 9007199254740992 and MaxInt64
// becomes 2^63.
func TestWideningRounds(t *testing.T) {
	rec := edgeBatch(t)
	defer rec.Release()
	f64, b := arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean
	tests := []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"i * 1.5", f64, "1.3510798882111488e+16 1.3835058055282164e+19 -1.3835058055282164e+19 -10.5 0"},
		{"i + f", f64, "9.007199254740994e+15 NaN -9.223372036854776e+18 -9.5 NULL"},
		{"i + 0.0", f64, "9.007199254740992e+15 9.223372036854776e+18 -9.223372036854776e+18 -7 0"},
		{"1.5 * i", f64, "1.3510798882111488e+16 1.3835058055282164e+19 -1.3835058055282164e+19 -10.5 0"},
		{"9007199254740993 * 1.0", f64, "9.007199254740992e+15 9.007199254740992e+15 9.007199254740992e+15 9.007199254740992e+15 9.007199254740992e+15"},
		// The comparison happens in float64, as in DuckDB: 2^53+1 equals
		// 2^53, and MaxInt64 equals 2^63.
		{"i = 9007199254740992.0", b, "true false false false false"},
		{"i = 9223372036854775808.0", b, "false true false false false"},
		{"i > f", b, "true false false false NULL"},
		{"i BETWEEN 9007199254740992.0 AND 9007199254740992.0", b, "true false false false false"},
		{"coalesce(f, i)", f64, "1.5 NaN -0 -2.5 0"},
		{"CASE WHEN j = 0 THEN i ELSE f END", f64, "9.007199254740992e+15 NaN -0 -2.5 0"},
		{"i % 2.0", f64, "0 0 -0 -1 0"},
	}
	for _, tt := range tests {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.expr, got, tt.want)
		}
	}
}

// TestDivisionByZero checks DuckDB's rules: / gives ±Inf or NaN (0/0), also
// on integers; % of floats gives NaN; DIV and % of integers give NULL.
func TestDivisionByZero(t *testing.T) {
	rec := edgeBatch(t)
	defer rec.Release()
	f64, i64 := arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int64
	tests := []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"i / j", f64, "+Inf -9.223372036854776e+18 -4.611686018427388e+18 NULL NaN"},
		{"j / 0.0", f64, "NaN -Inf +Inf NULL NaN"},
		{"f / g", f64, "+Inf NaN -0 +Inf NULL"},
		{"f / 0", f64, "+Inf NaN NaN -Inf NULL"},
		{"1 / g", f64, "+Inf NaN 0 -Inf 1"},
		{"f % g", f64, "NaN NaN -0 NaN NULL"},
		{"f % 0", f64, "NaN NaN NaN NaN NULL"},
		{"i % j", i64, "NULL 0 0 NULL NULL"},
		{"i div j", i64, "NULL -9223372036854775807 -4611686018427387904 NULL NULL"},
		{"i % 0", i64, "NULL NULL NULL NULL NULL"},
		{"i div 0", i64, "NULL NULL NULL NULL NULL"},
		// The remainder has the sign of the dividend.
		{"i % 3", i64, "0 1 -2 -1 0"},
		{"i % -3", i64, "0 1 -2 -1 0"},
		{"f % 2", f64, "1.5 NaN -0 -0.5 NULL"},
		{"g % -2", f64, "0 NaN NaN -0 1"},
		// Inf and NaN flow on through arithmetic and comparisons.
		{"i / j > 1e308", arrow.FixedWidthTypes.Boolean, "true false false NULL true"},
		{"coalesce(i / j, -1)", f64, "+Inf -9.223372036854776e+18 -4.611686018427388e+18 -1 NaN"},
		{"abs(j / 0.0)", f64, "NaN +Inf +Inf NULL NaN"},
	}
	for _, tt := range tests {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.expr, got, tt.want)
		}
	}
}

// TestIntegerOverflowErrors checks the integer operations DuckDB refuses
// with an overflow error: MinInt64 DIV -1 and MinInt64 % -1 (Go would give
// MinInt64 and 0), negation, abs, + - * past either limit. MinInt64 / -1
// is float division and fine.
func TestIntegerOverflowErrors(t *testing.T) {
	rec := edgeBatch(t)
	defer rec.Release()
	// i + -1 and j - i overflow only below MinInt64 or through its
	// negation, which arrow-go's checked add and subtract kernels miss.
	for _, s := range []string{"i div -1", "i % -1", "-i", "abs(i)", "i - 1", "i + 1", "i + -1", "j - i", "i * j", "i * 2", "i * -1"} {
		ast, err := ParseExpr(s)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Compile(ast, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Eval(rec)
		if err == nil {
			t.Errorf("%s = %v, want an overflow error", s, render(out))
			out.Release()
			continue
		}
		var ee *Error
		if !errors.As(err, &ee) || ee.Kind != ErrEval || !strings.Contains(ee.Msg, "overflow") {
			t.Errorf("%s: error %v, want an ErrEval overflow", s, err)
		}
	}
	if got, want := evalString(t, rec, "i / -1", arrow.PrimitiveTypes.Float64), "-9.007199254740992e+15 -9.223372036854776e+18 9.223372036854776e+18 7 -0"; got != want {
		t.Errorf("i / -1:\ngot  %s\nwant %s", got, want)
	}
}

// TestNaNComparisons checks DuckDB's float order: NaN equals NaN and is
// greater than everything else, +Inf included; -0 equals 0.
func TestNaNComparisons(t *testing.T) {
	rec := nanBatch(t)
	defer rec.Release()
	b := arrow.FixedWidthTypes.Boolean
	// f: NaN NaN 1 +Inf -0 NULL
	// g: NaN +Inf NaN NaN 0 NaN
	tests := []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"f = g", b, "true false false false true NULL"},
		{"f <> g", b, "false true true true false NULL"},
		{"f != g", b, "false true true true false NULL"},
		{"f < g", b, "false false true true false NULL"},
		{"f <= g", b, "true false true true true NULL"},
		{"f > g", b, "false true false false false NULL"},
		{"f >= g", b, "true true false false true NULL"},
		{"f <=> g", b, "true false false false true false"},
		{"i < g", b, "true true true true false true"},
		{"f > i", b, "true true false true false NULL"},
		{"f IN (1, 0.0 / 0)", b, "true true true false false NULL"},
		{"f NOT IN (1, 0.0 / 0)", b, "false false false true true NULL"},
		{"f BETWEEN 0 AND 0 / 0", b, "true true true true true NULL"},
		{"f BETWEEN 0 AND 1e308", b, "false false true false true NULL"},
		{"nullif(f, g)", arrow.PrimitiveTypes.Float64, "NULL NaN 1 +Inf NULL NULL"},
		{"CASE f WHEN 0 / 0 THEN 'nan' WHEN 0 THEN 'zero' ELSE 'other' END", arrow.BinaryTypes.String, "nan nan other other zero other"},
		{"CASE WHEN f > 1e308 THEN 'big' ELSE 'small' END", arrow.BinaryTypes.String, "big big small big small small"},
	}
	for _, tt := range tests {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.expr, got, tt.want)
		}
	}
}

// TestCheckedInt compares checkedInt with exact big.Int arithmetic on
// values around zero and the int64 limits.
func TestCheckedInt(t *testing.T) {
	edge := []int64{0, 1, -1, 2, -2, 3, 1 << 31, -1 << 31, 1 << 32, 3037000499, 3037000500, -3037000500,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1, math.MaxInt64 / 2, math.MinInt64 / 2, math.MinInt64/2 - 1}
	for _, op := range []string{"+", "-", "*"} {
		for _, x := range edge {
			for _, y := range edge {
				bx, by := big.NewInt(x), big.NewInt(y)
				var want big.Int
				switch op {
				case "+":
					want.Add(bx, by)
				case "-":
					want.Sub(bx, by)
				default:
					want.Mul(bx, by)
				}
				got, ok := checkedInt(op, x, y)
				if ok != want.IsInt64() || (ok && got != want.Int64()) {
					t.Errorf("%d %s %d = %d, %v; want %s", x, op, y, got, ok, want.String())
				}
			}
		}
	}
}

// TestLazyBranches: a CASE branch, CASE condition or coalesce argument
// that fails on some rows is evaluated again on only the rows that need
// it, as DuckDB evaluates them: guarded CASTs and overflows are no error,
// an unguarded one still is, and the slow path leaks nothing.
func TestLazyBranches(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"5", "", "x7", "", "12"}, []bool{true, true, true, false, true})
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, math.MaxInt64, 3, 4, 0}, []bool{true, true, true, true, false})
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	i64 := arrow.PrimitiveTypes.Int64
	for _, tt := range []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"CASE WHEN s IN ('5', '12') THEN CAST(s AS SIGNED) END", i64, "5 NULL NULL NULL 12"},
		{"CASE WHEN s = '' OR s = 'x7' THEN -1 ELSE CAST(s AS SIGNED) END", i64, "5 -1 -1 NULL 12"},
		{"CASE WHEN s = 'x7' OR s = '' OR s IS NULL THEN 0 WHEN CAST(s AS SIGNED) > 6 THEN 1 ELSE 2 END", i64, "2 0 0 0 1"},
		{"CASE WHEN i < 9223372036854775807 THEN i + 1 ELSE 0 END", i64, "2 0 4 5 0"},
		{"CASE i WHEN 9223372036854775807 THEN -1 ELSE i * 2 END", i64, "2 -1 6 8 NULL"},
		{"coalesce(CASE WHEN s <> 'x7' AND s <> '' THEN CAST(s AS SIGNED) END, i - 1, -1)", i64, "5 9223372036854775806 2 3 12"},
		{"coalesce(i, CAST(s AS SIGNED))", i64, "1 9223372036854775807 3 4 12"},
		{"CASE WHEN s = 'nothing' THEN CAST(s AS SIGNED) END", i64, "NULL NULL NULL NULL NULL"},
	} {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.expr, got, tt.want)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ast, _ := ParseExpr(tt.expr)
		e, err := Compile(ast, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		e.(*compiled).mem = mem
		out, err := e.Eval(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Release()
		if mem.CurrentAlloc() != 0 {
			t.Errorf("%s leaks %d bytes", tt.expr, mem.CurrentAlloc())
		}
	}
	// A row that takes the failing branch fails the evaluation.
	for _, s := range []string{
		"CASE WHEN s <> '' THEN CAST(s AS SIGNED) END",
		"coalesce(CAST(s AS SIGNED), 0)",
		"CASE WHEN i > 0 THEN i + 1 END",
	} {
		ast, _ := ParseExpr(s)
		e, err := Compile(ast, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if out, err := e.Eval(rec); err == nil {
			out.Release()
			t.Errorf("%s: no error", s)
		}
	}
}
