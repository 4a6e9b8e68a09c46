package sink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Every sink satisfies the contract.
var (
	_ Sink = (*Collector)(nil)
	_ Sink = (*Callback)(nil)
	_ Sink = (*CSV)(nil)
	_ Sink = (*JSONL)(nil)
	_ Sink = (*Parquet)(nil)
)

const wantCSV = `id,amount,ok,name,ts,ts_us,top,freq,cate
1,0.1,true,"say ""hi"", ok",2024-01-03T10:00:00Z,2024-01-03T10:00:00.000001Z,"9,7","a:3,b:1","x:1,y:2.5"
-7,NaN,false,,2024-01-03T10:00:00.5Z,,,,
`

func TestCSVSink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()

	var buf bytes.Buffer
	s := NewCSV(&buf)
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != wantCSV {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), wantCSV)
	}
	if err := s.Write(context.Background(), rec); err == nil {
		t.Fatal("write after Close succeeded")
	}
}

func TestCSVSinkFileTwoBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.csv")
	s, err := CreateCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.SplitN(wantCSV, "\n", 2)[1]
	if want := wantCSV + body; string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTextSinkRejectsOtherColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	other := rec.NewSlice(0, 1)
	defer other.Release()
	renamed := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), []arrow.Array{rec.Column(0)}, rec.NumRows())
	defer renamed.Release()
	for _, s := range []Sink{NewCSV(&bytes.Buffer{}), NewJSONL(&bytes.Buffer{})} {
		if err := s.Write(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), renamed); err == nil {
			t.Fatalf("%T accepted a batch with other columns", s)
		}
	}
}

func TestJSONLSink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s, err := CreateJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `{"id":1,"amount":0.1,"ok":true,"name":"say \"hi\", ok","ts":"2024-01-03T10:00:00Z","ts_us":"2024-01-03T10:00:00.000001Z","top":[9,7],"freq":[{"value":"a","count":3},{"value":"b","count":1}],"cate":{"x":1,"y":2.5}}
{"id":-7,"amount":null,"ok":false,"name":null,"ts":"2024-01-03T10:00:00.5Z","ts_us":null,"top":[],"freq":null,"cate":{}}
`
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCollector(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	c := NewCollector()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := c.Write(context.Background(), rec); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.Release() // the collector holds its own references
	if c.NumRows() != 16 || len(c.Records()) != 8 || len(c.Rows()) != 16 {
		t.Fatalf("rows %d records %d", c.NumRows(), len(c.Records()))
	}
	if got := c.Rows()[15][0]; got != int64(-7) {
		t.Fatalf("last row id %v", got)
	}
	if err := c.Close(); err != nil || !c.Closed() {
		t.Fatal("Close")
	}
	c.Release()
	if c.NumRows() != 0 {
		t.Fatal("Release kept rows")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(ctx, rec); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
}

func TestCallback(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	var n int64
	boom := errors.New("boom")
	s := NewCallback(func(_ context.Context, r arrow.RecordBatch) error {
		n += r.NumRows()
		if n > 2 {
			return boom
		}
		return nil
	})
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), rec); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if n != 4 || s.Close() != nil {
		t.Fatalf("n = %d", n)
	}
}

func TestParquetSink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.parquet")
	s, err := NewParquet(path, nil, WithRowGroupSize(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("file created before the first batch")
	}
	for range 3 {
		if err := s.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if got := rdr.NumRowGroups(); got != 2 {
		t.Errorf("row groups: got %d, want 2 (6 rows, 3 per group)", got)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 6 {
		t.Fatalf("rows: %d", tbl.NumRows())
	}
	if got := tbl.Schema().Field(4).Type; !arrow.TypeEqual(got, arrow.FixedWidthTypes.Timestamp_ms) {
		t.Errorf("timestamp type lost: %s", got)
	}
	tr := array.NewTableReader(tbl, 6)
	defer tr.Release()
	tr.Next()
	got := tr.RecordBatch()
	for i := range int(got.NumRows()) {
		// Compare as text so NaN == NaN.
		for c := range int(got.NumCols()) {
			if g, w := FormatValue(got.Column(c), i), FormatValue(rec.Column(c), i%2); g != w {
				t.Errorf("row %d col %d: got %q, want %q", i, c, g, w)
			}
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		want string
	}{{"a.csv", "*sink.CSV"}, {"b.JSONL", "*sink.JSONL"}, {"c.ndjson", "*sink.JSONL"}, {"d.parquet", "*sink.Parquet"}} {
		s, err := Open(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(s); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := Open(filepath.Join(dir, "x.xlsx")); err == nil || !strings.Contains(err.Error(), ".xlsx") {
		t.Errorf("unknown extension: %v", err)
	}
	s, err := Open("-")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stdout.Stat(); err != nil {
		t.Fatalf("stdout closed: %v", err)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *CSV:
		return "*sink.CSV"
	case *JSONL:
		return "*sink.JSONL"
	case *Parquet:
		return "*sink.Parquet"
	}
	return "?"
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCSVSinkWriteError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildTestRecord(t, mem)
	defer rec.Release()
	s := NewCSV(failWriter{})
	_ = s.Write(context.Background(), rec) // buffered: may not fail yet
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close: %v", err)
	}
}
