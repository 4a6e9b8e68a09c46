package statestore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/statestore"
)

// bucketKinds opens a fresh, empty bucket of each kind checkpoints are
// tested against: in memory, on the local file system, and on S3 (a fake
// S3 server on a loopback port, spoken to by the real AWS SDK).
var bucketKinds = []struct {
	name string
	open func(t testing.TB) *blob.Bucket
}{
	{"mem", func(t testing.TB) *blob.Bucket { return openBucket(t, "mem://") }},
	{"file", func(t testing.TB) *blob.Bucket {
		return openBucket(t, "file://"+filepath.ToSlash(t.TempDir())+"?no_tmp_dir=true")
	}},
	{"s3", testutil.S3Bucket},
}

// forEachBucket runs one test body against every bucket kind.
func forEachBucket(t *testing.T, body func(t *testing.T, bucket *blob.Bucket)) {
	for _, kind := range bucketKinds {
		t.Run(kind.name, func(t *testing.T) { body(t, kind.open(t)) })
	}
}

func openBucket(t testing.TB, u string) *blob.Bucket {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// fill writes the keys from, from+step, ... below to, in the operator key
// layout; step defaults to 1.
func fill(t testing.TB, db *statestore.Badger, from, to int, version string, step ...int) {
	t.Helper()
	batch, err := db.NewBatch()
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Cancel()
	inc := 1
	if len(step) > 0 {
		inc = step[0]
	}
	for i := from; i < to; i += inc {
		must(t, batch.Set(stateKey(i), fmt.Appendf(nil, "%s-%d", version, i)))
	}
	must(t, batch.Flush())
}

func stateKey(i int) []byte { return fmt.Appendf(nil, "op/window/%d/key/%08d", i%4, i) }

// contents returns every key and value of a store.
func contents(t testing.TB, s statestore.Store) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, s.Scan(nil, func(k, v []byte) error {
		m[string(k)] = string(v)
		return nil
	}))
	return m
}

func sameContents(t testing.TB, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("restored store: key %q = %q (present %v), want %q; %d keys, want %d", k, g, ok, v, len(got), len(want))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("restored store has key %q it should not; %d keys, want %d", k, len(got), len(want))
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("job/p0"), statestore.WithRetain(10))
		if _, err := cp.Latest(ctx); !errors.Is(err, statestore.ErrNoCheckpoint) {
			t.Fatalf("Latest of an empty bucket = %v, want ErrNoCheckpoint", err)
		}
		db := openBadger(t)

		fill(t, db, 0, 20_000, "a")
		parts1 := map[string][]byte{"source/kafka/0": []byte("offset=100"), "meta": {}}
		m1, err := cp.Write(ctx, db, 1, parts1)
		must(t, err)
		want1 := contents(t, db)

		// Epoch 2: change 1% of the keys, delete a few, add a few.
		for i := 0; i < 20_000; i += 100 {
			must(t, db.Set(stateKey(i), []byte("b")))
		}
		for i := 50; i < 20_000; i += 1000 {
			must(t, db.Delete(stateKey(i)))
		}
		fill(t, db, 20_000, 20_050, "b")
		m2, err := cp.Write(ctx, db, 2, map[string][]byte{"source/kafka/0": []byte("offset=200")})
		must(t, err)
		want2 := contents(t, db)

		// Epoch 3: only deletions.
		for i := 0; i < 1000; i++ {
			must(t, db.Delete(stateKey(i)))
		}
		m3, err := cp.Write(ctx, db, 3, map[string][]byte{"source/kafka/0": []byte("offset=300")})
		must(t, err)
		want3 := contents(t, db)

		if m1.Kind != statestore.KindFull || m2.Kind != statestore.KindIncremental || m3.Kind != statestore.KindIncremental {
			t.Fatalf("kinds %s, %s, %s; want full, incremental, incremental", m1.Kind, m2.Kind, m3.Kind)
		}
		if m3.Parent == nil || m3.Parent.Epoch != 2 || m3.Parent.ID != m2.ID || len(m3.State) != 3 {
			t.Fatalf("epoch 3: parent %+v, chain of %d; want parent 2 and a chain of 3", m3.Parent, len(m3.State))
		}
		if m2.Bytes()*10 > m1.Bytes() {
			t.Fatalf("an incremental checkpoint of 1%% of the keys uploaded %d bytes, the full one %d", m2.Bytes(), m1.Bytes())
		}
		t.Logf("full %d bytes, incremental %d and %d bytes", m1.Bytes(), m2.Bytes(), m3.Bytes())

		latest, err := cp.Latest(ctx)
		must(t, err)
		if latest.Epoch != 3 || latest.ID != m3.ID {
			t.Fatalf("Latest = epoch %d, want 3", latest.Epoch)
		}
		for _, tc := range []struct {
			m     *statestore.Manifest
			want  map[string]string
			parts map[string][]byte
		}{
			{m1, want1, parts1},
			{m2, want2, map[string][]byte{"source/kafka/0": []byte("offset=200")}},
			{latest, want3, map[string][]byte{"source/kafka/0": []byte("offset=300")}},
		} {
			// A second Checkpointer, as after a restart.
			reader := statestore.NewCheckpointer(bucket, statestore.WithPrefix("job/p0/"))
			rdb, parts, err := reader.Restore(ctx, tc.m, t.TempDir())
			must(t, err)
			sameContents(t, contents(t, rdb), tc.want)
			if !maps.EqualFunc(parts, tc.parts, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatalf("epoch %d: parts %q, want %q", tc.m.Epoch, parts, tc.parts)
			}
			must(t, rdb.Close())
		}
	})
}

