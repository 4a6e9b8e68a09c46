package source

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/volga-go/volga/internal/textcodec"
)

// fileFormat is a file format Open reads: its name in errors and its
// extensions.
type fileFormat struct {
	name string
	exts []string
}

// formats are the file formats Open reads.
var formats = []fileFormat{
	{"csv", []string{".csv"}},
	{"json-lines", []string{".jsonl", ".ndjson", ".json"}},
	{"parquet", []string{".parquet"}},
}

// Open returns a source for the file at path, chosen by its extension:
// .csv (NewCSV), .jsonl, .ndjson or .json (NewJSONL: one object per line),
// .parquet (NewParquetFiles). Any other extension is an error. CSV and
// JSON-lines files compressed with gzip or zstd (events.csv.gz,
// events.jsonl.zst) are read as the text they hold.
//
// A directory (such as the output of sink.NewParquetDir) is read as its
// files of one format, in name order, leaving out names that start with
// "." or "_" and files of other extensions: NewParquetFiles,
// NewCSVFiles or NewJSONLFiles. A directory holding files of two of the
// formats is an error. A path that does not exist and holds a glob
// pattern ("events/2024-*.csv") is read the same way, as the files it
// matches; they must all be of one format.
func Open(path string, opts ...Option) (Source, error) {
	fi, serr := os.Stat(path)
	if serr == nil && fi.IsDir() {
		return openDir(path, opts, dirFormats(path))
	}
	if serr != nil && strings.ContainsAny(path, "*?[") {
		matches, err := filepath.Glob(path)
		if err != nil {
			return nil, fmt.Errorf("source: %q: %w", path, err)
		}
		var names []string
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
				names = append(names, m)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("source: %q: no file matches", path)
		}
		kinds := fileFormats(names)
		switch len(kinds) {
		case 0:
			return nil, fmt.Errorf("source: %q: cannot choose a format for the files it matches (such as %q) from their extension: use .csv, .jsonl, .ndjson, .json or .parquet", path, names[0])
		case 1:
			// Matches of other extensions are left out, as in a
			// directory.
			f := formatOf(kinds[0])
			names = slices.DeleteFunc(names, func(n string) bool { return !hasExt(n, f.exts) })
			return openFiles(kinds[0], names, opts)
		default:
			return nil, fmt.Errorf("source: %q matches files of more than one format (%s): narrow it to one extension", path, strings.Join(kinds, " and "))
		}
	}
	ext := strings.ToLower(textcodec.FormatExt(path))
	if textcodec.Of(path) != nil && ext == ".parquet" {
		return nil, fmt.Errorf("source: %q: a Parquet file is compressed inside; open it uncompressed", path)
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

// openDir opens directory dir as its files of the one format in kinds.
func openDir(dir string, opts []Option, kinds []string) (Source, error) {
	switch len(kinds) {
	case 0:
		return nil, fmt.Errorf("source: %s: no .csv, .jsonl, .ndjson, .json or .parquet files in the directory", dir)
	case 1:
		return openFiles(kinds[0], []string{dir}, opts)
	default:
		return nil, fmt.Errorf("source: %s holds files of more than one format (%s): name one with a glob pattern such as %q", dir, strings.Join(kinds, " and "), filepath.Join(dir, "*"+formatOf(kinds[0]).exts[0]))
	}
}

// openFiles opens paths (files, directories or glob patterns) as files
// of format kind.
func openFiles(kind string, paths []string, opts []Option) (Source, error) {
	switch kind {
	case "csv":
		return NewCSVFiles(paths, opts...)
	case "json-lines":
		return NewJSONLFiles(paths, opts...)
	default:
		return NewParquetFiles(paths, opts...)
	}
}

// dirFormats returns the formats of the files in directory dir, leaving
// out names that start with "." or "_" (an unreadable directory gives
// none; the source's open reports why).
func dirFormats(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return []string{"parquet"}
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") && !e.IsDir() {
			names = append(names, n)
		}
	}
	return fileFormats(names)
}

// fileFormats returns the formats, in the order of formats, of the
// names with an extension Open knows.
func fileFormats(names []string) []string {
	var kinds []string
	for _, f := range formats {
		if slices.ContainsFunc(names, func(n string) bool { return hasExt(n, f.exts) }) {
			kinds = append(kinds, f.name)
		}
	}
	return kinds
}

// formatOf returns format kind.
func formatOf(kind string) fileFormat {
	for _, f := range formats {
		if f.name == kind {
			return f
		}
	}
	return fileFormat{}
}
