package testutil

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// Source is a bounded in-memory source over batches. Reads counts the
// batches handed out; Before, when set, runs before each Read (to block,
// count or cancel at a chosen point).
type Source struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	next   int
	Reads  atomic.Int64
	Before func(ctx context.Context, n int) error
	closed atomic.Bool
}

// NewSource returns a source yielding recs in order. It takes ownership of
// recs and releases what it has not handed out on Close.
func NewSource(schema *arrow.Schema, recs ...arrow.RecordBatch) *Source {
	return &Source{schema: schema, recs: recs}
}

// Schema returns the batches' schema.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// Read returns the next batch or io.EOF.
func (s *Source) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Before != nil {
		if err := s.Before(ctx, s.next); err != nil {
			return nil, err
		}
	}
	if s.next >= len(s.recs) {
		return nil, io.EOF
	}
	rec := s.recs[s.next]
	s.recs[s.next] = nil
	s.next++
	s.Reads.Add(1)
	return rec, nil
}

// Close releases the batches not read.
func (s *Source) Close() error {
	s.closed.Store(true)
	for i, r := range s.recs {
		if r != nil {
			r.Release()
			s.recs[i] = nil
		}
	}
	return nil
}

// Closed reports whether Close was called.
func (s *Source) Closed() bool { return s.closed.Load() }

// Endless is an unbounded source: batch n is gen(n). Reads counts the
// batches handed out. It returns ctx.Err() once ctx is cancelled.
type Endless struct {
	schema *arrow.Schema
	gen    func(n int) arrow.RecordBatch
	Reads  atomic.Int64
}

// NewEndless returns an unbounded source of gen(0), gen(1), ...
func NewEndless(schema *arrow.Schema, gen func(n int) arrow.RecordBatch) *Endless {
	return &Endless{schema: schema, gen: gen}
}

// Schema returns the batches' schema.
func (e *Endless) Schema() *arrow.Schema { return e.schema }

// Read returns the next generated batch.
func (e *Endless) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := e.Reads.Add(1) - 1
	return e.gen(int(n)), nil
}

// Close does nothing.
func (e *Endless) Close() error { return nil }
