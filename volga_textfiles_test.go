package volga_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestBatchOverTextFiles: a batch run over a directory of CSV files, in
// time order across the files (WithTimeOrder, so rows go out as the
// bound passes them), gives the rows a run over the same rows in one file
// gives, in the same order.
func TestBatchOverTextFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const header = "user_id,ts,amount\n"
	var all strings.Builder
	all.WriteString(header)
	dir := t.TempDir()
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for f := range 4 {
		var b strings.Builder
		b.WriteString(header)
		for range 300 {
			ts = ts.Add(time.Duration(r.IntN(120)) * time.Second)
			line := fmt.Sprintf("u%d,%s,%d\n", r.IntN(7), ts.Format(time.RFC3339), r.IntN(100))
			b.WriteString(line)
			all.WriteString(line)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("day-%d.csv", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	one := filepath.Join(t.TempDir(), "all.csv")
	if err := os.WriteFile(one, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(path string) [][]any {
		t.Helper()
		src, err := source.Open(path, source.WithTimeOrder("ts", 0), source.WithBatchSize(64))
		if err != nil {
			t.Fatal(err)
		}
		out := sink.NewCollector()
		p, err := volga.SQL(`SELECT user_id, ts, sum(amount) OVER w AS spend_1h, count(*) OVER w AS n_1h
			FROM tx WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
			volga.WithSource("tx", src), volga.WithSink(out), volga.WithMode(pipeline.Batch))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Rows()
	}
	want := run(one)
	if len(want) != 1200 {
		t.Fatalf("%d rows from one file, want 1200", len(want))
	}
	if got := run(dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("a directory of CSV files gave %d rows, unlike one file's %d (first: %v against %v)", len(got), len(want), got[:1], want[:1])
	}
	if got := run(filepath.Join(dir, "day-*.csv")); !reflect.DeepEqual(got, want) {
		t.Fatal("a glob of CSV files gave rows unlike one file's")
	}
}
