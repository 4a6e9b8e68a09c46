package sink

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/volga-go/volga/internal/textcodec"
)

// Open returns a sink for path, chosen by its extension: .csv (CSV),
// .jsonl or .ndjson (JSON lines), .parquet (Parquet, schema from the first
// batch). CSV and JSON lines are compressed when the name ends in .gz
// (gzip) or .zst (zstd): out.csv.gz. The path "-" or "" means standard
// output as CSV; standard output is flushed but never closed. Any other
// extension is an error.
//
// A directory of Parquet files ([NewParquetDir], for streams) is named by
// a path ending in a separator ("out/"), by a path whose last element is
// "*.parquet" ("out/*.parquet", the pattern readers use), or by an
// existing directory whose name has no extension or ends in .parquet.
//
// The file sinks implement [Committer] and are exactly once under
// checkpoints (see [CreateCSV], [Parquet] and [ParquetDir]); standard
// output is at least once.
func Open(path string) (Sink, error) {
	if dir, ok := parquetDirPath(path); ok {
		return NewParquetDir(dir, nil)
	}
	if path == "" || path == "-" {
		return NewCSV(os.Stdout), nil
	}
	ext := strings.ToLower(textcodec.FormatExt(path))
	if textcodec.Of(path) != nil && ext != ".csv" && ext != ".jsonl" && ext != ".ndjson" {
		return nil, fmt.Errorf("sink: cannot compress %q: only CSV and JSON-lines output is compressed (.csv.gz, .jsonl.zst); Parquet compresses inside", path)
	}
	switch ext {
	case ".csv":
		return CreateCSV(path)
	case ".jsonl", ".ndjson":
		return CreateJSONL(path)
	case ".parquet":
		return NewParquet(path, nil)
	default:
		return nil, fmt.Errorf("sink: cannot choose a format for %q from extension %q: use .csv, .jsonl, .ndjson or .parquet, or DIR/ for a directory of Parquet files", path, ext)
	}
}

// IsParquetDir reports whether Open takes path for a directory of
// Parquet files (NewParquetDir): it ends in a path separator or in
// "*.parquet", or is an existing directory whose name has no extension or
// .parquet. Command lines use it to accept such an output before a run.
func IsParquetDir(path string) bool {
	_, ok := parquetDirPath(path)
	return ok
}

// parquetDirPath tells whether path names a directory of Parquet files
// (see Open) and returns the directory.
func parquetDirPath(path string) (string, bool) {
	if path == "" || path == "-" {
		return "", false
	}
	if os.IsPathSeparator(path[len(path)-1]) {
		return filepath.Clean(path), true
	}
	if filepath.Base(path) == "*.parquet" {
		return filepath.Dir(path), true
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case "", ".parquet":
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return path, true
		}
	}
	return "", false
}
