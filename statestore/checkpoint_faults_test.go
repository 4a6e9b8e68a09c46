package statestore_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	"github.com/volga-go/volga/statestore"
)

// faultyBucket is a bucket driver over another bucket whose writes can be
// made to fail or to lose bytes: a write of a key for which fail returns
// true fails (at Close, after its bytes were sent); one for which
// truncate returns true keeps only the first half of its bytes and
// reports success, as a store that lost the end of an upload would.
type faultyBucket struct {
	b *blob.Bucket

	mu       sync.Mutex
	fail     func(key string) bool
	truncate func(key string) bool
	writes   []string // keys written, in order, failed ones included
	reads    []string // keys opened for reading, in order
}

func newFaultyBucket(b *blob.Bucket) (*faultyBucket, *blob.Bucket) {
	f := &faultyBucket{b: b}
	return f, blob.NewBucket(f)
}

func (f *faultyBucket) set(fail, truncate func(key string) bool) {
	f.mu.Lock()
	f.fail, f.truncate = fail, truncate
	f.mu.Unlock()
}

var errInjected = errors.New("injected write failure")

func (f *faultyBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	f.mu.Lock()
	f.writes = append(f.writes, key)
	fail := f.fail != nil && f.fail(key)
	trunc := f.truncate != nil && f.truncate(key)
	f.mu.Unlock()
	if fail {
		return &faultyWriter{fail: true}, nil
	}
	w, err := f.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist})
	if err != nil {
		return nil, err
	}
	return &faultyWriter{w: w, trunc: trunc}, nil
}

type faultyWriter struct {
	w     *blob.Writer
	fail  bool
	trunc bool
	buf   []byte
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	if w.trunc || w.fail {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	return w.w.Write(p)
}

func (w *faultyWriter) Close() error {
	if w.fail {
		return errInjected
	}
	if w.trunc {
		if _, err := w.w.Write(w.buf[:len(w.buf)/2]); err != nil {
			_ = w.w.Close()
			return err
		}
	}
	return w.w.Close()
}

func (f *faultyBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token, size := opts.PageToken, max(opts.PageSize, 1000)
	if token == nil {
		token = blob.FirstPageToken
	}
	objs, next, err := f.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	if len(next) == 0 {
		page.NextPageToken = nil
	}
	return page, nil
}

func (f *faultyBucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	return f.b.Delete(ctx, key)
}

func (f *faultyBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	f.mu.Lock()
	f.reads = append(f.reads, key)
	f.mu.Unlock()
	r, err := f.b.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return faultyReader{r}, nil
}

type faultyReader struct{ *blob.Reader }

func (r faultyReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.ContentType(), ModTime: r.ModTime(), Size: r.Size()}
}
func (r faultyReader) As(any) bool { return false }

var _ io.Reader = faultyReader{}

func (f *faultyBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := f.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (f *faultyBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (f *faultyBucket) As(any) bool                            { return false }
func (f *faultyBucket) ErrorAs(error, any) bool                { return false }
func (f *faultyBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return f.b.Copy(ctx, dst, src, nil)
}
func (f *faultyBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.ErrUnsupported
}
func (f *faultyBucket) Close() error { return nil }

// hasSuffix returns a key predicate matching keys ending in suffix.
func hasSuffix(suffix string) func(string) bool {
	return func(key string) bool { return strings.HasSuffix(key, suffix) }
}

// TestCheckpointShortUploadFails: an object the bucket kept only part of,
// although the upload reported success, fails the checkpoint before its
// manifest is written. Before, the commit succeeded and retention (one
// checkpoint kept, every one full) deleted the last complete checkpoint:
// Latest then found none, and a restarted run would have begun from
// nothing after its sink had published the epoch.
func TestCheckpointShortUploadFails(t *testing.T) {
	for _, victim := range []string{"/state.backup", "/parts/pos", "/manifest.json"} {
		t.Run(strings.Trim(victim, "/"), func(t *testing.T) {
			forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
				ctx := context.Background()
				fb, b := newFaultyBucket(bucket)
				cp := statestore.NewCheckpointer(b, statestore.WithPrefix("p1"), statestore.WithRetain(1),
					statestore.WithFullEvery(1), statestore.WithSpoolDir(t.TempDir()))
				db := openBadger(t)
				fill(t, db, 0, 2000, "a")
				m1, err := cp.Write(ctx, db, 1, map[string][]byte{"pos": []byte("position 1")})
				must(t, err)
				want1 := contents(t, db)

				fill(t, db, 0, 100, "b")
				fb.set(nil, hasSuffix(victim))
				if m, err := cp.Write(ctx, db, 2, map[string][]byte{"pos": []byte("position 2")}); err == nil {
					t.Fatalf("a checkpoint whose %s the bucket truncated was committed: %+v", victim, m.State)
				}
				fb.set(nil, nil)

				reader := statestore.NewCheckpointer(bucket, statestore.WithPrefix("p1"))
				m, err := reader.Latest(ctx)
				must(t, err)
				if m.Epoch != 1 || m.ID != m1.ID {
					t.Fatalf("Latest = epoch %d (%s), want epoch 1 (%s)", m.Epoch, m.ID, m1.ID)
				}
				rdb, parts, err := reader.Restore(ctx, m, t.TempDir())
				must(t, err)
				sameContents(t, contents(t, rdb), want1)
				must(t, rdb.Close())
				if string(parts["pos"]) != "position 1" {
					t.Fatalf("restored part pos = %q, want %q", parts["pos"], "position 1")
				}

				// The run goes on: the next checkpoint is complete.
				fill(t, db, 50, 150, "c")
				m3, err := cp.Write(ctx, db, 3, map[string][]byte{"pos": []byte("position 3")})
				must(t, err)
				want3 := contents(t, db)
				m, err = statestore.NewCheckpointer(bucket, statestore.WithPrefix("p1")).Latest(ctx)
				must(t, err)
				if m.Epoch != 3 || m.ID != m3.ID {
					t.Fatalf("Latest = epoch %d, want 3", m.Epoch)
				}
				rdb, _, err = reader.Restore(ctx, m, t.TempDir())
				must(t, err)
				sameContents(t, contents(t, rdb), want3)
				must(t, rdb.Close())
			})
		})
	}
}

