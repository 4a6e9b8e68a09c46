package statestore_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/statestore/storetest"
)

func TestSubMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) statestore.Store {
		return statestore.Sub(statestore.NewMemory(), "op/1/2/")
	})
}

func TestSubBadger(t *testing.T) {
	storetest.Run(t, func(t *testing.T) statestore.Store {
		db, err := statestore.OpenBadger(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return statestore.Sub(statestore.Sub(db, "op/"), "7/0/")
	})
}

// TestSubPrefixes: views see only their own keys, without the prefix;
// the underlying store holds them with it.
func TestSubPrefixes(t *testing.T) {
	m := statestore.NewMemory()
	a, b := statestore.Sub(m, "op/0/0/"), statestore.Sub(m, "op/0/1/")
	must(t, a.Set([]byte("k/x"), []byte("1")))
	must(t, b.Set([]byte("k/x"), []byte("2")))
	must(t, m.Set([]byte("other"), []byte("3")))
	if v, err := a.Get([]byte("k/x")); err != nil || string(v) != "1" {
		t.Fatalf("a.Get = %q, %v", v, err)
	}
	if v, err := m.Get([]byte("op/0/1/k/x")); err != nil || string(v) != "2" {
		t.Fatalf("underlying Get = %q, %v", v, err)
	}
	var keys []string
	must(t, a.Scan(nil, func(k, v []byte) error { keys = append(keys, string(k)+"="+string(v)); return nil }))
	if fmt.Sprint(keys) != "[k/x=1]" {
		t.Fatalf("a.Scan saw %v", keys)
	}
	must(t, a.Close())
	if _, err := a.Get([]byte("k/x")); !errors.Is(err, statestore.ErrClosed) {
		t.Fatalf("Get on a closed view = %v", err)
	}
	if v, err := b.Get([]byte("k/x")); err != nil || string(v) != "2" {
		t.Fatalf("closing a view closed its store: %q, %v", v, err)
	}
}

// TestSubWriteBatch: batches through views reach the underlying store
// with the prefix, on Memory and on Badger (whose batches commit many
// writes per transaction: 100k keys must be quick).
func TestSubWriteBatch(t *testing.T) {
	db, err := statestore.OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for name, under := range map[string]statestore.Store{"memory": statestore.NewMemory(), "badger": db} {
		t.Run(name, func(t *testing.T) {
			v := statestore.Sub(under, "op/3/4/")
			if _, ok := v.(statestore.Batcher); !ok {
				t.Fatal("a view is not a Batcher")
			}
			wb, err := statestore.NewWriteBatch(v)
			if err != nil {
				t.Fatal(err)
			}
			defer wb.Cancel()
			const n = 100_000
			// value(i) is mostly short; every 10 000th is larger than a
			// Badger batch's slab of copies (64 KB).
			value := func(dst []byte, i int) []byte {
				dst = fmt.Appendf(dst[:0], "v%d/", i)
				if i%10_000 == 7 {
					dst = append(dst, bytes.Repeat([]byte{byte(i)}, 100_000)...)
				}
				return dst
			}
			// Each writer reuses its buffers: the batch must copy. On
			// Badger, whose batches are safe for concurrent use, two
			// writers share it.
			writers := 1
			if name == "badger" {
				writers = 2
			}
			var g errgroup.Group
			for w := range writers {
				g.Go(func() error {
					var key, val []byte
					for i := w; i < n; i += writers {
						key = fmt.Appendf(key[:0], "k/%07d", i)
						val = value(val, i)
						if err := wb.Set(key, val); err != nil {
							return err
						}
					}
					return nil
				})
			}
			must(t, g.Wait())
			must(t, wb.Delete([]byte("k/0000005")))
			must(t, wb.Flush())
			count := 0
			var want []byte
			must(t, under.Scan([]byte("op/3/4/k/"), func(k, v []byte) error {
				var i int
				if _, err := fmt.Sscanf(string(k), "op/3/4/k/%07d", &i); err != nil {
					return err
				}
				if want = value(want, i); !bytes.Equal(v, want) {
					return fmt.Errorf("%s: %d bytes %.20q, want %d bytes %.20q", k, len(v), v, len(want), want)
				}
				count++
				return nil
			}))
			if count != n-1 {
				t.Fatalf("%d keys in the store, want %d", count, n-1)
			}
			if _, err := v.Get([]byte("k/0000005")); !errors.Is(err, statestore.ErrNotFound) {
				t.Fatalf("deleted key: %v", err)
			}
		})
	}
}
