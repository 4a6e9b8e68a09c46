package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/source"
)

// directSchema has a column of every type the source decodes without
// pqarrow, required and optional, and some it leaves to pqarrow (strings,
// lists, structs, narrow integers).
var directSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i64n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "rise", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "i32n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "u32n", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "f32n", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
	{Name: "f64n", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "bn", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "tsus", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tsns", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	{Name: "t64", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	{Name: "sr", Type: arrow.BinaryTypes.String},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// directConfig is one randomly chosen file layout.
type directConfig struct {
	rows, rowGroup int
	dict           bool
	v2             bool
	pageSize       int64
	dictLimit      int64
	codec          compress.Compression
	encoding       parquet.Encoding // for the non-dictionary pages; 0: plain
	nullRate       float64
	distinct       int64 // values of the low-cardinality columns
}

func randomDirectConfig(rng *rand.Rand) directConfig {
	c := directConfig{
		rows:      1 + rng.IntN(3000),
		dict:      rng.IntN(4) != 0,
		v2:        rng.IntN(2) == 0,
		pageSize:  []int64{256, 2048, 1 << 20}[rng.IntN(3)],
		dictLimit: []int64{128, 4096, 1 << 20}[rng.IntN(3)],
		codec:     []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy}[rng.IntN(2)],
		nullRate:  []float64{0, 0.01, 0.3, 0.9, 1}[rng.IntN(5)],
		distinct:  []int64{1, 5, 1000}[rng.IntN(3)],
	}
	c.rowGroup = 20 + rng.IntN(c.rows+200)
	if rng.IntN(4) == 0 {
		c.encoding = []parquet.Encoding{parquet.Encodings.DeltaBinaryPacked, parquet.Encodings.ByteStreamSplit}[rng.IntN(2)]
	}
	return c
}

