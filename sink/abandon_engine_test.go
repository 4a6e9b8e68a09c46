package sink_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// failAfter is a source whose reads fail after n batches.
type failAfter struct {
	source.Source
	n int
}

var errSourceGone = errors.New("source gone")

func (f *failAfter) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if f.n == 0 {
		return nil, errSourceGone
	}
	f.n--
	return f.Source.Read(ctx)
}

// abandonBatches returns n batches of 20 rows of (k, ts, v) in time order.
func abandonBatches(n int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var out []arrow.RecordBatch
	for b := range n {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range 20 {
			bld.Field(0).(*array.StringBuilder).Append([]string{"a", "b", "c"}[i%3])
			bld.Field(1).(*array.Int64Builder).Append(int64(b*20+i) * 1000)
			bld.Field(2).(*array.Float64Builder).Append(float64(i))
		}
		out = append(out, bld.NewRecordBatch())
		bld.Release()
	}
	return schema, out
}

const abandonQuery = `SELECT k, ts, sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM t`

// TestFailedRunLeavesFile: a run without checkpoints whose source fails
// part way leaves the file of each file sink as it was before the run
// (or no file where there was none): not an empty file, not the rows
// emitted before the failure. A streaming run ended by Stop publishes
// its rows.
func TestFailedRunLeavesFile(t *testing.T) {
	schema, batches := abandonBatches(40)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for _, name := range []string{"out.csv", "out.jsonl", "out.parquet"} {
		for _, mode := range []volga.Mode{volga.Batch, volga.Streaming} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				for _, earlier := range []bool{true, false} {
					dir := t.TempDir()
					path := filepath.Join(dir, name)
					if earlier {
						if err := os.WriteFile(path, []byte("earlier output\n"), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					out, err := sink.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					src := &failAfter{Source: source.NewMemory(schema, batches...), n: 30}
					p, err := volga.SQL(abandonQuery, volga.WithSource("t", src), volga.WithSink(out), volga.WithMode(mode))
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Run(context.Background()); !errors.Is(err, errSourceGone) {
						t.Fatalf("Run: %v, want the source's error", err)
					}
					b, err := os.ReadFile(path)
					switch {
					case earlier && string(b) != "earlier output\n":
						t.Fatalf("after a failed run the file holds %d bytes (%.60q), want the earlier output", len(b), b)
					case !earlier && !errors.Is(err, fs.ErrNotExist):
						t.Fatalf("a failed run left a file of %d bytes (%.60q; %v)", len(b), b, err)
					}
					ents, err := os.ReadDir(dir)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range ents {
						if e.Name() != name {
							t.Errorf("left behind: %s", e.Name())
						}
					}
				}
			})
		}
	}

	// Stop ends a stream: its output is published.
	for _, name := range []string{"out.csv", "out.parquet"} {
		t.Run(name+"/stopped", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			out, err := sink.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var p *volga.Pipeline
			stopping := &stopAfter{Source: source.NewMemory(schema, batches...), n: 30, stop: func() { p.Stop() }}
			p, err = volga.SQL(abandonQuery, volga.WithSource("t", stopping), volga.WithSink(out), volga.WithMode(volga.Streaming))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := countRows(t, path); got != 30*20 {
				t.Fatalf("a stopped stream published %d rows, want %d", got, 30*20)
			}
		})
	}
}

// stopAfter calls stop once it has returned n batches, then waits for
// the stop to interrupt it.
type stopAfter struct {
	source.Source
	n    int
	stop func()
}

func (s *stopAfter) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if s.n == 0 {
		s.stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, errors.New("not stopped")
		}
	}
	s.n--
	return s.Source.Read(ctx)
}

// countRows counts the rows of the output file at path.
func countRows(t *testing.T, path string) int {
	t.Helper()
	if strings.HasSuffix(path, ".csv") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n") - 1
	}
	src, err := source.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n := 0
	for {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	return n
}

// panicky is a CSV file sink whose Write panics after n batches.
type panicky struct {
	*sink.CSV
	n int
}

func (p *panicky) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if p.n == 0 {
		panic("sink bug")
	}
	p.n--
	return p.CSV.Write(ctx, rec)
}

// TestRunWithPanickingSinkLeavesFile: a sink whose Write panics fails
// the run, and is abandoned like a sink of any failed run: the rows it
// wrote before are not published.
func TestRunWithPanickingSinkLeavesFile(t *testing.T) {
	schema, batches := abandonBatches(40)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	path := filepath.Join(t.TempDir(), "out.csv")
	if err := os.WriteFile(path, []byte("earlier output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csv, err := sink.CreateCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := volga.SQL(abandonQuery, volga.WithSource("t", source.NewMemory(schema, batches...)),
		volga.WithSink(&panicky{CSV: csv, n: 5}), volga.WithMode(volga.Streaming))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "sink bug") {
		t.Fatalf("Run: %v, want the panic as an error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "earlier output\n" {
		t.Fatalf("after a failed run the file holds %d bytes (%.60q), want the earlier output", len(b), b)
	}
}