// TestCheckpointContinueAfterRestore: a restored store keeps extending the
// incremental chain, and its checkpoints restore to its state.
func TestCheckpointContinueAfterRestore(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		cp := statestore.NewCheckpointer(bucket)
		db := openBadger(t)
		fill(t, db, 0, 5000, "a")
		_, err := cp.Write(ctx, db, 1, nil)
		must(t, err)
		must(t, db.Close())

		cp2 := statestore.NewCheckpointer(bucket)
		m, err := cp2.Latest(ctx)
		must(t, err)
		db2, _, err := cp2.Restore(ctx, m, filepath.Join(t.TempDir(), "state"))
		must(t, err)
		defer db2.Close()
		fill(t, db2, 100, 200, "b")
		must(t, db2.Delete(stateKey(7)))
		m2, err := cp2.Write(ctx, db2, 2, nil)
		must(t, err)
		if m2.Kind != statestore.KindIncremental || m2.Parent.Epoch != 1 {
			t.Fatalf("the first checkpoint after a restore is %s (parent %+v), want incremental on epoch 1", m2.Kind, m2.Parent)
		}
		db3, _, err := cp2.Restore(ctx, m2, t.TempDir())
		must(t, err)
		defer db3.Close()
		sameContents(t, contents(t, db3), contents(t, db2))

		// A store the checkpointer has not seen starts a new chain.
		other := openBadger(t)
		m3, err := cp2.Write(ctx, other, 3, nil)
		must(t, err)
		if m3.Kind != statestore.KindFull {
			t.Fatalf("checkpoint of another store is %s, want full", m3.Kind)
		}
	})
}

// TestCheckpointDeletesSurviveCompaction: deletions made between
// checkpoints reach the incremental backup even when Badger compacts the
// tree in between.
func TestCheckpointDeletesSurviveCompaction(t *testing.T) {
	ctx := context.Background()
	bucket := openBucket(t, "mem://")
	cp := statestore.NewCheckpointer(bucket)
	db := openBadger(t, statestore.WithMemoryBudget(4<<20))
	fill(t, db, 0, 30_000, "a")
	_, err := cp.Write(ctx, db, 1, nil)
	must(t, err)
	for i := 0; i < 30_000; i += 2 {
		must(t, db.Delete(stateKey(i)))
	}
	// Push the deletions down the tree: many more writes fill and flush
	// the small memtables, and compactions run.
	for round := range 5 {
		fill(t, db, 100_000, 130_000, fmt.Sprint("c", round))
	}
	m2, err := cp.Write(ctx, db, 2, nil)
	must(t, err)
	rdb, _, err := cp.Restore(ctx, m2, t.TempDir())
	must(t, err)
	defer rdb.Close()
	sameContents(t, contents(t, rdb), contents(t, db))
}

