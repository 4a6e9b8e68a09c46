// Package watermark tracks event-time progress for the engine.
//
// Event time is an int64 count of milliseconds since the Unix epoch
// everywhere in Volga. A watermark W is the assertion that no more rows
// with an event time at or before W will arrive; rows that still do are
// late (see SPEC section 7).
//
// Two building blocks cover what the engine needs:
//
//   - [Bounded] is the generator of one source partition: it observes the
//     event times of the rows read and reports W = max seen − bound, where
//     the bound is the maximum out-of-orderness the pipeline tolerates.
//   - [Combiner] merges the watermarks of several inputs (the partitions of
//     a source, or the inputs of an operator) into their minimum. An input
//     that has been idle for longer than the idle timeout stops holding the
//     minimum back, so one quiet Kafka partition cannot stall a pipeline.
//
// Two sentinels bracket the range: [None] means "nothing seen yet", and
// [End] (+∞) is the final watermark of a bounded source, which releases
// every pending row.
//
// Watermarks never move backwards: every value reported by this package is
// monotonically non-decreasing. Neither type imports anything beyond the
// standard library, and both take an injectable clock ([WithClock]) so that
// idle detection is testable deterministically (the tests also use
// testing/synctest).
package watermark
