// Package agg holds the aggregate functions of the engine: the accumulator
// contract, one file per aggregate, and the registry that the SQL planner
// and the Go builder bind calls through.
//
// # Contract
//
// A call such as sum(amount) is bound once, at compile time, with [Bind]:
// the arguments ([Arg]: a column of [Rows], a constant, or *) are checked
// and a [Func] is returned, or an error that names the function and its
// expected signature. A Func knows its result type and makes two kinds of
// objects:
//
//   - a [State] is the aggregate of a set of rows. It takes rows one at a
//     time (Add), merges with another state of the same Func (Merge; for
//     order-sensitive aggregates the argument's rows come after the
//     receiver's), appends its value to an Arrow builder, and encodes
//     itself (MarshalBinary / UnmarshalBinary; decoding never panics and
//     rejects corrupt input with an error). A tile of the window operator
//     is a State. States of retractable aggregates also implement
//     [Retractor], which exactly undoes an Add. [NewStates] makes many
//     at once, in one allocation for the common aggregates
//     ([StatesAllocator]), for operators that drop them together (GROUP
//     BY windows).
//   - a [Window] evaluates the aggregate over a sequence of frames that
//     slide forward over the rows of one key, optionally leaving out the
//     current row (EXCLUDE CURRENT ROW). Retractable aggregates use
//     [NewRetractWindow] (O(1) per row); min and max use monotonic deques,
//     first_value and last_value read the frame's edge rows; other
//     mergeable-only aggregates use [NewStackWindow] (two-stack queue,
//     O(1) merges per row amortised).
//
// Rows of one key are kept column by column in [Rows] as owned [Column]
// values, addressed by absolute row numbers that survive dropping old rows
// from the front. States read row a of argument column c as
// r.Cols[c] at position a-r.Base; NULLs are skipped unless the function
// says otherwise (first_value, last_value). [Compute] aggregates an
// arbitrary set of rows, as request-time lookups need.
//
// Results go to Arrow builders. Operators that append the results of many
// rows take their builders from [NewResultBuilder]: for topn_frequency
// and the *_cate families over sum, count and avg, of string or int64
// values, it gives a builder of the package's own, filled from plain slices
// and copied into the allocator's buffers once per array (Arrow's list
// and map builders cost about 50 ns an entry: a call per struct bit,
// offset, string and number).
//
// # Functions
//
// Standard aggregates, matching DuckDB: count (count(*), count(x)),
// count_distinct (count(DISTINCT x)), sum, avg, min, max, var_samp
// (variance), var_pop, stddev_samp (stddev), stddev_pop, first_value and
// last_value. Retractable: count, count_distinct, sum, avg and the
// variance family; mergeable only: min, max, first_value, last_value.
//
// Numerics: integer sums are exact in 128 bits (sum, avg), and a sum
// that does not fit in sum's int64 result is NULL; float sums use
// Neumaier compensation with NaN and infinities counted apart, and
// values from 2^960 up summed apart in a scale of their own, so
// retracting them restores a finite sum and a sum beyond float64 is ±Inf,
// never NaN. The variance of integers is computed exactly (Σx in 128
// bits, Σx² in 192 bits, the numerator in 256 bits); the variance of
// floats keeps shifted sums of x-K and (x-K)² in double-double
// arithmetic (~106 bits), K being the first value added since the state
// was last empty, per magnitude class of x-K (each scaled into range and
// dropped when its last value is retracted, so a far value leaves no
// trace once it leaves the frame), and reports exactly 0 for frames of
// equal values.
//
// uint64 (DuckDB's UBIGINT) values, held bit for bit in [Column].I64,
// are read as unsigned throughout: sum, avg and the variance family take
// them exactly as DuckDB does in its HUGEINT arithmetic (so sum of uint64
// is int64, as of any integer, and NULL from 2^63 up), min, max, top,
// topn_frequency and the _cate keys order them as unsigned, and
// [Column.Float] (ew_avg, drawdown, approx_percentile) converts them as
// unsigned.
//
// The ML-oriented aggregates of the engine (top, topn_frequency,
// top1_ratio, the _where and _cate families, ew_avg, drawdown,
// approx_percentile, approx_count_distinct) follow the same contract;
// [Names] lists every registered name and [Lookup] returns a function's
// [Def] with its signature and documentation.
package agg