// TestRestoreLatestReadsOnce: RestoreLatest reads each object of the
// newest checkpoint (an incremental chain's backups and the parts) once, where Latest then Restore read every object twice,
// and restores what Latest then Restore would; a prefix with no
// checkpoint gives ErrNoCheckpoint.
func TestRestoreLatestReadsOnce(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket) {
		ctx := context.Background()
		fb, b := newFaultyBucket(bucket)
		cp := statestore.NewCheckpointer(b, statestore.WithPrefix("p"), statestore.WithSpoolDir(t.TempDir()))
		db := openBadger(t)
		fill(t, db, 0, 1000, "a")
		_, err := cp.Write(ctx, db, 1, map[string][]byte{"pos": []byte("1")})
		must(t, err)
		fill(t, db, 500, 1500, "b")
		m2, err := cp.Write(ctx, db, 2, map[string][]byte{"pos": []byte("2"), "op": []byte("x")})
		must(t, err)
		want := contents(t, db)
		if len(m2.State) != 2 {
			t.Fatalf("epoch 2 has a chain of %d backups, want 2 (full, incremental)", len(m2.State))
		}

		reader := statestore.NewCheckpointer(b, statestore.WithPrefix("p"))
		fb.mu.Lock()
		fb.reads = nil
		fb.mu.Unlock()
		rdb, parts, m, err := reader.RestoreLatest(ctx, filepath.Join(t.TempDir(), "state"))
		must(t, err)
		defer rdb.Close()
		if m.Epoch != 2 || m.ID != m2.ID {
			t.Fatalf("RestoreLatest restored epoch %d, want 2", m.Epoch)
		}
		sameContents(t, contents(t, rdb), want)
		if string(parts["pos"]) != "2" || string(parts["op"]) != "x" {
			t.Fatalf("parts %q", parts)
		}
		fb.mu.Lock()
		reads := slices.Clone(fb.reads)
		fb.mu.Unlock()
		seen := map[string]int{}
		for _, k := range reads {
			seen[k]++
		}
		objects := []string{m2.State[0].Key, m2.State[1].Key, m2.Parts["pos"].Key, m2.Parts["op"].Key}
		for _, o := range objects {
			if seen["p/"+o] != 1 {
				t.Errorf("object %s read %d times, want once (reads %q)", o, seen["p/"+o], reads)
			}
		}
		for k, n := range seen {
			// Manifests, small, are read by the first look at the
			// bucket too.
			if n != 1 && !strings.HasSuffix(k, "/manifest.json") {
				t.Errorf("%s read %d times", k, n)
			}
		}

		empty := statestore.NewCheckpointer(bucket, statestore.WithPrefix("none"))
		if _, _, _, err := empty.RestoreLatest(ctx, t.TempDir()); !errors.Is(err, statestore.ErrNoCheckpoint) {
			t.Fatalf("RestoreLatest of an empty prefix: %v, want ErrNoCheckpoint", err)
		}
	})
}
