package statestore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob"
)

// TestCheckpointSyncsFileBucket: through a file:// bucket opened with
// OpenBucket, a checkpoint flushes every object it writes to disk, with
// the directories above it up to the bucket's, and flushes them all
// before the manifest that names them; the manifest itself is flushed
// before Commit returns (and so before retention deletes older
// checkpoints). Without it, a power loss could leave a manifest naming
// objects the disk never got, after retention had deleted the checkpoints
// to fall back to.
func TestCheckpointSyncsFileBucket(t *testing.T) {
	var mu sync.Mutex
	var synced []string
	orig := syncPath
	syncPath = func(path string) error {
		mu.Lock()
		synced = append(synced, path)
		mu.Unlock()
		return orig(path)
	}
	t.Cleanup(func() { syncPath = orig })

	root := filepath.Join(t.TempDir(), "ckpt")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(root)
	if dir, ok := SyncDir(url); !ok || dir != root {
		t.Fatalf("SyncDir(%q) = %q, %v", url, dir, ok)
	}
	if _, ok := SyncDir("mem://"); ok {
		t.Fatal("SyncDir of mem:// gave a directory")
	}
	ctx := context.Background()
	bucket, opts, err := OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	db, err := OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cp := NewCheckpointer(bucket, append(opts, WithPrefix("job/7"), WithSpoolDir(t.TempDir()), WithRetain(1))...)
	for epoch := uint64(1); epoch <= 2; epoch++ {
		if err := db.Set([]byte("k"), []byte{byte(epoch)}); err != nil {
			t.Fatal(err)
		}
		p, err := cp.Prepare(db, epoch)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		synced = nil
		mu.Unlock()
		m, err := p.Commit(ctx, map[string][]byte{"source": []byte("pos"), "op/1": []byte("state")})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := slices.Clone(synced)
		mu.Unlock()
		objects := []string{m.State[len(m.State)-1].Key, m.Parts["source"].Key, m.Parts["op/1"].Key}
		manifest := filepath.Join(root, "job", "7", filepath.FromSlash(epochDir(epoch)+manifestName))
		at := slices.Index(got, manifest)
		if at < 0 {
			t.Fatalf("epoch %d: the manifest %s was not flushed; flushed %v", epoch, manifest, got)
		}
		for _, key := range objects {
			path := filepath.Join(root, "job", "7", filepath.FromSlash(key))
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("epoch %d: %s: %v", epoch, key, err)
			}
			i := slices.Index(got, path)
			if i < 0 || i > at {
				t.Fatalf("epoch %d: object %s flushed at %d, the manifest at %d: %v", epoch, key, i, at, got)
			}
			// Its directories, up to the bucket's, after it.
			for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
				if !slices.Contains(got[i:], dir) {
					t.Fatalf("epoch %d: directory %s of %s not flushed: %v", epoch, dir, key, got)
				}
				if dir == root {
					break
				}
			}
		}
		for _, p := range got {
			if !strings.HasPrefix(p, root) {
				t.Fatalf("flushed %s, outside the bucket's directory", p)
			}
		}
	}
}

// TestCheckpointSyncMissingObject: a sync directory that does not hold
// the bucket's objects (a key fileblob escapes, or a bucket elsewhere)
// leaves checkpoints unflushed, with a warning, rather than failing them.
func TestCheckpointSyncMissingObject(t *testing.T) {
	ctx := context.Background()
	bucket, _, err := OpenBucket(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	db, err := OpenBadger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cp := NewCheckpointer(bucket, WithSyncDir(t.TempDir()), WithSpoolDir(t.TempDir()))
	p, err := cp.Prepare(db, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, nil); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if m, err := cp.Latest(ctx); err != nil || m == nil || m.Epoch != 1 {
		t.Fatalf("Latest: %v, %v", m, err)
	}
}
