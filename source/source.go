package source

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Source produces Arrow record batches. The engine owns the goroutine that
// calls Read; a Source need not be safe for concurrent use.
//
// Read returns the next batch, or io.EOF once a bounded source is
// exhausted. The caller releases each returned batch. Read must return
// promptly with ctx.Err() when ctx is cancelled.
type Source interface {
	Schema() *arrow.Schema
	Read(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// Seeker is implemented by replayable sources. Position describes the
// next row Read would return; Seek moves to a position earlier returned by
// Position.
type Seeker interface {
	Position() ([]byte, error)
	Seek(pos []byte) error
}

// DeadLetter is an input record the source could not decode. It is handed
// to the dead-letter handler and counted; the source carries on.
type DeadLetter struct {
	// Source names the input (a path or topic).
	Source string
	// Offset locates the record: a 1-based line number for text files.
	Offset int64
	// Raw is the undecoded record.
	Raw []byte
	// Reason says what was wrong with it.
	Reason string
}

// DeadLetterFunc receives dead letters. It is called from the goroutine
// that calls Read.
type DeadLetterFunc func(DeadLetter)
