// Package textcodec holds the compressions of text files that the CSV and
// JSON-lines sources read and sinks write, known by the file's last
// extension: gzip (.gz) and zstd (.zst).
package textcodec

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Codec is one compression.
type Codec struct {
	// Ext is the extension of its files, with the dot.
	Ext string
	// NewReader reads the text r holds; NewWriter compresses what is
	// written into w, and its Close writes the end of the stream (a
	// gzip member, a zstd frame: streams written one after the other
	// make one valid stream).
	NewReader func(r io.Reader) (io.ReadCloser, error)
	NewWriter func(w io.Writer) (io.WriteCloser, error)
}

var codecs = []Codec{
	{
		Ext:       ".gz",
		NewReader: func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) },
		NewWriter: func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil },
	},
	{
		Ext: ".zst",
		NewReader: func(r io.Reader) (io.ReadCloser, error) {
			d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
			if err != nil {
				return nil, err
			}
			return d.IOReadCloser(), nil
		},
		NewWriter: func(w io.Writer) (io.WriteCloser, error) {
			return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		},
	},
}

// Of returns the compression of path by its extension (".gz", ".zst", in
// any case), nil for none.
func Of(path string) *Codec {
	ext := filepath.Ext(path)
	for i := range codecs {
		if strings.EqualFold(ext, codecs[i].Ext) {
			return &codecs[i]
		}
	}
	return nil
}

// FormatExt returns the extension that tells path's format: its last
// one, or the one before a compression's (".csv" of "out.csv.gz").
func FormatExt(path string) string {
	if c := Of(path); c != nil {
		path = path[:len(path)-len(c.Ext)]
	}
	return filepath.Ext(path)
}
