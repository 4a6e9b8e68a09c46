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
// sink.NewParquetDir) is read as its Parquet files in name order, and so
// is a glob pattern of Parquet files ("out/*.parquet"); a pattern of CSV
// or JSON-lines files is an error that says so. Any other extension is an
// error.
func Open(path string, opts ...Option) (Source, error) {
	fi, serr := os.Stat(path)
	if serr == nil && fi.IsDir() {
		return NewParquetFiles([]string{path}, opts...)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if serr != nil && ext != ".parquet" && strings.ContainsAny(path, "*?[") {
		return nil, fmt.Errorf("source: %q: a glob pattern reads Parquet files only; open CSV and JSON-lines files one at a time", path)
	}
	switch ext {
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
