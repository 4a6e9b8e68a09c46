package statestore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Snapshot reads a store as it was when the snapshot was taken: writes
// made since are not seen. It is not safe for concurrent use; Close
// releases it (a Badger snapshot held open keeps the versions it reads
// from compaction).
//
// Reading many keys through one snapshot costs one wait where a Get
// each costs one per key: a Badger read starts by waiting until the
// store has applied every write committed before it, which under a steady
// stream of batch writes (a checkpoint being written) was a wait of its
// own for every Get.
type Snapshot interface {
	// Get returns the value of key as of the snapshot, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Close releases the snapshot.
	Close()
}

// Snapshotter is implemented by stores that can take a Snapshot of
// themselves: *Badger and the views Sub returns over one.
type Snapshotter interface {
	Snapshot() (Snapshot, error)
}

// Snapshot implements Snapshotter with a read-only Badger transaction.
// A snapshot of a store closed since returns ErrClosed.
func (b *Badger) Snapshot() (Snapshot, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, ErrClosed
	}
	return &badgerSnapshot{b: b, t: b.db.NewTransaction(false)}, nil
}

type badgerSnapshot struct {
	b *Badger
	t *badger.Txn
}

func (s *badgerSnapshot) Get(key []byte) ([]byte, error) {
	s.b.mu.RLock()
	defer s.b.mu.RUnlock()
	switch {
	case s.b.closed:
		return nil, ErrClosed
	case s.t == nil:
		return nil, errors.New("statestore: snapshot used after Close")
	}
	return (&Txn{t: s.t}).Get(key)
}

func (s *badgerSnapshot) Close() {
	s.b.mu.RLock()
	defer s.b.mu.RUnlock()
	if s.t != nil && !s.b.closed {
		s.t.Discard()
	}
	s.t = nil
}

// Snapshot implements Snapshotter when the underlying store does; a view
// over any other store returns an error wrapping ErrUnsupported.
func (v *subStore) Snapshot() (Snapshot, error) {
	if v.closed.Load() {
		return nil, ErrClosed
	}
	sn, ok := v.s.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("statestore: snapshot of a %T: %w", v.s, errors.ErrUnsupported)
	}
	s, err := sn.Snapshot()
	if err != nil {
		return nil, err
	}
	return &subSnapshot{v: v, s: s}, nil
}

type subSnapshot struct {
	v *subStore
	s Snapshot
}

func (s *subSnapshot) Get(key []byte) ([]byte, error) { return s.s.Get(s.v.key(key)) }
func (s *subSnapshot) Close()                         { s.s.Close() }
