package statestore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// FormatVersion is the version of the checkpoint layout (FORMAT.md) this
// package writes. Manifests of other versions are refused.
const FormatVersion = 1

// Checkpoint kinds, the Kind of a Manifest.
const (
	KindFull        = "full"        // the state object is a full backup
	KindIncremental = "incremental" // the state object holds the changes since the parent
)

// ErrNoCheckpoint is returned by Checkpointer.Latest when the bucket holds
// no complete checkpoint.
var ErrNoCheckpoint = errors.New("statestore: no complete checkpoint")

// ErrFenced is returned, wrapped, by a commit that finds another
// writer's work in its way: a complete checkpoint at or above the epoch
// it writes that this Checkpointer neither wrote nor found when it first
// read the bucket, or a manifest of its epoch written meanwhile. Another
// writer is active on the prefix (a consumer group member the group went
// on without, or the member that took its partition over): the commit is
// refused and deletes nothing of the other writer's.
var ErrFenced = errors.New("statestore: another writer is writing the checkpoints")

// ErrNewerFormat is matched (errors.Is) by the error of reading a
// checkpoint written in a layout newer than this build reads: such a
// checkpoint is neither restored nor skipped as damaged, so that an older
// build started on the bucket stops rather than supersede or retire the
// newer build's checkpoints.
var ErrNewerFormat = errors.New("statestore: checkpoint written by a newer version")

// errCorrupt marks a checkpoint that is incomplete or damaged, as opposed
// to a bucket that could not be read.
var errCorrupt = errors.New("checkpoint incomplete or corrupt")

// Manifest describes one complete checkpoint: the objects to load, in
// order, to rebuild the state store, and the named parts saved with it. It
// is stored as JSON (see FORMAT.md) and written after every object it
// names, so a checkpoint exists once its manifest does.
type Manifest struct {
	// Format is the layout version, FormatVersion.
	Format int `json:"format"`
	// Epoch is the checkpoint's number, chosen by the caller of Write.
	Epoch uint64 `json:"epoch"`
	// ID is random, different for every checkpoint written, so that a
	// rewrite of an epoch is never mistaken for the original. It names
	// the directory of the checkpoint's objects, so that two writers of
	// one epoch never overwrite each other's.
	ID string `json:"id"`
	// Created is when the checkpoint was written, in UTC.
	Created time.Time `json:"created"`
	// Kind is KindFull or KindIncremental.
	Kind string `json:"kind"`
	// Parent names the previous checkpoint of the chain of an
	// incremental checkpoint; nil for a full one.
	Parent *ParentRef `json:"parent,omitempty"`
	// NextSince is the Badger version the next incremental backup of this
	// store starts at.
	NextSince uint64 `json:"next_since"`
	// State lists the backups to load, in order, to rebuild the store: a
	// full backup, then the incremental ones of the chain; the last is this
	// checkpoint's own.
	State []StateRef `json:"state"`
	// Parts are the named opaque values saved with the checkpoint.
	Parts map[string]ObjectRef `json:"parts"`
}

// ParentRef names the checkpoint an incremental checkpoint builds on.
type ParentRef struct {
	Epoch uint64 `json:"epoch"`
	ID    string `json:"id"`
}

// ObjectRef names an object of a checkpoint, relative to the
// checkpointer's prefix, with its size and SHA-256 checksum (lowercase
// hex).
type ObjectRef struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// StateRef is a Badger backup in a checkpoint chain: the object and the
// version it starts at (0 for a full backup).
type StateRef struct {
	// Epoch is the epoch of the checkpoint that wrote the backup.
	Epoch uint64 `json:"epoch"`
	// Since is the first Badger version the backup holds; 0 for a full one.
	Since uint64 `json:"since"`
	ObjectRef
}

// Bytes returns the bytes this checkpoint uploaded: its own state backup
// and its parts, without the objects it shares with earlier checkpoints of
// its chain, and without the manifest.
func (m *Manifest) Bytes() int64 {
	var n int64
	if len(m.State) > 0 {
		n += m.State[len(m.State)-1].Size
	}
	for _, p := range m.Parts {
		n += p.Size
	}
	return n
}

// manifestFile is the JSON document stored as manifest.json: the manifest
// and the SHA-256 of its exact bytes in the file, so that damage to the
// manifest itself is detected too.
type manifestFile struct {
	SHA256   string          `json:"sha256"`
	Manifest json.RawMessage `json:"manifest"`
}

// CheckpointOption configures NewCheckpointer.
type CheckpointOption interface {
	applyCheckpoint(*checkpointConfig)
}

type checkpointConfig struct {
	prefix    string
	retain    int
	fullEvery int
	spoolDir  string
	logger    *slog.Logger
	syncDir   string // WithSyncDir
}

type checkpointOptionFunc func(*checkpointConfig)

func (f checkpointOptionFunc) applyCheckpoint(c *checkpointConfig) { f(c) }

// WithPrefix puts the checkpoints under prefix in the bucket, for example
// "job-7/partition-3/"; a "/" is added if missing. Each prefix holds one
// independent series of checkpoints.
func WithPrefix(prefix string) CheckpointOption {
	return checkpointOptionFunc(func(c *checkpointConfig) { c.prefix = prefix })
}

