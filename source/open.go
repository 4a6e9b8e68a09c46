package source

import (
	"fmt"
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
	files := newOptions(opts).files()
	fi, serr := files.stat(path)
	if serr == nil && fi.IsDir() {
		ents, err := files.readDir(path)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		var names []string
		for _, e := range ents {
			if n := e.Name(); !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") && !e.IsDir() {
				names = append(names, n)
			}
		}
		switch fs := fileFormats(names); len(fs) {
		case 0:
			return nil, fmt.Errorf("source: %s: no .csv, .jsonl, .ndjson, .json or .parquet files in the directory", path)
		case 1:
			return openFiles(fs[0], []string{path}, opts)
		default:
			return nil, fmt.Errorf("source: %s holds files of more than one format (%s): name one with a glob pattern such as %q", path, formatNames(fs), files.join(path, "*"+fs[0].exts[0]))
		}
	}
	if serr != nil && strings.ContainsAny(path, "*?[") {
		names, err := expandPaths(files, []string{path}, "input", nil)
		if err != nil {
			return nil, err
		}
		switch fs := fileFormats(names); len(fs) {
		case 0:
			return nil, fmt.Errorf("source: %q: cannot choose a format for the files it matches (such as %q) from their extension: use .csv, .jsonl, .ndjson, .json or .parquet", path, names[0])
		case 1:
			// Matches of other extensions are left out, as in a
			// directory.
			names = slices.DeleteFunc(names, func(n string) bool { return !hasExt(n, fs[0].exts) })
			return openFiles(fs[0], names, opts)
		default:
			return nil, fmt.Errorf("source: %q matches files of more than one format (%s): narrow it to one extension", path, formatNames(fs))
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

// openFiles opens paths (files, directories or glob patterns) as files
// of format f.
func openFiles(f fileFormat, paths []string, opts []Option) (Source, error) {
	switch f.name {
	case "csv":
		return NewCSVFiles(paths, opts...)
	case "json-lines":
		return NewJSONLFiles(paths, opts...)
	default:
		return NewParquetFiles(paths, opts...)
	}
}

// fileFormats returns the formats, in the order of formats, of the
// names with an extension Open knows.
func fileFormats(names []string) []fileFormat {
	var fs []fileFormat
	for _, f := range formats {
		if slices.ContainsFunc(names, func(n string) bool { return hasExt(n, f.exts) }) {
			fs = append(fs, f)
		}
	}
	return fs
}

// formatNames names formats for errors: "csv and json-lines".
func formatNames(fs []fileFormat) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, " and ")
}