// writeDirectFile writes a file of directSchema with pqarrow's writer.
func writeDirectFile(tb testing.TB, path string, c directConfig, seed uint64) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	props := []parquet.WriterProperty{
		parquet.WithDictionaryDefault(c.dict),
		parquet.WithDataPageSize(c.pageSize),
		parquet.WithDictionaryPageSizeLimit(c.dictLimit),
		parquet.WithMaxRowGroupLength(int64(c.rowGroup)),
		parquet.WithCompression(c.codec),
		parquet.WithBatchSize(64),
	}
	if c.v2 {
		props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	if c.encoding == parquet.Encodings.DeltaBinaryPacked {
		for _, col := range []string{"i64", "i64n", "rise", "i32", "i32n", "ts", "tsns"} {
			props = append(props, parquet.WithEncodingFor(col, c.encoding))
		}
		props = append(props, parquet.WithEncodingFor("s", parquet.Encodings.DeltaLengthByteArray))
	} else if c.encoding == parquet.Encodings.ByteStreamSplit {
		for _, col := range []string{"f32n", "f64", "f64n"} {
			props = append(props, parquet.WithEncodingFor(col, c.encoding))
		}
	}
	w, err := pqarrow.NewFileWriter(directSchema, f, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		tb.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, directSchema)
	defer b.Release()
	null := func() bool { return rng.Float64() < c.nullRate }
	small := func() int64 {
		// Runs of repeated values now and then, for RLE runs of indices.
		return rng.Int64N(c.distinct) - c.distinct/2
	}
	var run int64
	for lo := 0; lo < c.rows; lo += 500 {
		for i := lo; i < min(lo+500, c.rows); i++ {
			if rng.IntN(20) == 0 {
				run = small()
			}
			b.Field(0).(*array.Int64Builder).Append(small() * 1_000_003)
			if null() {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int64Builder).Append(run)
			}
			b.Field(2).(*array.Int64Builder).Append(int64(i) + math.MinInt64/2)
			b.Field(3).(*array.Int32Builder).Append(int32(small()))
			if null() {
				b.Field(4).AppendNull()
			} else {
				b.Field(4).(*array.Int32Builder).Append(int32(rng.Int64N(1 << 31)))
			}
			if null() {
				b.Field(5).AppendNull()
			} else {
				b.Field(5).(*array.Uint32Builder).Append(math.MaxUint32 - uint32(rng.IntN(int(c.distinct))))
			}
			b.Field(6).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(rng.IntN(int(c.distinct))))
			if null() {
				b.Field(7).AppendNull()
			} else {
				b.Field(7).(*array.Float32Builder).Append([]float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 1.5, float32(small())}[rng.IntN(5)])
			}
			b.Field(8).(*array.Float64Builder).Append(float64(small()) / 3)
			if null() {
				b.Field(9).AppendNull()
			} else {
				b.Field(9).(*array.Float64Builder).Append([]float64{math.NaN(), math.Inf(1), math.Copysign(0, -1), rng.NormFloat64(), float64(run)}[rng.IntN(5)])
			}
			b.Field(10).(*array.BooleanBuilder).Append(rng.IntN(3) == 0)
			if null() {
				b.Field(11).AppendNull()
			} else {
				b.Field(11).(*array.BooleanBuilder).Append(run%2 == 0)
			}
			b.Field(12).(*array.TimestampBuilder).Append(arrow.Timestamp(1704067200000 + int64(i)*int64(rng.IntN(3))))
			if null() {
				b.Field(13).AppendNull()
			} else {
				b.Field(13).(*array.TimestampBuilder).Append(arrow.Timestamp(1704067200000000 + small()))
			}
			if null() {
				b.Field(14).AppendNull()
			} else {
				b.Field(14).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64()))
			}
			if null() {
				b.Field(15).AppendNull()
			} else {
				b.Field(15).(*array.Date32Builder).Append(arrow.Date32(19000 + small()))
			}
			if null() {
				b.Field(16).AppendNull()
			} else {
				b.Field(16).(*array.Time32Builder).Append(arrow.Time32(rng.IntN(86400000)))
			}
			if null() {
				b.Field(17).AppendNull()
			} else {
				b.Field(17).(*array.Time64Builder).Append(arrow.Time64(rng.Int64N(86400000000)))
			}
			if null() {
				b.Field(18).AppendNull()
			} else {
				b.Field(18).(*array.StringBuilder).Append(fmt.Sprintf("s%d", small()))
			}
			if null() {
				b.Field(19).AppendNull()
			} else {
				b.Field(19).(*array.Int8Builder).Append(int8(small()))
			}
			lb := b.Field(20).(*array.ListBuilder)
			if null() {
				lb.AppendNull()
			} else {
				lb.Append(true)
				for range rng.IntN(3) {
					lb.ValueBuilder().(*array.Int64Builder).Append(small())
				}
			}
			b.Field(22).(*array.StringBuilder).Append(strings.Repeat("é", int((run%7+7)%7)) + fmt.Sprint(small()))
			if null() {
				b.Field(23).AppendNull()
			} else {
				b.Field(23).(*array.BinaryBuilder).Append([]byte{byte(small()), 0, byte(run)}[:rng.IntN(4)])
			}
			sb := b.Field(21).(*array.StructBuilder)
			if null() {
				sb.AppendNull()
			} else {
				sb.Append(true)
				if null() {
					sb.FieldBuilder(0).AppendNull()
				} else {
					sb.FieldBuilder(0).(*array.Int64Builder).Append(small())
				}
			}
		}
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// pqarrowColumns reads the named columns (all for nil) of the files with
// pqarrow alone, each column concatenated over the files.
func pqarrowColumns(tb testing.TB, paths []string, names []string) (*arrow.Schema, []arrow.Array) {
	tb.Helper()
	var schema *arrow.Schema
	var chunks [][]arrow.Array
	for _, path := range paths {
		f, err := file.OpenParquetFile(path, false)
		if err != nil {
			tb.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: 777}, memory.DefaultAllocator)
		if err != nil {
			tb.Fatal(err)
		}
		var leaves []int
		full, err := fr.Schema()
		if err != nil {
			tb.Fatal(err)
		}
		for i := range fr.Manifest.Fields {
			if names == nil || slices.Contains(names, full.Field(i).Name) {
				leaves = appendLeafColumns(leaves, &fr.Manifest.Fields[i])
			}
		}
		rr, err := fr.GetRecordReader(context.Background(), leaves, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if schema == nil {
			schema = rr.Schema()
			chunks = make([][]arrow.Array, schema.NumFields())
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			for k := range chunks {
				a := rec.Column(k)
				a.Retain()
				chunks[k] = append(chunks[k], a)
			}
		}
		if err := rr.Err(); err != nil && err != io.EOF {
			tb.Fatal(err)
		}
		rr.Release()
		f.Close()
	}
	return schema, concatChunks(tb, schema, chunks)
}

func appendLeafColumns(dst []int, sf *pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 {
		return append(dst, sf.ColIndex)
	}
	for i := range sf.Children {
		dst = appendLeafColumns(dst, &sf.Children[i])
	}
	return dst
}

func concatChunks(tb testing.TB, schema *arrow.Schema, chunks [][]arrow.Array) []arrow.Array {
	tb.Helper()
	out := make([]arrow.Array, len(chunks))
	for k, cs := range chunks {
		if len(cs) == 0 {
			out[k] = array.MakeArrayOfNull(memory.DefaultAllocator, schema.Field(k).Type, 0)
			continue
		}
		a, err := array.Concatenate(cs, memory.DefaultAllocator)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range cs {
			c.Release()
		}
		out[k] = a
	}
	return out
}