// WithRetain keeps the newest n checkpoints (default 3, at least 1) and
// every older checkpoint that their incremental chains need; others are
// deleted after each Write.
func WithRetain(n int) CheckpointOption {
	return checkpointOptionFunc(func(c *checkpointConfig) { c.retain = n })
}

// WithFullEvery bounds an incremental chain to n checkpoints (default 8):
// every n-th checkpoint is a full backup. With n = 1 every checkpoint is
// full.
func WithFullEvery(n int) CheckpointOption {
	return checkpointOptionFunc(func(c *checkpointConfig) { c.fullEvery = n })
}

// WithSyncDir says the bucket is a local directory, dir, such as a
// file:// bucket (gocloud.dev/blob/fileblob) opened on it: every object a
// checkpoint writes is then flushed to disk (fsync), with the directories
// above it up to dir, before the next is written and before the manifest
// names it, so that a power loss cannot leave a manifest naming objects
// the disk never got, nor retention delete the older checkpoints in favour
// of one that is lost. fileblob cannot do this itself. OpenBucket sets it
// up for file:// URLs (SyncDir). The objects are found at dir joined with
// the prefix and key, as fileblob stores keys made of printable ASCII.
func WithSyncDir(dir string) CheckpointOption {
	return checkpointOptionFunc(func(c *checkpointConfig) { c.syncDir = dir })
}

// WithSpoolDir sets the local directory where Prepare spools state
// backups until Commit uploads them; the default is os.TempDir().
func WithSpoolDir(dir string) CheckpointOption {
	return checkpointOptionFunc(func(c *checkpointConfig) { c.spoolDir = dir })
}

// Checkpointer writes epoch-numbered checkpoints of a Badger store, with
// named opaque parts, to a gocloud.dev/blob bucket, finds the newest
// complete one, and restores stores from them. Open the bucket with the
// driver of your choice (blank-import gocloud.dev/blob/s3blob for s3://,
// fileblob for file://, memblob for mem://).
//
// One Checkpointer, in one process, writes a prefix; Latest and Restore
// may be used by any number of readers. Its methods are safe for
// concurrent use (writes and restores are serialized).
//
// A writer deletes only what it knows to be no other writer's work: the
// checkpoints and objects it wrote, and those it found when it first read
// the bucket (its first Latest, Restore or commit). Should another
// writer's checkpoint appear at or above the epoch it writes, the commit
// fails with ErrFenced and leaves it alone (see FORMAT.md, "Writers").
type Checkpointer struct {
	bucket *blob.Bucket
	cfg    checkpointConfig

	mu       sync.Mutex
	pending  bool                       // a Prepare awaits its Commit or Abort
	own      map[uint64]map[string]bool // epoch -> ids of the checkpoints this one began there
	warned   bool                       // the store refused a conditional write once
	syncWarn sync.Once                  // WithSyncDir's object was not found, once

	openMu sync.Mutex
	opened bool
	// found is what the prefix held when this Checkpointer first read
	// it, by epoch. Set under openMu before opened; then read and
	// pruned under mu only, by callers of open.
	found map[uint64]*foundEpoch
}

// foundEpoch is an epoch directory as a Checkpointer first found it.
type foundEpoch struct {
	id   string          // the id of its intact manifest, "" for none
	dirs map[string]bool // the checkpoint ids that had objects in it
}

// NewCheckpointer returns a Checkpointer writing to bucket. The caller
// keeps ownership of the bucket and closes it.
func NewCheckpointer(bucket *blob.Bucket, opts ...CheckpointOption) *Checkpointer {
	cfg := checkpointConfig{retain: 3, fullEvery: 8}
	for _, o := range opts {
		o.applyCheckpoint(&cfg)
	}
	if cfg.prefix != "" && !strings.HasSuffix(cfg.prefix, "/") {
		cfg.prefix += "/"
	}
	cfg.retain = max(cfg.retain, 1)
	cfg.fullEvery = max(cfg.fullEvery, 1)
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &Checkpointer{bucket: bucket, cfg: cfg}
}

const (
	checkpointsDir = "checkpoints/"
	manifestName   = "manifest.json"
	stateName      = "state.backup"
	partsDir       = "parts/"
)

// epochDir is the directory, relative to the prefix, of an epoch.
func epochDir(epoch uint64) string { return fmt.Sprintf("%s%020d/", checkpointsDir, epoch) }

// objectDir is the directory, relative to the prefix, of the objects of
// checkpoint id of an epoch. (Format 1 checkpoints written before the id
// was in the keys have their objects in the epoch directory itself.)
func objectDir(epoch uint64, id string) string { return epochDir(epoch) + id + "/" }

// partKey is the key, relative to the prefix, of a part of checkpoint id.
func partKey(epoch uint64, id, name string) string {
	return objectDir(epoch, id) + partsDir + url.PathEscape(name)
}

// idLen is the length of a checkpoint id (newID).
const idLen = 16

