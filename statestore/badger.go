package statestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// ErrConflict is returned (wrapped) by Badger.Update when the transaction
// read a key that another transaction changed before it committed. The
// closure may be run again.
var ErrConflict = errors.New("statestore: transaction conflict")

// DefaultMemoryBudget is the memory budget of a Badger store opened
// without WithMemoryBudget.
const DefaultMemoryBudget = 64 << 20

// minMemoryBudget is the smallest budget WithMemoryBudget honours.
const minMemoryBudget = 4 << 20

// Badger is a durable Store on a local directory, backed by Badger
// (github.com/dgraph-io/badger/v4). It keeps a bounded working set in
// memory (see WithMemoryBudget) and the rest on disk, so state may be much
// larger than memory. A Badger is safe for concurrent use.
//
// Beyond Store it offers closure-scoped transactions (Update, View),
// batched writes (NewBatch), and the backups that Checkpointer uploads.
type Badger struct {
	mu     sync.RWMutex // read-held by every operation, write-held by Close
	db     *badger.DB
	dir    string
	closed bool

	// pin is a read transaction held open from one checkpoint backup to
	// the next. While it is open Badger's compactions keep every version
	// newer than its read timestamp, deletion markers included, so the
	// next incremental backup sees every change made since. Guarded by
	// pinMu; nil before the first backup.
	pinMu sync.Mutex
	pin   *badger.Txn
	// chain is the checkpoint chain the next backup may extend: the
	// checkpointer that wrote (or restored) it, its newest checkpoint, and
	// the version the next incremental backup starts at. Guarded by pinMu.
	chain struct {
		owner *Checkpointer
		last  *Manifest
		since uint64
	}
}

// BadgerOption configures OpenBadger and Checkpointer.Restore.
type BadgerOption interface {
	applyBadger(*badgerConfig)
}

type badgerConfig struct {
	logger     *slog.Logger
	budget     int64
	syncWrites bool
	tune       func(badger.Options) badger.Options
}

type badgerOptionFunc func(*badgerConfig)

func (f badgerOptionFunc) applyBadger(c *badgerConfig) { f(c) }

// WithMemoryBudget bounds the memory Badger uses for its working set, in
// bytes: three quarters go to memtables (two of 3/8 of the budget each),
// an eighth to the block cache and an eighth to the table index cache.
// State larger than the budget lives on disk. Budgets below 4 MiB are
// raised to 4 MiB. The default is DefaultMemoryBudget.
//
// Checkpoints write every changed key state through the memtables, so
// their size sets how often Badger flushes and compacts: with memtables of
// 3/8 instead of 1/8 of the default budget (and the block cache cut from a
// half to an eighth), the checkpoint workload of the benchmarks (1 M keys,
// a checkpoint every 2 s) ran 25-30 % less CPU, its full checkpoint took
// 7.0-7.9 instead of 10.0-11.4 s and its restore 3.1-3.2 instead of
// 4.9-5.7 s; reading pages back (window.BenchmarkOperatorPaging) did not
// measurably change. The memtable size also sets how large Badger's base
// level may grow: five memtables, what level 0 holds when it compacts.
func WithMemoryBudget(bytes int64) BadgerOption {
	return badgerOptionFunc(func(c *badgerConfig) { c.budget = bytes })
}

// WithSyncWrites makes every write reach stable storage before it returns
// (Badger's SyncWrites). It is off by default: durability comes from
// checkpoints, and a crash restores the last complete one.
func WithSyncWrites(sync bool) BadgerOption {
	return badgerOptionFunc(func(c *badgerConfig) { c.syncWrites = sync })
}

// WithBadgerOptions lets tune adjust the badger.Options that OpenBadger
// derived from the other options, as an escape hatch for settings this
// package does not name. Directory settings it makes are overridden.
func WithBadgerOptions(tune func(badger.Options) badger.Options) BadgerOption {
	return badgerOptionFunc(func(c *badgerConfig) { c.tune = tune })
}

// LoggerOption is the option WithLogger returns; it configures both
// OpenBadger and NewCheckpointer.
type LoggerOption struct{ logger *slog.Logger }

func (o LoggerOption) applyBadger(c *badgerConfig)         { c.logger = o.logger }
func (o LoggerOption) applyCheckpoint(c *checkpointConfig) { c.logger = o.logger }