// sourceColumns drains src, each column concatenated over the batches.
func sourceColumns(tb testing.TB, src source.Source) []arrow.Array {
	tb.Helper()
	schema := src.Schema()
	chunks := make([][]arrow.Array, schema.NumFields())
	for {
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if !rec.Schema().Equal(schema) {
			tb.Fatalf("batch schema %s, source schema %s", rec.Schema(), schema)
		}
		for k := range chunks {
			a := rec.Column(k)
			a.Retain()
			chunks[k] = append(chunks[k], a)
		}
		rec.Release()
	}
	return concatChunks(tb, schema, chunks)
}

// sameArray reports whether a and b hold the same values: floats bit for
// bit (NaNs, negative zero), everything else by array.Equal.
func sameArray(a, b arrow.Array) bool {
	if !arrow.TypeEqual(a.DataType(), b.DataType()) || a.Len() != b.Len() || a.NullN() != b.NullN() {
		return false
	}
	switch a := a.(type) {
	case *array.Float64:
		b := b.(*array.Float64)
		for i := range a.Len() {
			if a.IsNull(i) != b.IsNull(i) || a.IsValid(i) && math.Float64bits(a.Value(i)) != math.Float64bits(b.Value(i)) {
				return false
			}
		}
		return true
	case *array.Float32:
		b := b.(*array.Float32)
		for i := range a.Len() {
			if a.IsNull(i) != b.IsNull(i) || a.IsValid(i) && math.Float32bits(a.Value(i)) != math.Float32bits(b.Value(i)) {
				return false
			}
		}
		return true
	}
	return array.Equal(a, b)
}

func releaseCols(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// checkDirect reads the files through the source (all columns and a
// projection, a few batch sizes and decoder counts, and from positions in
// the middle of row groups) and compares every column with pqarrow's.
// With delta encodings, arrow-go v18.8.0's delta decoders (in pqarrow)
// leave buffers allocated from the allocator (not a leak with Go's
// allocator): the allocator is then not checked (leaks false).
func checkDirect(t *testing.T, paths []string, rng *rand.Rand, leaks bool) {
	t.Helper()
	var total int64
	var rowsPer []int64
	for _, p := range paths {
		f, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		rowsPer = append(rowsPer, f.NumRows())
		total += f.NumRows()
		f.Close()
	}
	projections := [][]string{nil, {"tsns", "s", "i64", "bn", "f64n"}, {"i32n", "sr"}, {"list", "rise", "st", "bin"}}
	for pi, names := range projections {
		wantSchema, want := pqarrowColumns(t, paths, names)
		batch := []int{1 + rng.IntN(50), 4096, 1 + rng.IntN(5000)}[rng.IntN(3)]
		dec := 1 + rng.IntN(3)
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		opts := []source.Option{source.WithBatchSize(batch), source.WithDecoders(dec), source.WithAllocator(mem)}
		if names != nil {
			opts = append(opts, source.WithColumns(names...))
		}
		src, err := source.NewParquetFiles(paths, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !src.Schema().Equal(wantSchema) {
			t.Fatalf("projection %d: schema\n%s\nwant\n%s", pi, src.Schema(), wantSchema)
		}
		got := sourceColumns(t, src)
		for k := range want {
			if !sameArray(got[k], want[k]) {
				t.Fatalf("projection %d, batch %d, decoders %d: column %s differs:\n got %v\nwant %v", pi, batch, dec, wantSchema.Field(k).Name, got[k], want[k])
			}
		}
		releaseCols(got)
		// Seek to random rows of random files.
		for range 3 {
			fi := rng.IntN(len(paths))
			row := rng.Int64N(rowsPer[fi] + 1)
			from := row
			for _, n := range rowsPer[:fi] {
				from += n
			}
			pos := make([]byte, 16)
			for k := range 8 {
				pos[7-k] = byte(uint64(fi) >> (8 * k))
				pos[15-k] = byte(uint64(row) >> (8 * k))
			}
			if err := src.Seek(pos); err != nil {
				t.Fatal(err)
			}
			got := sourceColumns(t, src)
			for k := range want {
				w := array.NewSlice(want[k], from, total)
				if !sameArray(got[k], w) {
					t.Fatalf("projection %d, batch %d, decoders %d, seek to (%d, %d): column %s differs:\n got %v\nwant %v", pi, batch, dec, fi, row, wantSchema.Field(k).Name, got[k], w)
				}
				w.Release()
			}
			releaseCols(got)
		}
		src.Close()
		releaseCols(want)
		if leaks {
			mem.AssertSize(t, 0)
		}
	}
}

// TestParquetDirectSameAsPqarrow: files of random layouts (dictionary
// and plain pages, dictionaries that fall back to plain, data pages v1
// and v2, small pages, delta and byte-stream-split encodings, NULL rates
// from none to all, one to many row groups, several files) read through
// the source equal pqarrow's reading, column for column, from the start
// and after Seek into the middle of row groups, whole or projected.
func TestParquetDirectSameAsPqarrow(t *testing.T) {
	n := 30
	if testing.Short() || testutil.Race {
		n = 6
	}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 42))
		dir := t.TempDir()
		var paths []string
		var cfgs []directConfig
		for fi := range 1 + rng.IntN(3) {
			c := randomDirectConfig(rng)
			p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", fi))
			writeDirectFile(t, p, c, seed*10+uint64(fi))
			paths = append(paths, p)
			cfgs = append(cfgs, c)
		}
		// Odd seeds decode the fixed-width columns with parquet/file's
		// column chunk readers, even ones page by page (pqPages) where
		// the encodings allow.
		pages := seed%2 == 0
		t.Run(fmt.Sprintf("seed%d/pages=%v", seed, pages), func(t *testing.T) {
			defer source.SetPageDecoding(source.SetPageDecoding(pages))
			defer func() {
				if t.Failed() {
					t.Logf("files: %+v", cfgs)
				}
			}()
			leaks := !slices.ContainsFunc(cfgs, func(c directConfig) bool { return c.encoding == parquet.Encodings.DeltaBinaryPacked })
			checkDirect(t, paths, rng, leaks)
		})
	}
}

