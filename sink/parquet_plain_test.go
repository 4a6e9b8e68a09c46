package sink

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestEstimateDistinct: from a sample's distinct count, the estimate of
// the distinct values in a whole row group drawn from populations of 10
// to 10^7 values is within 10 % of the count in such a row group.
func TestEstimateDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, rows = 4096, 128 << 10
	for _, pop := range []int{10, 1000, 30_000, 100_000, 1_000_000, 10_000_000} {
		seen := map[int]bool{}
		var d int
		for k := range rows {
			v := rng.IntN(pop)
			if !seen[v] {
				seen[v] = true
				if k < n {
					d++
				}
			}
		}
		// d counts the values new among the first n draws.
		got, want := estimateDistinct(d, n, rows), float64(len(seen))
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("population %d: %d distinct of %d sampled, estimate %.0f for %d rows, actual %.0f", pop, d, n, got, rows, want)
		}
	}
	if got := estimateDistinct(n, n, rows); got != rows {
		t.Errorf("all distinct: %.0f, want %d", got, rows)
	}
}

// TestParquetPlainColumns: a Parquet sink writes ids and times (every
// value distinct) and a measure of many values without dictionary
// encoding, and keeps the dictionary for columns of few values and the
// string column (booleans have none); a first batch too small to judge
// keeps every dictionary; the values read back are those written.
func TestParquetPlainColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64},
		{Name: "cat", Type: arrow.PrimitiveTypes.Int32},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	rng := rand.New(rand.NewPCG(7, 8))
	batch := func(base, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := base; i < base+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(i)*37))
			b.Field(2).(*array.Float64Builder).Append(rng.Float64() * 1000)
			b.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(12)))
			b.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(200)) / 4)
			b.Field(5).(*array.StringBuilder).Append([]string{"a", "b", "c"}[rng.IntN(3)])
			b.Field(6).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		return b.NewRecordBatch()
	}
	for name, c := range map[string]struct {
		first int
		dict  []string // columns with a dictionary page
	}{
		"judged":    {8192, []string{"cat", "score", "name"}},
		"too small": {100, []string{"id", "ts", "price", "cat", "score", "name"}},
	} {
		path := filepath.Join(t.TempDir(), "out.parquet")
		s, err := NewParquet(path, schema, WithRowGroupSize(16<<10))
		if err != nil {
			t.Fatal(err)
		}
		recs := []arrow.RecordBatch{batch(0, c.first), batch(c.first, 20_000)}
		for _, rec := range recs {
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
		for g := range rdr.NumRowGroups() {
			var dict []string
			md := rdr.MetaData().RowGroup(g)
			for k := range md.NumColumns() {
				cc, err := md.ColumnChunk(k)
				if err != nil {
					t.Fatal(err)
				}
				if cc.HasDictionaryPage() {
					dict = append(dict, schema.Field(k).Name)
				}
			}
			if !slices.Equal(dict, c.dict) {
				t.Errorf("%s: row group %d has dictionaries for %v, want %v", name, g, dict, c.dict)
			}
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1<<20)
		tr.Next()
		got := tr.RecordBatch()
		row := 0
		for _, rec := range recs {
			for i := range int(rec.NumRows()) {
				for col := range int(rec.NumCols()) {
					if g, w := FormatValue(got.Column(col), row), FormatValue(rec.Column(col), i); g != w {
						t.Fatalf("%s: row %d column %s: read %s, wrote %s", name, row, schema.Field(col).Name, g, w)
					}
				}
				row++
			}
			rec.Release()
		}
		tr.Release()
		tbl.Release()
		rdr.Close()
	}
}
