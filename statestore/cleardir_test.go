//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package statestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/volga-go/volga/statestore"
)

// TestClearDirRefusesOpenStore: ClearDir, which a run calls on its state
// directory before it restores into it, refuses a directory that an open
// store holds and leaves its files, and empties it once the store is
// closed. Before, the run removed the directory outright: a second run
// given the same directory wiped the first one's open store and opened
// its own there, both "succeeding".
func TestClearDirRefusesOpenStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	must(t, statestore.ClearDir(dir)) // missing: nothing to do

	a, err := statestore.OpenBadger(dir)
	must(t, err)
	must(t, a.Set([]byte("k"), []byte("v")))
	before, err := os.ReadDir(dir)
	must(t, err)

	err = statestore.ClearDir(dir)
	if !errors.Is(err, statestore.ErrDirInUse) {
		t.Fatalf("ClearDir of an open store's directory = %v, want ErrDirInUse", err)
	}
	after, err := os.ReadDir(dir)
	must(t, err)
	if len(after) != len(before) {
		t.Fatalf("the refused ClearDir left %d of the %d entries", len(after), len(before))
	}
	if _, err := statestore.OpenBadger(dir); err == nil {
		t.Fatal("a second store opened in the directory of an open one")
	}
	must(t, a.Close())
	b, err := statestore.OpenBadger(dir)
	must(t, err)
	if v, err := b.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("after the refused ClearDir the store holds k = %q, %v; want %q", v, err, "v")
	}
	must(t, b.Close())

	// Closed (or left by a killed run, whose lock died with it): emptied,
	// the directory itself kept.
	must(t, os.WriteFile(filepath.Join(dir, "LOCK"), []byte("12345\n"), 0o644))
	must(t, statestore.ClearDir(dir))
	left, err := os.ReadDir(dir)
	must(t, err)
	if len(left) != 0 {
		t.Fatalf("ClearDir left %d entries", len(left))
	}
	c, err := statestore.OpenBadger(dir)
	must(t, err)
	defer c.Close()
	if _, err := c.Get([]byte("k")); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatalf("a store opened in the cleared directory has k: %v", err)
	}
}