// WithLogger sends Badger's log lines and the checkpointer's reports to l.
// Badger's errors and warnings keep their level; its informational and
// debug lines are logged at slog.LevelDebug. Without it nothing is logged.
func WithLogger(l *slog.Logger) LoggerOption { return LoggerOption{logger: l} }

// OpenBadger opens (creating if needed) the Badger store in dir.
func OpenBadger(dir string, opts ...BadgerOption) (*Badger, error) {
	cfg := badgerConfig{budget: DefaultMemoryBudget}
	for _, o := range opts {
		o.applyBadger(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("statestore: open badger: %w", err)
	}
	bo := badgerOptions(dir, cfg)
	db, err := openBadgerDB(bo)
	if err != nil {
		return nil, fmt.Errorf("statestore: open badger in %s: %w", dir, err)
	}
	return &Badger{db: db, dir: dir}, nil
}

// ErrDirInUse is matched (errors.Is) by the error of ClearDir for a
// directory that an open Badger store holds, in this process or another.
var ErrDirInUse = errors.New("statestore: the directory is in use by an open store (another run with the same state directory?)")

// ClearDir empties dir, the directory of a Badger store that a run is
// about to fill anew (from a checkpoint, or from nothing): whatever a
// crashed run left there is stale. dir itself is kept (it may be a mount
// point); a dir that does not exist is no error. A directory that an open
// store holds (Badger's lock on its directory, taken by a run in this
// process or another) is refused with ErrDirInUse and left as it is: a
// second run given the same directory must not wipe a running one's
// state. (Where there is no flock, Windows among them, the lock is not
// checked.)
func ClearDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("statestore: clear %s: %w", dir, err)
	}
	defer f.Close()
	unlock, err := lockDir(f)
	if err != nil {
		return fmt.Errorf("statestore: clear %s: %w", dir, err)
	}
	defer unlock()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("statestore: clear %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("statestore: clear %s: %w", dir, err)
		}
	}
	return nil
}

// baseLevelSize is the size Badger's base level (the one level 0
// compacts into) may reach, for memtables of the given size: at least
// what level 0 holds when its compaction starts (NumLevelZeroTables
// memtables, Badger's default 5), the usual rule for leveled LSM trees
// (RocksDB's max_bytes_for_level_base), and at least Badger's default of
// 10 MiB.
//
// Checkpoints rewrite most key states every time, so the store is mostly
// overwrites. Under Badger's default base level (10 MiB) the 143 MB of
// state of the benchmarks' checkpoint workload (1 M keys, a checkpoint
// every 2 s) sat in three levels below level 0, each compaction merging
// one table into about ten times its size of the level below: building
// and syncing tables took a fifth of the workload's CPU. With a base
// level of 5 memtables (120 MiB at the default budget) it sits in two,
// and the workload read 103-115 k events/s while checkpointing against
// 62-96 k in alternating runs (2026-12-02, BENCHMARKS.md); full
// checkpoints and restores took no longer.
func baseLevelSize(memtable int64) int64 {
	const levelZeroTables = 5 // badger.DefaultOptions' NumLevelZeroTables
	return max(levelZeroTables*memtable, 10<<20)
}

// badgerOptions maps the package's options onto badger.Options.
func badgerOptions(dir string, cfg badgerConfig) badger.Options {
	budget := max(cfg.budget, minMemoryBudget)
	memtable := budget * 3 / 8
	// A value larger than a write batch (15% of a memtable) cannot be
	// written, so values above this threshold go to the value log.
	threshold := min(int64(64<<10), memtable*15/100/2)
	bo := badger.DefaultOptions(dir).
		WithLogger(slogBadgerLogger{cfg.logger}).
		WithMetricsEnabled(false).
		WithSyncWrites(cfg.syncWrites).
		WithMemTableSize(memtable).
		WithNumMemtables(2).
		WithBaseTableSize(min(int64(2<<20), memtable)).
		WithBaseLevelSize(baseLevelSize(memtable)).
		WithBlockCacheSize(budget / 8).
		WithIndexCacheSize(budget / 8).
		WithValueThreshold(threshold).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithNumGoroutines(4).
		WithNumVersionsToKeep(1).
		// Tables are written uncompressed (Badger's default is Snappy).
		// Compressing every flushed and compacted table was 8 % of the
		// CPU of the checkpoint workload (1 M keys, checkpoints every
		// 2 s); on 2 cores that work competes with the window tasks, and
		// a task preempted in the middle of a slice of checkpoint
		// writing waited for a CPU: the longest stall of its periodic
		// checkpoints was 55-162 ms (over 100 ms in four runs of ten),
		// 51-84 ms without compression (nine runs; 116 ms in a tenth, on
		// a slower machine), for the same throughput and restore time.
		// The stall still grows when CPUs are short: it is mostly a wait
		// for one. The block cache stays: without it that workload lost
		// a sixth of its throughput. Window states are small and the
		// store is local scratch (checkpoints copy it to the bucket in a
		// format of their own), so the disk it takes matters less than
		// the CPU. WithBadgerOptions can turn compression back on; a
		// store reads tables of either kind.
		WithCompression(options.None)
	if cfg.tune != nil {
		bo = cfg.tune(bo)
	}
	bo.Dir, bo.ValueDir = dir, dir
	return bo
}

