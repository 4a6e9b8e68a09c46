package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// WithFS makes a file source read its paths from fsys instead of the
// operating system's files: NewCSV, NewJSONL, NewCSVFiles, NewJSONLFiles,
// NewParquetFiles and Open, with everything they do for local paths
// (directories, glob patterns, gzip and zstd text, positions for Seek).
// Paths are then fs.FS names: slash-separated, without a leading slash
// ("events/2024-*.parquet").
//
// A *blob.Bucket (gocloud.dev/blob) is an fs.FS, which is how inputs are
// read from object storage (see OpenURL): text is read as one stream per
// file, and Parquet with one ranged read per column chunk. With another
// fs.FS, Parquet files must open as an io.ReaderAt or an io.Seeker
// (os.DirFS, embed.FS and fstest.MapFS files do), and text files must be
// io.Seekers for Seek to restore positions in them.
func WithFS(fsys fs.FS) Option {
	return func(o *options) { o.fsys = fsys }
}

// fileSystem is where a source opens its paths: the operating system's
// files when fsys is nil, else fsys.
type fileSystem struct{ fsys fs.FS }

func (o options) files() fileSystem { return fileSystem{o.fsys} }

// open opens the file name for reading.
func (f fileSystem) open(name string) (fs.File, error) {
	if f.fsys == nil {
		return os.Open(name)
	}
	file, err := f.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := file.Stat(); err == nil && fi.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	return file, nil
}

func (f fileSystem) stat(name string) (fs.FileInfo, error) {
	if f.fsys == nil {
		return os.Stat(name)
	}
	return fs.Stat(f.fsys, name)
}

func (f fileSystem) readDir(name string) ([]fs.DirEntry, error) {
	if f.fsys == nil {
		return os.ReadDir(name)
	}
	return fs.ReadDir(f.fsys, name)
}

func (f fileSystem) glob(pattern string) ([]string, error) {
	if f.fsys == nil {
		return filepath.Glob(pattern)
	}
	return fs.Glob(f.fsys, pattern)
}

func (f fileSystem) join(dir, name string) string {
	if f.fsys == nil {
		return filepath.Join(dir, name)
	}
	return path.Join(dir, name)
}

// remote reports whether each read of a file is a request to object
// storage (a bucket), so that reads should be few and large.
func (f fileSystem) remote() bool {
	_, ok := f.fsys.(*blob.Bucket)
	return ok
}

// isFile reports whether fi is a file a source can read: a regular file
// of the operating system, any file that is not a directory in an fs.FS
// (objects in a bucket are not "regular").
func (f fileSystem) isFile(fi fs.FileInfo) bool {
	if f.fsys == nil {
		return fi.Mode().IsRegular()
	}
	return !fi.IsDir()
}

// isFileEntry reports whether e, an entry of directory dir, is a file a
// source can read (the target of a symbolic link, for the operating
// system's files).
func (f fileSystem) isFileEntry(dir string, e fs.DirEntry) bool {
	if f.fsys == nil {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && fi.Mode().IsRegular()
	}
	return !e.IsDir()
}

// filesOf returns the names, of those a glob matched, that are files a
// source can read; in an fs.FS it lists each directory once rather than
// asking about each name (one request per object in a bucket).
func (f fileSystem) filesOf(names []string) []string {
	var out []string
	if f.fsys == nil {
		for _, n := range names {
			if fi, err := os.Stat(n); err == nil && fi.Mode().IsRegular() {
				out = append(out, n)
			}
		}
		return out
	}
	dirs := map[string]map[string]bool{} // directory → name → is a directory
	for _, n := range names {
		dir, base := path.Split(n)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		isDir, ok := dirs[dir]
		if !ok {
			isDir = map[string]bool{}
			ents, _ := fs.ReadDir(f.fsys, dir)
			for _, e := range ents {
				isDir[e.Name()] = e.IsDir()
			}
			dirs[dir] = isDir
		}
		if d, ok := isDir[base]; ok && !d {
			out = append(out, n)
		}
	}
	return out
}

// randomFile is what a Parquet reader needs of a file.
type randomFile interface {
	io.ReaderAt
	io.Seeker
	io.Closer
}

