package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/volga-go/volga/statestore"
)

// writer is one process writing a prefix: its checkpointer, its store,
// and what each of its checkpoints holds.
type writer struct {
	cp   *statestore.Checkpointer
	db   *statestore.Badger
	ms   map[uint64]*statestore.Manifest
	want map[uint64]map[string]string
}

// openWriter opens a checkpointer on bucket as a pipeline does: it
// restores the latest checkpoint.
func openWriter(t *testing.T, bucket *blob.Bucket, opts ...statestore.CheckpointOption) *writer {
	t.Helper()
	ctx := context.Background()
	w := &writer{cp: statestore.NewCheckpointer(bucket, append([]statestore.CheckpointOption{statestore.WithSpoolDir(t.TempDir())}, opts...)...),
		ms: map[uint64]*statestore.Manifest{}, want: map[uint64]map[string]string{}}
	m, err := w.cp.Latest(ctx)
	must(t, err)
	w.db, _, err = w.cp.Restore(ctx, m, t.TempDir())
	must(t, err)
	t.Cleanup(func() { _ = w.db.Close() })
	return w
}

// write changes the writer's store (its name in the values) and
// checkpoints it as epoch e.
func (w *writer) write(t *testing.T, name string, e uint64) {
	t.Helper()
	fill(t, w.db, int(e)*10, int(e)*10+200, fmt.Sprint(name, e))
	m, err := w.cp.Write(context.Background(), w.db, e, map[string][]byte{"pos": fmt.Append(nil, name, e)})
	must(t, err)
	w.ms[e], w.want[e] = m, contents(t, w.db)
}

// checkRestores restores every checkpoint of w still named in want with
// a fresh checkpointer (another process) and checks it holds w's data;
// latest, when not 0, is the epoch Latest must return, with w's id.
func (w *writer) checkRestores(t *testing.T, bucket *blob.Bucket, name string, latest uint64, epochs ...uint64) {
	t.Helper()
	ctx := context.Background()
	reader := statestore.NewCheckpointer(bucket)
	if latest != 0 {
		m, err := reader.Latest(ctx)
		if err != nil {
			t.Fatalf("Latest: %v; want %s's epoch %d", err, name, latest)
		}
		if m.Epoch != latest || m.ID != w.ms[latest].ID {
			t.Fatalf("Latest = epoch %d id %s; want %s's epoch %d id %s", m.Epoch, m.ID, name, latest, w.ms[latest].ID)
		}
	}
	for _, e := range epochs {
		rdb, parts, err := reader.Restore(ctx, w.ms[e], t.TempDir())
		if err != nil {
			t.Fatalf("%s's checkpoint %d no longer restores: %v", name, e, err)
		}
		sameContents(t, contents(t, rdb), w.want[e])
		if got, want := string(parts["pos"]), fmt.Sprint(name, e); got != want {
			t.Fatalf("%s's checkpoint %d: part %q, want %q", name, e, got, want)
		}
		must(t, rdb.Close())
	}
}

// seedBucket writes checkpoints 1 and 2 of a first writer, gone since.
func seedBucket(t *testing.T, bucket *blob.Bucket) {
	t.Helper()
	cp := statestore.NewCheckpointer(bucket, statestore.WithSpoolDir(t.TempDir()))
	db := openBadger(t)
	for e := uint64(1); e <= 2; e++ {
		fill(t, db, 0, 500, fmt.Sprint("x", e))
		_, err := cp.Write(context.Background(), db, e, map[string][]byte{"pos": fmt.Append(nil, "x", e)})
		must(t, err)
	}
}

// A zombie (b) restored epoch 2 before the partition's new owner (a)
// did; a then checkpointed epochs 3 to 5, its retention deleting the
// older ones it does not need. b, running again, checkpoints epochs at
// or below a's newest: each is refused with ErrFenced before it changes
// anything, and every checkpoint of a's restores with a's data; a goes on
// with its incremental chain. (Superseding as before, b's epoch 3
// deleted a's epochs 3 to 5.)
func TestCheckpointZombieWriterRefused(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		seedBucket(t, bucket)
		b := openWriter(t, bucket)
		a := openWriter(t, bucket, statestore.WithRetain(2))
		for e := uint64(3); e <= 5; e++ {
			a.write(t, "a", e)
		}
		before := listKeys(t, bucket, "")
		for _, e := range []uint64{3, 5, 4} {
			fill(t, b.db, 0, 100, "zombie")
			_, err := b.cp.Write(ctx, b.db, e, map[string][]byte{"pos": []byte("zombie")})
			if !errors.Is(err, statestore.ErrFenced) {
				t.Fatalf("the zombie's checkpoint %d: %v; want ErrFenced", e, err)
			}
			t.Logf("epoch %d: %v", e, err)
		}
		if after := listKeys(t, bucket, ""); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Fatalf("refused checkpoints changed the bucket:\nbefore %q\nafter  %q", before, after)
		}
		a.checkRestores(t, bucket, "a", 5, 3, 4, 5)
		a.write(t, "a", 6)
		if a.ms[6].Kind != statestore.KindIncremental || a.ms[6].Parent.ID != a.ms[5].ID {
			t.Fatalf("a's checkpoint after the zombie's is %s on %+v, want incremental on 5", a.ms[6].Kind, a.ms[6].Parent)
		}
		a.checkRestores(t, bucket, "a", 6, 5, 6)
	})
}