// openBadgerDB opens a Badger database, turning a panic of Badger's
// option checks into an error.
func openBadgerDB(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", r)
		}
	}()
	return badger.Open(bo)
}

// Dir returns the directory of the store.
func (b *Badger) Dir() string { return b.dir }

// Get implements Store.
func (b *Badger) Get(key []byte) ([]byte, error) {
	var v []byte
	err := b.View(func(tx *Txn) error {
		var err error
		v, err = tx.Get(key)
		return err
	})
	return v, err
}

// Set implements Store.
func (b *Badger) Set(key, value []byte) error {
	return b.Update(func(tx *Txn) error { return tx.Set(key, value) })
}

// Delete implements Store.
func (b *Badger) Delete(key []byte) error {
	return b.Update(func(tx *Txn) error { return tx.Delete(key) })
}

// Scan implements Store. It reads one consistent snapshot: writes made
// while it runs are not visited.
func (b *Badger) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return b.View(func(tx *Txn) error { return tx.Scan(prefix, fn) })
}

// Update runs fn in a read-write transaction and commits it if fn returns
// nil; otherwise the transaction's writes are dropped and fn's error is
// returned. A commit that conflicts with a concurrent transaction returns
// an error wrapping ErrConflict. A transaction holds its writes in memory
// until it commits: for many writes use NewBatch instead.
func (b *Badger) Update(fn func(tx *Txn) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	var fnErr error
	err := b.db.Update(func(t *badger.Txn) error {
		fnErr = fn(&Txn{t: t})
		return fnErr
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil && errors.Is(err, fnErr):
		return err
	case errors.Is(err, badger.ErrConflict):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	default:
		return fmt.Errorf("statestore: badger update: %w", err)
	}
}

// View runs fn in a read-only transaction, a consistent snapshot of the
// store, and returns fn's error.
func (b *Badger) View(fn func(tx *Txn) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	return b.db.View(func(t *badger.Txn) error { return fn(&Txn{t: t}) })
}

// Size returns the bytes Badger holds on disk: its LSM tree and its value
// log. The figures are refreshed by Badger about once a minute.
func (b *Badger) Size() (lsm, vlog int64) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, 0
	}
	return b.db.Size()
}

// Sync flushes written data to stable storage.
func (b *Badger) Sync() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	if err := b.db.Sync(); err != nil {
		return fmt.Errorf("statestore: badger sync: %w", err)
	}
	return nil
}

// CollectGarbage reclaims space in Badger's value log, where values larger
// than 64 KiB live, rewriting files at least half stale. Call it now and
// then, for example after a checkpoint; it returns nil when there was
// nothing to reclaim.
func (b *Badger) CollectGarbage() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	for {
		err := b.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("statestore: badger value log gc: %w", err)
		}
	}
}

// Close implements Store: it closes the Badger database; the data stays in
// the directory for OpenBadger to open again.
func (b *Badger) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.pinMu.Lock()
	if b.pin != nil {
		b.pin.Discard()
		b.pin = nil
	}
	b.pinMu.Unlock()
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("statestore: close badger in %s: %w", b.dir, err)
	}
	return nil
}