// keyOwner returns the checkpoint id whose object directory holds rest,
// a key relative to an epoch directory, or "" for the manifest and the
// objects of the earlier layout.
func keyOwner(rest string) string {
	id, _, ok := strings.Cut(rest, "/")
	if !ok || len(id) != idLen || strings.Trim(id, "0123456789abcdef") != "" {
		return ""
	}
	return id
}

// Write takes a checkpoint of db numbered epoch, with the given parts,
// and returns its manifest once the checkpoint is complete. It is Prepare
// followed by Commit: db must not be written to until Write returns. To
// let writes resume sooner, call Prepare and Commit separately.
func (c *Checkpointer) Write(ctx context.Context, db *Badger, epoch uint64, parts map[string][]byte) (*Manifest, error) {
	p, err := c.Prepare(db, epoch)
	if err != nil {
		return nil, err
	}
	return p.Commit(ctx, parts)
}

// Pending is a checkpoint whose state backup was taken by Prepare and is
// held in a local spool file until Commit uploads it.
type Pending struct {
	c      *Checkpointer
	db     *Badger
	epoch  uint64
	kind   string
	parent *ParentRef
	chain  []StateRef // the chain this backup extends
	since  uint64
	next   uint64
	spool  *os.File
	size   int64
	sha256 string
	done   bool
}

// Prepare takes the state backup of checkpoint epoch of db: a consistent
// snapshot of db, spooled to a local file (see WithSpoolDir), so that the
// slow upload can run while the pipeline goes on. db must not be written
// to while Prepare runs; writes may resume when it returns. Call Commit,
// or Abort, on the result; only one checkpoint of a Checkpointer may be
// pending at a time.
//
// The backup is incremental (only the changes since the previous
// checkpoint) when db's previous checkpoint was committed, or db was
// restored, by this Checkpointer and that chain is shorter than
// WithFullEvery; otherwise it is a full backup. A checkpoint that fails or is aborted
// breaks the chain, so the next one is full.
func (c *Checkpointer) Prepare(db *Badger, epoch uint64) (*Pending, error) {
	if db == nil {
		return nil, errors.New("statestore: checkpoint: nil store")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending {
		return nil, fmt.Errorf("statestore: checkpoint %d: another checkpoint is pending", epoch)
	}
	p := &Pending{c: c, db: db, epoch: epoch, kind: KindFull}
	// The backup moves the store's compaction pin: from here on only a
	// commit of this backup keeps the chain whole.
	last, since := db.takeChain(c)
	if last != nil && last.Epoch < epoch && len(last.State) < c.cfg.fullEvery {
		p.kind = KindIncremental
		p.parent = &ParentRef{Epoch: last.Epoch, ID: last.ID}
		p.chain = last.State
		p.since = since
	}
	f, err := os.CreateTemp(c.cfg.spoolDir, "volga-checkpoint-*.backup")
	if err != nil {
		return nil, fmt.Errorf("statestore: checkpoint %d: spool: %w", epoch, err)
	}
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	p.next, err = db.backup(bw, p.since)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("statestore: checkpoint %d: backup state: %w", epoch, err)
	}
	p.spool, p.size, p.sha256 = f, cw.n, hex.EncodeToString(h.Sum(nil))
	c.pending = true
	return p, nil
}

// Kind returns the kind of the pending checkpoint, KindFull or
// KindIncremental.
func (p *Pending) Kind() string { return p.kind }

// Commit uploads the pending checkpoint's state backup and parts, each
// with its SHA-256 checksum, then its manifest, and returns the manifest
// of the now complete checkpoint.
//
// Epochs should increase. Committing an epoch at or below existing ones
// supersedes them: their manifests are deleted first, as after a restore
// from an older checkpoint the newer ones describe an abandoned history.
// Only the checkpoints this Checkpointer wrote, or found when it first
// read the bucket, are superseded: finding another one there, written
// since by another writer, fails the commit with ErrFenced before it
// changes anything; so does a manifest of the epoch written by another
// writer while this commit uploaded its objects (where the bucket
// supports conditional writes). After the manifest is written,
// checkpoints no longer retained (see WithRetain) are deleted, none newer
// than this one; a failure there is logged, not returned.
func (p *Pending) Commit(ctx context.Context, parts map[string][]byte) (*Manifest, error) {
	return p.CommitFenced(ctx, parts, nil)
}

// CommitFenced is Commit for a writer that may lose the right to write
// the prefix while it runs (a member of a consumer group whose partition
// was handed to another member): fence, when not nil, is called before
// anything in the bucket changes (before newer checkpoints are
// superseded) and again just before the manifest is written, and an
// error from it aborts the commit with that error (errors.Is finds it).
// A commit fenced at the manifest leaves its uploaded objects without a
// manifest, which is no checkpoint: they are deleted when a later commit
// supersedes or retires that epoch. A fence is asked before it acts, so a
// writer paused in between acts on a stale answer: what the commit may
// delete or replace is bounded as Commit says, whatever the fence said.
func (p *Pending) CommitFenced(ctx context.Context, parts map[string][]byte, fence func(context.Context) error) (*Manifest, error) {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.done {
		return nil, fmt.Errorf("statestore: checkpoint %d: already committed or aborted", p.epoch)
	}
	defer p.release()
	m, err := p.commit(ctx, parts, fence)
	if err != nil {
		return nil, fmt.Errorf("statestore: checkpoint %d: %w", p.epoch, err)
	}
	p.db.setChain(c, m, p.next)
	c.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "statestore: checkpoint written",
		slog.Uint64("epoch", m.Epoch), slog.String("kind", m.Kind), slog.Int64("bytes", m.Bytes()))
	if err := c.collect(ctx, m); err != nil {
		c.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "statestore: deleting old checkpoints failed",
			slog.Uint64("epoch", m.Epoch), slog.Any("error", err))
	}
	return m, nil
}

