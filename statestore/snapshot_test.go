package statestore_test

import (
	"errors"
	"testing"

	"github.com/volga-go/volga/statestore"
)

// TestSnapshot: a snapshot of a Badger store, or of a view over one, reads
// the values as they were when it was taken, whatever is written or
// deleted after; a view over a store that takes no snapshots says so; a
// snapshot fails once closed or once its store is.
func TestSnapshot(t *testing.T) {
	db, err := statestore.OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	view := statestore.Sub(db, "v/")
	for _, tc := range []struct {
		name string
		s    statestore.Store
	}{{"badger", db}, {"sub", view}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if err := s.Set([]byte("a"), []byte("1")); err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("b"), []byte("2")); err != nil {
				t.Fatal(err)
			}
			sn, err := s.(statestore.Snapshotter).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("a"), []byte("changed")); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete([]byte("b")); err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("c"), []byte("3")); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]string{"a": "1", "b": "2"} {
				if v, err := sn.Get([]byte(k)); err != nil || string(v) != want {
					t.Errorf("snapshot Get(%s) = %q, %v; want %q", k, v, err, want)
				}
			}
			if _, err := sn.Get([]byte("c")); !errors.Is(err, statestore.ErrNotFound) {
				t.Errorf("snapshot Get(c), written after it: %v, want ErrNotFound", err)
			}
			if v, err := s.Get([]byte("a")); err != nil || string(v) != "changed" {
				t.Errorf("store Get(a) = %q, %v", v, err)
			}
			sn.Close()
			if _, err := sn.Get([]byte("a")); err == nil {
				t.Error("Get on a closed snapshot succeeded")
			}
			sn.Close() // twice is harmless
		})
	}
	if v, err := db.Get([]byte("v/a")); err != nil || string(v) != "changed" {
		t.Errorf("the view's key is not under its prefix: %q, %v", v, err)
	}

	mem := statestore.Sub(statestore.NewMemory(), "v/")
	if _, err := mem.(statestore.Snapshotter).Snapshot(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("snapshot of a view over a memory store: %v, want ErrUnsupported", err)
	}

	sn, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sn.Get([]byte("a")); !errors.Is(err, statestore.ErrClosed) {
		t.Errorf("snapshot Get after the store closed: %v, want ErrClosed", err)
	}
	sn.Close()
	if _, err := db.Snapshot(); !errors.Is(err, statestore.ErrClosed) {
		t.Errorf("Snapshot of a closed store: %v, want ErrClosed", err)
	}
}
