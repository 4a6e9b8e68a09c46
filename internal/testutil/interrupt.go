package testutil

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/source"
)

// Interrupting is a replayable in-memory source that interrupts its run
// after After reads (0: never) by calling Interrupt (a context's cancel,
// for a stand-in of a crash, or Pipeline.Stop), then waits for the read's
// context to end. Its reads take a little time, as from a file or a
// network, so that periodic checkpoints fall between them.
type Interrupting struct {
	*source.Memory
	After     int
	Interrupt func()
	reads     int
}

// NewInterrupting returns an Interrupting source over batches.
func NewInterrupting(schema *arrow.Schema, after int, interrupt func(), batches ...arrow.RecordBatch) *Interrupting {
	return &Interrupting{Memory: source.NewMemory(schema, batches...), After: after, Interrupt: interrupt}
}

// Read implements source.Source.
func (s *Interrupting) Read(ctx context.Context) (arrow.RecordBatch, error) {
	s.reads++
	if s.After > 0 {
		time.Sleep(200 * time.Microsecond)
	}
	if s.After > 0 && s.reads > s.After {
		s.Interrupt()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Memory.Read(ctx)
}
