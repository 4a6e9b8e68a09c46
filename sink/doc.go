// Package sink defines where pipeline output goes and provides the
// standard sinks.
//
// A [Sink] receives Arrow record batches from the engine, one call at a
// time, and must not keep a batch past Write unless it retains it. Sinks
// that take part in checkpoints also implement [Committer].
//
// # Exactly once and at least once
//
// The file sinks made by [CreateCSV], [CreateJSONL], [NewParquet] and
// [NewParquetDir] are transactional. Their rows are staged in a directory
// next to the target (.<name>.volga for a target <name>; DIR/.volga for
// the directory of a [ParquetDir]) and the target shows only the output
// of epochs whose checkpoint is complete: PrepareCommit makes an epoch's
// rows durable in the staging directory, Commit (called once the
// checkpoint is written) publishes them, and Recover, on a restart from a
// checkpoint, finishes a publication a crash interrupted and cuts away the
// output of later epochs. Each sink instance stages under file names of
// its own (a random token), so an instance that still writes after
// another restored the target from a checkpoint (a consumer group member
// the group dropped while it ran) never writes the files the other
// publishes. With a replayable source the output after any
// number of crashes is byte for byte that of a run without one: exactly
// once (for a ParquetDir, the same rows in the same file order; where
// files end follows the epochs). CSV and JSON-lines files grow by appending at each Commit; a
// Parquet file cannot be appended to, so it becomes visible as a whole at
// the end of the input (see [Parquet]). For an endless stream, a
// [ParquetDir] grows by one Parquet file per epoch, published at Commit
// (part-<epoch:020d>.parquet). Without checkpoints the engine calls none
// of the Committer methods and Close publishes everything; a ParquetDir
// then publishes a file every WithFileRows rows (at least once). A run
// that fails ends its sinks with Abandon ([Abandoner]) instead of Close:
// without checkpoints the file of a CSV, JSON-lines or Parquet sink is
// then left as it was before the run (or not created), never empty or
// partial; under checkpoints the staged epochs wait for the resumed run.
//
// The other sinks are at least once: after a recovery they see again the
// rows written since the last completed checkpoint. That is the case of
// [Callback], of [NewCSV] and [NewJSONL] over an io.Writer (standard
// output), whose Committer methods only flush, and of the Kafka sink of
// package sink/kafka, which stamps each message with its epoch so that
// consumers can drop the duplicates.
//
// The sinks here:
//
//   - [Collector] keeps the batches in memory (tests, examples, small batch
//     jobs) and converts them to Go values with Rows;
//   - [Callback] hands each batch to a Go function (at-least-once);
//   - [CSV] and [JSONL] write text to an io.Writer or a file they create;
//   - [Parquet] writes a Parquet file through arrow-go's pqarrow (Snappy;
//     dictionary encoding for the columns whose first batch shows it pays,
//     plain for ids, times and other mostly distinct numbers);
//   - [ParquetDir] writes a directory of Parquet files, rolled per epoch
//     (or every WithFileRows rows without checkpoints), for streams;
//   - [Open] picks one of them from a path's extension, or a directory
//     for "DIR/" and "DIR/*.parquet".
//
// Text rendering follows SPEC section 4 and is exported so logs and the
// command line print values the same way: [FormatValue] / [AppendText]
// for text (lists as v1,v2, topn_frequency structs as v1:c1, maps as
// k1:v1 in key order, floats in Go's shortest form, timestamps as RFC 3339
// in UTC, NULL as an empty field) and [AppendJSON] for JSON (real types,
// NaN and ±Inf as null). [Value] and [Rows] convert Arrow values to plain
// Go values.
package sink
