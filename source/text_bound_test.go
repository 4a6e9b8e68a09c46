package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/source"
)

// TestTextTimeOrderBound: a CSV or JSON-lines source promised in order up
// to a lateness (WithTimeOrder) bounds the values still to come by the
// greatest value read minus the lateness (timestamps in milliseconds),
// knows none before its first row, for other columns or without the
// promise, and says math.MaxInt64 once every row is read; a row further
// behind than promised fails the Read that meets it.
func TestTextTimeOrderBound(t *testing.T) {
	csvIn := "id,ts\n1,2024-01-01T00:00:01Z\n2,2024-01-01T00:00:03Z\n3,2024-01-01T00:00:02Z\n4,2024-01-01T00:00:05Z\n"
	jsonIn := `{"id":1,"ts":1000}` + "\n" + `{"id":2,"ts":3000}` + "\n" + `{"id":3,"ts":2000}` + "\n" + `{"id":4,"ts":5000}` + "\n"
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	type bounded interface {
		source.Source
		source.LowerBounder
	}
	open := map[string]func(opts ...source.Option) (bounded, int64){
		"csv": func(opts ...source.Option) (bounded, int64) {
			s, err := source.NewCSVReader(strings.NewReader(csvIn), opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s, base
		},
		"jsonl": func(opts ...source.Option) (bounded, int64) {
			s, err := source.NewJSONLReader(strings.NewReader(jsonIn), opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s, 0
		},
	}
	for name, open := range open {
		s, zero := open(source.WithBatchSize(2), source.WithTimeOrder("ts", 1500*time.Millisecond))
		if _, ok := s.LowerBound("ts"); ok {
			t.Fatalf("%s: a bound before the first row", name)
		}
		// The bound after each batch of two rows: the greatest time read
		// (3 s, then 5 s) minus 1.5 s; then the end.
		for _, want := range []int64{zero + 1500, zero + 3500} {
			rec, err := s.Read(context.Background())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			rec.Release()
			if got, ok := s.LowerBound("ts"); !ok || got != want {
				t.Fatalf("%s: bound %d (%v), want %d", name, got, ok, want)
			}
			if _, ok := s.LowerBound("id"); ok {
				t.Fatalf("%s: a bound for a column not promised", name)
			}
		}
		if _, err := s.Read(context.Background()); err != io.EOF {
			t.Fatalf("%s: err = %v, want io.EOF", name, err)
		}
		if got, ok := s.LowerBound("ts"); !ok || got != math.MaxInt64 {
			t.Fatalf("%s: bound %d (%v) at the end, want math.MaxInt64", name, got, ok)
		}
		s.Close()

		// The third row is 1 s below the second: a promise of 500 ms is
		// broken, within a batch or across two; the two rows before it
		// are returned either way, then the error.
		for _, batch := range []int{2, 4} {
			s, _ := open(source.WithBatchSize(batch), source.WithTimeOrder("ts", 500*time.Millisecond))
			var err error
			rows := 0
			for err == nil {
				var rec arrow.RecordBatch
				if rec, err = s.Read(context.Background()); err == nil {
					rows += int(rec.NumRows())
					rec.Release()
				}
			}
			if err == io.EOF || !strings.Contains(err.Error(), "1s below") || !strings.Contains(err.Error(), "WithTimeOrder") {
				t.Fatalf("%s, batches of %d: %v, want the broken promise", name, batch, err)
			}
			if rows != 2 {
				t.Errorf("%s, batches of %d: %d rows before the error, want the 2 before the row that broke the promise", name, batch, rows)
			}
			s.Close()
		}

		plain, _ := open(source.WithBatchSize(2))
		rec, err := plain.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if _, ok := plain.LowerBound("ts"); ok {
			t.Fatalf("%s: a bound without WithTimeOrder", name)
		}
		plain.Close()
	}
}

// TestTextTimeOrderColumn: WithTimeOrder naming a column the input does
// not have, or one that is neither int64 nor a timestamp, fails the open
// with an error saying so; the promise was silently ignored.
func TestTextTimeOrderColumn(t *testing.T) {
	const in = "id,ts,name\n1,2024-01-01T00:00:01Z,a\n"
	for _, tc := range []struct{ col, want string }{
		{"time", `WithTimeOrder("time"): no such column (the input has id, ts, name)`},
		{"name", `WithTimeOrder("name"): the column is utf8; it must be int64 (epoch milliseconds) or a timestamp`},
	} {
		_, err := source.NewCSVReader(strings.NewReader(in), source.WithTimeOrder(tc.col, 0))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CSV, WithTimeOrder(%q): %v, want %q", tc.col, err, tc.want)
		}
		_, err = source.NewJSONLReader(strings.NewReader(`{"id":1,"ts":"2024-01-01T00:00:01Z","name":"a"}`+"\n"), source.WithTimeOrder(tc.col, 0))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("JSON lines, WithTimeOrder(%q): %v, want %q", tc.col, err, tc.want)
		}
	}
	for _, col := range []string{"TS", "id"} {
		s, err := source.NewCSVReader(strings.NewReader(in), source.WithTimeOrder(col, 0))
		if err != nil {
			t.Errorf("WithTimeOrder(%q): %v", col, err)
			continue
		}
		s.Close()
	}
}

