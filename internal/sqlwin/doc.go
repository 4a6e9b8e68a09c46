// Package sqlwin splits the window clauses of the Volga SQL dialect off a
// SELECT statement so that the rest can be parsed by
// github.com/xwb1989/sqlparser, which knows neither OVER nor WINDOW.
//
// It works on the token stream of sqlparser's own tokenizer
// (sqlparser.NewStringTokenizer); it is not a general SQL lexer or parser.
// Split finds
//
//   - every `agg(args) OVER name` and `agg(args) OVER (spec)`; the OVER
//     clause is removed and a marker identifier (OverMarkerPrefix + index) is
//     appended as the call's last argument, so `sum(x) OVER w` reaches
//     sqlparser as `sum(x, __volga_over_0)` and the planner can tell, from
//     the AST alone, which call owns which window and whether the call is
//     wrapped in a larger expression;
//   - the trailing `WINDOW name AS (spec), ...` clause, which is removed;
//   - a `tumble(ts, INTERVAL ...)` or `hop(ts, INTERVAL slide, INTERVAL
//     size)` item of GROUP BY, replaced by the identifier GroupMarker
//     (sqlparser cannot parse every interval form inside a call).
//
// Window specifications follow section 2 of the specification:
//
//	PARTITION BY col, ... ORDER BY ts [ASC]
//	  [RANGE BETWEEN UNBOUNDED PRECEDING | INTERVAL <n> <unit> PRECEDING
//	         AND CURRENT ROW | INTERVAL <n> <unit> PRECEDING
//	  | ROWS BETWEEN <n> PRECEDING AND CURRENT ROW]
//	  [EXCLUDE CURRENT ROW]
//
// An interval is INTERVAL '<n>' <unit>, INTERVAL <n> <unit> or INTERVAL
// '<n> <unit>' with unit MILLISECOND, SECOND, MINUTE, HOUR or DAY (singular
// or plural, any case). The single-bound forms RANGE <bound> and ROWS <n>
// PRECEDING mean "... AND CURRENT ROW", and a specification without a
// frame gets the SQL default, RANGE BETWEEN UNBOUNDED PRECEDING AND
// CURRENT ROW. FOLLOWING, GROUPS, frames that end before they start, zero
// or negative sizes, DESC and several ORDER BY columns are errors.
//
// Every error is an *Error carrying the offending text and its byte
// offset in the original query; Result.Offset maps positions of the
// rewritten SQL (such as those in sqlparser's syntax errors) back to the
// original text. Nothing in this package panics on any input.
package sqlwin
