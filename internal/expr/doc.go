// Package expr compiles scalar SQL expressions (sqlparser ASTs) against an
// Arrow schema into vectorized evaluators that work on whole columns of a
// record batch.
//
// Compile binds an expression once; Expr.Eval then evaluates it on each
// batch and returns one array of batch length. + - * on floats,
// comparisons other than of floats, AND/OR/NOT (SQL three-valued logic),
// IS [NOT] NULL, unary minus and abs run on the arrow-go compute kernels;
// literals are handed to them as scalars and only materialized (broadcast
// to the batch length) when they are the whole expression. + - * on
// integers (arrow-go v18.8.0's checked add and subtract miss some int64
// overflows, such as -9223372036854775808 + -1 and 1 - -9223372036854775808),
// /, DIV, %, comparisons of floats, CASE, coalesce, ifnull, nullif, lower,
// upper, length, LIKE, IS [NOT] TRUE/FALSE and <=> are typed loops.
//
// Typing follows DuckDB where the two differ from MySQL:
//
//   - integer literals are int64 (uint64 from 2^63 to 2^64-1), decimal
//     literals float64;
//   - integer operands widen to int64, unsigned ones to uint64 when one is
//     uint64; uint64 with a non-negative integer literal stays uint64
//     (u + 1, coalesce(u, 0)); uint64 with a signed integer compares
//     exactly (as DuckDB does through HUGEINT) but computes in int64, an
//     error for a value beyond it; a float32 compared with a number literal
//     compares in float32 (DuckDB casts the literal to FLOAT), float32
//     arithmetic is float64 here (DuckDB: FLOAT); an integer with a float makes
//     float64, the integer rounded to the nearest float64 (so integers
//     beyond 2^53 lose their low bits rather than fail); + - * on
//     integers, unary minus and abs fail on overflow (as DuckDB does);
//   - / is floating-point division and always returns float64, also for
//     two integers, which are converted to float64 first (DuckDB's `/`);
//     MySQL's DIV is the integer division, truncating toward zero
//     (DuckDB's `//`); % is the remainder with the sign of the dividend;
//   - a zero divisor follows DuckDB: / gives +Inf, -Inf or NaN (0/0) as
//     IEEE 754 does, also for integer operands; % of floats gives NaN;
//     DIV and % of integers give NULL; -9223372036854775808 DIV -1 and
//     -9223372036854775808 % -1 fail as an overflow;
//   - float arithmetic is IEEE 754: overflow gives ±Inf, Inf - Inf NaN;
//   - comparisons (=, <>, <, <=, >, >=, <=>, IN, BETWEEN, CASE x WHEN,
//     nullif) order NaN above every other float, +Inf included, and equal
//     to itself, as DuckDB does; -0 equals 0;
//   - comparing a timestamp with a string literal parses the literal as
//     RFC 3339 (or "2006-01-02 15:04:05", "2006-01-02"; UTC);
//   - CAST accepts the target types sqlparser parses: SIGNED [INTEGER]
//     (int64), UNSIGNED (uint64), DECIMAL (float64 here), CHAR (string),
//     DATETIME (timestamp[ms]) and DATE (date32), and, through the
//     rewrite sqlwin.ExprSQL and sqlwin.Split make, DuckDB's names for them:
//     DOUBLE, FLOAT, REAL (float64), BIGINT, INTEGER, INT (int64; DuckDB's
//     INTEGER is 32 bits), UBIGINT, VARCHAR, TEXT and TIMESTAMP; a float
//     cast to an integer rounds to the nearest, ties to even, and fails on
//     NaN, ±Inf and values out of range (for UNSIGNED, any negative value),
//     as DuckDB's cast of a DOUBLE does; a float or a timestamp cast to
//     CHAR is written as DuckDB writes it (1.0, 1e+16, nan; "2023-11-14
//     22:13:20.12", UTC, no zone);
//   - LIKE has no escape character unless ESCAPE names one (a backslash is
//     an ordinary character, in string literals too: see sqlwin.Tokenize).
//
// CASE, coalesce, ifnull and nullif evaluate each branch, condition and
// argument on the whole batch, the fast way; one that fails there is
// evaluated again on only the rows that need it (the rows its condition
// took, those no earlier condition took, those every earlier argument left
// NULL), so that, as in DuckDB, a CAST or an overflow that a WHEN clause
// rules out is no error.
// Errors are *Error values whose Kind tells unknown columns, unknown
// functions, wrong argument counts, type mismatches and unsupported SQL
// apart, and whose Text is the offending expression, for the caller to
// position in the query. Neither Compile nor Eval panics.
package expr
