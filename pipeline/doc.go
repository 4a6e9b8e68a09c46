// Package pipeline turns a feature definition into running operators.
//
// A pipeline is described once, as a logical Plan, by either front end:
// ParseSQL for the SQL dialect (one SELECT over one table, with OVER
// windows or GROUP BY tumble/hop), or the fluent Builder (From, EventTime,
// Where, Select, Agg with Over(...).Range/RangeBetween/Rows/Unbounded/
// UnboundedUntil/ExcludeCurrent, or Tumble/Hop for GROUP BY windows).
// Both produce the same Plan, so a pipeline written either way runs
// identically.
//
// Compile binds a Plan to a source schema: it resolves columns and
// functions (errors are *SQLError values that name the offending text and
// its line and column), lays out the columns the operators work on, and
// groups windows by PARTITION BY key set into stages. Compiled.Run then
// executes it: a reader goroutine prepares source batches (WHERE,
// computed columns, event time normalised to milliseconds, an arrival
// sequence) and keeps watermarks, one generator per source partition; a
// window task per partition of each stage (rows hash-partitioned by key)
// runs a window.Operator or window.GroupOperator; an ordering merger
// writes to the sink. The first stage's tasks share each prepared batch
// and take their own rows of it in place (window.Operator.PushRows); a
// batch run of one sliding-window stage also hands the prepared batches
// to the merger, which writes each with its own columns unchanged and its
// rows' results, sent alone by the tasks (window.Operator.AdvanceResults),
// gathered once, or written by the tasks in place into the batch's
// window.Dest when every result is a fixed-width number. A batch run
// lets rows go before the end of its input as far as the source's bound
// of the times to come and the input's order allow (batchtime.go), or,
// over input promised clustered by key, key by key (cluster.go).
// Goroutines are joined by bounded channels that carry
// batches and watermarks in-band, so a slow sink slows the source down,
// and errors and cancellation stop every goroutine (errgroup).
//
// With Checkpointing the run takes consistent checkpoints (see its doc):
// sources that commit positions elsewhere (Kafka) get each completed
// checkpoint's on a goroutine of their own, and a source that may lose
// the checkpoints to another run (a consumer group member's partition)
// implements Fencer, asked before each checkpoint changes the bucket; a
// run refused with ErrFenced abandons its sinks that would otherwise
// finish their output (Abandoner).
//
// Live serves point-in-time lookups against a running or finished
// pipeline's state, and Backfill computes training data for a spine of
// (key, time) rows in one pass. Most programs use these through the front
// door, package volga.
package pipeline
