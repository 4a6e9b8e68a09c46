package sink

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// Collector keeps every batch written to it, retained, in memory. It is
// meant for tests, examples and small batch jobs; it is safe for
// concurrent use.
type Collector struct {
	mu     sync.Mutex
	recs   []arrow.RecordBatch
	rows   int64
	closed bool
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector { return &Collector{} }

// Write retains rec and keeps it. Empty batches are ignored.
func (c *Collector) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	rec.Retain()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, rec)
	c.rows += rec.NumRows()
	return nil
}

// Close marks the collector finished. It keeps the batches: call Release
// to free them.
func (c *Collector) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// Closed reports whether Close has been called.
func (c *Collector) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Records returns the batches collected so far, in write order. The
// batches stay owned by the collector: retain any you keep past Release.
func (c *Collector) Records() []arrow.RecordBatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]arrow.RecordBatch(nil), c.recs...)
}

// NumRows returns the total number of rows collected.
func (c *Collector) NumRows() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows
}

// Rows returns every collected row as Go values (see Value), in write
// order.
func (c *Collector) Rows() [][]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]any, 0, c.rows)
	for _, rec := range c.recs {
		out = append(out, Rows(rec)...)
	}
	return out
}

// Release releases every collected batch and empties the collector.
func (c *Collector) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.recs {
		r.Release()
	}
	c.recs, c.rows = nil, 0
}

// Callback hands every batch to a Go function. It takes no part in
// checkpoints: after a recovery the function may see some batches again
// (at-least-once delivery).
type Callback struct {
	fn func(ctx context.Context, rec arrow.RecordBatch) error
}

// NewCallback returns a sink calling fn for each batch. fn must not keep
// rec after it returns unless it retains it, nor anything that points
// into its buffers (the strings array.String.Value returns, for one: the
// engine pools the buffers of its results and reuses them once released;
// Rows and Value return copies). An error from fn fails the pipeline.
func NewCallback(fn func(ctx context.Context, rec arrow.RecordBatch) error) *Callback {
	return &Callback{fn: fn}
}

// Write calls the function.
func (c *Callback) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.fn(ctx, rec)
}

// Close does nothing.
func (c *Callback) Close() error { return nil }