// Abort drops the pending checkpoint. It is safe to call after Commit, so
// `defer p.Abort()` is the usual guard.
func (p *Pending) Abort() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.done {
		p.release()
	}
}

// release removes the spool file and frees the checkpointer; c.mu is held.
func (p *Pending) release() {
	p.done = true
	p.c.pending = false
	_ = p.spool.Close()
	_ = os.Remove(p.spool.Name())
}

func (p *Pending) commit(ctx context.Context, parts map[string][]byte, fence func(context.Context) error) (*Manifest, error) {
	c := p.c
	for name := range parts {
		if err := checkPartName(name); err != nil {
			return nil, err
		}
	}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	if fence != nil {
		if err := fence(ctx); err != nil {
			return nil, fmt.Errorf("refused by the fence: %w", err)
		}
	}
	if err := c.supersede(ctx, p.epoch); err != nil {
		return nil, err
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	if c.own == nil {
		c.own = map[uint64]map[string]bool{}
	}
	if c.own[p.epoch] == nil {
		c.own[p.epoch] = map[string]bool{}
	}
	c.own[p.epoch][id] = true
	m := &Manifest{
		Format:    FormatVersion,
		Epoch:     p.epoch,
		ID:        id,
		Created:   time.Now().UTC().Truncate(time.Millisecond),
		Kind:      p.kind,
		Parent:    p.parent,
		NextSince: p.next,
		State:     slices.Clone(p.chain),
		Parts:     make(map[string]ObjectRef, len(parts)),
	}

	ref, err := c.put(ctx, objectDir(p.epoch, id)+stateName, false, func(w io.Writer) error {
		if _, err := p.spool.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(w, p.spool)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if ref.Size != p.size || ref.SHA256 != p.sha256 {
		return nil, fmt.Errorf("state: the spool file %s changed before upload", p.spool.Name())
	}
	m.State = append(m.State, StateRef{Epoch: p.epoch, Since: p.since, ObjectRef: ref})

	for _, name := range slices.Sorted(maps.Keys(parts)) {
		ref, err := c.put(ctx, partKey(p.epoch, id, name), false, func(w io.Writer) error {
			_, err := w.Write(parts[name])
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("part %q: %w", name, err)
		}
		m.Parts[name] = ref
	}

	file, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	if fence != nil {
		if err := fence(ctx); err != nil {
			return nil, fmt.Errorf("refused by the fence before the manifest: %w", err)
		}
	}
	fillManifest := func(w io.Writer) error {
		_, err := w.Write(file)
		return err
	}
	// Written only where there is no manifest (supersede deleted the
	// ones it may): one there now is another writer's, written since.
	key := epochDir(p.epoch) + manifestName
	_, err = c.put(ctx, key, true, fillManifest)
	switch {
	case err == nil:
	case gcerrors.Code(err) == gcerrors.FailedPrecondition:
		return nil, fmt.Errorf("%w: another writer wrote the manifest of epoch %d while this one uploaded its objects", ErrFenced, p.epoch)
	case ctx.Err() != nil || errors.Is(err, errCorrupt):
		return nil, fmt.Errorf("manifest: %w", err)
	default:
		// A store that does not do conditional writes may refuse the
		// condition: write the manifest as before.
		if !c.warned {
			c.warned = true
			c.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "statestore: the conditional write of a manifest failed; writing it unconditionally",
				slog.Uint64("epoch", p.epoch), slog.Any("error", err))
		}
		if _, err := c.put(ctx, key, false, fillManifest); err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
	}
	return m, nil
}

// open records what the prefix holds, once: the epochs, the id of each
// one's intact manifest, and the checkpoint ids with objects in each.
// These, besides its own, are what this Checkpointer may supersede.
func (c *Checkpointer) open(ctx context.Context) error {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	if c.opened {
		return nil
	}
	base := c.cfg.prefix + checkpointsDir
	found := map[uint64]*foundEpoch{}
	manifests := map[uint64]bool{}
	it := c.bucket.List(&blob.ListOptions{Prefix: base})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", base, err)
		}
		name, rest, _ := strings.Cut(strings.TrimPrefix(obj.Key, base), "/")
		e, err := strconv.ParseUint(name, 10, 64)
		if err != nil || len(name) != 20 || obj.IsDir {
			continue // not ours
		}
		f := found[e]
		if f == nil {
			f = &foundEpoch{dirs: map[string]bool{}}
			found[e] = f
		}
		if rest == manifestName {
			manifests[e] = true
		} else if id := keyOwner(rest); id != "" {
			f.dirs[id] = true
		}
	}
	for e := range manifests {
		m, err := c.readManifest(ctx, e)
		switch {
		case err == nil:
			found[e].id = m.ID
		case !errors.Is(err, errCorrupt):
			return err
		}
	}
	c.found, c.opened = found, true
	return nil
}

// mayDelete reports whether this Checkpointer may delete epoch e whose
// manifest has the given id ("" for none, or a damaged one): one it
// wrote, or found so when it first read the bucket. c.mu is held.
func (c *Checkpointer) mayDelete(e uint64, id string) bool {
	f := c.found[e]
	if id == "" {
		return f != nil || len(c.own[e]) > 0
	}
	return c.own[e][id] || f != nil && f.id == id
}

// supersede deletes the checkpoints numbered epoch or above, all of them
// or none: it refuses with ErrFenced when one is another writer's.
// Directories without an intact manifest that it did not know of are
// another writer's checkpoints being written: left alone. c.mu is held.
func (c *Checkpointer) supersede(ctx context.Context, epoch uint64) error {
	epochs, err := c.epochs(ctx)
	if err != nil {
		return err
	}
	type doomed struct {
		epoch uint64
		id    string // the manifest's id, "" for none or a damaged one
	}
	var del []doomed
	for _, e := range epochs {
		if e < epoch {
			continue
		}
		id := ""
		m, err := c.readManifest(ctx, e)
		switch {
		case err == nil:
			id = m.ID
		case !errors.Is(err, errCorrupt):
			return err
		}
		if !c.mayDelete(e, id) {
			if id == "" {
				continue
			}
			return fmt.Errorf("%w: epoch %d holds checkpoint %s, which this writer neither wrote nor found when it first read the bucket", ErrFenced, e, id)
		}
		del = append(del, doomed{e, id})
	}
	for _, d := range del {
		if d.epoch > epoch {
			c.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "statestore: superseding a newer checkpoint",
				slog.Uint64("epoch", d.epoch), slog.Uint64("new_epoch", epoch))
		}
		if err := c.deleteKnown(ctx, d.epoch, d.id); err != nil {
			return err
		}
	}
	return nil
}

