package source_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// packText returns data compressed as the extension ext (".gz", ".zst")
// says.
func packText(t *testing.T, ext string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch ext {
	case ".gz":
		w = gzip.NewWriter(&b)
	case ".zst":
		zw, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default:
		t.Fatalf("no codec %s", ext)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCompressedText: CSV and JSON-lines files compressed with gzip or
// zstd read as the text they hold (the same rows, dead letters at the
// same lines), and reading resumes exactly at every position Position
// gave (Seek reads the text again up to it).
func TestCompressedText(t *testing.T) {
	var csvText, jsonText strings.Builder
	csvText.WriteString("id,name,ts\n")
	for i := range 300 {
		if i == 77 {
			csvText.WriteString("x,bad,3\n")
			jsonText.WriteString(`{"id": "x"}` + "\n")
			continue
		}
		fmt.Fprintf(&csvText, "%d,\"n,%d\",%d\n", i, i, 1000*i)
		fmt.Fprintf(&jsonText, `{"id": %d, "name": "n,%d", "ts": %d}`+"\n", i, i, 1000*i)
	}
	for _, format := range []struct{ ext, text string }{{".csv", csvText.String()}, {".jsonl", jsonText.String()}} {
		for _, codec := range []string{".gz", ".zst"} {
			t.Run(format.ext+codec, func(t *testing.T) {
				dir := t.TempDir()
				plainPath := filepath.Join(dir, "plain"+format.ext)
				packed := filepath.Join(dir, "packed"+format.ext+strings.ToUpper(codec))
				if err := os.WriteFile(plainPath, []byte(format.text), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(packed, packText(t, codec, []byte(format.text)), 0o644); err != nil {
					t.Fatal(err)
				}
				var deadPlain, deadPacked []source.DeadLetter
				plain, err := source.Open(plainPath, collectDead(&deadPlain), source.WithBatchSize(32), source.WithSampleRows(10))
				if err != nil {
					t.Fatal(err)
				}
				want, _ := readAll(t, plain)
				plain.Close()
				src, err := source.Open(packed, collectDead(&deadPacked), source.WithBatchSize(32), source.WithSampleRows(10))
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				if !src.Schema().Equal(plain.Schema()) {
					t.Fatalf("schema %s, want %s", src.Schema(), plain.Schema())
				}
				seeker := src.(source.Seeker)
				type mark struct {
					pos  []byte
					read int
				}
				var marks []mark
				var got [][]any
				for {
					pos, err := seeker.Position()
					if err != nil {
						t.Fatal(err)
					}
					marks = append(marks, mark{pos, len(got)})
					rec, err := src.Read(context.Background())
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, sink.Rows(rec)...)
					rec.Release()
				}
				if len(want) != 299 || !reflect.DeepEqual(got, want) {
					t.Fatalf("%d rows, want the uncompressed file's %d", len(got), len(want))
				}
				if len(deadPacked) != 1 || deadPacked[0].Offset != deadPlain[0].Offset || deadPacked[0].Source != packed {
					t.Fatalf("dead letters %+v, want one at line %d of %s", deadPacked, deadPlain[0].Offset, packed)
				}
				// Resume from every position, forward and back, in one
				// source and in a fresh one.
				for i := len(marks) - 1; i >= 0; i -= 3 {
					m := marks[i]
					for _, fresh := range []bool{false, true} {
						s := src
						if fresh {
							if s, err = source.Open(packed, source.WithBatchSize(32), source.WithSampleRows(10)); err != nil {
								t.Fatal(err)
							}
						}
						if err := s.(source.Seeker).Seek(m.pos); err != nil {
							t.Fatalf("Seek after %d rows: %v", m.read, err)
						}
						rest, _ := readAll(t, s)
						if !reflect.DeepEqual(rest, want[m.read:]) && len(rest)+len(want[m.read:]) > 0 {
							t.Fatalf("resumed after %d rows (fresh %v): %d rows, want %d", m.read, fresh, len(rest), len(want)-m.read)
						}
						if fresh {
							s.Close()
						}
					}
				}
			})
		}
	}
}

// TestCompressedFilesOpen: a directory or glob of text files may mix
// compressed and plain ones of one format; a compressed Parquet file and
// a damaged compressed file are errors that say so, not panics.
func TestCompressedFilesOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("a.csv.gz", packText(t, ".gz", []byte("x\n1\n")))
	write("b.csv", []byte("x\n2\n"))
	write("c.csv.zst", packText(t, ".zst", []byte("x\n3\n")))
	for _, path := range []string{dir, filepath.Join(dir, "*.csv*")} {
		src, err := source.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := readAll(t, src)
		src.Close()
		if want := [][]any{{int64(1)}, {int64(2)}, {int64(3)}}; !reflect.DeepEqual(rows, want) {
			t.Fatalf("%s: %v, want %v", path, rows, want)
		}
	}

	if _, err := source.Open(write("d.parquet.gz", packText(t, ".gz", []byte("PAR1")))); err == nil || !strings.Contains(err.Error(), "compressed inside") {
		t.Fatalf("compressed Parquet: %v", err)
	}
	bad := t.TempDir()
	damaged := packText(t, ".gz", []byte(strings.Repeat("x\n1\n", 5000)))
	damaged = damaged[:len(damaged)/2]
	p := filepath.Join(bad, "e.csv.gz")
	if err := os.WriteFile(p, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(p)
	if err == nil {
		defer src.Close()
		for err == nil {
			var n int
			if n, err = readOne(src); n == 0 && err == nil {
				t.Fatal("a read of nothing without an error")
			}
		}
	}
	if err == io.EOF || !strings.Contains(err.Error(), "e.csv.gz") {
		t.Fatalf("truncated gzip: %v, want an error naming the file", err)
	}
	if _, err := source.Open(write("f.csv.gz", []byte("not gzip"))); err == nil || !strings.Contains(err.Error(), "f.csv.gz") {
		t.Fatalf("not gzip: %v", err)
	}
	// No bytes at all is no text, as for an uncompressed file: a CSV
	// without its header, an empty JSON-lines input.
	if _, err := source.Open(write("g.csv.gz", nil)); err == nil || !strings.Contains(err.Error(), "empty input") {
		t.Fatalf("empty .csv.gz: %v", err)
	}
	if src, err := source.Open(write("h.jsonl.zst", nil)); err != nil {
		t.Fatalf("empty .jsonl.zst: %v", err)
	} else {
		if rows, _ := readAll(t, src); len(rows) != 0 {
			t.Fatalf("empty .jsonl.zst: rows %v", rows)
		}
		src.Close()
	}
}

// readOne reads a batch and returns its row count.
func readOne(src source.Source) (int, error) {
	rec, err := src.Read(context.Background())
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	return int(rec.NumRows()), nil
}
