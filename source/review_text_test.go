package source_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestReviewNanosecondRange: a date-time a timestamp[ns] column cannot
// hold (before 1677-09-21 or after 2262-04-11) is a dead letter that says
// so. It was read as another time: 3000-01-03T10:00:00Z became
// 1830-11-25T10:50:52.580896768Z, silently, as UnixNano wrapped around.
// Times at the very ends of the range are read exactly.
func TestReviewNanosecondRange(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	}, nil)
	cases := []struct {
		text string
		want time.Time // zero: a dead letter
	}{
		{"2024-01-03T10:00:00.123456789Z", time.Date(2024, 1, 3, 10, 0, 0, 123456789, time.UTC)},
		{"3000-01-03T10:00:00Z", time.Time{}},
		{"1000-01-01 00:00:00", time.Time{}},
		{"2262-04-11T23:47:16.854775807Z", time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC)},
		{"2262-04-11T23:47:16.854775808Z", time.Time{}},
		{"1677-09-21T00:12:43.145224192Z", time.Date(1677, 9, 21, 0, 12, 43, 145224192, time.UTC)},
		{"1677-09-21T00:12:43.145224191Z", time.Time{}},
		{"2262-04-12T01:00:00+02:00", time.Date(2262, 4, 11, 23, 0, 0, 0, time.UTC)},
	}
	var csvIn, jsonIn strings.Builder
	csvIn.WriteString("id,ts\n")
	for i, c := range cases {
		csvIn.WriteString(strings.Join([]string{string(rune('0' + i)), c.text}, ",") + "\n")
		jsonIn.WriteString(`{"id": ` + string(rune('0'+i)) + `, "ts": "` + c.text + `"}` + "\n")
	}
	for _, format := range []string{"csv", "jsonl"} {
		var dl []source.DeadLetter
		opts := []source.Option{source.WithSchema(schema), collectDead(&dl)}
		var src source.Source
		var err error
		if format == "csv" {
			src, err = source.NewCSVReader(strings.NewReader(csvIn.String()), opts...)
		} else {
			src, err = source.NewJSONLReader(strings.NewReader(jsonIn.String()), opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := readAll(t, src)
		src.Close()
		k, d := 0, 0
		for i, c := range cases {
			line := int64(i + 1)
			if format == "csv" {
				line++
			}
			if c.want.IsZero() {
				if d >= len(dl) || dl[d].Offset != line || !strings.Contains(dl[d].Reason, "out of the range") || !strings.Contains(dl[d].Reason, c.text) {
					t.Fatalf("%s: %q: want a dead letter at line %d saying it is out of range, got %+v", format, c.text, line, dl)
				}
				d++
				continue
			}
			if k >= len(rows) || rows[k][0] != int64(i) || !rows[k][1].(time.Time).Equal(c.want) {
				t.Fatalf("%s: %q: rows %v, want id %d at %s", format, c.text, rows, i, c.want)
			}
			k++
		}
		if k != len(rows) || d != len(dl) {
			t.Fatalf("%s: %d rows and %d dead letters, want %d and %d", format, len(rows), len(dl), k, d)
		}
	}
}

// TestReviewInvalidUTF8: text that is not UTF-8 going into a string
// column is a dead letter (an Arrow string must be UTF-8; the Kafka
// source already rejected such records), whether the JSON string has
// escapes or not. Before, CSV and JSON lines passed the bytes on into the
// string column unchanged, except in a JSON string with an escape, where
// encoding/json replaced them with U+FFFD: the same bytes read as two
// different values. Invalid bytes in a CSV column the schema leaves out
// harm nothing.
func TestReviewInvalidUTF8(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	csvIn := "id,s,other\n1,ok,x\n2,bad\xff,x\n3,\"q\xe6\x97\",x\n4,é,\xff\n"
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader(csvIn), source.WithSchema(schema), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readAll(t, src)
	src.Close()
	if len(rows) != 2 || rows[0][1] != "ok" || rows[1][0] != int64(4) || rows[1][1] != "é" {
		t.Fatalf("csv rows %v", rows)
	}
	if len(dl) != 2 || dl[0].Offset != 3 || dl[1].Offset != 4 || string(dl[0].Raw) != "2,bad\xff,x" ||
		!strings.Contains(dl[0].Reason, "not valid UTF-8") || !strings.Contains(dl[1].Reason, `column "s"`) {
		t.Fatalf("csv dead letters %+v", dl)
	}
	// Inferred: the column is a string, and the rows are dead letters.
	dl = nil
	src, err = source.NewCSVReader(strings.NewReader(csvIn), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = readAll(t, src)
	src.Close()
	if len(rows) != 1 || rows[0][1] != "ok" || len(dl) != 3 {
		t.Fatalf("csv inferred: rows %v, dead letters %+v", rows, dl)
	}

	jsonIn := `{"id": 1, "s": "ok"}` + "\n" +
		`{"id": 2, "s": "bad` + "\xff" + `"}` + "\n" +
		`{"id": 3, "s": "esc\n` + "\xff" + `"}` + "\n" +
		`{"id": 4, "s": "é", "k` + "\xfe" + `": 1}` + "\n" +
		`{"id": 5, "s": "\u00e9\ufffd"}` + "\n"
	for _, given := range []bool{true, false} {
		dl = nil
		opts := []source.Option{collectDead(&dl)}
		if given {
			opts = append(opts, source.WithSchema(schema))
		}
		src, err := source.NewJSONLReader(strings.NewReader(jsonIn), opts...)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := readAll(t, src)
		src.Close()
		if len(rows) != 2 || rows[0][1] != "ok" || rows[1][0] != int64(5) || rows[1][1] != "é\ufffd" {
			t.Fatalf("jsonl (schema given %v): rows %v", given, rows)
		}
		if len(dl) != 3 || dl[0].Offset != 2 || dl[1].Offset != 3 || dl[2].Offset != 4 || dl[0].Reason != "invalid UTF-8" {
			t.Fatalf("jsonl (schema given %v): dead letters %+v", given, dl)
		}
	}
}

// TestReviewReasonCutsWholeCharacters: the value a dead letter's reason
// quotes is cut to 64 bytes without splitting a character, so that the
// reason is UTF-8 (it was cut mid-character and quoted as bytes).
func TestReviewReasonCutsWholeCharacters(t *testing.T) {
	var dl []source.DeadLetter
	src, err := source.NewCSVReader(strings.NewReader("n\n1\n"+strings.Repeat("é", 50)+"\n"),
		source.WithSchema(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)), collectDead(&dl))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, src)
	src.Close()
	want := `column "n": cannot parse "` + strings.Repeat("é", 32) + `..." as int64`
	if len(dl) != 1 || dl[0].Reason != want || !utf8.ValidString(dl[0].Reason) {
		t.Fatalf("dead letters %+v, want the reason %s", dl, want)
	}
}

