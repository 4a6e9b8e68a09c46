package expr

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// stringsBatch has one string column s: a\b, A%, x\, a_b, NULL.
func stringsBatch(t testing.TB) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{`a\b`, `A%`, `x\`, `a_b`, ""}, []bool{true, true, true, true, false})
	return b.NewRecordBatch()
}

// TestBackslashIsPlain checks string literals and LIKE patterns holding a
// backslash as DuckDB reads them (the expected values are DuckDB's): a
// backslash is an ordinary character of a string literal, not a MySQL
// escape, and LIKE has no escape character unless ESCAPE names one.
func TestBackslashIsPlain(t *testing.T) {
	rec := stringsBatch(t)
	defer rec.Release()
	b, i64, str := arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	for _, tt := range []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{`s = 'a\b'`, b, "true false false false NULL"},
		{`s = 'x\'`, b, "false false true false NULL"},
		// 'x\' ends at its second quote: OR is an operator, not text.
		{`s = 'x\' OR s = 'A%'`, b, "false true true false NULL"},
		{`length('a\nb')`, i64, "4 4 4 4 4"},
		{`length('\\')`, i64, "2 2 2 2 2"},
		{`'it''s\'`, str, `it's\ it's\ it's\ it's\ it's\`},
		{`s LIKE 'A\%'`, b, "false false false false NULL"},
		{`s LIKE 'a\%'`, b, "true false false false NULL"},
		{`s LIKE '%\'`, b, "false false true false NULL"},
		{`s LIKE 'a\_b'`, b, "false false false false NULL"},
		{`s LIKE 'a_b'`, b, "true false false true NULL"},
		{`s LIKE 'A$%' ESCAPE '$'`, b, "false true false false NULL"},
		{`s LIKE 'a$_b' ESCAPE '$'`, b, "false false false true NULL"},
		{`s LIKE '%\%' ESCAPE '\'`, b, "false true false false NULL"},
		{`s NOT LIKE '%\\%' ESCAPE '\'`, b, "false true false true NULL"},
		{`s LIKE 'a%' ESCAPE ''`, b, "true false false true NULL"},
	} {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.expr, got, tt.want)
		}
	}
	for _, bad := range []string{`s LIKE 'a$' ESCAPE '$'`, `s LIKE 'a' ESCAPE 'xy'`, `s LIKE 'a' ESCAPE s`} {
		ast, err := ParseExpr(bad)
		if err != nil {
			t.Fatalf("ParseExpr(%q): %v", bad, err)
		}
		if _, err := Compile(ast, rec.Schema()); err == nil || !strings.Contains(err.Error(), "escape") {
			t.Errorf("Compile(%q) = %v, want an error about the escape", bad, err)
		}
	}
}

// TestFloatToIntCast checks CAST of a float to SIGNED and UNSIGNED as
// DuckDB casts a DOUBLE (expected values are DuckDB's): round to the
// nearest, ties to even; NaN, ±Inf and values out of range fail, for
// UNSIGNED every negative value.
func TestFloatToIntCast(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	one := func(v float64, null bool) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Float64Builder).AppendValues([]float64{v}, []bool{!null})
		return b.NewRecordBatch()
	}
	for _, tt := range []struct {
		f      float64
		signed string // "" when DuckDB fails
		uns    string
	}{
		{2.5, "2", "2"}, {3.5, "4", "4"}, {-2.5, "-2", ""}, {2.7, "3", "3"}, {-2.7, "-3", ""},
		{0.5, "0", "0"}, {-0.4, "0", ""}, {-0.5, "0", ""}, {4503599627370497, "4503599627370497", "4503599627370497"},
		{9.2e18, "9200000000000000000", "9200000000000000000"}, {9.3e18, "", "9300000000000000000"},
		{-9.223372036854775808e18, "-9223372036854775808", ""}, {1.8446744073709552e19, "", ""},
		{1e19, "", "10000000000000000000"}, {math.NaN(), "", ""}, {math.Inf(1), "", ""}, {math.Inf(-1), "", ""},
	} {
		rec := one(tt.f, false)
		for _, c := range []struct{ expr, want string }{{"CAST(f AS SIGNED)", tt.signed}, {"CAST(f AS BIGINT)", tt.signed}, {"CAST(f AS UNSIGNED)", tt.uns}} {
			ast, err := ParseExpr(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			e, err := Compile(ast, schema)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Eval(rec)
			switch {
			case c.want == "" && err == nil:
				t.Errorf("%s with f = %v = %s, want an error", c.expr, tt.f, out.ValueStr(0))
				out.Release()
			case c.want != "" && err != nil:
				t.Errorf("%s with f = %v: %v, want %s", c.expr, tt.f, err, c.want)
			case err == nil:
				if got := out.ValueStr(0); got != c.want {
					t.Errorf("%s with f = %v = %s, want %s", c.expr, tt.f, got, c.want)
				}
				out.Release()
			}
		}
		rec.Release()
	}
	rec := one(0, true)
	defer rec.Release()
	if got := evalString(t, rec, "CAST(f AS SIGNED)", arrow.PrimitiveTypes.Int64); got != "NULL" {
		t.Errorf("CAST(NULL float AS SIGNED) = %s", got)
	}
}

