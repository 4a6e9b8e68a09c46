package statestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/statestore/storetest"
)

func openBadger(t testing.TB, opts ...statestore.BadgerOption) *statestore.Badger {
	t.Helper()
	db, err := statestore.OpenBadger(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestBadger(t *testing.T) {
	storetest.Run(t, func(t *testing.T) statestore.Store { return openBadger(t) })
}

func TestBadgerReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := statestore.OpenBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Set([]byte("k"), []byte("v")))
	must(t, db.Close())
	must(t, db.Close()) // a second Close is harmless
	if _, err := db.Get([]byte("k")); !errors.Is(err, statestore.ErrClosed) {
		t.Fatalf("Get on a closed store = %v, want ErrClosed", err)
	}
	db, err = statestore.OpenBadger(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("after reopening Get = %q, %v; want v", v, err)
	}
}

func TestBadgerTransactions(t *testing.T) {
	db := openBadger(t)
	must(t, db.Update(func(tx *statestore.Txn) error {
		if err := tx.Set([]byte("a"), []byte("1")); err != nil {
			return err
		}
		if v, err := tx.Get([]byte("a")); err != nil || string(v) != "1" {
			return fmt.Errorf("a transaction does not see its own write: %q, %v", v, err)
		}
		return tx.Set([]byte("b"), []byte("2"))
	}))

	// An error from the closure drops every write of the transaction.
	boom := errors.New("boom")
	err := db.Update(func(tx *statestore.Txn) error {
		must(t, tx.Set([]byte("a"), []byte("changed")))
		must(t, tx.Delete([]byte("b")))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the closure's error", err)
	}
	var got []string
	must(t, db.View(func(tx *statestore.Txn) error {
		return tx.Scan(nil, func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		})
	}))
	if fmt.Sprint(got) != "[a=1 b=2]" {
		t.Fatalf("after a failed Update the store holds %v, want [a=1 b=2]", got)
	}

	// Two read-modify-write transactions on one key: the second to commit
	// conflicts.
	inside, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	go func() {
		defer wg.Done()
		firstErr = db.Update(func(tx *statestore.Txn) error {
			if _, err := tx.Get([]byte("a")); err != nil {
				return err
			}
			close(inside)
			<-release
			return tx.Set([]byte("a"), []byte("first"))
		})
	}()
	<-inside
	must(t, db.Set([]byte("a"), []byte("second")))
	close(release)
	wg.Wait()
	if !errors.Is(firstErr, statestore.ErrConflict) {
		t.Fatalf("conflicting Update = %v, want ErrConflict", firstErr)
	}
}

func TestBadgerEmptyKey(t *testing.T) {
	db := openBadger(t)
	if err := db.Set(nil, []byte("v")); err == nil {
		t.Fatal("Set of an empty key succeeded; Badger cannot store it")
	}
	if _, err := db.Get(nil); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatalf("Get of an empty key = %v, want ErrNotFound", err)
	}
}

func TestBadgerBatch(t *testing.T) {
	db := openBadger(t)
	must(t, db.Set([]byte("gone"), []byte("x")))
	batch, err := db.NewBatch()
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Cancel()
	key, val := make([]byte, 0, 16), make([]byte, 0, 16)
	for i := range 20_000 {
		// The batch must copy: the buffers are reused.
		key = fmt.Appendf(key[:0], "k/%06d", i)
		val = fmt.Appendf(val[:0], "v%d", i)
		must(t, batch.Set(key, val))
	}
	must(t, batch.Delete([]byte("gone")))
	must(t, batch.Flush())
	n := 0
	must(t, db.Scan([]byte("k/"), func(k, v []byte) error {
		if want := fmt.Sprintf("k/%06d", n); string(k) != want || string(v) != fmt.Sprintf("v%d", n) {
			return fmt.Errorf("key %d is %s=%s, want %s", n, k, v, want)
		}
		n++
		return nil
	}))
	if n != 20_000 {
		t.Fatalf("scan found %d keys, want 20000", n)
	}
	if _, err := db.Get([]byte("gone")); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatalf("a key the batch deleted: Get = %v", err)
	}
}