func TestCheckpointFullEveryAndRetention(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		cp := statestore.NewCheckpointer(bucket, statestore.WithFullEvery(3), statestore.WithRetain(2))
		db := openBadger(t)
		var kinds []string
		var last *statestore.Manifest
		for e := uint64(1); e <= 8; e++ {
			fill(t, db, int(e)*10, int(e)*10+10, "x")
			m, err := cp.Write(ctx, db, e, map[string][]byte{"e": fmt.Append(nil, e)})
			must(t, err)
			kinds = append(kinds, m.Kind[:1])
			last = m
		}
		// Chains: 1 2 3 | 4 5 6 | 7 8. The newest two (7, 8) need 7 only.
		if got := strings.Join(kinds, ""); got != "fiifiifi" {
			t.Fatalf("kinds %s, want fiifiifi", got)
		}
		if got := epochsInBucket(t, bucket, ""); !slices.Equal(got, []string{"7", "8"}) {
			t.Fatalf("bucket holds epochs %v, want [7 8]", got)
		}
		// One more incremental: 7 8 9 are one chain, and 8, 9 need 7.
		fill(t, db, 1000, 1010, "y")
		m9, err := cp.Write(ctx, db, 9, nil)
		must(t, err)
		if got := epochsInBucket(t, bucket, ""); !slices.Equal(got, []string{"7", "8", "9"}) {
			t.Fatalf("bucket holds epochs %v, want [7 8 9]", got)
		}
		if m9.Parent == nil || m9.Parent.ID != last.ID {
			t.Fatalf("epoch 9 parent %+v, want epoch 8", m9.Parent)
		}
		rdb, parts, err := cp.Restore(ctx, m9, t.TempDir())
		must(t, err)
		defer rdb.Close()
		sameContents(t, contents(t, rdb), contents(t, db))
		if len(parts) != 0 {
			t.Fatalf("parts %q, want none", parts)
		}
	})
}

