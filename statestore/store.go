package statestore

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// ErrNotFound is returned by Get for a key the store does not hold.
var ErrNotFound = errors.New("statestore: key not found")

// ErrClosed is returned by every method of a closed store.
var ErrClosed = errors.New("statestore: store is closed")

// Store is an ordered key-value store. Values passed to Set and returned
// by Get and Scan are owned by the caller: implementations copy them.
type Store interface {
	// Get returns the value of key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Set stores value under key, replacing any previous value.
	Set(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
	// Scan calls fn for every key with the given prefix, in ascending key
	// order, until fn returns an error, which Scan returns. The store must
	// not be modified from fn.
	Scan(prefix []byte, fn func(key, value []byte) error) error
	// Close releases the store's resources.
	Close() error
}

// Memory is a Store in memory: a map for point access and a sorted key
// index built lazily for scans.
type Memory struct {
	mu     sync.RWMutex
	m      map[string][]byte
	sorted []string // nil when stale
	closed bool
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{m: map[string][]byte{}} }

// Get implements Store.
func (s *Memory) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, ok := s.m[string(key)]
	if !ok {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

// Set implements Store.
func (s *Memory) Set(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.m[string(key)]; !ok {
		s.sorted = nil
	}
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	s.m[string(key)] = v
	return nil
}

// Delete implements Store.
func (s *Memory) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.m[string(key)]; ok {
		delete(s.m, string(key))
		s.sorted = nil
	}
	return nil
}

// Scan implements Store.
func (s *Memory) Scan(prefix []byte, fn func(key, value []byte) error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.sorted == nil {
		s.sorted = make([]string, 0, len(s.m))
		for k := range s.m {
			s.sorted = append(s.sorted, k)
		}
		slices.Sort(s.sorted)
	}
	keys := s.sorted
	s.mu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _ := slices.BinarySearch(keys, string(prefix))
	for ; i < len(keys) && bytes.HasPrefix([]byte(keys[i]), prefix); i++ {
		v, ok := s.m[keys[i]]
		if !ok {
			continue
		}
		if err := fn([]byte(keys[i]), bytes.Clone(v)); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of keys held.
func (s *Memory) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Close implements Store. A closed Memory store drops its contents.
func (s *Memory) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.m = nil
	s.sorted = nil
	return nil
}