// cancelAfter is a file that cancels a context once n bytes have been
// read from it: a Read of the source cancelled in the middle of a batch.
type cancelAfter struct {
	f      *os.File
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.f.Read(p)
	if c.n -= int64(k); c.n <= 0 {
		c.cancel()
	}
	return k, err
}

func (c *cancelAfter) Seek(off int64, whence int) (int64, error) { return c.f.Seek(off, whence) }

// TestTextReadCancelledKeepsPosition: a Read cancelled in the middle of
// a batch (a pipeline stopped gracefully, which then takes a final
// checkpoint of the source's position) returns the rows it consumed, or
// none and ctx's error; either way Position is just past the rows Read
// returned, so a source sought there reads the rest, every row once. It
// returned ctx's error and dropped the up to 1023 rows a batch had
// consumed, while Position was past them: a restored run skipped them.
func TestTextReadCancelledKeepsPosition(t *testing.T) {
	const rows = 20_000
	var csvIn, jsonIn strings.Builder
	csvIn.WriteString("id,v\n")
	for i := range rows {
		fmt.Fprintf(&csvIn, "%d,x%d\n", i, i)
		fmt.Fprintf(&jsonIn, "{\"id\":%d,\"v\":\"x%d\"}\n", i, i)
	}
	for name, in := range map[string]string{"csv": csvIn.String(), "jsonl": jsonIn.String()} {
		path := filepath.Join(t.TempDir(), "in."+name)
		if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cut := range []int64{30_000, 100_000, 200_000} {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			r := &cancelAfter{f: f, n: cut, cancel: cancel}
			open := func(r io.Reader) (interface {
				source.Source
				source.Seeker
			}, error) {
				if name == "csv" {
					return source.NewCSVReader(r, source.WithBatchSize(4096))
				}
				return source.NewJSONLReader(r, source.WithBatchSize(4096))
			}
			src, err := open(r)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for {
				rec, err := src.Read(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("%s, cut %d: %v", name, cut, err)
					}
					break
				}
				ids := rec.Column(0).(*array.Int64)
				for i := range ids.Len() {
					got = append(got, ids.Value(i))
				}
				rec.Release()
			}
			pos, err := src.Position()
			if err != nil {
				t.Fatal(err)
			}
			src.Close()
			f.Close()
			if len(got) == rows {
				t.Fatalf("%s, cut %d: nothing was cancelled", name, cut)
			}
			again, err := source.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := again.(source.Seeker).Seek(pos); err != nil {
				t.Fatal(err)
			}
			for {
				rec, err := again.Read(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				ids := rec.Column(0).(*array.Int64)
				for i := range ids.Len() {
					got = append(got, ids.Value(i))
				}
				rec.Release()
			}
			again.Close()
			if len(got) != rows {
				t.Errorf("%s, cut %d: %d rows before and after the position, want %d", name, cut, len(got), rows)
			}
			for i, id := range got {
				if id != int64(i) {
					t.Errorf("%s, cut %d: row %d is id %d", name, cut, i, id)
					break
				}
			}
		}
	}
}