// epochsInBucket lists the epochs with objects under prefix, as numbers.
func epochsInBucket(t testing.TB, bucket *blob.Bucket, prefix string) []string {
	t.Helper()
	seen := map[string]bool{}
	it := bucket.List(&blob.ListOptions{Prefix: prefix + "checkpoints/"})
	for {
		obj, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		must(t, err)
		e := strings.SplitN(strings.TrimPrefix(obj.Key, prefix+"checkpoints/"), "/", 2)[0]
		seen[strings.TrimLeft(e, "0")] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestCheckpointCorrupt damages the newest checkpoint in every way the
// format guards against: Latest must fall back to the previous complete
// checkpoint and log an error, and never return the damaged one.
func TestCheckpointCorrupt(t *testing.T) {
	type damage struct {
		name string
		do   func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest)
	}
	state := func(m *statestore.Manifest) string { return m.State[len(m.State)-1].Key }
	manifest := func(m *statestore.Manifest) string { return fmt.Sprintf("checkpoints/%020d/manifest.json", m.Epoch) }
	damages := []damage{
		{"truncated object", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { truncate(t, b, p+state(m)) }},
		{"flipped byte in object", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { flip(t, b, p+state(m)) }},
		{"flipped byte in part", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { flip(t, b, p+m.Parts["pos"].Key) }},
		{"missing object", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { remove(t, b, p+state(m)) }},
		{"missing part", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) {
			remove(t, b, p+m.Parts["pos"].Key)
		}},
		{"missing manifest", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { remove(t, b, p+manifest(m)) }},
		{"truncated manifest", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { truncate(t, b, p+manifest(m)) }},
		{"flipped byte in manifest", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) { flip(t, b, p+manifest(m)) }},
		{"unparsable manifest", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) {
			must(t, b.WriteAll(context.Background(), p+manifest(m), []byte("{\"sha256\": 1"), nil))
		}},
		{"manifest written but object absent", func(t *testing.T, b *blob.Bucket, p string, m *statestore.Manifest) {
			// As if the manifest had been written before a part: it names an
			// object that was never uploaded.
			ctx := context.Background()
			data, err := b.ReadAll(ctx, p+manifest(m))
			must(t, err)
			fake := strings.ReplaceAll(string(data), "/parts/pos", "/parts/never-uploaded")
			must(t, b.WriteAll(ctx, p+manifest(m), resealManifest(t, []byte(fake)), nil))
		}},
	}
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		for i, d := range damages {
			t.Run(strings.ReplaceAll(d.name, " ", "_"), func(t *testing.T) {
				ctx := context.Background()
				prefix := fmt.Sprintf("case%d/", i)
				logs := &recordingHandler{}
				cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix(prefix), statestore.WithLogger(slog.New(logs)))
				db := openBadger(t)
				fill(t, db, 0, 2000, "a")
				m1, err := cp.Write(ctx, db, 1, map[string][]byte{"pos": []byte("1")})
				must(t, err)
				want1 := contents(t, db)
				fill(t, db, 0, 100, "b")
				m2, err := cp.Write(ctx, db, 2, map[string][]byte{"pos": []byte("2")})
				must(t, err)
				want2 := contents(t, db)

				d.do(t, bucket, prefix, m2)

				got, err := cp.Latest(ctx)
				must(t, err)
				if got.Epoch != 1 || got.ID != m1.ID {
					t.Fatalf("Latest = epoch %d, want the previous complete checkpoint 1", got.Epoch)
				}
				errs := logs.messages(slog.LevelError)
				if len(errs) != 1 || !strings.Contains(errs[0], "epoch=2") {
					t.Fatalf("logged errors %q, want one about epoch 2", errs)
				}
				t.Log(errs[0])
				// RestoreLatest falls back the same way, into one
				// directory: the damaged checkpoint's partial restore, if
				// any, is cleared first.
				dir := filepath.Join(t.TempDir(), "latest")
				rdb, parts, rm, err := cp.RestoreLatest(ctx, dir)
				must(t, err)
				if rm.Epoch != 1 || rm.ID != m1.ID {
					t.Fatalf("RestoreLatest restored epoch %d, want the previous complete checkpoint 1", rm.Epoch)
				}
				sameContents(t, contents(t, rdb), want1)
				if string(parts["pos"]) != "1" {
					t.Fatalf("RestoreLatest parts %q, want pos=1", parts)
				}
				must(t, rdb.Close())
				if errs := logs.messages(slog.LevelError); len(errs) != 2 || !strings.Contains(errs[1], "epoch=2") {
					t.Fatalf("logged errors %q, want a second one about epoch 2", errs)
				}
				if _, _, err := cp.Restore(ctx, m2, t.TempDir()); err == nil && !strings.Contains(d.name, "manifest") {
					t.Fatalf("Restore of the damaged checkpoint succeeded")
				}
				rdb, parts, err = cp.Restore(ctx, got, t.TempDir())
				must(t, err)
				sameContents(t, contents(t, rdb), want1)
				if string(parts["pos"]) != "1" {
					t.Fatalf("parts %q, want pos=1", parts)
				}
				must(t, rdb.Close())

				// Continuing from the fallback supersedes the damaged epoch.
				m2b, err := cp.Write(ctx, db, 2, map[string][]byte{"pos": []byte("2b")})
				must(t, err)
				got, err = cp.Latest(ctx)
				must(t, err)
				if got.ID != m2b.ID {
					t.Fatalf("after rewriting epoch 2, Latest = %d/%s, want the rewrite", got.Epoch, got.ID)
				}
				rdb, _, err = cp.Restore(ctx, got, t.TempDir())
				must(t, err)
				sameContents(t, contents(t, rdb), want2)
				must(t, rdb.Close())
			})
		}
	})
}

