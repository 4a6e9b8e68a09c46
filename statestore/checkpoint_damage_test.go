package statestore_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/volga-go/volga/statestore"
)

// TestRestoreDamagedRecordLength: a state backup whose record length was
// damaged in the bucket (after Latest checked it, or restored by a
// caller holding the manifest) fails Restore with an error that says the
// object is damaged, leaves the directory empty, and does not make Badger
// allocate what the damaged length says (a panic that ended the process).
func TestRestoreDamagedRecordLength(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length uint64
	}{
		{"beyond the allocator", 1 << 62},
		{"negative as an int", 1<<63 + 5},
		{"past the end", 1 << 20},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
				ctx := context.Background()
				cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("job"))
				db := openBadger(t)
				fill(t, db, 0, 500, "a")
				m, err := cp.Write(ctx, db, 1, map[string][]byte{"pos": []byte("1")})
				must(t, err)
				key := "job/" + m.State[0].Key
				data, err := bucket.ReadAll(ctx, key)
				must(t, err)
				if len(data) < 8 || binary.LittleEndian.Uint64(data) >= uint64(len(data)) {
					t.Fatalf("the backup does not start with a record length: % x", data[:min(len(data), 16)])
				}
				binary.LittleEndian.PutUint64(data, tc.length)
				must(t, bucket.WriteAll(ctx, key, data, nil))

				dir := filepath.Join(t.TempDir(), "state")
				rdb, _, err := cp.Restore(ctx, m, dir)
				if err == nil {
					rdb.Close()
					t.Fatal("Restore of a backup with a damaged record length succeeded")
				}
				if !strings.Contains(err.Error(), "checksum") {
					t.Fatalf("Restore: %v; want an error naming the object's checksum", err)
				}
				if entries, _ := filepath.Glob(filepath.Join(dir, "*")); len(entries) != 0 {
					t.Fatalf("a failed Restore left %v", entries)
				}
				if _, err := cp.Latest(ctx); err == nil || !strings.Contains(err.Error(), "no complete checkpoint") {
					t.Fatalf("Latest: %v; want ErrNoCheckpoint", err)
				}
			})
		})
	}
}