// TestReviewTimeOrderCutPosition: when a row breaks the WithTimeOrder
// promise, Read returns the rows before it and then the error, and
// Position stays at that row: a source restored there reads it and every
// row after, once, with the dead letters after it. Position was past the
// whole batch the row was read in, rows Read never returned: a
// checkpoint taken before the error was reported skipped them, the
// offending row with them, and the restored run went on without an error.
func TestReviewTimeOrderCutPosition(t *testing.T) {
	// ts: 10, 20, a dead letter, 30, 5 (breaks the promise), 40, a dead
	// letter, 50.
	csvIn := "id,ts\n1,10\n2,20\nx,25\n3,30\n4,5\n5,40\ny,45\n6,50\n"
	jsonIn := `{"id":1,"ts":10}` + "\n" + `{"id":2,"ts":20}` + "\n" + `{"id":"x","ts":25}` + "\n" + `{"id":3,"ts":30}` + "\n" +
		`{"id":4,"ts":5}` + "\n" + `{"id":5,"ts":40}` + "\n" + `{"id":"y","ts":45}` + "\n" + `{"id":6,"ts":50}` + "\n"
	for _, format := range []string{"csv", "jsonl"} {
		for _, files := range []bool{false, true} {
			for batch := 1; batch <= 7; batch++ {
				what := fmt.Sprintf("%s (files %v, batch %d)", format, files, batch)
				dir := t.TempDir()
				path := filepath.Join(dir, "in."+format)
				in, hdr := csvIn, int64(0) // hdr: 1 when JSON lines have no header
				if format == "jsonl" {
					in, hdr = jsonIn, 1
				}
				if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
					t.Fatal(err)
				}
				open := func(dead *[]source.DeadLetter) interface {
					source.Source
					source.Seeker
				} {
					opts := []source.Option{source.WithTimeOrder("ts", 0), source.WithBatchSize(batch), collectDead(dead),
						source.WithSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: arrow.PrimitiveTypes.Int64}}, nil))}
					var src interface {
						source.Source
						source.Seeker
					}
					var err error
					switch {
					case files && format == "csv":
						src, err = source.NewCSVFiles([]string{path}, opts...)
					case files:
						src, err = source.NewJSONLFiles([]string{path}, opts...)
					case format == "csv":
						src, err = source.NewCSV(path, opts...)
					default:
						src, err = source.NewJSONL(path, opts...)
					}
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					return src
				}
				ids := func(rec arrow.RecordBatch) []int64 {
					return append([]int64(nil), rec.Column(0).(*array.Int64).Int64Values()...)
				}
				var dead []source.DeadLetter
				src := open(&dead)
				var got []int64
				var rerr error
				for {
					rec, err := src.Read(context.Background())
					if err != nil {
						rerr = err
						break
					}
					got = append(got, ids(rec)...)
					rec.Release()
				}
				// The dead letter of line 8 is handed over already when
				// the batch that finds the broken promise reads it.
				if !strings.Contains(fmt.Sprint(rerr), "WithTimeOrder") || !slices.Equal(got, []int64{1, 2, 3}) || len(dead) < 1 || dead[0].Offset != 4-hdr {
					t.Fatalf("%s: rows %v, dead letters %+v, then %v; want rows 1, 2, 3, the dead letter of line 4 (3 in JSON lines) and the broken promise", what, got, dead, rerr)
				}
				pos, _ := src.Position()
				// The error stays, and so does the position.
				if _, err := src.Read(context.Background()); err == nil || err.Error() != rerr.Error() {
					t.Fatalf("%s: Read after the error: %v", what, err)
				}
				if again, _ := src.Position(); !slices.Equal(again, pos) {
					t.Fatalf("%s: Position moved after the error", what)
				}
				src.Close()
				var dead2 []source.DeadLetter
				src = open(&dead2)
				if err := src.Seek(pos); err != nil {
					t.Fatal(err)
				}
				var rest []int64
				for {
					rec, err := src.Read(context.Background())
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("%s: restored: %v", what, err)
					}
					rest = append(rest, ids(rec)...)
					rec.Release()
				}
				src.Close()
				if !slices.Equal(rest, []int64{4, 5, 6}) || len(dead2) != 1 || dead2[0].Offset != 8-hdr {
					t.Fatalf("%s: restored at the position: rows %v, dead letters %+v; want rows 4, 5, 6 and the dead letter of line 8 (7)", what, rest, dead2)
				}
			}
		}
	}
}