// The zombie is paused right after its fence agreed (the fence's first
// call, before the commit changes anything): meanwhile the new owner
// restores epoch 2 and checkpoints 3 and 4. The zombie's commit of
// epoch 3 then finds them and is refused, deleting nothing.
func TestCheckpointZombiePausedAfterFence(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		seedBucket(t, bucket)
		b := openWriter(t, bucket)
		var a *writer
		fill(t, b.db, 0, 100, "zombie")
		p, err := b.cp.Prepare(b.db, 3)
		must(t, err)
		defer p.Abort()
		calls := 0
		_, err = p.CommitFenced(ctx, map[string][]byte{"pos": []byte("zombie")}, func(context.Context) error {
			calls++
			if calls == 1 {
				a = openWriter(t, bucket)
				a.write(t, "a", 3)
				a.write(t, "a", 4)
			}
			return nil
		})
		if !errors.Is(err, statestore.ErrFenced) {
			t.Fatalf("the zombie's commit: %v; want ErrFenced", err)
		}
		if calls != 1 {
			t.Fatalf("the fence was asked %d times, want once", calls)
		}
		a.checkRestores(t, bucket, "a", 4, 3, 4)
	})
}

// The zombie's commit of epoch 3 passed its checks and uploaded its
// objects, then paused before its manifest (its fence agreeing, as it
// did before the pause); meanwhile the new owner restored epoch 2 and
// wrote its own epoch 3, then 4. The zombie's objects overwrite none of
// the owner's (the keys hold the checkpoint's id), its manifest does not
// replace the owner's (it is written only where there is none), and the
// owner's checkpoints restore with its data.
func TestCheckpointZombieSameEpoch(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		seedBucket(t, bucket)
		b := openWriter(t, bucket)
		a := openWriter(t, bucket, statestore.WithFullEvery(1))
		fill(t, b.db, 0, 100, "zombie")
		p, err := b.cp.Prepare(b.db, 3)
		must(t, err)
		defer p.Abort()
		calls := 0
		_, err = p.CommitFenced(ctx, map[string][]byte{"pos": []byte("zombie")}, func(context.Context) error {
			calls++
			if calls == 2 {
				a.write(t, "a", 3)
				a.write(t, "a", 4)
				// a left the zombie's objects of epoch 3 alone, and
				// the zombie's are beside a's, not over them.
				dirs := map[string]bool{}
				for _, k := range listKeys(t, bucket, "checkpoints/00000000000000000003/") {
					if d, _, ok := strings.Cut(strings.TrimPrefix(k, "checkpoints/00000000000000000003/"), "/"); ok {
						dirs[d] = true
					}
				}
				if len(dirs) != 2 || !dirs[a.ms[3].ID] {
					t.Errorf("epoch 3 holds the objects of %v, want a's (%s) and the zombie's", dirs, a.ms[3].ID)
				}
			}
			return nil
		})
		if !errors.Is(err, statestore.ErrFenced) {
			t.Fatalf("the zombie's commit: %v; want ErrFenced", err)
		}
		a.checkRestores(t, bucket, "a", 4, 3, 4)
		data, err := bucket.ReadAll(ctx, "checkpoints/00000000000000000003/manifest.json")
		must(t, err)
		if !strings.Contains(string(data), a.ms[3].ID) {
			t.Fatalf("the manifest of epoch 3 is not a's (%s):\n%s", a.ms[3].ID, data)
		}
		// The owner's later (full) checkpoints retire epoch 3 whole, the
		// zombie's objects with it.
		for e := uint64(5); e <= 7; e++ {
			a.write(t, "a", e)
		}
		if got := listKeys(t, bucket, "checkpoints/00000000000000000003/"); len(got) != 0 {
			t.Fatalf("retired epoch 3 left %q", got)
		}
		a.checkRestores(t, bucket, "a", 7, 5, 6, 7)
	})
}

// Retention never deletes a checkpoint newer than the one just written:
// the zombie's epoch 3 lands (its manifest was due before the owner
// wrote any epoch 3) while the owner already wrote epochs 4 to 7 (full
// ones); the zombie keeping two checkpoints deletes none of them.
func TestCheckpointRetentionKeepsNewer(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		seedBucket(t, bucket)
		b := openWriter(t, bucket, statestore.WithRetain(2))
		a := openWriter(t, bucket, statestore.WithFullEvery(1), statestore.WithRetain(10))
		fill(t, b.db, 0, 100, "zombie")
		p, err := b.cp.Prepare(b.db, 3)
		must(t, err)
		defer p.Abort()
		calls := 0
		_, err = p.CommitFenced(ctx, map[string][]byte{"pos": []byte("zombie")}, func(context.Context) error {
			calls++
			if calls == 2 {
				for e := uint64(4); e <= 7; e++ {
					a.write(t, "a", e)
				}
			}
			return nil
		})
		must(t, err)
		a.checkRestores(t, bucket, "a", 7, 4, 5, 6, 7)
	})
}

