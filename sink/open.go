package sink

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open returns a sink for path, chosen by its extension: .csv (CSV),
// .jsonl or .ndjson (JSON lines), .parquet (Parquet, schema from the first
// batch). The path "-" or "" means standard output as CSV; standard output
// is flushed but never closed. Any other extension is an error.
//
// The file sinks implement [Committer] and are exactly once under
// checkpoints (see [CreateCSV] and [Parquet]); standard output is at least
// once.
func Open(path string) (Sink, error) {
	if path == "" || path == "-" {
		return NewCSV(os.Stdout), nil
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		return CreateCSV(path)
	case ".jsonl", ".ndjson":
		return CreateJSONL(path)
	case ".parquet":
		return NewParquet(path, nil)
	default:
		return nil, fmt.Errorf("sink: cannot choose a format for %q from extension %q: use .csv, .jsonl, .ndjson or .parquet", path, ext)
	}
}