// TestBadgerBeyondMemoryBudget writes ten times the memory budget and
// reads every value back.
func TestBadgerBeyondMemoryBudget(t *testing.T) {
	const budget = 4 << 20
	const valueSize = 512
	n := 10 * budget / valueSize
	if testing.Short() {
		n /= 4
	}
	db := openBadger(t, statestore.WithMemoryBudget(budget))
	value := func(i int) []byte {
		v := bytes.Repeat([]byte{byte(i)}, valueSize)
		copy(v, fmt.Sprint(i))
		return v
	}
	batch, err := db.NewBatch()
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Cancel()
	for i := range n {
		must(t, batch.Set(fmt.Appendf(nil, "op/window/0/key/%08d", i), value(i)))
	}
	must(t, batch.Flush())
	for i := range n {
		v, err := db.Get(fmt.Appendf(nil, "op/window/0/key/%08d", i))
		if err != nil || !bytes.Equal(v, value(i)) {
			t.Fatalf("key %d: got %d bytes, %v", i, len(v), err)
		}
	}
	i := 0
	must(t, db.Scan([]byte("op/window/0/key/"), func(k, v []byte) error {
		if !bytes.Equal(v, value(i)) {
			return fmt.Errorf("scan: key %s has a wrong value", k)
		}
		i++
		return nil
	}))
	if i != n {
		t.Fatalf("scan visited %d keys, want %d", i, n)
	}
}

func TestBadgerLogger(t *testing.T) {
	h := &recordingHandler{}
	db := openBadger(t, statestore.WithLogger(slog.New(h)))
	must(t, db.Set([]byte("k"), []byte("v")))
	must(t, db.Close())
	// Badger reports opening and closing at info level, which the bridge
	// lowers to debug.
	if h.count(slog.LevelDebug) == 0 {
		t.Fatal("no Badger log line reached the slog logger")
	}
	if n := h.count(slog.LevelInfo); n != 0 {
		t.Fatalf("%d Badger lines logged at info level, want them at debug", n)
	}
}

func TestBadgerBadOptions(t *testing.T) {
	_, err := statestore.OpenBadger(t.TempDir(), statestore.WithBadgerOptions(func(o badger.Options) badger.Options {
		// Badger panics on compressed tables without a block cache.
		return o.WithCompression(options.Snappy).WithBlockCacheSize(0)
	}))
	if err == nil {
		t.Fatal("OpenBadger accepted options Badger refuses")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recordingHandler is a slog.Handler keeping every record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) count(level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level {
			n++
		}
	}
	return n
}

// messages returns the messages and attributes of records at level.
func (h *recordingHandler) messages(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level != level {
			continue
		}
		s := r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

// TestBadgerCompression: a store writes its tables uncompressed unless
// WithBadgerOptions asks for compression, and a store reads tables of
// either kind: one written with Snappy reopens without it, and the other
// way round, every value intact.
func TestBadgerCompression(t *testing.T) {
	snappy := statestore.WithBadgerOptions(func(o badger.Options) badger.Options {
		return o.WithCompression(options.Snappy)
	})
	const n, size = 20_000, 512
	value := func(i int) []byte {
		// Compressible: one byte repeated, then the key's number.
		return append(bytes.Repeat([]byte{byte('a' + i%26)}, size), fmt.Sprint(i)...)
	}
	tables := map[string]int64{}
	for _, c := range []struct {
		name          string
		write, reread []statestore.BadgerOption
	}{
		{"plain", nil, []statestore.BadgerOption{snappy}},
		{"snappy", []statestore.BadgerOption{snappy}, nil},
	} {
		dir := t.TempDir()
		db, err := statestore.OpenBadger(dir, c.write...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := db.NewBatch()
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			must(t, b.Set(fmt.Appendf(nil, "key-%06d", i), value(i)))
		}
		must(t, b.Flush())
		must(t, db.Close()) // flushes the memtables to tables
		ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil || len(ssts) == 0 {
			t.Fatalf("%s: no tables in %s (%v)", c.name, dir, err)
		}
		for _, f := range ssts {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			tables[c.name] += st.Size()
		}
		db, err = statestore.OpenBadger(dir, c.reread...)
		if err != nil {
			t.Fatalf("%s: reopening: %v", c.name, err)
		}
		for i := 0; i < n; i += 97 {
			v, err := db.Get(fmt.Appendf(nil, "key-%06d", i))
			if err != nil || !bytes.Equal(v, value(i)) {
				t.Fatalf("%s: key %d after reopening: %.20q..., %v", c.name, i, v, err)
			}
		}
		must(t, db.Close())
	}
	if raw := int64(n * size); tables["plain"] < raw || tables["snappy"] > raw/4 {
		t.Errorf("tables of %d bytes of values: %d bytes uncompressed (default), %d with Snappy; want at least the values, and a quarter of them at most",
			raw, tables["plain"], tables["snappy"])
	}
}