func TestCheckpointCorruptBase(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		logs := &recordingHandler{}
		cp := statestore.NewCheckpointer(bucket, statestore.WithLogger(slog.New(logs)))
		db := openBadger(t)
		fill(t, db, 0, 1000, "a")
		m1, err := cp.Write(ctx, db, 1, nil)
		must(t, err)
		fill(t, db, 0, 10, "b")
		_, err = cp.Write(ctx, db, 2, nil)
		must(t, err)
		// Damage the full backup both checkpoints depend on.
		flip(t, bucket, m1.State[0].Key)
		if m, err := cp.Latest(ctx); !errors.Is(err, statestore.ErrNoCheckpoint) {
			t.Fatalf("Latest = %v, %v; want ErrNoCheckpoint", m, err)
		}
		if n := logs.count(slog.LevelError); n != 2 {
			t.Fatalf("%d errors logged, want 2 (one per skipped checkpoint)", n)
		}
		dir := t.TempDir()
		if _, _, err := cp.Restore(ctx, m1, dir); err == nil {
			t.Fatal("Restore of a damaged checkpoint succeeded")
		}
		if entries, _ := filepath.Glob(filepath.Join(dir, "*")); len(entries) != 0 {
			t.Fatalf("a failed Restore left %v", entries)
		}
	})
}

func TestRestoreRefusesNonEmptyDir(t *testing.T) {
	ctx := context.Background()
	bucket := openBucket(t, "mem://")
	cp := statestore.NewCheckpointer(bucket)
	db := openBadger(t)
	m, err := cp.Write(ctx, db, 1, nil)
	must(t, err)
	if _, _, err := cp.Restore(ctx, m, db.Dir()); err == nil {
		t.Fatal("Restore into a store's directory succeeded")
	}
	if _, err := cp.Write(ctx, db, 2, map[string][]byte{"": nil}); err == nil {
		t.Fatal("Write accepted an empty part name")
	}
}

func truncate(t *testing.T, b *blob.Bucket, key string) {
	ctx := context.Background()
	data, err := b.ReadAll(ctx, key)
	must(t, err)
	must(t, b.WriteAll(ctx, key, data[:len(data)/2], nil))
}

func flip(t *testing.T, b *blob.Bucket, key string) {
	ctx := context.Background()
	data, err := b.ReadAll(ctx, key)
	must(t, err)
	if len(data) == 0 {
		t.Fatalf("%s is empty", key)
	}
	data[len(data)/2] ^= 0x01
	must(t, b.WriteAll(ctx, key, data, nil))
}

func remove(t *testing.T, b *blob.Bucket, key string) { must(t, b.Delete(context.Background(), key)) }

// resealManifest recomputes the checksum of an edited manifest file, as a
// writer would have, so that only the edit is wrong.
func resealManifest(t *testing.T, file []byte) []byte {
	t.Helper()
	s := string(file)
	start := strings.Index(s, "\"manifest\": ") + len("\"manifest\": ")
	body := strings.TrimSuffix(s[start:], "\n}\n")
	sum := sha256.Sum256([]byte(body))
	return fmt.Appendf(nil, "{\n  \"sha256\": %q,\n  \"manifest\": %s\n}\n", hex.EncodeToString(sum[:]), body)
}

