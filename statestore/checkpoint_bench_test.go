package statestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/volga-go/volga/statestore"
)

// BenchmarkCheckpoint measures checkpoints of keys small keys of window
// state to a file:// bucket: a full checkpoint, an incremental one after
// 1% of the keys changed, and a restore of the full one. It reports the
// bytes uploaded per checkpoint.
func BenchmarkCheckpoint(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ctx := context.Background()
			bucket := openBucket(b, "file://"+filepath.ToSlash(b.TempDir())+"?no_tmp_dir=true")
			db := openBadger(b)
			fill(b, db, 0, keys, "a")

			b.Run("full", func(b *testing.B) {
				cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("full"), statestore.WithFullEvery(1), statestore.WithRetain(1))
				var m *statestore.Manifest
				epoch := uint64(0)
				for b.Loop() {
					epoch++
					var err error
					if m, err = cp.Write(ctx, db, epoch, map[string][]byte{"source": []byte("offset")}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(m.Bytes()), "bytes/checkpoint")
			})

			b.Run("incremental", func(b *testing.B) {
				cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("incr"), statestore.WithFullEvery(1<<30), statestore.WithRetain(1))
				if _, err := cp.Write(ctx, db, 0, nil); err != nil {
					b.Fatal(err)
				}
				var total int64
				epoch := uint64(0)
				for b.Loop() {
					b.StopTimer()
					epoch++
					fill(b, db, int(epoch)%100, keys, fmt.Sprint("v", epoch), 100) // 1% of the keys
					b.StartTimer()
					m, err := cp.Write(ctx, db, epoch, map[string][]byte{"source": []byte("offset")})
					if err != nil {
						b.Fatal(err)
					}
					total += m.Bytes()
				}
				b.ReportMetric(float64(total)/float64(epoch), "bytes/checkpoint")
			})

			b.Run("restore", func(b *testing.B) {
				cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("restore"))
				m, err := cp.Write(ctx, db, 1, nil)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					rdb, _, err := cp.Restore(ctx, m, b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := rdb.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(m.Bytes()), "bytes/checkpoint")
			})
		})
	}
}