// TestUint64Operands checks uint64 values beyond int64 in comparisons,
// arithmetic, CASE and coalesce (the expected values are DuckDB's, which
// the bench module's TestSQLReviewUint64 compares on more cases). Before,
// any of these failed on a value above 2^63-1, and an integer literal from
// 2^63 on was a float64.
func TestUint64Operands(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Uint64Builder).AppendValues([]uint64{math.MaxUint64, 1 << 63, 5, 0, 7}, []bool{true, true, true, true, false})
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{0, math.MinInt64, 5, -1, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	bl, u64, f64 := arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float64
	for _, tt := range []struct {
		expr string
		typ  arrow.DataType
		want string
	}{
		{"u > i", bl, "true true false true NULL"},
		{"u = i", bl, "false false true false NULL"},
		{"i >= u", bl, "false false true false NULL"},
		{"u <=> i", bl, "false false true false false"},
		{"u = 18446744073709551615", bl, "true false false false NULL"},
		{"u > 9223372036854775807", bl, "true true false false NULL"},
		{"u > -1", bl, "true true true true NULL"},
		{"i < 18446744073709551615", bl, "true true true true true"},
		{"u IN (5, 18446744073709551615)", bl, "true false true false NULL"},
		{"u BETWEEN i AND 9223372036854775808", bl, "false true true true NULL"},
		{"u DIV 2", u64, "9223372036854775807 4611686018427387904 2 0 NULL"},
		{"u % 7", u64, "1 1 5 0 NULL"},
		{"u DIV 0", u64, "NULL NULL NULL NULL NULL"},
		{"u / 2", f64, "9.223372036854776e+18 4.611686018427388e+18 2.5 0 NULL"},
		{"coalesce(u, 0)", u64, "18446744073709551615 9223372036854775808 5 0 0"},
		{"CASE WHEN u > 1 THEN u ELSE 1 END", u64, "18446744073709551615 9223372036854775808 5 1 1"},
		{"abs(u)", u64, "18446744073709551615 9223372036854775808 5 0 NULL"},
		{"nullif(u, 5)", u64, "18446744073709551615 9223372036854775808 NULL 0 NULL"},
		{"-9223372036854775808", arrow.PrimitiveTypes.Int64, "-9223372036854775808 -9223372036854775808 -9223372036854775808 -9223372036854775808 -9223372036854775808"},
	} {
		if got := evalString(t, rec, tt.expr, tt.typ); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.expr, got, tt.want)
		}
	}
	// Overflows fail, below 0 too, as DuckDB's UBIGINT arithmetic does; a
	// literal that does not fit the other operand's int64 is refused
	// rather than wrapped (18446744073709551615 became -1).
	for _, s := range []string{"u + 1", "u * 2", "u - 6", "u + u"} {
		ast, _ := ParseExpr(s)
		e, err := Compile(ast, schema)
		if err != nil {
			t.Fatalf("Compile(%q): %v", s, err)
		}
		if out, err := e.Eval(rec); err == nil || !strings.Contains(err.Error(), "overflow") {
			t.Errorf("%s: %v, want an overflow", s, err)
			if out != nil {
				out.Release()
			}
		}
	}
	// On rows that do not overflow.
	for _, tt := range []struct {
		expr     string
		from, to int64
		want     string
	}{
		{"u + 1", 1, 3, "9223372036854775809 6"},
		{"u - 1", 0, 3, "18446744073709551614 9223372036854775807 4"},
		{"u * 2", 2, 4, "10 0"},
	} {
		sub := rec.NewSlice(tt.from, tt.to)
		got := evalString(t, sub, tt.expr, u64)
		sub.Release()
		if got != tt.want {
			t.Errorf("%s on rows [%d, %d) = %s, want %s", tt.expr, tt.from, tt.to, got, tt.want)
		}
	}
	ast, _ := ParseExpr("i + 18446744073709551615")
	if _, err := Compile(ast, schema); err == nil {
		t.Error("i + 18446744073709551615 compiles; the literal does not fit int64")
	}
}

