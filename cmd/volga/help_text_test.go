package main

import (
	"context"
	"strings"
	"testing"
)

// TestHelpNamesInputAndOutputForms: the help of --source and --sink listed
// only plain files and Kafka, while they also take compressed text, a
// directory or glob pattern of inputs, and a directory of Parquet outputs.
func TestHelpNamesInputAndOutputForms(t *testing.T) {
	for _, cmd := range []string{"run", "serve", "backfill"} {
		_, help, _ := cli(t, context.Background(), t.TempDir(), "", "help", cmd)
		src := flagHelp(help, "-source")
		for _, want := range []string{".csv.gz", ".jsonl.zst", "a directory or a glob pattern ('events/*.csv')"} {
			if !strings.Contains(src, want) {
				t.Errorf("volga help %s: --source says\n%s\nwithout %q", cmd, src, want)
			}
		}
		if cmd == "serve" {
			continue
		}
		sink := flagHelp(help, "-sink")
		for _, want := range []string{".csv.gz", ".jsonl.zst", "a directory of Parquet files (out/ or 'out/*.parquet')"} {
			if !strings.Contains(sink, want) {
				t.Errorf("volga help %s: --sink says\n%s\nwithout %q", cmd, sink, want)
			}
		}
	}
}

// flagHelp returns the help of one flag (the line "  -name ..." and the
// indented lines after it) in the output of volga help.
func flagHelp(help, name string) string {
	i := strings.Index(help, "\n  "+name+" ")
	if i < 0 {
		return ""
	}
	rest := help[i+1:]
	lines := strings.SplitAfter(rest, "\n")
	out := lines[0]
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "    \t") {
			break
		}
		out += l
	}
	return out
}
