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
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/source"
)

// The brute-force check of the Parquet source against the values written:
// random files (every column type the writer takes that a feature table
// may hold, NULLs, dictionary or plain pages, v1 or v2 pages, row groups
// of random sizes, empty files among the others) written with pqarrow,
// read back through the source with random batch sizes, decoder counts
// and projections, must give the values written, row for row; and from
// every position Position gave after a Read, a fresh source that Seeks
// there must give exactly the remaining rows.

var rvPqSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "tsms", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	{Name: "tsus", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tsns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t64", Type: arrow.FixedWidthTypes.Time64ns, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true},
	{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "req", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// rvPqBatch builds rows rows of rvPqSchema, ids from first.
func rvPqBatch(r *rand.Rand, first, rows int, nullRate float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rvPqSchema)
	defer b.Release()
	for i := range rows {
		for k, f := range rvPqSchema.Fields() {
			fb := b.Field(k)
			if f.Nullable && r.Float64() < nullRate {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(first + i))
			case *array.Int8Builder:
				fb.Append(int8(r.Uint32()))
			case *array.Int16Builder:
				fb.Append(int16(r.Uint32()))
			case *array.Int32Builder:
				fb.Append([]int32{math.MinInt32, math.MaxInt32, 0, int32(r.Uint32())}[r.IntN(4)])
			case *array.Uint8Builder:
				fb.Append(uint8(r.Uint32()))
			case *array.Uint16Builder:
				fb.Append(uint16(r.Uint32()))
			case *array.Uint32Builder:
				fb.Append([]uint32{math.MaxUint32, 0, r.Uint32()}[r.IntN(3)])
			case *array.Uint64Builder:
				fb.Append([]uint64{math.MaxUint64, 0, r.Uint64()}[r.IntN(3)])
			case *array.Float32Builder:
				fb.Append([]float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), r.Float32()}[r.IntN(4)])
			case *array.Float64Builder:
				fb.Append([]float64{math.NaN(), math.Inf(1), math.Copysign(0, -1), r.NormFloat64() * 1e10, float64(r.IntN(5))}[r.IntN(5)])
			case *array.BooleanBuilder:
				fb.Append(r.IntN(2) == 0)
			case *array.StringBuilder:
				fb.Append([]string{"", "a", "é日本", strconv.Itoa(r.IntN(10)), fmt.Sprint(r.Uint64())}[r.IntN(5)])
			case *array.LargeStringBuilder:
				fb.Append([]string{"", "x,y", strconv.Itoa(r.IntN(1000))}[r.IntN(3)])
			case *array.BinaryBuilder:
				fb.Append([]byte{byte(r.IntN(3)), 0, 255}[:r.IntN(4)])
			case *array.TimestampBuilder:
				unit := f.Type.(*arrow.TimestampType).Unit
				tm := time.Unix(r.Int64N(8e9)-4e9, r.Int64N(1e9))
				switch unit {
				case arrow.Millisecond:
					fb.Append(arrow.Timestamp(tm.UnixMilli()))
				case arrow.Microsecond:
					fb.Append(arrow.Timestamp(tm.UnixMicro()))
				default:
					fb.Append(arrow.Timestamp(tm.UnixNano()))
				}
			case *array.Date32Builder:
				fb.Append(arrow.Date32(r.IntN(80000) - 40000))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(r.Int64N(86400e9)))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(r.Int64N(2e15) - 1e15))
			case *array.ListBuilder:
				fb.Append(true)
				for range r.IntN(3) {
					if r.IntN(5) == 0 {
						fb.ValueBuilder().AppendNull()
					} else {
						fb.ValueBuilder().(*array.Int64Builder).Append(r.Int64())
					}
				}
			default:
				panic(fmt.Sprintf("no generator for %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// rvPqWrite writes the batches to path as one Parquet file with random
// writer properties, and returns them concatenated (nil for none).
func rvPqWrite(t *testing.T, r *rand.Rand, path string, recs []arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := []parquet.WriterProperty{
		parquet.WithDictionaryDefault(r.IntN(2) == 0),
		parquet.WithDataPageSize([]int64{128, 4096, 1 << 20}[r.IntN(3)]),
		parquet.WithMaxRowGroupLength(int64(1 + r.IntN(300))),
		parquet.WithBatchSize(int64(1 + r.IntN(100))),
	}
	if r.IntN(2) == 0 {
		props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	w, err := pqarrow.NewFileWriter(rvPqSchema, f, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		err = w.Write(rec)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// rvPqRead reads src to its end, noting the position before each Read and
// how many rows had been read then; it returns each column concatenated.
func rvPqRead(t *testing.T, src source.Source) ([]arrow.Array, []rvState) {
	t.Helper()
	schema := src.Schema()
	chunks := make([][]arrow.Array, schema.NumFields())
	var states []rvState
	rows := 0
	for {
		pos, err := src.(source.Seeker).Position()
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, rvState{pos: pos, rows: rows})
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Schema().Equal(schema) {
			t.Fatalf("batch schema %s, source schema %s", rec.Schema(), schema)
		}
		if rec.NumRows() == 0 {
			t.Fatalf("an empty batch")
		}
		rows += int(rec.NumRows())
		for k := range chunks {
			a := rec.Column(k)
			a.Retain()
			chunks[k] = append(chunks[k], a)
		}
		rec.Release()
	}
	return concatChunks(t, schema, chunks), states
}

func TestReviewParquetBruteForce(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REVIEW_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (REVIEW_SEED=%d reruns it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0x9a7))
	for iter := range 12 {
		dir := t.TempDir()
		nf := 1 + r.IntN(4)
		var paths []string
		var all []arrow.RecordBatch
		id := 0
		for f := range nf {
			var recs []arrow.RecordBatch
			nulls := []float64{0, 0.2, 1}[r.IntN(3)]
			for range r.IntN(4) { // no batch: a file without rows
				n := r.IntN(400)
				recs = append(recs, rvPqBatch(r, id, n, nulls))
				id += n
			}
			p := filepath.Join(dir, fmt.Sprintf("part%02d.parquet", f))
			rvPqWrite(t, r, p, recs)
			paths = append(paths, p)
			all = append(all, recs...)
		}
		what := fmt.Sprintf("seed %d iter %d (%d files, %d rows)", seed, iter, nf, id)
		// The reference: the batches written, column by column.
		want := make([]arrow.Array, rvPqSchema.NumFields())
		for k := range want {
			var cs []arrow.Array
			for _, rec := range all {
				cs = append(cs, rec.Column(k))
			}
			if len(cs) == 0 {
				want[k] = array.MakeArrayOfNull(memory.DefaultAllocator, rvPqSchema.Field(k).Type, 0)
				continue
			}
			a, err := array.Concatenate(cs, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			want[k] = a
		}
		for _, rec := range all {
			rec.Release()
		}
		// A random projection, in a random order, or every column.
		var cols []int
		if r.IntN(2) == 0 {
			cols = r.Perm(rvPqSchema.NumFields())[:1+r.IntN(rvPqSchema.NumFields())]
		}
		// The source keeps the file's order of the columns, whatever
		// the order of the names.
		var ordered []int
		for k := range rvPqSchema.NumFields() {
			if slices.Contains(cols, k) {
				ordered = append(ordered, k)
			}
		}
		var names []string
		for _, k := range cols {
			names = append(names, rvPqSchema.Field(k).Name)
		}
		cols = ordered
		if cols == nil {
			for k := range rvPqSchema.NumFields() {
				cols = append(cols, k)
			}
		}
		batch := []int{1, 1 + r.IntN(50), 1 + r.IntN(1000), 4096}[r.IntN(4)]
		decoders := 1 + r.IntN(3)
		open := func() *source.Parquet {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			opts := []source.Option{source.WithBatchSize(batch), source.WithDecoders(decoders), source.WithAllocator(mem)}
			if names != nil {
				opts = append(opts, source.WithColumns(names...))
			}
			src, err := source.NewParquetFiles(paths, opts...)
			if err != nil {
				t.Fatalf("%s: open: %v", what, err)
			}
			return src
		}
		check := func(label string, got []arrow.Array, from int) {
			t.Helper()
			if len(got) != len(cols) {
				t.Fatalf("%s%s: %d columns, want %d", what, label, len(got), len(cols))
			}
			for j, k := range cols {
				w := array.NewSlice(want[k], int64(from), int64(want[k].Len()))
				if !sameArray(got[j], w) {
					t.Fatalf("%s%s (batch %d, decoders %d, columns %v): column %s from row %d differs:\n got %v\nwant %v", what, label, batch, decoders, names, rvPqSchema.Field(k).Name, from, got[j], w)
				}
				w.Release()
			}
		}
		src := open()
		got, states := rvPqRead(t, src)
		check("", got, 0)
		releaseCols(got)
		src.Close()
		for si, st := range states {
			if len(states) > 20 && r.IntN(len(states)/10) != 0 && si != len(states)-1 {
				continue
			}
			src := open()
			if err := src.Seek(st.pos); err != nil {
				t.Fatalf("%s: Seek to state %d: %v", what, si, err)
			}
			got, _ := rvPqRead(t, src)
			check(fmt.Sprintf(" restored at row %d", st.rows), got, st.rows)
			releaseCols(got)
			src.Close()
		}
		releaseCols(want)
	}
}