// put uploads one object, filled by fill, and returns its reference;
// with ifNotExist only if there is no object at key. The object's size in
// the bucket is checked after the upload: one shorter or longer than what
// was written is an error wrapping errCorrupt.
func (c *Checkpointer) put(ctx context.Context, key string, ifNotExist bool, fill func(io.Writer) error) (ObjectRef, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.bucket.NewWriter(wctx, c.cfg.prefix+key, &blob.WriterOptions{
		ContentType: "application/octet-stream",
		IfNotExist:  ifNotExist,
	})
	if err != nil {
		return ObjectRef{}, fmt.Errorf("upload %s: %w", key, err)
	}
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		cancel() // aborts the upload
		_ = w.Close()
		return ObjectRef{}, fmt.Errorf("upload %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return ObjectRef{}, fmt.Errorf("upload %s: %w", key, err)
	}
	if c.cfg.syncDir != "" {
		switch err := syncObject(c.cfg.syncDir, c.cfg.prefix+key); {
		case errors.Is(err, os.ErrNotExist):
			// Not where a file:// bucket on syncDir keeps it (a key
			// fileblob escapes, or another bucket): warn, and go on
			// without flushing rather than without checkpoints.
			c.syncWarn.Do(func() {
				c.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "statestore: checkpoint objects are not flushed to disk: an object is not found under the sync directory",
					slog.String("dir", c.cfg.syncDir), slog.String("key", c.cfg.prefix+key), slog.Any("error", err))
			})
		case err != nil:
			return ObjectRef{}, fmt.Errorf("upload %s: flushing it to disk: %w", key, err)
		}
	}
	// The manifest must never name an object the bucket did not take
	// whole: a store that dropped the end of an upload and reported
	// success would otherwise make this a checkpoint Latest skips, and
	// retention would delete the older ones it falls back to.
	attrs, err := c.bucket.Attributes(ctx, c.cfg.prefix+key)
	if err != nil {
		return ObjectRef{}, fmt.Errorf("upload %s: checking its size: %w", key, err)
	}
	if attrs.Size != cw.n {
		return ObjectRef{}, fmt.Errorf("%w: upload %s: the bucket holds %d bytes, %d were written", errCorrupt, key, attrs.Size, cw.n)
	}
	return ObjectRef{Key: key, Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Latest returns the manifest of the newest complete checkpoint: one whose
// manifest is intact and whose objects are all present with the sizes and
// checksums it records. Newer checkpoints that are not complete are
// skipped, each with an error logged. It returns ErrNoCheckpoint if there
// is none, and other errors when the bucket cannot be read (a transient
// failure never makes it fall back to an older checkpoint).
func (c *Checkpointer) Latest(ctx context.Context) (*Manifest, error) {
	if err := c.open(ctx); err != nil {
		return nil, fmt.Errorf("statestore: latest checkpoint: %w", err)
	}
	epochs, err := c.epochs(ctx)
	if err != nil {
		return nil, fmt.Errorf("statestore: latest checkpoint: %w", err)
	}
	verified := map[ObjectRef]bool{}
	for _, e := range slices.Backward(epochs) {
		m, err := c.readManifest(ctx, e)
		if err == nil {
			err = c.verify(ctx, m, verified)
		}
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, errCorrupt) {
			return nil, fmt.Errorf("statestore: latest checkpoint: epoch %d: %w", e, err)
		}
		c.cfg.logger.LogAttrs(ctx, slog.LevelError, "statestore: skipping incomplete checkpoint",
			slog.String("prefix", c.cfg.prefix), slog.Uint64("epoch", e), slog.Any("error", err))
	}
	return nil, ErrNoCheckpoint
}