// openRandom opens the file name for random access: an os.File; in a
// bucket, ranged reads of the object (without the stream of the whole
// object fs.FS's Open starts); in another fs.FS, the file itself when it
// is an io.ReaderAt and io.Seeker, else reads serialised through its Seek.
func (f fileSystem) openRandom(name string) (randomFile, error) {
	if f.fsys == nil {
		return os.Open(name)
	}
	if b, ok := f.fsys.(*blob.Bucket); ok {
		if !fs.ValidPath(name) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
		}
		a, err := b.Attributes(context.Background(), name)
		if err != nil {
			if gcerrors.Code(err) == gcerrors.NotFound {
				err = fs.ErrNotExist
			}
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &objectReader{b: b, key: name, size: a.Size}, nil
	}
	file, err := f.open(name)
	if err != nil {
		return nil, err
	}
	if r, ok := file.(randomFile); ok {
		return r, nil
	}
	s, ok := file.(io.ReadSeeker)
	if !ok {
		file.Close()
		return nil, fmt.Errorf("%s: the file system's files are neither io.ReaderAt nor io.Seeker, one of which Parquet needs", name)
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	return &seekReader{f: file, r: s, size: fi.Size()}, nil
}

// objectReadHook, when set by a test, is called with the size of each
// ranged read of an object.
var objectReadHook func(n int64)

// objectReader reads an object of a bucket at any offset, each ReadAt
// with one ranged read; it is safe for concurrent use.
type objectReader struct {
	b    *blob.Bucket
	key  string
	size int64
	mu   sync.Mutex
	off  int64 // Seek's offset
}

func (o *objectReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: o.key, Err: fs.ErrInvalid}
	}
	if off >= o.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), o.size-off)
	if objectReadHook != nil {
		objectReadHook(n)
	}
	r, err := o.b.NewRangeReader(context.Background(), o.key, off, n, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	got, err := io.ReadFull(r, p[:n])
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = fmt.Errorf("%s: the object is shorter than the %d bytes it had when opened", o.key, o.size)
		}
		return got, err
	}
	if got < len(p) {
		return got, io.EOF
	}
	return got, nil
}

func (o *objectReader) Seek(offset int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return seekOffset(&o.off, o.size, offset, whence)
}

func (o *objectReader) Close() error { return nil }

// seekReader gives random access to a file that can only Seek, one read
// at a time.
type seekReader struct {
	f    fs.File
	mu   sync.Mutex
	r    io.ReadSeeker
	size int64
	off  int64 // Seek's offset, apart from r's
}

func (s *seekReader) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.r.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(s.r, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}

func (s *seekReader) Seek(offset int64, whence int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seekOffset(&s.off, s.size, offset, whence)
}

func (s *seekReader) Close() error { return s.f.Close() }

// seekOffset moves *off as io.Seeker's Seek does within size bytes.
func seekOffset(off *int64, size, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += *off
	case io.SeekEnd:
		offset += size
	default:
		return 0, errors.New("source: invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("source: negative position")
	}
	*off = offset
	return offset, nil
}

// OpenURL opens the input at rawURL, as Open does a path: a bucket URL of
// gocloud.dev/blob whose path names an object, a "directory" (a prefix
// ending in "/") or a glob pattern of objects, such as
//
//	s3://my-bucket/events/2024-*.parquet?region=eu-west-1
//
// The bucket's driver must be linked in by the program (blank-import
// gocloud.dev/blob/s3blob for s3://, gcsblob for gs://, azureblob for
// azblob://); its query parameters are the driver's. A "?" of a glob
// pattern must be written %3F, as it would start the query. The source
// reads the objects through WithFS (see it for how) and closes the bucket
// when it is closed. A string without "://" is a local path (Open), and
// so is a file:// URL.
func OpenURL(ctx context.Context, rawURL string, opts ...Option) (Source, error) {
	if !strings.Contains(rawURL, "://") {
		return Open(rawURL, opts...)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("source: %s: a file URL names a local path (file:///path), not host %q", rawURL, u.Host)
		}
		return Open(filepath.FromSlash(u.Path), opts...)
	}
	key := strings.TrimSuffix(strings.TrimPrefix(u.Path, "/"), "/")
	base := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}).String()
	name := base + key
	if key == "" {
		return nil, fmt.Errorf("source: %s names a bucket but no object, prefix or pattern in it", base)
	}
	b, err := blob.OpenBucket(ctx, (&url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}).String())
	if err != nil {
		return nil, fmt.Errorf("source: %s: %w", name, err)
	}
	src, err := Open(key, append(append([]Option(nil), opts...), WithFS(b), func(o *options) { o.nameBase = base })...)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("%w (in bucket %s)", err, base)
	}
	switch s := src.(type) {
	case *Parquet:
		s.bucket = b
	case *TextFiles:
		s.bucket = b
	case interface{ text() *textSource }:
		tx := s.text()
		tx.file = closers{tx.file, b}
	default:
		src.Close()
		b.Close()
		return nil, fmt.Errorf("source: %s: cannot hand the bucket to a %T", name, src)
	}
	return src, nil
}

// closers closes each of its closers, returning the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
