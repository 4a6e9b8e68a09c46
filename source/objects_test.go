package source_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"gocloud.dev/blob"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// inputTree writes a directory of inputs of every format (CSV files with a
// row that does not decode, a gzip copy, JSON lines, Parquet files of
// several row groups) and returns it and the names of the inputs to read,
// relative to it: single files, directories and glob patterns.
func inputTree(t *testing.T, r *rand.Rand) (string, []string) {
	t.Helper()
	root := t.TempDir()
	move := func(c textFilesCase, dir string) {
		if err := os.Rename(c.dir, filepath.Join(root, dir)); err != nil {
			t.Fatal(err)
		}
	}
	move(writeTextFiles(t, r, "csv", 0), "csv")
	move(writeTextFiles(t, r, "jsonl", 0), "jsonl")
	if err := os.Mkdir(filepath.Join(root, "gz"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"part-00.csv", "part-01.csv"} {
		raw, err := os.ReadFile(filepath.Join(root, "csv", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(raw)
		z.Close()
		if err := os.WriteFile(filepath.Join(root, "gz", name+".gz"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "pq"), 0o755); err != nil {
		t.Fatal(err)
	}
	first := 0
	for i := range 3 {
		n := 1 + r.IntN(40)
		writeParquet(t, filepath.Join(root, "pq", fmt.Sprintf("p-%d.parquet", i)), first, n)
		first += n
	}
	return root, []string{
		"csv/part-00.csv", "csv", "csv/part-*.csv",
		"gz/part-00.csv.gz", "gz",
		"jsonl/part-00.jsonl", "jsonl/*.jsonl",
		"pq/p-1.parquet", "pq", "pq/p-*.parquet",
	}
}

// upload copies the files under root into bucket, under prefix.
func upload(t *testing.T, b *blob.Bucket, root, prefix string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return b.WriteAll(context.Background(), prefix+filepath.ToSlash(rel), raw, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readMarked drains src, returning its rows and, after each batch, its
// position and how many rows came before it.
func readMarked(t *testing.T, src source.Source) (rows [][]any, marks []mark) {
	t.Helper()
	seeker := src.(source.Seeker)
	pos, err := seeker.Position()
	if err != nil {
		t.Fatal(err)
	}
	marks = append(marks, mark{pos, 0})
	for {
		rows1, _, eof := readBatch(t, src)
		if eof {
			return rows, marks
		}
		rows = append(rows, rows1...)
		pos, err := seeker.Position()
		if err != nil {
			t.Fatal(err)
		}
		marks = append(marks, mark{pos, len(rows)})
	}
}

// mark is a source's position and the number of rows read before it.
type mark struct {
	pos  []byte
	read int
}

func readBatch(t *testing.T, src source.Source) ([][]any, int64, bool) {
	t.Helper()
	rec, err := src.Read(context.Background())
	if errors.Is(err, io.EOF) {
		return nil, 0, true
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	return sink.Rows(rec), rec.NumRows(), false
}

// TestOpenURLS3: inputs in S3 (a fake S3 server over HTTP, read through
// s3blob) read as OpenURL exactly as the same files do from local disk
// with Open: the same schema, rows and dead letters (named after the
// object's URL), for single files, gzip text, prefixes ("directories")
// and glob patterns; and reading resumes at every position Position gave.
func TestOpenURLS3(t *testing.T) {
	srv := testutil.S3Server(t, "inputs")
	bucketURL := testutil.S3URL(srv, "inputs")
	b, err := blob.OpenBucket(context.Background(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	query := bucketURL[strings.Index(bucketURL, "?"):]
	r := rand.New(rand.NewPCG(11, 3))
	root, inputs := inputTree(t, r)
	upload(t, b, root, "data/")
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			var localDead, urlDead []source.DeadLetter
			opts := func(dl *[]source.DeadLetter) []source.Option {
				return []source.Option{source.WithBatchSize(3), source.WithSampleRows(1), collectDead(dl)}
			}
			local, err := source.Open(filepath.Join(root, filepath.FromSlash(in)), opts(&localDead)...)
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			want, _ := readMarked(t, local)
			rawURL := "s3://inputs/data/" + in + query
			if !strings.Contains(in, ".") {
				rawURL = "s3://inputs/data/" + in + "/" + query // a prefix, written as a directory
			}
			src, err := source.OpenURL(context.Background(), rawURL, opts(&urlDead)...)
			if err != nil {
				t.Fatal(err)
			}
			if !src.Schema().Equal(local.Schema()) {
				t.Fatalf("schema %s, from local files %s", src.Schema(), local.Schema())
			}
			got, marks := readMarked(t, src)
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("no rows read from %s: the test reads nothing", in)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("rows\n%v\nwant, from local files,\n%v", got, want)
			}
			if len(urlDead) != len(localDead) {
				t.Fatalf("%d dead letters, from local files %d", len(urlDead), len(localDead))
			}
			for i, d := range urlDead {
				l := localDead[i]
				rel, _ := filepath.Rel(root, l.Source)
				if wantSrc := "s3://inputs/data/" + filepath.ToSlash(rel); d.Source != wantSrc || d.Offset != l.Offset || d.Reason != l.Reason {
					t.Errorf("dead letter %d: %s:%d %q, want %s:%d %q", i, d.Source, d.Offset, d.Reason, wantSrc, l.Offset, l.Reason)
				}
			}
			for _, m := range marks {
				again, err := source.OpenURL(context.Background(), rawURL, opts(new([]source.DeadLetter))...)
				if err != nil {
					t.Fatal(err)
				}
				if err := again.(source.Seeker).Seek(m.pos); err != nil {
					t.Fatalf("Seek after %d rows: %v", m.read, err)
				}
				rest, _ := readMarked(t, again)
				again.Close()
				if len(rest)+m.read != len(want) || (len(rest) > 0 && !reflect.DeepEqual(rest, want[m.read:])) {
					t.Fatalf("resumed after %d rows: %v, want %v", m.read, rest, want[m.read:])
				}
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct{ url, want string }{
			{"s3://inputs/data/none.csv" + query, "not exist"},
			{"s3://inputs/data/nothing-*.csv" + query, "no file matches"},
			{"s3://inputs/" + query, "names a bucket but no object"},
			{"nosuch://inputs/data/x.csv", `no driver registered for "nosuch"`},
			{"file://elsewhere/x.csv", "names a local path"},
		} {
			src, err := source.OpenURL(context.Background(), c.url)
			if err == nil {
				src.Close()
				t.Errorf("%s: opened", c.url)
				continue
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %q, want it to say %q", c.url, err, c.want)
			}
		}
	})
}

// TestWithFS: any fs.FS serves as the source's files: Parquet from files
// that are io.ReaderAt (fstest.MapFS) and from files that can only Seek,
// text files with Seek restoring positions, all as from local disk.
func TestWithFS(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	root, inputs := inputTree(t, r)
	mapFS := fstest.MapFS{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		mapFS[filepath.ToSlash(rel)] = &fstest.MapFile{Data: raw}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, fsys := range map[string]fs.FS{"readerat": mapFS, "seeker": seekOnlyFS{mapFS}} {
		for _, in := range inputs {
			t.Run(name+"/"+in, func(t *testing.T) {
				local, err := source.Open(filepath.Join(root, filepath.FromSlash(in)), source.WithBatchSize(4), source.WithSampleRows(1))
				if err != nil {
					t.Fatal(err)
				}
				defer local.Close()
				want, _ := readMarked(t, local)
				opts := []source.Option{source.WithBatchSize(4), source.WithSampleRows(1), source.WithFS(fsys)}
				src, err := source.Open(in, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				got, marks := readMarked(t, src)
				if !reflect.DeepEqual(got, want) || len(want) == 0 {
					t.Fatalf("rows\n%v\nwant, from local files,\n%v", got, want)
				}
				m := marks[len(marks)/2]
				again, err := source.Open(in, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer again.Close()
				if err := again.(source.Seeker).Seek(m.pos); err != nil {
					t.Fatal(err)
				}
				if rest, _ := readMarked(t, again); len(rest)+m.read != len(want) || (len(rest) > 0 && !reflect.DeepEqual(rest, want[m.read:])) {
					t.Fatalf("resumed after %d rows: %v, want %v", m.read, rest, want[m.read:])
				}
			})
		}
	}
}

// seekOnlyFS hides its files' ReadAt: they can Read and Seek only.
type seekOnlyFS struct{ fs.FS }

type seekOnlyFile struct {
	f fs.File
}

func (s seekOnlyFile) Read(p []byte) (int, error)         { return s.f.Read(p) }
func (s seekOnlyFile) Stat() (fs.FileInfo, error)         { return s.f.Stat() }
func (s seekOnlyFile) Close() error                       { return s.f.Close() }
func (s seekOnlyFile) Seek(o int64, w int) (int64, error) { return s.f.(io.Seeker).Seek(o, w) }

func (s seekOnlyFS) Open(name string) (fs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return f, nil
	}
	return seekOnlyFile{f}, nil
}

// TestMissingFileFailsTheOpen: a file named in a list that does not exist
// fails the open, naming it, for the local disk and an fs.FS alike (a
// missing second Parquet file used to fail only when reading reached it).
func TestMissingFileFailsTheOpen(t *testing.T) {
	root, _ := inputTree(t, rand.New(rand.NewPCG(2, 2)))
	mapFS := fstest.MapFS{}
	for _, name := range []string{"csv/part-00.csv", "pq/p-0.parquet"} {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		mapFS[name] = &fstest.MapFile{Data: raw}
	}
	for _, c := range []struct {
		name  string
		open  func(paths []string, opts ...source.Option) (source.Source, error)
		good  string
		other string
	}{
		{"csv", func(p []string, o ...source.Option) (source.Source, error) { return source.NewCSVFiles(p, o...) }, "csv/part-00.csv", "csv/none.csv"},
		{"parquet", func(p []string, o ...source.Option) (source.Source, error) { return source.NewParquetFiles(p, o...) }, "pq/p-0.parquet", "pq/none.parquet"},
	} {
		for fsName, prefix := range map[string]string{"disk": root + "/", "fs": ""} {
			var opts []source.Option
			if prefix == "" {
				opts = append(opts, source.WithFS(mapFS))
			}
			src, err := c.open([]string{prefix + c.good, prefix + c.other}, opts...)
			if err == nil {
				src.Close()
				t.Errorf("%s on %s: opened with a missing file", c.name, fsName)
				continue
			}
			if !strings.Contains(err.Error(), c.other) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s on %s: error %v, want one naming %s (fs.ErrNotExist)", c.name, fsName, err, c.other)
			}
		}
	}
}
