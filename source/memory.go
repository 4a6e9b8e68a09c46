package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// Memory is a bounded source over record batches held in memory. It
// implements Source and Seeker (the position is a batch index and a row
// offset in it).
type Memory struct {
	schema  *arrow.Schema
	recs    []arrow.RecordBatch
	maxRows int64
	batch   int   // next batch
	row     int64 // next row in it
	closed  bool
	bounds  *memBounds // LowerBound's cache (memory_bound.go)
}

// NewMemory returns a source yielding recs in order. It retains each batch
// and releases them on Close; the caller keeps its own references. A nil
// schema is taken from the first batch. Read fails on a batch whose schema
// differs from the source's.
func NewMemory(schema *arrow.Schema, recs ...arrow.RecordBatch) *Memory {
	return NewMemorySliced(schema, 0, recs...)
}

// NewMemorySliced is NewMemory returning batches of at most maxRows rows
// (zero-copy slices of the inputs). maxRows <= 0 means no limit.
func NewMemorySliced(schema *arrow.Schema, maxRows int, recs ...arrow.RecordBatch) *Memory {
	if schema == nil && len(recs) > 0 {
		schema = recs[0].Schema()
	}
	m := &Memory{schema: schema, maxRows: int64(maxRows)}
	for _, r := range recs {
		if r == nil || r.NumRows() == 0 {
			continue
		}
		r.Retain()
		m.recs = append(m.recs, r)
	}
	return m
}

// Schema returns the schema of the batches.
func (m *Memory) Schema() *arrow.Schema { return m.schema }

// Read returns the next batch (retained: the caller releases it), or
// io.EOF after the last one.
func (m *Memory) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if m.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.batch >= len(m.recs) {
		return nil, io.EOF
	}
	rec := m.recs[m.batch]
	if m.schema != nil && !rec.Schema().Equal(m.schema) {
		return nil, fmt.Errorf("source: memory batch %d has schema %s, want %s", m.batch, rec.Schema(), m.schema)
	}
	n := rec.NumRows() - m.row
	if m.maxRows > 0 && n > m.maxRows {
		n = m.maxRows
	}
	var out arrow.RecordBatch
	if m.row == 0 && n == rec.NumRows() {
		rec.Retain()
		out = rec
	} else {
		out = rec.NewSlice(m.row, m.row+n)
	}
	m.row += n
	if m.row == rec.NumRows() {
		m.batch, m.row = m.batch+1, 0
	}
	return out, nil
}

// Position returns the position of the next row Read would return.
func (m *Memory) Position() ([]byte, error) {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(m.batch))
	binary.BigEndian.PutUint64(b[8:], uint64(m.row))
	return b, nil
}

// Seek moves to a position returned by Position.
func (m *Memory) Seek(pos []byte) error {
	if m.closed {
		return ErrClosed
	}
	if len(pos) != 16 {
		return errors.New("source: invalid memory position")
	}
	b, r := int64(binary.BigEndian.Uint64(pos)), int64(binary.BigEndian.Uint64(pos[8:]))
	switch {
	case b == int64(len(m.recs)) && r == 0:
	case b < 0 || b >= int64(len(m.recs)) || r < 0 || r >= m.recs[b].NumRows():
		return fmt.Errorf("source: memory position (%d, %d) out of range", b, r)
	}
	m.batch, m.row = int(b), r
	return nil
}

// Close releases the batches.
func (m *Memory) Close() error {
	if !m.closed {
		m.closed = true
		for _, r := range m.recs {
			r.Release()
		}
		m.recs = nil
	}
	return nil
}
