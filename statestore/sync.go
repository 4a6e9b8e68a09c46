package statestore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"gocloud.dev/blob"
)

// SyncDir returns the local directory of a file:// bucket URL, as
// gocloud.dev/blob/fileblob reads it (file:///var/lib/volga/ckpt is
// /var/lib/volga/ckpt, file://./ckpt is ckpt under the working
// directory), and false for other schemes. Pass it to WithSyncDir.
func SyncDir(bucketURL string) (string, bool) {
	u, err := url.Parse(bucketURL)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	path := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		path = strings.TrimPrefix(path, "/")
	}
	if path == "" {
		return "", false
	}
	return filepath.FromSlash(path), true
}

// OpenBucket opens the bucket at bucketURL with blob.OpenBucket and
// returns the checkpoint options it needs: WithSyncDir for a file://
// bucket, so that checkpoints written to a local disk survive a power
// loss; none for other schemes.
func OpenBucket(ctx context.Context, bucketURL string) (*blob.Bucket, []CheckpointOption, error) {
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, nil, err
	}
	var opts []CheckpointOption
	if dir, ok := SyncDir(bucketURL); ok {
		opts = append(opts, WithSyncDir(dir))
	}
	return b, opts, nil
}

// syncObject flushes the object at key of the bucket in directory root
// to disk: its file, fileblob's attributes file beside it when there is
// one, and every directory from the file's up to root, whose entries a
// new object or directory changed.
func syncObject(root, key string) error {
	root = filepath.Clean(root)
	path := filepath.Join(root, filepath.FromSlash(key))
	if err := syncPath(path); err != nil {
		return err
	}
	if err := syncPath(path + ".attrs"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if err := syncPath(dir); err != nil {
			return err
		}
		if dir == root || filepath.Dir(dir) == dir || !strings.HasPrefix(dir, root) {
			return nil
		}
	}
}

// syncPath fsyncs the file or directory at path (a variable for tests
// that record the calls). A file system that cannot sync a directory
// (EINVAL) is not an error.
var syncPath = fsyncPath

func fsyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