// backup writes the changes made since version since (all of the store
// when since is 0) to w in Badger's backup format, and returns the version
// to pass as since for the next incremental backup. Only one backup may run
// at a time.
func (b *Badger) backup(w io.Writer, since uint64) (next uint64, err error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, ErrClosed
	}
	// Pin before streaming: the stream reads at a timestamp at or after
	// the pin's, so everything up to pin.ReadTs() is in this backup and
	// everything after it is kept by compaction for the next one.
	pin := b.db.NewTransaction(false)
	// Badger's backup stream reads the versions strictly above its since
	// argument (its iterator's SinceTs), whatever DB.Backup's doc says,
	// so versions from since on are asked for with since-1.
	after := since
	if after > 0 {
		after--
	}
	if err := writeBackup(w, pin, after); err != nil {
		pin.Discard()
		return 0, err
	}
	b.pinMu.Lock()
	if b.pin != nil {
		b.pin.Discard()
	}
	b.pin = pin
	b.pinMu.Unlock()
	return max(since, pin.ReadTs()+1), nil
}

// load reads a backup written by backup into the store. It must not run
// concurrently with other writes.
func (b *Badger) load(r io.Reader) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	return b.db.Load(r, 64)
}

// restored prepares a store just loaded from a checkpoint chain whose
// next backup was to start at version next, and returns the version the
// next incremental backup of this store starts at.
func (b *Badger) restored(next uint64) (uint64, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, ErrClosed
	}
	pin := b.db.NewTransaction(false)
	b.pinMu.Lock()
	if b.pin != nil {
		b.pin.Discard()
	}
	b.pin = pin
	b.pinMu.Unlock()
	// New writes get versions above what was loaded.
	return min(next, b.db.MaxVersion()+1), nil
}

// takeChain returns the checkpoint chain c may extend, and forgets it: a
// backup moves the pin, so the chain stays whole only if the caller
// commits the backup and calls setChain.
func (b *Badger) takeChain(c *Checkpointer) (last *Manifest, since uint64) {
	b.pinMu.Lock()
	defer b.pinMu.Unlock()
	if b.chain.owner == c {
		last, since = b.chain.last, b.chain.since
	}
	b.chain.owner, b.chain.last, b.chain.since = nil, nil, 0
	return last, since
}

// setChain records the newest checkpoint of the store, written by c.
func (b *Badger) setChain(c *Checkpointer, last *Manifest, since uint64) {
	b.pinMu.Lock()
	defer b.pinMu.Unlock()
	b.chain.owner, b.chain.last, b.chain.since = c, last, since
}

// Txn is a transaction of a Badger store, valid only inside the closure
// passed to Update or View. Values passed to and returned by its methods
// are owned by the caller.
type Txn struct {
	t *badger.Txn
}

// Get returns the value of key as of the transaction's snapshot
// (including its own writes), or ErrNotFound.
func (tx *Txn) Get(key []byte) ([]byte, error) {
	item, err := tx.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) || errors.Is(err, badger.ErrEmptyKey) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("statestore: badger get: %w", err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("statestore: badger get: %w", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// Set stores value under key when the transaction commits. Keys must be
// non-empty and must not start with "!badger!", which Badger reserves.
func (tx *Txn) Set(key, value []byte) error {
	if err := tx.t.Set(bytes.Clone(key), bytes.Clone(value)); err != nil {
		return fmt.Errorf("statestore: badger set: %w", err)
	}
	return nil
}

// Delete removes key when the transaction commits.
func (tx *Txn) Delete(key []byte) error {
	if err := tx.t.Delete(bytes.Clone(key)); err != nil {
		return fmt.Errorf("statestore: badger delete: %w", err)
	}
	return nil
}

// Scan calls fn for every key with the given prefix in ascending order, as
// Store.Scan does, over the transaction's snapshot.
func (tx *Txn) Scan(prefix []byte, fn func(key, value []byte) error) error {
	it := tx.t.NewIterator(badger.IteratorOptions{
		PrefetchValues: true,
		PrefetchSize:   64,
		Prefix:         prefix,
	})
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		v, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("statestore: badger scan: %w", err)
		}
		if v == nil {
			v = []byte{}
		}
		if err := fn(item.KeyCopy(nil), v); err != nil {
			return err
		}
	}
	return nil
}

