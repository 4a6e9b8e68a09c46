package sink

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// codec is a compression of text output, known by the file's extension.
type codec struct {
	ext    string
	writer func(io.Writer) (io.WriteCloser, error)
}

// codecs are the compressions the text sinks write.
var codecs = []codec{
	{".gz", func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil }},
	{".zst", func(w io.Writer) (io.WriteCloser, error) {
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	}},
}

// codecOf returns the compression of path by its extension (".gz",
// ".zst", any case), nil for none.
func codecOf(path string) *codec {
	ext := filepath.Ext(path)
	for i := range codecs {
		if strings.EqualFold(ext, codecs[i].ext) {
			return &codecs[i]
		}
	}
	return nil
}

// formatExt returns the extension that tells path's format: the last one,
// or the one before a compression's (".csv" of "out.csv.gz").
func formatExt(path string) string {
	if c := codecOf(path); c != nil {
		path = path[:len(path)-len(c.ext)]
	}
	return filepath.Ext(path)
}
