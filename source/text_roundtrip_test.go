package source_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/values"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// The round-trip property of the text formats: a batch written by the
// CSV or JSON-lines sink and read back by the source of the same format
// with the batch's schema (WithSchema) gives the same values, except
// where the format cannot hold a value, which rtExpect spells out:
// JSON has no NaN or ±Inf (the sink writes null), and in CSV an empty
// string is an empty field, which reads as NULL.

// rtTypes are the column types text sources decode (textrow.NewColumn).
var rtTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
	&arrow.TimestampType{Unit: arrow.Second}, arrow.FixedWidthTypes.Timestamp_ms,
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, &arrow.TimestampType{Unit: arrow.Nanosecond},
	arrow.FixedWidthTypes.Date32,
}

// rtStrings are awkward strings for both formats: separators, quotes,
// line breaks of every kind, leading and trailing blanks, a BOM, the
// words of other types, and the empty string.
var rtStrings = []string{
	"", " ", "a", "a,b", `"`, `say "hi"`, "x\ny", "x\r\ny", "\r", "\n", "\r\n", "x\r", " lead", "trail ",
	"\tt", "\ufeffbom", "NULL", "null", "true", "1", "1e3", "-0", "NaN", "2024-01-03T10:00:00Z",
	"é, ü", "日本", `back\slash`, "{\"a\":1}", "[1]", "#", "'", ";",
}

func rtValue(r *rand.Rand, dt arrow.DataType, b array.Builder) {
	if r.IntN(6) == 0 {
		b.AppendNull()
		return
	}
	pick := func(special ...int64) int64 { return special[r.IntN(len(special))] }
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(pick(math.MinInt8, math.MaxInt8, 0, -1, int64(int8(r.Uint32())))))
	case *array.Int16Builder:
		b.Append(int16(pick(math.MinInt16, math.MaxInt16, 0, int64(int16(r.Uint32())))))
	case *array.Int32Builder:
		b.Append(int32(pick(math.MinInt32, math.MaxInt32, 0, int64(int32(r.Uint32())))))
	case *array.Int64Builder:
		b.Append(pick(math.MinInt64, math.MaxInt64, 0, -1, r.Int64()-r.Int64(), r.Int64N(1000)))
	case *array.Uint8Builder:
		b.Append(uint8(r.Uint32()))
	case *array.Uint16Builder:
		b.Append(uint16(r.Uint32()))
	case *array.Uint32Builder:
		b.Append(r.Uint32())
	case *array.Uint64Builder:
		b.Append([]uint64{0, math.MaxUint64, r.Uint64(), r.Uint64N(100)}[r.IntN(4)])
	case *array.Float32Builder:
		fs := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
			math.MaxFloat32, math.SmallestNonzeroFloat32, 1, 0.1, math.Float32frombits(r.Uint32())}
		b.Append(fs[r.IntN(len(fs))])
	case *array.Float64Builder:
		fs := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64,
			math.SmallestNonzeroFloat64, 1e21, 1e-7, 3, 0.1, math.Float64frombits(r.Uint64()), r.NormFloat64() * 1e6}
		b.Append(fs[r.IntN(len(fs))])
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(rtString(r))
	case *array.LargeStringBuilder:
		b.Append(rtString(r))
	case *array.TimestampBuilder:
		// Years 0001 to 9999: what RFC 3339 can write.
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
		unit := dt.(*arrow.TimestampType).Unit
		if unit == arrow.Nanosecond {
			lo, hi = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
		}
		l, h := values.Units(lo, unit), values.Units(hi, unit)
		v := []int64{0, -1, 1, l, h, l + int64(r.Uint64N(uint64(h)-uint64(l)))}[r.IntN(6)]
		b.Append(arrow.Timestamp(v))
	case *array.Date32Builder:
		lo := int64(arrow.Date32FromTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
		hi := int64(arrow.Date32FromTime(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)))
		b.Append(arrow.Date32([]int64{0, -1, lo, hi, lo + r.Int64N(hi-lo)}[r.IntN(5)]))
	default:
		panic(fmt.Sprintf("no generator for %s", dt))
	}
}

func rtString(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return rtStrings[r.IntN(len(rtStrings))]
	case 1:
		return rtStrings[r.IntN(len(rtStrings))] + rtStrings[r.IntN(len(rtStrings))]
	}
	// Random runes from an alphabet rich in CSV and JSON syntax.
	const alphabet = ",\"\r\n \t\\{}[]:ab01é\u2028"
	runes := []rune(alphabet)
	n := r.IntN(6)
	var sb strings.Builder
	for range n {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}

// rtBatch returns a random batch of rows over a random schema of 1 to 4
// columns.
func rtBatch(r *rand.Rand, mem memory.Allocator) arrow.RecordBatch {
	n := 1 + r.IntN(4)
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: rtTypes[r.IntN(len(rtTypes))], Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	rows := r.IntN(20)
	for range rows {
		for i, f := range fields {
			rtValue(r, f.Type, b.Field(i))
		}
	}
	return b.NewRecordBatch()
}

