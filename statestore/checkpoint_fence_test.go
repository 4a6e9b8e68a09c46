package statestore_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"gocloud.dev/blob"

	"github.com/volga-go/volga/statestore"
)

// TestCheckpointCommitFenced checks that a fence refusing before the
// commit changes nothing in the bucket (a newer checkpoint is not
// superseded, no object is written), that one refusing before the
// manifest leaves no checkpoint, and that a fence that agrees is asked
// twice and changes nothing else.
func TestCheckpointCommitFenced(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		cp := statestore.NewCheckpointer(bucket, statestore.WithSpoolDir(t.TempDir()), statestore.WithRetain(10))
		db := openBadger(t)
		fill(t, db, 0, 50, "a")
		m5, err := cp.Write(ctx, db, 5, map[string][]byte{"reader": []byte("five")})
		must(t, err)

		errFenced := errors.New("the partition has another owner")
		calls := 0
		refuseAt := func(n int) func(context.Context) error {
			calls = 0
			return func(context.Context) error {
				calls++
				if calls == n {
					return errFenced
				}
				return nil
			}
		}
		// An older epoch, as a member restored from an older checkpoint
		// would write: without the fence it would supersede epoch 5.
		fill(t, db, 0, 50, "b")
		p, err := cp.Prepare(db, 3)
		must(t, err)
		if _, err := p.CommitFenced(ctx, map[string][]byte{"reader": []byte("three")}, refuseAt(1)); !errors.Is(err, errFenced) {
			t.Fatalf("CommitFenced refused at once: %v, want the fence's error", err)
		}
		p.Abort()
		if calls != 1 {
			t.Fatalf("the fence was asked %d times, want 1", calls)
		}
		if got := listKeys(t, bucket, "checkpoints/00000000000000000003/"); len(got) != 0 {
			t.Fatalf("a commit fenced at once wrote %v", got)
		}
		latest, err := cp.Latest(ctx)
		must(t, err)
		if latest.Epoch != 5 || latest.ID != m5.ID {
			t.Fatalf("latest after a fenced commit: epoch %d id %s, want epoch 5 id %s", latest.Epoch, latest.ID, m5.ID)
		}

		// Refused before the manifest: the objects are uploaded, yet
		// there is no checkpoint 6.
		p, err = cp.Prepare(db, 6)
		must(t, err)
		if _, err := p.CommitFenced(ctx, map[string][]byte{"reader": []byte("six")}, refuseAt(2)); !errors.Is(err, errFenced) {
			t.Fatalf("CommitFenced refused before the manifest: %v, want the fence's error", err)
		}
		p.Abort()
		if calls != 2 {
			t.Fatalf("the fence was asked %d times, want 2", calls)
		}
		for _, k := range listKeys(t, bucket, "checkpoints/00000000000000000006/") {
			if k == "checkpoints/00000000000000000006/manifest.json" {
				t.Fatal("a commit fenced before the manifest wrote it")
			}
		}
		latest, err = cp.Latest(ctx)
		must(t, err)
		if latest.Epoch != 5 {
			t.Fatalf("latest after a commit fenced at the manifest: epoch %d, want 5", latest.Epoch)
		}

		// Agreed twice: an ordinary checkpoint, which retires the
		// fenced epoch's objects.
		p, err = cp.Prepare(db, 7)
		must(t, err)
		m7, err := p.CommitFenced(ctx, map[string][]byte{"reader": []byte("seven")}, refuseAt(3))
		must(t, err)
		if calls != 2 {
			t.Fatalf("the fence was asked %d times, want 2", calls)
		}
		rdb, parts, err := cp.Restore(ctx, m7, t.TempDir())
		must(t, err)
		defer rdb.Close()
		sameContents(t, contents(t, rdb), contents(t, db))
		if string(parts["reader"]) != "seven" {
			t.Fatalf("restored part %q, want seven", parts["reader"])
		}
		if got := listKeys(t, bucket, "checkpoints/00000000000000000006/"); len(got) != 0 {
			t.Fatalf("the fenced epoch's objects are still there after the next checkpoint: %v", got)
		}
	})
}

// listKeys returns the keys of the objects under prefix.
func listKeys(t testing.TB, bucket *blob.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	it := bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(context.Background())
		if err == io.EOF {
			return keys
		}
		must(t, err)
		keys = append(keys, obj.Key)
	}
}
