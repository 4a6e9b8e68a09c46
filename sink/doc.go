// Package sink defines where pipeline output goes and provides the
// standard sinks.
//
// A [Sink] receives Arrow record batches from the engine, one call at a
// time, and must not keep a batch past Write unless it retains it. Sinks
// that can take part in exactly-once checkpoints also implement
// [Committer].
//
// The sinks here:
//
//   - [Collector] keeps the batches in memory (tests, examples, small batch
//     jobs) and converts them to Go values with Rows;
//   - [Callback] hands each batch to a Go function (at-least-once);
//   - [CSV] and [JSONL] write text to an io.Writer or a file they create;
//   - [Parquet] writes a Parquet file through arrow-go's pqarrow;
//   - [Open] picks one of them from a path's extension.
//
// Text rendering follows SPEC section 4 and is exported so logs and the
// command line print values the same way: [FormatValue] / [AppendText]
// for text (lists as v1,v2, topn_frequency structs as v1:c1, maps as
// k1:v1 in key order, floats in Go's shortest form, timestamps as RFC 3339
// in UTC, NULL as an empty field) and [AppendJSON] for JSON (real types,
// NaN and ±Inf as null). [Value] and [Rows] convert Arrow values to plain
// Go values.
package sink
