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

// Committer is implemented by sinks that take part in checkpoints: output
// written after PrepareCommit(epoch) becomes visible only at Commit(epoch).
type Committer interface {
	PrepareCommit(epoch uint64) error
	Commit(epoch uint64) error
}
