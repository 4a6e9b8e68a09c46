package sink

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Sink consumes output batches. Write must not keep rec after it returns
// unless it calls rec.Retain (and later Release). The engine calls Write
// from one goroutine at a time.
type Sink interface {
	Write(ctx context.Context, rec arrow.RecordBatch) error
	Close() error
}

// Committer is implemented by sinks that take part in checkpoints.
//
// The engine calls, in order: [Recover once, on a restart] → Write...
// PrepareCommit(e1) → (checkpoint e1 written) → Commit(e1) → Write...
// PrepareCommit(e2) → ... and, at the end of a bounded input, a final
// PrepareCommit(eN) and Commit(eN) before Close. A checkpoint may fail,
// so PrepareCommit(e2) can follow PrepareCommit(e1) without Commit(e1);
// Commit(e2) then publishes e1 and e2. Without checkpoints the engine
// calls none of these methods and Close publishes everything.
//
// The file sinks ([CreateCSV], [CreateJSONL], [NewParquet],
// [NewParquetDir]) are transactional: with a replayable source their output after any crash
// equals that of a run without one (exactly once). Other sinks implement
// the interface only to learn epoch boundaries and are at least once; their
// documentation says so.
type Committer interface {
	// PrepareCommit ends epoch: rows written since the previous
	// PrepareCommit (or since the start/Recover) belong to epoch; it makes
	// them durable but not yet visible, and returns an opaque state saved
	// in the checkpoint of epoch (may be nil).
	PrepareCommit(ctx context.Context, epoch uint64) ([]byte, error)
	// Commit makes the output of every epoch <= epoch visible. It is
	// called after the checkpoint of epoch is complete (its manifest
	// written). It must be idempotent.
	Commit(ctx context.Context, epoch uint64) error
	// Recover is called once, before any Write, when a pipeline restarts
	// from the checkpoint of epoch, with the state PrepareCommit returned
	// for that epoch. It completes the publication of every epoch <= epoch
	// if a crash cut Commit short, and discards every output of later
	// epochs (staged or even published: a later checkpoint may have been
	// found corrupt and skipped), so that the visible output is exactly
	// that of epochs <= epoch.
	Recover(ctx context.Context, epoch uint64, state []byte) error
}

// Abandoner is implemented by sinks whose Close publishes output that a
// failed run must not publish (the file sinks made by [CreateCSV],
// [CreateJSONL] and [NewParquet]). The engine ends a run that fails
// (Run returns an error: a source or sink error, a cancelled context),
// or that lost its checkpoints to another run, with Abandon instead of
// Close.
//
// Abandon releases what the sink holds without publishing what Close
// would. Without checkpoints the target is left as it was before the
// run (a file the sink created is removed), so a failed run leaves no
// empty or partial file. Under checkpoints the rows written after the
// last PrepareCommit are dropped and the prepared epochs stay staged for
// Recover, as Close does; a Parquet file is not written (the run that
// resumes from the checkpoint writes it). Abandon after Close, or twice,
// does nothing.
type Abandoner interface {
	Abandon() error
}
