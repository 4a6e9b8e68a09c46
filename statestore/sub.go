package statestore

import (
	"bytes"
	"errors"
	"sync/atomic"
)

// WriteBatch groups many writes to a store so that they cost far less than
// one transaction each: the way to write the many keys of an operator's
// checkpoint or eviction. Writes may become visible before Flush (a
// Badger batch commits in the background as it fills); Flush makes them
// all visible and reports the first error. Cancel drops what was not
// committed yet and is safe to call after Flush.
type WriteBatch interface {
	// Set adds a write of value under key; the batch copies both.
	Set(key, value []byte) error
	// Delete adds a deletion of key.
	Delete(key []byte) error
	// Flush commits every write and waits for them.
	Flush() error
	// Cancel releases the batch.
	Cancel()
}

// Batcher is implemented by stores that can group writes into a
// WriteBatch: *Badger (through Badger.NewBatch), *Memory (one lock for the
// whole batch) and the views Sub returns over either.
type Batcher interface {
	NewWriteBatch() (WriteBatch, error)
}

// NewWriteBatch returns a batch of writes to s: s's own when s is a
// Batcher, otherwise one that forwards every write to s as it comes.
func NewWriteBatch(s Store) (WriteBatch, error) {
	if b, ok := s.(Batcher); ok {
		return b.NewWriteBatch()
	}
	return directBatch{s}, nil
}

// NewWriteBatch implements Batcher with Badger.NewBatch.
func (b *Badger) NewWriteBatch() (WriteBatch, error) {
	wb, err := b.NewBatch()
	if err != nil {
		return nil, err
	}
	return wb, nil
}

// NewWriteBatch implements Batcher: the writes are kept until Flush, which
// applies them under one lock.
func (s *Memory) NewWriteBatch() (WriteBatch, error) { return &memoryBatch{s: s}, nil }

type memoryOp struct {
	key, value []byte
	del        bool
}

type memoryBatch struct {
	s   *Memory
	ops []memoryOp
}

func (b *memoryBatch) Set(key, value []byte) error {
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	b.ops = append(b.ops, memoryOp{key: bytes.Clone(key), value: v})
	return nil
}

func (b *memoryBatch) Delete(key []byte) error {
	b.ops = append(b.ops, memoryOp{key: bytes.Clone(key), del: true})
	return nil
}

func (b *memoryBatch) Flush() error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for _, op := range b.ops {
		_, had := s.m[string(op.key)]
		if op.del {
			if had {
				delete(s.m, string(op.key))
				s.sorted = nil
			}
			continue
		}
		if !had {
			s.sorted = nil
		}
		s.m[string(op.key)] = op.value
	}
	b.ops = nil
	return nil
}

func (b *memoryBatch) Cancel() { b.ops = nil }

// directBatch writes through to a store without batching.
type directBatch struct{ s Store }

func (b directBatch) Set(key, value []byte) error { return b.s.Set(key, value) }
func (b directBatch) Delete(key []byte) error     { return b.s.Delete(key) }
func (b directBatch) Flush() error                { return nil }
func (b directBatch) Cancel()                     {}

// Sub returns the view of s under prefix: every key passed to the view is
// stored in s as prefix+key, so several operators can share one store
// without seeing each other's keys. Scan takes and reports keys WITHOUT
// the prefix (a view is a store of its own). The view is a Batcher: its
// batches go to s's own batch when s is a Batcher (a *Badger's batches
// are fast), prefixing keys. Close closes the view only (its methods then
// return ErrClosed), not s, which the caller owns. Sub of a view nests the
// prefixes.
func Sub(s Store, prefix string) Store {
	if v, ok := s.(*subStore); ok && !v.closed.Load() {
		return &subStore{s: v.s, prefix: v.prefix + prefix}
	}
	return &subStore{s: s, prefix: prefix}
}

type subStore struct {
	s      Store
	prefix string
	closed atomic.Bool
}

func (v *subStore) key(k []byte) []byte {
	out := make([]byte, 0, len(v.prefix)+len(k))
	return append(append(out, v.prefix...), k...)
}

// Get implements Store.
func (v *subStore) Get(key []byte) ([]byte, error) {
	if v.closed.Load() {
		return nil, ErrClosed
	}
	return v.s.Get(v.key(key))
}

// Set implements Store.
func (v *subStore) Set(key, value []byte) error {
	if v.closed.Load() {
		return ErrClosed
	}
	return v.s.Set(v.key(key), value)
}

// Delete implements Store.
func (v *subStore) Delete(key []byte) error {
	if v.closed.Load() {
		return ErrClosed
	}
	return v.s.Delete(v.key(key))
}

// Scan implements Store; fn gets keys without the view's prefix.
func (v *subStore) Scan(prefix []byte, fn func(key, value []byte) error) error {
	if v.closed.Load() {
		return ErrClosed
	}
	n := len(v.prefix)
	return v.s.Scan(v.key(prefix), func(key, value []byte) error {
		if len(key) < n {
			return errors.New("statestore: sub view scanned a key outside its prefix")
		}
		return fn(key[n:], value)
	})
}

// Close implements Store: it closes the view and leaves the underlying
// store open.
func (v *subStore) Close() error {
	v.closed.Store(true)
	return nil
}

// NewWriteBatch implements Batcher.
func (v *subStore) NewWriteBatch() (WriteBatch, error) {
	if v.closed.Load() {
		return nil, ErrClosed
	}
	wb, err := NewWriteBatch(v.s)
	if err != nil {
		return nil, err
	}
	return &subBatch{v: v, wb: wb}, nil
}

type subBatch struct {
	v  *subStore
	wb WriteBatch
}

// prefixedBatch is a WriteBatch that can prefix keys as it copies them
// (*Batch), sparing a view's batch a copy of every key.
type prefixedBatch interface {
	setPrefixed(prefix string, key, value []byte) error
	deletePrefixed(prefix string, key []byte) error
}

func (b *subBatch) Set(key, value []byte) error {
	if pb, ok := b.wb.(prefixedBatch); ok {
		return pb.setPrefixed(b.v.prefix, key, value)
	}
	return b.wb.Set(b.v.key(key), value)
}

func (b *subBatch) Delete(key []byte) error {
	if pb, ok := b.wb.(prefixedBatch); ok {
		return pb.deletePrefixed(b.v.prefix, key)
	}
	return b.wb.Delete(b.v.key(key))
}

func (b *subBatch) Flush() error { return b.wb.Flush() }
func (b *subBatch) Cancel()      { b.wb.Cancel() }
