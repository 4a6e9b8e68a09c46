package statestore_test

import (
	"testing"

	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/statestore/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) statestore.Store { return statestore.NewMemory() })
}

func TestMemoryConcurrent(t *testing.T) {
	s := statestore.NewMemory()
	defer s.Close()
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				k := []byte{byte(g), byte(i)}
				if err := s.Set(k, k); err != nil {
					t.Error(err)
				}
				_ = s.Scan([]byte{byte(g)}, func(k, v []byte) error { return nil })
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if s.Len() != 800 {
		t.Fatalf("Len = %d, want 800", s.Len())
	}
}
