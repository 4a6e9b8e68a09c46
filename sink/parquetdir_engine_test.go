package sink_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"gocloud.dev/blob/memblob"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

const dirQuery = `SELECT id, user_id, ts,
  sum(amount) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS s2,
  count(*) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS c3,
  max(amount) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS m5,
  topn_frequency(merchant, 2) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS top2
FROM events`

func runQuery(ctx context.Context, t *testing.T, out sink.Sink, schema *arrow.Schema, batches []arrow.RecordBatch, after int, cancel context.CancelFunc, opts ...volga.Option) error {
	t.Helper()
	src := testutil.NewInterrupting(schema, after, cancel, batches...)
	p, err := volga.SQL(dirQuery, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(out)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(ctx)
}

// dirAsCSV reads the Parquet files of dir (a directory or a glob
// pattern) in name order with source.NewParquetFiles and renders their
// rows as CSV.
func dirAsCSV(t *testing.T, dir string) []byte {
	t.Helper()
	src, err := source.NewParquetFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var buf bytes.Buffer
	w := sink.NewCSV(&buf)
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(context.Background(), rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParquetDirEngineExactlyOnce: a streaming run into a directory of
// Parquet files, cancelled again and again and each time resumed from its
// latest checkpoint, leaves files whose rows, read in file-name order,
// are those of an uninterrupted run; every file is the output of one
// epoch, and nothing is left staged.
func TestParquetDirEngineExactlyOnce(t *testing.T) {
	// open: through sink.Open("out/"); roll50: files rolled every 50 rows
	// before the first checkpoint.
	for _, variant := range []string{"open", "roll50"} {
		t.Run(variant, func(t *testing.T) {
			rng := testutil.Rand(testutil.Seeds(1)[0] + 11)
			tab := testutil.Events(rng, testutil.DefaultEvents(testutil.Scale(3000)))
			tab = tab.Subset(testutil.Shuffle(rng, tab, "ts", nil, 1500))
			batches := tab.Batches(rng, 25)
			defer func() {
				for _, b := range batches {
					b.Release()
				}
			}()
			opts := []volga.Option{volga.WithMode(volga.Streaming), volga.WithParallelism(2), volga.WithMaxOutOfOrder(time.Second)}
			tmp := t.TempDir()

			// The uninterrupted run, without checkpoints, into a CSV file
			// and into a directory.
			ref := filepath.Join(tmp, "ref.csv")
			out, err := sink.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			if err := runQuery(context.Background(), t, out, tab.Schema, batches, 0, nil, opts...); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(ref)
			refDir := filepath.Join(tmp, "refdir")
			out, err = sink.NewParquetDir(refDir, nil, sink.WithFileRows(700))
			if err != nil {
				t.Fatal(err)
			}
			if err := runQuery(context.Background(), t, out, tab.Schema, batches, 0, nil, opts...); err != nil {
				t.Fatal(err)
			}
			if got := dirAsCSV(t, filepath.Join(refDir, "*.parquet")); !bytes.Equal(got, want) {
				t.Fatalf("a run without checkpoints into a directory:\n%.2000s\nwant:\n%.2000s", got, want)
			}
			if n := len(parts(t, refDir)); n != (len(tab.Rows)+699)/700 {
				t.Fatalf("%d files for %d rows rolled every 700", n, len(tab.Rows))
			}

			bucket := memblob.OpenBucket(nil)
			defer bucket.Close()
			var ckpts atomic.Int64
			dir := filepath.Join(tmp, "out")
			// roll50: a longer interval, so that files roll before the
			// first checkpoint.
			interval := time.Millisecond
			if variant == "roll50" {
				interval = 10 * time.Millisecond
			}
			ckOpts := append(opts, volga.WithCheckpointBucket(bucket, interval),
				volga.WithOnCheckpoint(func(volga.CheckpointInfo) { ckpts.Add(1) }),
				volga.WithStateDir(filepath.Join(tmp, "state")))
			crashes := 0
			for attempt := 0; ; attempt++ {
				ctx, cancel := context.WithCancel(context.Background())
				after := 0 // the last attempt runs to the end
				if attempt < 6 {
					after = 1 + rng.IntN(len(batches)/3)
				}
				var out sink.Sink
				var err error
				if variant == "open" {
					out, err = sink.Open(dir + string(filepath.Separator))
				} else {
					out, err = sink.NewParquetDir(dir, nil, sink.WithFileRows(50))
				}
				if err != nil {
					t.Fatal(err)
				}
				err = runQuery(ctx, t, out, tab.Schema, batches, after, cancel, ckOpts...)
				cancel()
				if err == nil {
					break
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				crashes++
			}
			if got := dirAsCSV(t, dir); !bytes.Equal(got, want) {
				t.Fatalf("after %d interruptions the files differ from an uninterrupted run:\n%.2000s\nwant:\n%.2000s", crashes, got, want)
			}
			names := parts(t, dir)
			epochs := 0
			for _, name := range names {
				if len(name) == len("part-00000000000000000000.parquet") {
					epochs++
				} else if variant == "open" {
					t.Errorf("%s: a file rolled before the first checkpoint, with 1M rows per file", name)
				}
			}
			if epochs < 2 || ckpts.Load() < 3 {
				t.Fatalf("%d files of epochs, %d checkpoints", epochs, ckpts.Load())
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != len(names) {
				t.Fatalf("the directory holds %d entries, %d published files: something is left staged", len(ents), len(names))
			}
			t.Logf("%d interruptions, %d checkpoints, %d files (%d of epochs)", crashes, ckpts.Load(), len(names), epochs)
		})
	}
}

// parts lists the part-*.parquet files of dir in name order.
func parts(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "part-") && strings.HasSuffix(e.Name(), ".parquet") {
			out = append(out, e.Name())
		}
	}
	return out
}