// TestCheckpointPrepareCommit: writes after Prepare are not in the
// checkpoint; an aborted checkpoint breaks the chain.
func TestCheckpointPrepareCommit(t *testing.T) {
	ctx := context.Background()
	bucket := openBucket(t, "mem://")
	cp := statestore.NewCheckpointer(bucket, statestore.WithSpoolDir(t.TempDir()))
	db := openBadger(t)
	fill(t, db, 0, 100, "a")
	p, err := cp.Prepare(db, 1)
	must(t, err)
	defer p.Abort()
	want := contents(t, db)
	if _, err := cp.Prepare(db, 2); err == nil {
		t.Fatal("a second Prepare while one is pending succeeded")
	}
	fill(t, db, 0, 100, "after") // the pipeline goes on during the upload
	must(t, db.Delete(stateKey(3)))
	m, err := p.Commit(ctx, nil)
	must(t, err)
	if _, err := p.Commit(ctx, nil); err == nil {
		t.Fatal("a second Commit succeeded")
	}
	rdb, _, err := cp.Restore(ctx, m, t.TempDir())
	must(t, err)
	sameContents(t, contents(t, rdb), want)
	must(t, rdb.Close())

	p2, err := cp.Prepare(db, 2)
	must(t, err)
	if p2.Kind() != statestore.KindIncremental {
		t.Fatalf("second checkpoint is %s, want incremental", p2.Kind())
	}
	p2.Abort()
	p3, err := cp.Prepare(db, 2)
	must(t, err)
	if p3.Kind() != statestore.KindFull {
		t.Fatalf("the checkpoint after an aborted one is %s, want full", p3.Kind())
	}
	m3, err := p3.Commit(ctx, nil)
	must(t, err)
	rdb, _, err = cp.Restore(ctx, m3, t.TempDir())
	must(t, err)
	defer rdb.Close()
	sameContents(t, contents(t, rdb), contents(t, db))
}

// TestNoGoroutineLeak: stores, checkpoints and restores leave no goroutine
// behind once closed.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		ctx := context.Background()
		bucket, err := blob.OpenBucket(ctx, "file://"+filepath.ToSlash(t.TempDir()))
		must(t, err)
		defer bucket.Close()
		db, err := statestore.OpenBadger(t.TempDir())
		must(t, err)
		defer db.Close()
		fill(t, db, 0, 1000, "a")
		cp := statestore.NewCheckpointer(bucket)
		m, err := cp.Write(ctx, db, 1, map[string][]byte{"p": []byte("x")})
		must(t, err)
		ctxCancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := cp.Write(ctxCancelled, db, 2, nil); err == nil {
			t.Error("Write with a cancelled context succeeded")
		}
		rdb, _, err := cp.Restore(ctx, m, t.TempDir())
		must(t, err)
		must(t, rdb.Close())
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestCheckpointNewerFormat: a checkpoint whose manifest says a newer
// format (as a later build would write) is neither restored nor skipped
// as damaged: Latest and Write fail with ErrNewerFormat and leave it in
// place, so that an older build started on the bucket does not supersede
// or retire the newer build's checkpoints.
func TestCheckpointNewerFormat(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		cp := statestore.NewCheckpointer(bucket, statestore.WithPrefix("newer/"))
		db := openBadger(t)
		fill(t, db, 0, 200, "a")
		_, err := cp.Write(ctx, db, 1, map[string][]byte{"pos": []byte("1")})
		must(t, err)
		m2, err := cp.Write(ctx, db, 2, map[string][]byte{"pos": []byte("2")})
		must(t, err)
		key := fmt.Sprintf("newer/checkpoints/%020d/manifest.json", m2.Epoch)
		data, err := bucket.ReadAll(ctx, key)
		must(t, err)
		newer := strings.Replace(string(data), `"format": 1`, `"format": 2`, 1)
		if newer == string(data) {
			t.Fatalf("no format field in %s", data)
		}
		newer = string(resealManifest(t, []byte(newer)))
		must(t, bucket.WriteAll(ctx, key, []byte(newer), nil))

		old := statestore.NewCheckpointer(bucket, statestore.WithPrefix("newer/"))
		if _, err := old.Latest(ctx); !errors.Is(err, statestore.ErrNewerFormat) || !strings.Contains(err.Error(), "format version 2, this build reads 1") {
			t.Fatalf("Latest: %v, want ErrNewerFormat", err)
		}
		if _, err := old.Write(ctx, db, 2, map[string][]byte{"pos": []byte("2b")}); !errors.Is(err, statestore.ErrNewerFormat) {
			t.Fatalf("Write over it: %v, want ErrNewerFormat", err)
		}
		after, err := bucket.ReadAll(ctx, key)
		must(t, err)
		if string(after) != newer {
			t.Fatal("the newer checkpoint's manifest was replaced or deleted")
		}
	})
}