// rtExpect is the value the source must read back for row i of column
// arr written in format ("csv" or "jsonl").
func rtExpect(format string, arr arrow.Array, i int) any {
	v := sink.Value(arr, i)
	switch x := v.(type) {
	case float64:
		if format == "jsonl" && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return nil
		}
	case string:
		if format == "csv" && x == "" {
			return nil
		}
	case time.Time:
		return x.UTC()
	}
	return v
}

// rtSame compares values, floats by their bits (NaN equals NaN, 0 is not
// -0) and times as instants.
func rtSame(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return reflect.DeepEqual(a, b)
}

// roundTrip writes rec with the sink of format, reads it back with the
// source of the same format and rec's schema, and reports the first
// difference.
func roundTrip(t *testing.T, format string, rec arrow.RecordBatch) {
	t.Helper()
	var buf bytes.Buffer
	var s sink.Sink
	if format == "csv" {
		s = sink.NewCSV(&buf)
	} else {
		s = sink.NewJSONL(&buf)
	}
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	compareRead(t, format, buf.Bytes(), rec)
}

// compareRead reads data, written in format from rec, with rec's schema
// and compares the rows with rec's.
func compareRead(t *testing.T, format string, data []byte, rec arrow.RecordBatch) {
	t.Helper()
	buf := bytes.NewBuffer(data)
	var dl []source.DeadLetter
	opts := []source.Option{source.WithSchema(rec.Schema()), collectDead(&dl), source.WithBatchSize(3)}
	var src source.Source
	var err error
	if format == "csv" {
		src, err = source.NewCSVReader(bytes.NewReader(buf.Bytes()), opts...)
	} else {
		src, err = source.NewJSONLReader(bytes.NewReader(buf.Bytes()), opts...)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", format, err, buf.Bytes())
	}
	got, _ := readAll(t, src)
	src.Close()
	if len(dl) > 0 {
		t.Fatalf("%s: dead letter %+v (raw %q)\nschema %s\noutput %q", format, dl[0], dl[0].Raw, rec.Schema(), buf.Bytes())
	}
	if len(got) != int(rec.NumRows()) {
		t.Fatalf("%s: %d rows read back, %d written\nschema %s\noutput %q", format, len(got), rec.NumRows(), rec.Schema(), buf.Bytes())
	}
	for c := range int(rec.NumCols()) {
		for i := range got {
			want := rtExpect(format, rec.Column(c), i)
			if !rtSame(got[i][c], want) {
				t.Fatalf("%s: row %d column %s (%s): read back %#v, wrote %#v\noutput %q", format, i, rec.Schema().Field(c).Name,
					rec.Schema().Field(c).Type, got[i][c], want, buf.Bytes())
			}
		}
	}
}

// roundTripFile is roundTrip through the transactional file sinks
// (CreateCSV, CreateJSONL) under checkpoints: rec is written in slices,
// each epoch prepared and committed at random, and a last slice is written
// after the last PrepareCommit and dropped by Close, as a crash would
// drop it. The file must hold exactly the rows of the committed epochs,
// and the staging directory must be gone.
func roundTripFile(t *testing.T, r *rand.Rand, format string, rec arrow.RecordBatch) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out."+format)
	var s interface {
		sink.Sink
		sink.Committer
	}
	var err error
	if format == "csv" {
		s, err = sink.CreateCSV(path)
	} else {
		s, err = sink.CreateJSONL(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := rec.NumRows()
	committed, epoch := int64(0), uint64(0)
	for from := int64(0); from < n; {
		to := min(n, from+1+r.Int64N(5))
		part := rec.NewSlice(from, to)
		err := s.Write(ctx, part)
		part.Release()
		if err != nil {
			t.Fatal(err)
		}
		from = to
		if to < n || r.IntN(2) == 0 {
			epoch++
			if _, err := s.PrepareCommit(ctx, epoch); err != nil {
				t.Fatal(err)
			}
			if err := s.Commit(ctx, epoch); err != nil {
				t.Fatal(err)
			}
			committed = to
		}
	}
	if epoch == 0 { // no checkpoint at all: Close publishes everything
		committed = n
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), ".out."+format+".volga")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging directory left behind: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := rec.NewSlice(0, committed)
	defer want.Release()
	if committed == 0 {
		// Nothing published: the file is empty, without a CSV header.
		if len(data) != 0 {
			t.Fatalf("%s: nothing committed, file %q", format, data)
		}
		return
	}
	compareRead(t, format, data, want)
}

// TestTextRoundTrip checks the round-trip property on random batches.
func TestTextRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 1))
		rec := rtBatch(r, mem)
		for _, format := range []string{"csv", "jsonl"} {
			t.Run(fmt.Sprintf("%s/%d", format, seed), func(t *testing.T) { roundTrip(t, format, rec) })
			if seed%5 == 0 {
				t.Run(fmt.Sprintf("%s-file/%d", format, seed), func(t *testing.T) { roundTripFile(t, r, format, rec) })
			}
		}
		rec.Release()
	}
}

// FuzzTextRoundTrip is TestTextRoundTrip driven by the fuzzer's seeds.
func FuzzTextRoundTrip(f *testing.F) {
	f.Add(uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		rec := rtBatch(r, memory.DefaultAllocator)
		defer rec.Release()
		roundTrip(t, "csv", rec)
		roundTrip(t, "jsonl", rec)
	})
}
