// Package statestore holds the keyed state of the engine's operators, and
// its checkpoints.
//
// A Store is an ordered key-value store with byte-slice keys and values,
// the contract every state backend implements: Memory (this package, for
// tests, batch runs and small pipelines) and Badger, durable state on local
// disk (github.com/dgraph-io/badger/v4) with a bounded in-memory working
// set (WithMemoryBudget), closure-scoped transactions (Update, View),
// batched writes (NewBatch) and snapshots (Snapshot: many reads as of one
// moment, which wait once for the writes in flight where a Get each
// waits every time). Keys are compared bytewise; Scan visits keys with a
// prefix in ascending order. A Store is safe for concurrent use; a
// Snapshot is not.
// Badger's tables are written uncompressed: the store is local scratch
// whose CPU competes with the pipeline's, and compressing them made
// checkpoint stalls longer (the project's BENCHMARKS.md has the
// figures); WithBadgerOptions can turn compression back on.
//
// A Checkpointer writes epoch-numbered checkpoints of a Badger store to a
// gocloud.dev/blob bucket (file://, mem://, s3://, ...): an incremental
// Badger backup since the previous checkpoint (a full one every few),
// opaque named parts such as source positions, each object with a SHA-256
// checksum, and a manifest written last. Latest finds the newest complete
// checkpoint, skipping damaged ones with a logged error, and Restore
// rebuilds the store and returns the parts; RestoreLatest does both,
// reading each object once (checked as it is restored) instead of twice. FORMAT.md in this directory
// describes the layout in the bucket and the key conventions operators use.
// fileblob does not flush what it writes to disk: in a file:// bucket
// opened with OpenBucket (or given WithSyncDir), every object is flushed
// (fsync), with its directories, before the manifest names it, so that a
// checkpoint Latest finds survives a power loss.
//
// Package storetest has one conformance suite that every implementation
// runs, so that they cannot drift apart.
package statestore