// Batch groups many writes into as few Badger transactions as possible,
// committing them in the background: the fast way to write the many small
// keys of a checkpoint or a bulk load. Writes become visible as their
// transaction commits, not all at once. A Batch is safe for concurrent
// use; call Flush (or Cancel) when done.
type Batch struct {
	b  *Badger
	wb *badger.WriteBatch
	// slab holds the copies of the keys and values given to wb, which
	// keeps them until their transaction commits: one allocation per
	// batchSlab bytes of writes instead of two per write.
	mu   sync.Mutex
	slab []byte
}

// batchSlab is the size of a Batch's slabs.
const batchSlab = 64 << 10

// copyOf returns a copy of prefix followed by b, carved from the slab
// (capacity exactly its length, so that nothing appended to it reaches
// the next copy). Badger holds the copy until its transaction commits,
// after which the GC takes the slab back with its last copy.
func (w *Batch) copyOf(prefix string, b []byte) []byte {
	n := len(prefix) + len(b)
	w.mu.Lock()
	defer w.mu.Unlock()
	if cap(w.slab)-len(w.slab) < n {
		w.slab = make([]byte, 0, max(batchSlab, n))
	}
	start := len(w.slab)
	w.slab = append(append(w.slab, prefix...), b...)
	return w.slab[start:len(w.slab):len(w.slab)]
}

// NewBatch starts a batch of writes to the store.
func (b *Badger) NewBatch() (*Batch, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, ErrClosed
	}
	return &Batch{b: b, wb: b.db.NewWriteBatch()}, nil
}

// Set adds a write of value under key. The batch copies both slices.
func (w *Batch) Set(key, value []byte) error { return w.setPrefixed("", key, value) }

// Delete adds a deletion of key.
func (w *Batch) Delete(key []byte) error { return w.deletePrefixed("", key) }

// setPrefixed adds a write of value under prefix+key (see subBatch).
func (w *Batch) setPrefixed(prefix string, key, value []byte) error {
	w.b.mu.RLock()
	defer w.b.mu.RUnlock()
	if w.b.closed {
		return ErrClosed
	}
	if err := w.wb.Set(w.copyOf(prefix, key), w.copyOf("", value)); err != nil {
		return fmt.Errorf("statestore: batch set: %w", err)
	}
	return nil
}

// deletePrefixed adds a deletion of prefix+key.
func (w *Batch) deletePrefixed(prefix string, key []byte) error {
	w.b.mu.RLock()
	defer w.b.mu.RUnlock()
	if w.b.closed {
		return ErrClosed
	}
	if err := w.wb.Delete(w.copyOf(prefix, key)); err != nil {
		return fmt.Errorf("statestore: batch delete: %w", err)
	}
	return nil
}

// Flush commits the writes still pending and waits for every commit of the
// batch; it returns the first error any of them met. The batch cannot be
// used afterwards.
func (w *Batch) Flush() error {
	w.b.mu.RLock()
	defer w.b.mu.RUnlock()
	if w.b.closed {
		return ErrClosed
	}
	if err := w.wb.Flush(); err != nil {
		return fmt.Errorf("statestore: batch flush: %w", err)
	}
	return nil
}

// Cancel drops the writes not yet committed and releases the batch; it is
// safe to call after Flush, so `defer batch.Cancel()` is the usual guard.
func (w *Batch) Cancel() {
	w.b.mu.RLock()
	defer w.b.mu.RUnlock()
	if !w.b.closed {
		w.wb.Cancel()
	}
}

// slogBadgerLogger bridges badger.Logger to *slog.Logger.
type slogBadgerLogger struct{ l *slog.Logger }

func (s slogBadgerLogger) Errorf(f string, args ...any)   { s.log(slog.LevelError, f, args) }
func (s slogBadgerLogger) Warningf(f string, args ...any) { s.log(slog.LevelWarn, f, args) }
func (s slogBadgerLogger) Infof(f string, args ...any)    { s.log(slog.LevelDebug, f, args) }
func (s slogBadgerLogger) Debugf(f string, args ...any)   { s.log(slog.LevelDebug-4, f, args) }

func (s slogBadgerLogger) log(level slog.Level, f string, args []any) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	msg := strings.TrimRight(fmt.Sprintf(f, args...), "\n")
	s.l.Log(ctx, level, msg, "component", "badger")
}

