package source_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestCSVInference(t *testing.T) {
	const data = "\ufeffid,amount,flag,ts,name,mixed,empty,big\r\n" +
		"1,10,true,2024-01-03T10:00:00Z,alice,1,,1\r\n" +
		"2,2.5,FALSE,2024-01-03T11:00:00.5+01:00,\"bob, jr\",true,,99999999999999999999\r\n" +
		"-3,,,,,x,,\r\n"
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	src, err := source.NewCSV(writeFile(t, "in.csv", data), source.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "mixed", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "empty", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	if !src.Schema().Equal(want) {
		t.Fatalf("schema:\n got %s\nwant %s", src.Schema(), want)
	}
	rows, _ := readAll(t, src)
	wantRows := [][]any{
		{int64(1), 10.0, true, ts("2024-01-03T10:00:00Z"), "alice", "1", nil, 1.0},
		{int64(2), 2.5, false, ts("2024-01-03T10:00:00.5Z"), "bob, jr", "true", nil, 1e20},
		{int64(-3), nil, nil, nil, nil, "x", nil, nil},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("rows:\n got %v\nwant %v", rows, wantRows)
	}
	if src.DeadLetters() != 0 {
		t.Fatalf("dead letters: %d", src.DeadLetters())
	}
}

func TestCSVInferenceCases(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   arrow.DataType
	}{
		{[]string{"1", "-2", "+3"}, arrow.PrimitiveTypes.Int64},
		{[]string{"1", "2.0"}, arrow.PrimitiveTypes.Float64},
		{[]string{".5", "1e3", "-2E-2"}, arrow.PrimitiveTypes.Float64},
		{[]string{"true", "False"}, arrow.FixedWidthTypes.Boolean},
		{[]string{"1", "true"}, arrow.BinaryTypes.String},
		{[]string{"NaN", "Inf"}, arrow.BinaryTypes.String},
		{[]string{"1.5", "NaN", "2", "-Inf", "+Inf"}, arrow.PrimitiveTypes.Float64},
		{[]string{"1", "nan"}, arrow.PrimitiveTypes.Float64},
		{[]string{"1.5", "2024-01-03T10:00:00Z"}, arrow.BinaryTypes.String},
		{[]string{"2024-01-03T10:00:00Z", ""}, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{[]string{"2024-01-03", "2024-01-04"}, arrow.BinaryTypes.String},
		{[]string{"0x10"}, arrow.BinaryTypes.String},
		{[]string{"", ""}, arrow.BinaryTypes.String},
	} {
		data := "v\n" + strings.Join(tc.values, "\n") + "\n"
		src, err := source.NewCSVReader(strings.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got := src.Schema().Field(0).Type; !arrow.TypeEqual(got, tc.want) {
			t.Errorf("%q: got %s, want %s", tc.values, got, tc.want)
		}
		rows, _ := readAll(t, src)
		if src.DeadLetters() != 0 {
			t.Errorf("%q: %d dead letters", tc.values, src.DeadLetters())
		}
		// Blank lines are skipped by the CSV reader; the rest are rows.
		nonEmpty := 0
		for _, v := range tc.values {
			if v != "" {
				nonEmpty++
			}
		}
		if len(rows) != nonEmpty {
			t.Errorf("%q: %d rows", tc.values, len(rows))
		}
		src.Close()
	}
}

func TestCSVDeadLetters(t *testing.T) {
	data := "id,amount,note\n" + // line 1
		"1,1.5,a\n" + // 2
		"2,oops,b\n" + // 3: bad number
		"3,2.5\n" + // 4: wrong field count
		"4,3.5,\"multi\nline\"\n" + // 5-6
		"x,4.5,c\n" + // 7: bad integer
		"6,5.5,\"bad\"quote\"\n" + // 8: broken quote
		"7,6.5,d\n" // 9
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader(data), source.WithSampleRows(1), collectDead(&dl), source.WithName("tx.csv"), source.WithBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows, sizes := readAll(t, src)
	var ids []any
	for _, r := range rows {
		ids = append(ids, r[0])
	}
	if !reflect.DeepEqual(ids, []any{int64(1), int64(4), int64(7)}) {
		t.Fatalf("ids %v", ids)
	}
	if rows[1][2] != "multi\nline" {
		t.Fatalf("multi-line field: %q", rows[1][2])
	}
	if !reflect.DeepEqual(sizes, []int64{2, 1}) {
		t.Fatalf("batch sizes %v", sizes)
	}
	if src.DeadLetters() != 4 || len(dl) != 4 {
		t.Fatalf("dead letters: count %d, handed %d", src.DeadLetters(), len(dl))
	}
	want := []struct {
		line   int64
		raw    string
		reason string
	}{
		{3, "2,oops,b", `column "amount": cannot parse "oops" as float64`},
		{4, "3,2.5", "wrong number of fields: got 2, want 3"},
		{7, "x,4.5,c", `column "id": cannot parse "x" as int64`},
		{8, `6,5.5,"bad"quote"`, `extraneous or missing " in quoted-field`},
	}
	for i, w := range want {
		d := dl[i]
		if d.Source != "tx.csv" || d.Offset != w.line || string(d.Raw) != w.raw || d.Reason != w.reason {
			t.Errorf("dead letter %d: got %+v (raw %q), want line %d raw %q reason %q", i, d, d.Raw, w.line, w.raw, w.reason)
		}
	}
}

func TestCSVExplicitSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	data := "extra,s,u,d,n,ts\n" +
		"zz,7,255,2024-02-29,-5,2024-01-03T10:00:00.000001Z\n" +
		"zz,,,,,1704276000000000\n" +
		"zz,8,256,2024-02-29,1,2024-01-03T10:00:00Z\n" // u overflows
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader(data), source.WithSchema(schema), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Schema() != schema {
		t.Fatal("explicit schema not used")
	}
	rows, _ := readAll(t, src)
	want := [][]any{
		{ts("2024-01-03T10:00:00.000001Z"), int64(-5), ts("2024-02-29T00:00:00Z"), uint64(255), "7"},
		{ts("2024-01-03T10:00:00Z"), nil, nil, nil, nil},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows:\n got %v\nwant %v", rows, want)
	}
	if len(dl) != 1 || dl[0].Offset != 4 || !strings.Contains(dl[0].Reason, `"u"`) {
		t.Fatalf("dead letters %+v", dl)
	}

	missing := arrow.NewSchema([]arrow.Field{{Name: "nope", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := source.NewCSVReader(strings.NewReader(data), source.WithSchema(missing)); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing column: %v", err)
	}
	unsupported := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := source.NewCSVReader(strings.NewReader(data), source.WithSchema(unsupported)); err == nil {
		t.Fatal("list column accepted")
	}
}

func TestCSVErrors(t *testing.T) {
	if _, err := source.NewCSVReader(strings.NewReader("")); err == nil {
		t.Fatal("empty input accepted")
	}
	if _, err := source.NewCSVReader(strings.NewReader("a,a\n1,2\n")); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate header: %v", err)
	}
	if _, err := source.NewCSV("/nonexistent/x.csv"); err == nil {
		t.Fatal("missing file accepted")
	}
	src, err := source.NewCSVReader(strings.NewReader("a\n1\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Header only: EOF at once.
	h, _ := source.NewCSVReader(strings.NewReader("a,b\n"))
	if _, err := h.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("header only: %v", err)
	}
}

// onlyReader hides the Seek method of its reader.
type onlyReader struct{ io.Reader }

func TestCSVSeek(t *testing.T) {
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range 10 {
		b.WriteString("k")
		b.WriteString(string(rune('0' + i)))
		if i == 4 {
			b.WriteString(",\"x\ny\"\n")
		} else {
			b.WriteString(",a\n")
		}
	}
	path := writeFile(t, "s.csv", b.String())
	for _, sample := range []int{1, 1000} {
		src, err := source.NewCSV(path, source.WithBatchSize(3), source.WithSampleRows(sample))
		if err != nil {
			t.Fatal(err)
		}
		start, _ := src.Position()
		rec, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		pos, _ := src.Position()
		rest, _ := readAll(t, src)
		if len(rest) != 7 || rest[0][0] != "k3" {
			t.Fatalf("rest %v", rest)
		}
		if err := src.Seek(pos); err != nil {
			t.Fatal(err)
		}
		again, _ := readAll(t, src)
		if !reflect.DeepEqual(again, rest) {
			t.Fatalf("after seek: %v\nwant %v", again, rest)
		}
		if err := src.Seek(start); err != nil {
			t.Fatal(err)
		}
		all, _ := readAll(t, src)
		if len(all) != 10 || all[0][0] != "k0" {
			t.Fatalf("from start: %v", all)
		}
		src.Close()
	}

	// Line numbers stay right after seeking past a multi-line field.
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader("a,b\n1,\"x\ny\"\n2,3\n4\n"), collectDead(&dl), source.WithBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := src.Read(context.Background())
	rec.Release()
	pos, _ := src.Position()
	readAll(t, src)
	if err := src.Seek(pos); err != nil {
		t.Fatal(err)
	}
	readAll(t, src)
	if len(dl) != 2 || dl[0].Offset != 5 || dl[1].Offset != 5 {
		t.Fatalf("dead letters %+v", dl)
	}

	ns, _ := source.NewCSVReader(onlyReader{strings.NewReader("a\n1\n")})
	p, _ := ns.Position()
	if err := ns.Seek(p); !errors.Is(err, source.ErrNotSeekable) {
		t.Fatalf("not seekable: %v", err)
	}
}

// TestCSVRoundTrip reads a CSV file, writes it back through the CSV sink
// and gets the same text.
func TestCSVRoundTrip(t *testing.T) {
	const data = "user,amount,ok,ts,note\n" +
		"alice,12.5,true,2024-01-03T10:00:00Z,\"a, b\"\n" +
		"bob,-3,false,2024-01-03T10:00:00.5Z,\n" +
		"carol,,,,\"say \"\"hi\"\"\"\n" +
		"dave,1e+21,true,2024-01-03T10:00:00.123Z,plain\n"
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	src, err := source.NewCSV(writeFile(t, "rt.csv", data), source.WithAllocator(mem), source.WithBatchSize(3))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out bytes.Buffer
	s := sink.NewCSV(&out)
	for {
		rec, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != data {
		t.Fatalf("round trip:\n got %s\nwant %s", out.String(), data)
	}
}

// TestCSVInferredIntegerThenDecimal: a decimal in a column the sample
// showed only integers in is a dead letter whose reason says the type was
// inferred, and how to avoid it; with a larger sample the column is
// float64 and the row is read.
func TestCSVInferredIntegerThenDecimal(t *testing.T) {
	data := "id,amount\n1,5\n2,7\n3,12.5\n"
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader(data), source.WithSampleRows(2), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readAll(t, src)
	src.Close()
	want := `column "amount": cannot parse "12.5" as int64 (int64 was inferred from the first 2 rows; give the schema with WithSchema or sample more rows with WithSampleRows)`
	if len(rows) != 2 || len(dl) != 1 || dl[0].Offset != 4 || dl[0].Reason != want {
		t.Fatalf("rows %v, dead letters %+v", rows, dl)
	}
	dl = nil
	if src, err = source.NewCSVReader(strings.NewReader(data), source.WithSampleRows(3), collectDead(&dl)); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if rows, _ = readAll(t, src); len(rows) != 3 || len(dl) != 0 || rows[2][1] != 12.5 || rows[0][1] != 5.0 {
		t.Fatalf("rows %v, dead letters %+v", rows, dl)
	}
}

// TestCSVQuotedFieldsAsWritten: a quoted field keeps its line breaks as
// written, \r\n included (encoding/csv, which the source used before,
// turned \r\n into \n), a byte order mark before a quoted header is
// dropped (it made the header a parse error), and line numbers, raw
// dead letters and positions count the bytes as they are.
func TestCSVQuotedFieldsAsWritten(t *testing.T) {
	data := "\ufeff\"id\",\"note\"\r\n" + // line 1, after a BOM
		"1,\"a\r\nb\"\r\n" + // 2-3
		"\r\n" + // 4: blank
		"2,\"x\"\"y\"\"\"\r\n" + // 5
		"3,\"c\nd\r\"\r\n" + // 6-7
		"4,\"bad\"q\r\n" + // 8: broken quote
		"5,e" // 9, no line break at the end
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader(data), collectDead(&dl), source.WithBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if !src.Schema().Equal(want) {
		t.Fatalf("schema %s", src.Schema())
	}
	rows, _ := readAll(t, src)
	wantRows := [][]any{{int64(1), "a\r\nb"}, {int64(2), `x"y"`}, {int64(3), "c\nd\r"}, {int64(5), "e"}}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("rows %q, want %q", rows, wantRows)
	}
	if len(dl) != 1 || dl[0].Offset != 8 || string(dl[0].Raw) != `4,"bad"q` || dl[0].Reason != `extraneous or missing " in quoted-field` {
		t.Fatalf("dead letters %+v", dl)
	}

	// Seeking to the start, and to after the row of id 2, reads the same.
	seekable, err := source.NewCSVReader(strings.NewReader(data), source.WithBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer seekable.Close()
	start, _ := seekable.Position()
	rec, err := seekable.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	mid, _ := seekable.Position()
	for _, tc := range []struct {
		pos  []byte
		want [][]any
	}{{start, wantRows}, {mid, wantRows[2:]}} {
		if err := seekable.Seek(tc.pos); err != nil {
			t.Fatal(err)
		}
		if got, _ := readAll(t, seekable); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("after Seek: %q, want %q", got, tc.want)
		}
	}
}

// TestCSVUnterminatedQuote: a quote left open makes the line where its
// record starts a dead letter, and reading goes on at the line after it
// (it used to take the rest of the input into that dead letter).
func TestCSVUnterminatedQuote(t *testing.T) {
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader("a,b\n1,2\n3,\"open\n4,5\n"), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows, _ := readAll(t, src)
	if !reflect.DeepEqual(rows, [][]any{{int64(1), int64(2)}, {int64(4), int64(5)}}) {
		t.Fatalf("rows %v", rows)
	}
	if len(dl) != 1 || dl[0].Offset != 3 || string(dl[0].Raw) != "3,\"open" {
		t.Fatalf("dead letters %+v", dl)
	}
	if _, err := source.NewCSVReader(strings.NewReader("a,\"b\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("broken header: %v", err)
	}
}

// TestCSVSingleColumnNulls: the CSV sink writes a one-column row whose
// value is NULL as "" rather than as a blank line, which readers skip;
// the source reads it back as NULL, so no row is lost.
func TestCSVSingleColumnNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 0, 3, 0}, []bool{true, false, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	s := sink.NewCSV(&out)
	if err := s.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "v\n1\n\"\"\n3\n\"\"\n" {
		t.Fatalf("output %q", out.String())
	}
	src, err := source.NewCSVReader(bytes.NewReader(out.Bytes()), source.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if rows, _ := readAll(t, src); !reflect.DeepEqual(rows, [][]any{{int64(1)}, {nil}, {int64(3)}, {nil}}) {
		t.Fatalf("rows %v", rows)
	}
}

// TestCSVSpaceTimestamps: a CSV as pandas and SQL tools write it, date and
// time separated by a space and no offset, infers a timestamp column read
// as UTC (as DuckDB reads it), as JSON lines does for such strings.
func TestCSVSpaceTimestamps(t *testing.T) {
	in := "user,ts\nu1,2024-01-03 10:00:00\nu2,2024-01-03 10:00:01.5\n"
	s, err := source.NewCSVReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Schema().Field(1).Type; !arrow.TypeEqual(got, arrow.FixedWidthTypes.Timestamp_ms) {
		t.Fatalf("ts inferred as %s, want timestamp[ms]", got)
	}
	rec, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	base := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC).UnixMilli()
	ts := rec.Column(1).(*array.Timestamp)
	if ts.Value(0) != arrow.Timestamp(base) || ts.Value(1) != arrow.Timestamp(base+1500) {
		t.Errorf("times %v, %v; want %d, %d", ts.Value(0), ts.Value(1), base, base+1500)
	}
	j, err := source.NewJSONLReader(strings.NewReader(`{"ts":"2024-01-03 10:00:00"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if got := j.Schema().Field(0).Type; !arrow.TypeEqual(got, arrow.FixedWidthTypes.Timestamp_ms) {
		t.Errorf("JSON lines: ts inferred as %s, want timestamp[ms]", got)
	}
}
