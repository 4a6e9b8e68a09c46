// Package kafka writes pipeline output to a Kafka topic, one JSON object
// per row, with github.com/segmentio/kafka-go.
//
// Values keep their real JSON types (sink.AppendJSON): numbers, strings,
// booleans, null, arrays for lists, objects for structs and maps, RFC 3339
// strings for timestamps. NaN and ±Inf, which JSON cannot hold, are
// written as null; integers beyond 2^53 are exact in the JSON text, but
// consumers that parse numbers as float64 lose their low digits. Messages are keyed by SinkConfig.KeyColumns —
// the PARTITION BY key — so that all rows of a key land in one partition,
// in order; kafka-go batches them into produce requests (BatchSize,
// BatchTimeout).
//
// # Delivery
//
// The sink is at least once. Write returns once the brokers acknowledged
// every message, but kafka-go has no transactions, so after a recovery the
// rows written since the last completed checkpoint are written again. To
// let consumers drop those duplicates every message carries the headers
// volga-epoch (the checkpoint epoch of the row) and volga-seq (its
// sequence number within the epoch), plus volga-id (SinkConfig.IDColumns)
// when a stable row identity is configured. volga-id is the exact key
// for dropping duplicates. The pair (volga-epoch, volga-seq) names the
// same row in a replay only up to the replay's first checkpoint barrier,
// which falls by time, not where the first run's did: past it a
// duplicate carries another pair, and one pair may name two different
// rows, so that dropping by the pair can drop a row written only once.
// Configure IDColumns where duplicates must go. The sink implements
// sink.Committer only to learn epoch boundaries: PrepareCommit starts the
// next epoch, Recover resumes at the epoch after the restored checkpoint,
// and Commit does nothing. Unlike the file sinks of package sink, it is not
// exactly once.
package kafka