// TestReviewTextFilesWithoutRows: files without rows among CSV or
// JSON-lines files read as one source (a part a sink wrote for a
// checkpoint interval without output, no bytes at all when compressed, or
// only a header) are read as such: the schema is inferred from the first
// file that has rows. A first CSV file of no bytes made the whole source
// fail to open ("empty input, a CSV header was expected"); a first file
// of only a header made every column a string; and a first empty
// JSON-lines file gave a schema without columns, so that every row of
// the other files came out without its values. Reading resumes at every
// position, the end after files without rows included.
func TestReviewTextFilesWithoutRows(t *testing.T) {
	type file struct{ name, text string }
	csvFiles := []file{
		{"a.csv", ""}, {"b.csv", "id,v\n"}, {"c.csv", "id,v\n1,2.5\n2,3\n"}, {"d.csv.gz", ""}, {"e.csv", "\n\n"},
		{"f.csv", "v,id\n4.5,3\n"}, {"g.csv", ""},
	}
	jsonFiles := []file{
		{"a.jsonl", ""}, {"b.jsonl", "\n \n"}, {"c.jsonl", `{"id": 1, "v": 2.5}` + "\n" + `{"id": 2, "v": 3}`}, {"d.jsonl.gz", ""},
		{"f.jsonl", `{"v": 4.5, "id": 3}`}, {"g.jsonl", ""},
	}
	want := [][]any{{int64(1), 2.5}, {int64(2), 3.0}, {int64(3), 4.5}}
	for _, format := range []string{"csv", "jsonl"} {
		files := csvFiles
		if format == "jsonl" {
			files = jsonFiles
		}
		dir := t.TempDir()
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		}, nil)
		for _, given := range []bool{false, true} {
			for _, batch := range []int{1, 2, 10} {
				what := fmt.Sprintf("%s (schema given %v, batch %d)", format, given, batch)
				open := func() source.Source {
					opts := []source.Option{source.WithBatchSize(batch), source.WithTimeOrder("id", 0)}
					if given {
						opts = append(opts, source.WithSchema(schema))
					}
					src, err := source.Open(dir, opts...)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					return src
				}
				src := open()
				if !src.Schema().Equal(schema) {
					t.Fatalf("%s: schema %s, want %s", what, src.Schema(), schema)
				}
				if n, ok := src.(interface{ SampledRows() (int, bool) }).SampledRows(); !given && (n != 2 || !ok) {
					t.Fatalf("%s: SampledRows %d %v, want the 2 rows of the first file with rows", what, n, ok)
				}
				var positions [][]byte
				var counts []int // rows read before each position
				var rows [][]any
				for {
					pos, err := src.(source.Seeker).Position()
					if err != nil {
						t.Fatal(err)
					}
					positions = append(positions, pos)
					counts = append(counts, len(rows))
					rec, err := src.Read(context.Background())
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					rows = append(rows, sink.Rows(rec)...)
					rec.Release()
				}
				if fmt.Sprint(rows) != fmt.Sprint(want) {
					t.Fatalf("%s: rows %v, want %v", what, rows, want)
				}
				if b, ok := src.(source.LowerBounder).LowerBound("id"); !ok || b != math.MaxInt64 {
					t.Fatalf("%s: LowerBound at the end %d %v", what, b, ok)
				}
				src.Close()
				// Resume at every position, in a fresh source.
				for k, pos := range positions {
					src := open()
					if err := src.(source.Seeker).Seek(pos); err != nil {
						t.Fatalf("%s: Seek to position %d: %v", what, k, err)
					}
					rest, _ := readAll(t, src)
					src.Close()
					if fmt.Sprint(rest) != fmt.Sprint(want[counts[k]:]) {
						t.Fatalf("%s: from position %d: %v, want %v", what, k, rest, want[counts[k]:])
					}
				}
			}
		}
	}
	// A directory of files without rows only: no header anywhere.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Open(dir); err == nil || !strings.Contains(err.Error(), "a CSV header was expected") {
		t.Fatalf("no header anywhere: %v", err)
	}
}