// RestoreLatest restores the newest complete checkpoint into the empty or
// missing directory dir, as Latest then Restore do, but reading each
// object once: the objects are checked against the manifest's sizes and
// checksums as they are restored, where Latest reads them all first. A
// checkpoint found damaged on the way is skipped with an error logged,
// dir is emptied, and the next older one is restored. It returns the
// store, the parts and the manifest restored; ErrNoCheckpoint if there is
// no complete checkpoint; and other errors, with dir left empty, when the
// bucket or the directory cannot be read or written (a transient failure
// never makes it fall back to an older checkpoint).
func (c *Checkpointer) RestoreLatest(ctx context.Context, dir string, opts ...BadgerOption) (*Badger, map[string][]byte, *Manifest, error) {
	if err := c.open(ctx); err != nil {
		return nil, nil, nil, fmt.Errorf("statestore: restore the latest checkpoint: %w", err)
	}
	epochs, err := c.epochs(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("statestore: restore the latest checkpoint: %w", err)
	}
	for _, e := range slices.Backward(epochs) {
		m, err := c.readManifest(ctx, e)
		if err == nil {
			var db *Badger
			var parts map[string][]byte
			if db, parts, err = c.restore(ctx, m, dir, opts); err == nil {
				return db, parts, m, nil
			}
		}
		if !errors.Is(err, errCorrupt) {
			return nil, nil, nil, fmt.Errorf("statestore: restore checkpoint %d into %s: %w", e, dir, err)
		}
		c.cfg.logger.LogAttrs(ctx, slog.LevelError, "statestore: skipping incomplete checkpoint",
			slog.String("prefix", c.cfg.prefix), slog.Uint64("epoch", e), slog.Any("error", err))
	}
	return nil, nil, nil, ErrNoCheckpoint
}

// epochs lists the epochs that have a directory in the bucket, ascending.
func (c *Checkpointer) epochs(ctx context.Context) ([]uint64, error) {
	base := c.cfg.prefix + checkpointsDir
	it := c.bucket.List(&blob.ListOptions{Prefix: base, Delimiter: "/"})
	var epochs []uint64
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", base, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(obj.Key, base), "/")
		e, err := strconv.ParseUint(name, 10, 64)
		if !obj.IsDir || err != nil || len(name) != 20 {
			continue // not ours
		}
		epochs = append(epochs, e)
	}
	slices.Sort(epochs)
	return epochs, nil
}