// FuzzParquetDirect is TestParquetDirectSameAsPqarrow with fuzzed seeds,
// both decoders.
func FuzzParquetDirect(f *testing.F) {
	f.Add(uint64(1000))
	f.Add(uint64(1001))
	f.Fuzz(func(t *testing.T, seed uint64) {
		defer source.SetPageDecoding(source.SetPageDecoding(seed%2 == 0))
		rng := rand.New(rand.NewPCG(seed, 43))
		c := randomDirectConfig(rng)
		p := filepath.Join(t.TempDir(), "f.parquet")
		writeDirectFile(t, p, c, seed)
		checkDirect(t, []string{p}, rng, c.encoding != parquet.Encodings.DeltaBinaryPacked)
	})
}

// TestParquetProject: WithColumns and Project keep the named columns in
// file order, refuse unknown names (naming them), and Project is refused
// after the first Read.
func TestParquetProject(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.parquet")
	writeDecFile(t, path, 0, 30, 7)

	src, err := source.NewParquetFiles([]string{path}, source.WithColumns("amount", "id", "amount"), source.WithBatchSize(8))
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(src.Schema()); !slices.Equal(got, []string{"id", "amount"}) {
		t.Fatalf("WithColumns: schema %v", got)
	}
	rows, _ := readAll(t, src)
	if len(rows) != 30 || rows[5][0] != int64(5) || rows[5][1] != 5.0/4 {
		t.Fatalf("rows: %v", rows)
	}
	if err := src.Project([]string{"id"}); err == nil || !strings.Contains(err.Error(), "after the first Read") {
		t.Fatalf("Project after Read: %v", err)
	}
	src.Close()

	if _, err := source.NewParquetFiles([]string{path}, source.WithColumns("id", "nope")); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown column: %v", err)
	}

	src, err = source.NewParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var pr source.Projector = src
	if err := pr.Project(nil); err == nil {
		t.Fatal("empty projection accepted")
	}
	if err := pr.Project([]string{"user", "amount"}); err != nil {
		t.Fatal(err)
	}
	if err := pr.Project([]string{"id"}); err == nil || !strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("Project of a column projected away: %v", err)
	}
	if err := pr.Project([]string{"amount", "user"}); err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(src.Schema()); !slices.Equal(got, []string{"user", "amount"}) {
		t.Fatalf("Project: schema %v", got)
	}
	// Seek before the first Read is fine; the projection stays.
	pos := make([]byte, 16)
	pos[15] = 10
	if err := src.Seek(pos); err != nil {
		t.Fatal(err)
	}
	if err := pr.Project([]string{"amount"}); err != nil {
		t.Fatal(err)
	}
	rows, _ = readAll(t, src)
	if len(rows) != 20 || len(rows[0]) != 1 || rows[0][0] != 10.0/4 {
		t.Fatalf("rows after Seek and Project: %v", rows[:1])
	}
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}