// TestCastToString checks CAST of floats and timestamps to CHAR against
// the text DuckDB gives (arrow's kernel writes 1 for 1.0, 1e+15 for
// 1000000000000000.0 and "2023-11-14 22:13:20.123Z").
func TestCastToString(t *testing.T) {
	for _, tt := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {1e20, "1e+20"}, {123456789, "123456789.0"}, {1e-7, "1e-07"}, {2.5, "2.5"}, {1e15, "1000000000000000.0"},
		{1e16, "1e+16"}, {1e-5, "1e-05"}, {0.0001, "0.0001"}, {1.5e16, "1.5e+16"}, {1e21, "1e+21"}, {123.456, "123.456"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.Copysign(0, -1), "-0.0"}, {5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {9999999999999998, "9999999999999998.0"}, {0.30000000000000004, "0.30000000000000004"},
		{1.25e-7, "1.25e-07"}, {-2.5e20, "-2.5e+20"}, {100, "100.0"},
	} {
		if got := duckFloat(tt.f, 64); got != tt.want {
			t.Errorf("duckFloat(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
	if got := duckFloat(float64(float32(0.1)), 32); got != "0.1" {
		t.Errorf("duckFloat(float32 0.1) = %s, want 0.1", got)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1700000000123, 1700000000120, 0, -1, -62135596800000, 0}, []bool{true, true, true, true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	got := evalString(t, rec, "CAST(ts AS CHAR)", arrow.BinaryTypes.String)
	if want := "2023-11-14 22:13:20.123 2023-11-14 22:13:20.12 1970-01-01 00:00:00 1969-12-31 23:59:59.999 0001-01-01 00:00:00 NULL"; got != want {
		t.Errorf("CAST(ts AS CHAR) = %s\nwant %s", got, want)
	}
}

// TestIsNullOfNullType checks IS [NOT] NULL of expressions whose type is
// NULL: every value is NULL (DuckDB: NULL IS NULL is true). arrow-go's
// is_null kernel answered false for every row of a NullArray, so NULL IS
// NULL was false and NOT NULL IS NULL true.
func TestIsNullOfNullType(t *testing.T) {
	rec := stringsBatch(t)
	defer rec.Release()
	bl := arrow.FixedWidthTypes.Boolean
	for _, tt := range []struct{ expr, want string }{
		{"NULL IS NULL", "true true true true true"},
		{"NULL IS NOT NULL", "false false false false false"},
		{"NOT NULL IS NULL", "false false false false false"},
		{"coalesce(NULL, NULL) IS NULL", "true true true true true"},
		{"CASE WHEN s = 'x' THEN NULL END IS NULL", "true true true true true"},
		{"nullif(NULL, 1) IS NOT NULL", "false false false false false"},
	} {
		if got := evalString(t, rec, tt.expr, bl); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.expr, got, tt.want)
		}
	}
}

// TestFloat32AgainstLiteral checks that a float32 value is compared with a
// number literal in float32, as DuckDB casts the literal to FLOAT (the
// expected values are DuckDB's): a float32 0.1 equals 0.1, and -0.3 too.
func TestFloat32AgainstLiteral(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "g", Type: arrow.PrimitiveTypes.Float32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Float32Builder).AppendValues([]float32{0.1, -0.3, 16777216, 0}, []bool{true, true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	bl := arrow.FixedWidthTypes.Boolean
	for _, tt := range []struct{ expr, want string }{
		{"g = 0.1", "true false false NULL"},
		{"g > 0.1", "false false true NULL"},
		{"g < -0.3", "false false false NULL"},
		{"g IN (0.1, -0.3)", "true true false NULL"},
		{"g = 16777217", "false false true NULL"},
		{"g BETWEEN -0.3 AND 0.1", "true true false NULL"},
	} {
		if got := evalString(t, rec, tt.expr, bl); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.expr, got, tt.want)
		}
	}
}