// readManifest reads and checks the manifest of epoch. Damage is reported
// as errCorrupt.
func (c *Checkpointer) readManifest(ctx context.Context, epoch uint64) (*Manifest, error) {
	key := epochDir(epoch) + manifestName
	data, err := c.bucket.ReadAll(ctx, c.cfg.prefix+key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: manifest %s is missing", errCorrupt, key)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	m, err := decodeManifest(data)
	if errors.Is(err, ErrNewerFormat) {
		return nil, fmt.Errorf("manifest %s: %w", key, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", errCorrupt, key, err)
	}
	if m.Epoch != epoch {
		return nil, fmt.Errorf("%w: manifest %s names epoch %d", errCorrupt, key, m.Epoch)
	}
	return m, nil
}

// encodeManifest returns the bytes of manifest.json for m.
func encodeManifest(m *Manifest) ([]byte, error) {
	body, err := json.MarshalIndent(m, "  ", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	sum := sha256.Sum256(body)
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"sha256\": %q,\n  \"manifest\": ", hex.EncodeToString(sum[:]))
	b.Write(body)
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// decodeManifest parses manifest.json and checks its checksum, version and
// internal consistency.
func decodeManifest(data []byte) (*Manifest, error) {
	var f manifestFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	sum := sha256.Sum256(f.Manifest)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return nil, fmt.Errorf("checksum is %s, the file says %s", got, f.SHA256)
	}
	var m Manifest
	if err := json.Unmarshal(f.Manifest, &m); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	switch {
	case m.Format > FormatVersion:
		return nil, fmt.Errorf("%w: format version %d, this build reads %d: run a build that reads it, or use another checkpoint location", ErrNewerFormat, m.Format, FormatVersion)
	case m.Format != FormatVersion:
		return nil, fmt.Errorf("format version %d, this reader knows %d", m.Format, FormatVersion)
	case len(m.State) == 0:
		return nil, errors.New("no state backup")
	case m.State[len(m.State)-1].Epoch != m.Epoch:
		return nil, errors.New("the last state backup is not the checkpoint's own")
	case m.State[0].Since != 0:
		return nil, errors.New("the chain does not start with a full backup")
	case m.Kind == KindFull && (len(m.State) != 1 || m.Parent != nil):
		return nil, errors.New("a full checkpoint with a chain")
	case m.Kind == KindIncremental && (len(m.State) < 2 || m.Parent == nil):
		return nil, errors.New("an incremental checkpoint without a parent")
	case m.Kind != KindFull && m.Kind != KindIncremental:
		return nil, fmt.Errorf("unknown kind %q", m.Kind)
	}
	if m.Parts == nil {
		m.Parts = map[string]ObjectRef{}
	}
	return &m, nil
}

// verify checks that every object m names is present with its size and
// checksum. verified caches objects already checked.
func (c *Checkpointer) verify(ctx context.Context, m *Manifest, verified map[ObjectRef]bool) error {
	refs := make([]ObjectRef, 0, len(m.State)+len(m.Parts))
	for _, s := range m.State {
		refs = append(refs, s.ObjectRef)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Parts)) {
		refs = append(refs, m.Parts[name])
	}
	for _, ref := range refs {
		if verified[ref] {
			continue
		}
		if err := c.read(ctx, ref, io.Discard); err != nil {
			return err
		}
		verified[ref] = true
	}
	return nil
}

// read copies the object ref to w, checking its size and checksum at the
// end; damage is reported as errCorrupt. w has seen the bytes by then: a
// caller that cannot take back what it wrote must discard it on error.
func (c *Checkpointer) read(ctx context.Context, ref ObjectRef, w io.Writer) error {
	r, err := c.bucket.NewReader(ctx, c.cfg.prefix+ref.Key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: object %s is missing", errCorrupt, ref.Key)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", ref.Key, err)
	}
	defer r.Close()
	h := sha256.New()
	// A byte more than recorded is enough to tell that the object is
	// too long: a replaced object is never read whole into memory.
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, max(ref.Size, 0)+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", ref.Key, err)
	}
	switch {
	case n > ref.Size:
		return fmt.Errorf("%w: object %s has more than %d bytes, the manifest says %d", errCorrupt, ref.Key, ref.Size, ref.Size)
	case n != ref.Size:
		return fmt.Errorf("%w: object %s has %d bytes, the manifest says %d", errCorrupt, ref.Key, n, ref.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return fmt.Errorf("%w: object %s has checksum %s, the manifest says %s", errCorrupt, ref.Key, got, ref.SHA256)
	}
	return nil
}

// Restore rebuilds the state store of checkpoint m in dir, which must not
// exist or be empty, loading its full backup and then each incremental
// one, and returns the open store with the checkpoint's parts. Every
// object's checksum is checked; on any error dir is left empty. The next
// Write of the returned store continues m's incremental chain.
func (c *Checkpointer) Restore(ctx context.Context, m *Manifest, dir string, opts ...BadgerOption) (*Badger, map[string][]byte, error) {
	if m == nil {
		return nil, nil, errors.New("statestore: restore: nil manifest")
	}
	if err := c.open(ctx); err != nil {
		return nil, nil, fmt.Errorf("statestore: restore checkpoint %d: %w", m.Epoch, err)
	}
	db, parts, err := c.restore(ctx, m, dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("statestore: restore checkpoint %d into %s: %w", m.Epoch, dir, err)
	}
	return db, parts, nil
}

func (c *Checkpointer) restore(ctx context.Context, m *Manifest, dir string, opts []BadgerOption) (_ *Badger, _ map[string][]byte, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	if len(entries) > 0 {
		return nil, nil, errors.New("the directory is not empty")
	}
	parts := make(map[string][]byte, len(m.Parts))
	for name, ref := range m.Parts {
		var b bytes.Buffer
		if err := c.read(ctx, ref, &b); err != nil {
			return nil, nil, fmt.Errorf("part %q: %w", name, err)
		}
		parts[name] = b.Bytes()
	}

	db, err := OpenBadger(dir, opts...)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = db.Close()
			clearDir(dir)
		}
	}()
	for _, s := range m.State {
		if err := c.loadState(ctx, db, s); err != nil {
			return nil, nil, err
		}
	}
	since, err := db.restored(m.NextSince)
	if err != nil {
		return nil, nil, err
	}
	db.setChain(c, m, since)
	return db, parts, nil
}

// loadState loads one backup of a chain into db.
func (c *Checkpointer) loadState(ctx context.Context, db *Badger, s StateRef) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := db.load(&frameReader{r: pr, size: s.Size})
		// Drain what Load left (all the rest when it failed), so that the
		// checksum covers the whole object and damage is reported as
		// such rather than as whatever Load made of it.
		_, derr := io.Copy(io.Discard, pr)
		if err == nil {
			err = derr
		}
		pr.CloseWithError(err)
		done <- err
	}()
	err := c.read(ctx, s.ObjectRef, pw)
	pw.CloseWithError(err)
	loadErr := <-done
	switch {
	case err != nil && (errors.Is(err, errCorrupt) || loadErr == nil):
		return fmt.Errorf("state backup of epoch %d: %w", s.Epoch, err)
	case loadErr != nil:
		return fmt.Errorf("load state backup of epoch %d: %w", s.Epoch, loadErr)
	}
	return nil
}

