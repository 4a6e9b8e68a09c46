// Package expr compiles scalar SQL expressions (sqlparser ASTs) against an
// Arrow schema into vectorized evaluators that work on whole columns of a
// record batch.
//
// Compile binds an expression once; Expr.Eval then evaluates it on each
// batch and returns one array of batch length. Arithmetic (+, -, *),
// comparisons, AND/OR/NOT (SQL three-valued logic), IS [NOT] NULL, unary
// minus and abs run on the arrow-go compute kernels; literals are handed to
// them as scalars and only materialized (broadcast to the batch length)
// when they are the whole expression. CASE, coalesce, ifnull, nullif,
// lower, upper, length, LIKE, IS [NOT] TRUE/FALSE, <=> and the
// NULL-on-zero division operators are typed loops.
//
// Typing follows DuckDB where the two differ from MySQL:
//
//   - integer literals are int64, decimal literals float64;
//   - integer operands widen to int64; an integer with a float makes
//     float64; + - * on integers fail on overflow (as DuckDB does);
//   - / is floating-point division and always returns float64, also for
//     two integers (DuckDB's `/`; MySQL's DIV is the integer division,
//     truncating toward zero); % is the remainder with the sign of the
//     dividend;
//   - division or remainder by zero gives NULL, never an error or Inf;
//   - comparing a timestamp with a string literal parses the literal as
//     RFC 3339 (or "2006-01-02 15:04:05", "2006-01-02"; UTC);
//   - CAST accepts the target types sqlparser parses: SIGNED [INTEGER]
//     (int64), UNSIGNED (uint64), DECIMAL (float64 here), CHAR (string),
//     DATETIME (timestamp[ms]) and DATE (date32); a float cast to an integer
//     truncates.
//
// Every branch of a CASE is evaluated on the whole batch before the rows
// are picked, so an error in a branch that no row takes (an overflow) is
// still reported. Errors are *Error values whose Kind tells unknown
// columns, unknown functions, wrong argument counts, type mismatches and
// unsupported SQL apart, and whose Text is the offending expression, for
// the caller to position in the query. Neither Compile nor Eval panics.
package expr