// backupChunk is the size, in encoded bytes, of the KVLists a backup
// writes (at least; the last one of a backup may be smaller).
const backupChunk = 4 << 20

// writeBackup writes, in Badger's backup format (a little-endian uint64
// length, then a protobuf pb.KVList, repeated: what DB.Backup writes and
// DB.Load reads), the newest version of every key changed after version
// after as seen by txn; a deleted key is written as a delete marker.
//
// It replaces DB.Backup, whose stream framework (many goroutines, range
// splitting, periodic flushing) took from tens of milliseconds to seconds
// for a backup of a few keys on a busy machine, all of it stalling the
// pipeline: a single iterator over the changes costs what they weigh.
func writeBackup(w io.Writer, txn *badger.Txn, after uint64) error {
	opts := badger.DefaultIteratorOptions
	opts.AllVersions = true
	opts.PrefetchValues = false
	opts.SinceTs = after
	it := txn.NewIterator(opts)
	defer it.Close()
	// buf holds a length header and one KVList being encoded.
	buf := make([]byte, 8, backupChunk+backupChunk/8)
	flush := func() error {
		if len(buf) == 8 {
			return nil
		}
		binary.LittleEndian.PutUint64(buf[:8], uint64(len(buf)-8))
		if _, err := w.Write(buf); err != nil {
			return err
		}
		buf = buf[:8]
		return nil
	}
	var last, val []byte
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if last != nil && bytes.Equal(item.Key(), last) {
			continue // an older version of a key already written
		}
		last = item.KeyCopy(last[:0])
		if item.Version() <= after {
			continue
		}
		kv := backupKV{key: last, version: item.Version(), expiresAt: item.ExpiresAt(), userMeta: item.UserMeta()}
		if item.IsDeletedOrExpired() {
			kv.meta = badgerBitDelete
		} else {
			var err error
			if val, err = item.ValueCopy(val[:0]); err != nil {
				return err
			}
			kv.value = val
		}
		buf = kv.appendTo(buf)
		if len(buf) >= backupChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// backupKV is a key of a backup: the fields of Badger's pb.KV that
// DB.Load reads.
type backupKV struct {
	key, value         []byte
	version, expiresAt uint64
	userMeta, meta     byte
}

// appendTo appends kv to b as an element of a pb.KVList (field 1, a
// length-delimited pb.KV), encoded as proto.Marshal encodes a pb.KV with
// those fields and one-byte UserMeta and Meta: the fields in number
// order, empty and zero ones left out. (Encoding by hand spares a
// pb.KV, two small slices and copies of the key and value per key, and
// the reflection of proto.Marshal: a third of a full backup's time in
// BenchmarkCheckpoint.)
func (kv *backupKV) appendTo(b []byte) []byte {
	n := 3 + 3 // user_meta, meta: tag, length 1, the byte
	if len(kv.key) > 0 {
		n += 1 + uvarintLen(uint64(len(kv.key))) + len(kv.key)
	}
	if len(kv.value) > 0 {
		n += 1 + uvarintLen(uint64(len(kv.value))) + len(kv.value)
	}
	if kv.version != 0 {
		n += 1 + uvarintLen(kv.version)
	}
	if kv.expiresAt != 0 {
		n += 1 + uvarintLen(kv.expiresAt)
	}
	b = append(b, 1<<3|2)
	b = binary.AppendUvarint(b, uint64(n))
	if len(kv.key) > 0 {
		b = append(b, 1<<3|2)
		b = binary.AppendUvarint(b, uint64(len(kv.key)))
		b = append(b, kv.key...)
	}
	if len(kv.value) > 0 {
		b = append(b, 2<<3|2)
		b = binary.AppendUvarint(b, uint64(len(kv.value)))
		b = append(b, kv.value...)
	}
	b = append(b, 3<<3|2, 1, kv.userMeta)
	if kv.version != 0 {
		b = append(b, 4<<3|0)
		b = binary.AppendUvarint(b, kv.version)
	}
	if kv.expiresAt != 0 {
		b = append(b, 5<<3|0)
		b = binary.AppendUvarint(b, kv.expiresAt)
	}
	return append(b, 6<<3|2, 1, kv.meta)
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// badgerBitDelete is Badger's meta bit of a delete marker (bitDelete in
// its value.go), which DB.Load honours.
const badgerBitDelete = 1
