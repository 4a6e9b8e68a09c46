package source_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// readAll drains src and returns its rows as Go values and the row count
// of each batch.
func readAll(t testing.TB, src source.Source) ([][]any, []int64) {
	t.Helper()
	var rows [][]any
	var sizes []int64
	for {
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, sizes
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if !rec.Schema().Equal(src.Schema()) {
			t.Fatalf("batch schema %s differs from source schema %s", rec.Schema(), src.Schema())
		}
		rows = append(rows, sink.Rows(rec)...)
		sizes = append(sizes, rec.NumRows())
		rec.Release()
	}
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// collectDead returns an option recording dead letters into *dl.
func collectDead(dl *[]source.DeadLetter) source.Option {
	return source.WithDeadLetter(func(d source.DeadLetter) { *dl = append(*dl, d) })
}

// drainRows reads src to its end, closes it and returns how many rows it
// gave.
func drainRows(t testing.TB, src source.Source) int {
	t.Helper()
	defer src.Close()
	n := 0
	for {
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
}