// rollback: a checkpointer that restores an older checkpoint than the
// newest it found supersedes the newer ones, as before: they are an
// abandoned history it saw, not another writer's work.
func TestCheckpointRollbackSupersedes(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		w := openWriterEmpty(t, bucket)
		for e := uint64(1); e <= 4; e++ {
			w.write(t, "w", e)
		}
		cp := statestore.NewCheckpointer(bucket, statestore.WithSpoolDir(t.TempDir()))
		latest, err := cp.Latest(ctx)
		must(t, err)
		if latest.Epoch != 4 {
			t.Fatalf("Latest = %d, want 4", latest.Epoch)
		}
		db, _, err := cp.Restore(ctx, w.ms[2], t.TempDir())
		must(t, err)
		defer db.Close()
		fill(t, db, 0, 10, "again")
		m3, err := cp.Write(ctx, db, 3, nil)
		must(t, err)
		if got := epochsInBucket(t, bucket, ""); strings.Join(got, ",") != "1,2,3" {
			t.Fatalf("epochs %v after rewriting 3, want 1,2,3", got)
		}
		got, err := statestore.NewCheckpointer(bucket).Latest(ctx)
		must(t, err)
		if got.ID != m3.ID {
			t.Fatalf("Latest = %d/%s, want the rewrite of 3", got.Epoch, got.ID)
		}
	})
}

// openWriterEmpty is a writer starting on an empty prefix.
func openWriterEmpty(t *testing.T, bucket *blob.Bucket, opts ...statestore.CheckpointOption) *writer {
	t.Helper()
	w := &writer{cp: statestore.NewCheckpointer(bucket, append([]statestore.CheckpointOption{statestore.WithSpoolDir(t.TempDir())}, opts...)...),
		ms: map[uint64]*statestore.Manifest{}, want: map[uint64]map[string]string{}, db: openBadger(t)}
	return w
}

// Checkpoints of the earlier layout, their objects in the epoch
// directory itself rather than in one named after the checkpoint's id,
// still restore; a checkpoint extends their chain, and retention deletes
// them whole.
func TestCheckpointEarlierLayout(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		w := openWriterEmpty(t, bucket)
		w.write(t, "w", 1)
		w.write(t, "w", 2)
		ids := []string{w.ms[1].ID, w.ms[2].ID}
		for e := uint64(1); e <= 2; e++ {
			dir := fmt.Sprintf("checkpoints/%020d/", e)
			for _, k := range listKeys(t, bucket, dir) {
				rest := strings.TrimPrefix(k, dir)
				if rest == "manifest.json" {
					data, err := bucket.ReadAll(ctx, k)
					must(t, err)
					for _, id := range ids {
						data = []byte(strings.ReplaceAll(string(data), "/"+id+"/", "/"))
					}
					must(t, bucket.WriteAll(ctx, k, resealManifest(t, data), nil))
					continue
				}
				_, old, ok := strings.Cut(rest, "/")
				if !ok {
					t.Fatalf("object %s is not in a checkpoint's directory", k)
				}
				must(t, bucket.Copy(ctx, dir+old, k, nil))
				must(t, bucket.Delete(ctx, k))
			}
		}
		if keys := listKeys(t, bucket, ""); len(keys) != 6 {
			t.Fatalf("the earlier layout: %q", keys)
		}

		a := openWriter(t, bucket)
		m, err := a.cp.Latest(ctx)
		must(t, err)
		if m.ID != w.ms[2].ID || !strings.HasSuffix(m.Parts["pos"].Key, "00000002/parts/pos") {
			t.Fatalf("Latest = %d/%s (part %s), want epoch 2 of the earlier layout", m.Epoch, m.ID, m.Parts["pos"].Key)
		}
		sameContents(t, contents(t, a.db), w.want[2])
		a.write(t, "a", 3)
		if a.ms[3].Kind != statestore.KindIncremental || a.ms[3].State[0].Key != m.State[0].Key {
			t.Fatalf("the checkpoint after one of the earlier layout is %s on %q", a.ms[3].Kind, a.ms[3].State[0].Key)
		}
		a.checkRestores(t, bucket, "a", 3, 3)

		b := openWriter(t, bucket, statestore.WithRetain(1), statestore.WithFullEvery(1))
		b.write(t, "b", 4)
		if got := epochsInBucket(t, bucket, ""); strings.Join(got, ",") != "4" {
			t.Fatalf("epochs %v after retiring the earlier ones, want 4", got)
		}
		b.checkRestores(t, bucket, "b", 4, 4)
	})
}