// frameReader passes a state backup to Badger's Load, checking its
// framing on the way: every record's 8-byte length must fit in what is
// left of the object (size bytes, as the manifest records). Load
// allocates what a record's length says before reading it, so a damaged
// length would otherwise make it ask for exabytes (a panic that no
// caller can recover, in Load's goroutine) before the checksum at the
// end of the object could tell.
type frameReader struct {
	r    io.Reader
	size int64   // the object's size
	off  int64   // bytes passed on so far
	hdr  [8]byte // the record length being read
	nhdr int     // bytes of hdr read
	body int64   // bytes of the current record still to pass on
	err  error
}

func (f *frameReader) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	for i := 0; i < n; {
		if f.body > 0 {
			k := min(int64(n-i), f.body)
			f.body -= k
			i += int(k)
			continue
		}
		f.hdr[f.nhdr] = p[i]
		f.nhdr++
		i++
		if f.nhdr < len(f.hdr) {
			continue
		}
		f.nhdr = 0
		sz := binary.LittleEndian.Uint64(f.hdr[:])
		if left := f.size - (f.off + int64(i)); left < 0 || sz > uint64(left) {
			f.err = fmt.Errorf("%w: a record at byte %d of the state backup claims %d bytes, %d are left", errCorrupt, f.off+int64(i)-8, sz, max(left, 0))
			return 0, f.err
		}
		f.body = int64(sz)
	}
	f.off += int64(n)
	return n, err
}

// clearDir removes what dir holds, keeping dir itself.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(dir + string(os.PathSeparator) + e.Name())
	}
}

// collect deletes the checkpoints older than cur, the checkpoint just
// written, that are neither among the newest retained ones up to cur nor
// needed by their chains or by those of newer checkpoints. Newer ones,
// another writer's, are left alone. c.mu is held.
func (c *Checkpointer) collect(ctx context.Context, cur *Manifest) error {
	epochs, err := c.epochs(ctx)
	if err != nil {
		return err
	}
	keep := map[uint64]bool{}
	for _, e := range epochs {
		if e <= cur.Epoch {
			continue
		}
		m, err := c.readManifest(ctx, e)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				return err
			}
			continue
		}
		for _, s := range m.State {
			keep[s.Epoch] = true
		}
	}
	kept := 0
	for _, e := range slices.Backward(epochs) {
		if e > cur.Epoch {
			continue
		}
		if kept == c.cfg.retain {
			break
		}
		m := cur
		if e != cur.Epoch {
			if m, err = c.readManifest(ctx, e); err != nil {
				if !errors.Is(err, errCorrupt) {
					return err
				}
				continue
			}
		}
		kept++
		for _, s := range m.State {
			keep[s.Epoch] = true
		}
	}
	var errs []error
	for _, e := range epochs {
		if e < cur.Epoch && !keep[e] {
			errs = append(errs, c.deleteEpoch(ctx, e, func(string) bool { return true }))
		}
	}
	return errors.Join(errs...)
}

// deleteKnown deletes a superseded epoch whose manifest has the given id
// ("" for none or a damaged one): the manifest, then the objects of the
// earlier layout and those of the checkpoints this Checkpointer began
// there, found there first, or that the manifest names; another writer's
// objects uploaded since are left. c.mu is held.
func (c *Checkpointer) deleteKnown(ctx context.Context, epoch uint64, id string) error {
	own, f := c.own[epoch], c.found[epoch]
	return c.deleteEpoch(ctx, epoch, func(owner string) bool {
		return owner == "" || owner == id || own[owner] || f != nil && f.dirs[owner]
	})
}

// deleteEpoch deletes the objects of an epoch whose owner (keyOwner) del
// accepts, its manifest first, and forgets what this Checkpointer knew
// of the epoch. c.mu is held.
func (c *Checkpointer) deleteEpoch(ctx context.Context, epoch uint64, del func(owner string) bool) error {
	dir := c.cfg.prefix + epochDir(epoch)
	manifest := dir + manifestName
	if err := c.bucket.Delete(ctx, manifest); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", manifest, err)
	}
	it := c.bucket.List(&blob.ListOptions{Prefix: dir})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			delete(c.own, epoch)
			delete(c.found, epoch)
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if obj.IsDir || !del(keyOwner(strings.TrimPrefix(obj.Key, dir))) {
			continue
		}
		if err := c.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("delete %s: %w", obj.Key, err)
		}
	}
}

func checkPartName(name string) error {
	if name == "" || len(name) > 256 || !utf8.ValidString(name) {
		return fmt.Errorf("invalid part name %q: want 1 to 256 bytes of UTF-8", name)
	}
	return nil
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("checkpoint id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
