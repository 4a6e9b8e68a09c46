package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open returns a source for the file at path, chosen by its extension:
// .csv (NewCSV), .jsonl, .ndjson or .json (NewJSONL: one object per line),
// .parquet (NewParquetFiles). A directory (such as the output of
// sink.NewParquetDir) is read as its Parquet files in name order. Any
// other extension is an error.
func Open(path string, opts ...Option) (Source, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return NewParquetFiles([]string{path}, opts...)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		return NewCSV(path, opts...)
	case ".jsonl", ".ndjson", ".json":
		return NewJSONL(path, opts...)
	case ".parquet":
		return NewParquetFiles([]string{path}, opts...)
	default:
		return nil, fmt.Errorf("source: cannot choose a format for %q from extension %q: use .csv, .jsonl, .ndjson, .json or .parquet", path, ext)
	}
}
