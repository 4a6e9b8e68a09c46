package statestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob"

	"github.com/volga-go/volga/statestore"
)

// A store is checkpointed twice (a full, then an incremental backup) and
// rebuilt elsewhere from the latest checkpoint, with its source position.
func ExampleCheckpointer() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "statestore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	bucket, err := blob.OpenBucket(ctx, "mem://") // or file:///..., s3://bucket
	if err != nil {
		log.Fatal(err)
	}
	defer bucket.Close()

	db, err := statestore.OpenBadger(filepath.Join(tmp, "live"), statestore.WithMemoryBudget(16<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("job-1/partition-0"))

	_ = db.Set([]byte("op/window/0/key/alice"), []byte("3"))
	_ = db.Set([]byte("op/window/0/key/bob"), []byte("5"))
	m1, err := cp.Write(ctx, db, 1, map[string][]byte{"source/offset": []byte("120")})
	if err != nil {
		log.Fatal(err)
	}
	_ = db.Set([]byte("op/window/0/key/alice"), []byte("4"))
	_ = db.Delete([]byte("op/window/0/key/bob"))
	m2, err := cp.Write(ctx, db, 2, map[string][]byte{"source/offset": []byte("180")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m1.Kind, m2.Kind)

	// After a restart: find the newest complete checkpoint and restore it.
	latest, err := cp.Latest(ctx)
	if err != nil {
		log.Fatal(err)
	}
	restored, parts, err := cp.Restore(ctx, latest, filepath.Join(tmp, "restored"))
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	fmt.Printf("epoch %d, offset %s\n", latest.Epoch, parts["source/offset"])
	_ = restored.Scan([]byte("op/window/0/key/"), func(k, v []byte) error {
		fmt.Printf("%s = %s\n", k, v)
		return nil
	})
	// Output:
	// full incremental
	// epoch 2, offset 180
	// op/window/0/key/alice = 4
}
