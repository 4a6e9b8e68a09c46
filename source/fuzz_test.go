package source_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// drain reads src to the end and fails on anything but io.EOF or a
// reported I/O error; an "internal error" means a recovered panic.
func drain(t *testing.T, src source.Source) {
	for i := 0; ; i++ {
		rec, err := src.Read(context.Background())
		if err == io.EOF {
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("panic inside the reader: %v", err)
			}
			return
		}
		if rec.NumRows() == 0 || rec.NumRows() > 7 {
			t.Fatalf("batch of %d rows", rec.NumRows())
		}
		rec.Release()
		if i > 1<<16 {
			t.Fatal("no progress")
		}
	}
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"a,b\n1,2\n",
		"id,amount,flag,ts\n1,2.5,true,2024-01-03T10:00:00Z\n2,,false,\n",
		"a,b\n\"x\ny\",2\n3\n\"bad\"q,1\n",
		"\ufeffa\r\n1\r\n\r\n2",
		"a,b\n1,2,3\n",
		"x\n99999999999999999999\n1e400\n",
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, sample uint8) {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		src, err := source.NewCSVReader(bytes.NewReader(data), source.WithBatchSize(7),
			source.WithSampleRows(int(sample%8)+1), source.WithAllocator(mem))
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("panic in NewCSVReader: %v", err)
			}
			return
		}
		drain(t, src)
		src.Close()
		mem.AssertSize(t, 0)
	})
}

func FuzzJSONL(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "b": "x"}` + "\n" + `{"a": 2.5, "c": [1, {"d": "}"}]}`,
		`{"a": "2024-01-03T10:00:00Z"}` + "\n" + `{"a": null}` + "\n\n" + `[1]`,
		`{"a\u0041": "\ud83d\ude00", "a": true}`,
		`{"a": 1}` + "\n" + `{"a": "x"}` + "\n" + `{"a"`,
		"{}\n{ }\n",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, sample uint8) {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		src, err := source.NewJSONLReader(bytes.NewReader(data), source.WithBatchSize(7),
			source.WithSampleRows(int(sample%8)+1), source.WithAllocator(mem))
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("panic in NewJSONLReader: %v", err)
			}
			return
		}
		drain(t, src)
		src.Close()
		mem.AssertSize(t, 0)
	})
}

// FuzzCSVSplit checks the CSV source's record splitting against
// encoding/csv on input without carriage returns or a byte order mark
// (where the two differ on purpose: the source keeps \r\n inside quoted
// fields and drops the mark): the same rows with the same fields (an
// empty field is NULL), and a dead letter at the start line of each
// record encoding/csv rejects, has the wrong number of fields or a field
// that is not UTF-8; after a record rejected that way, reading goes on at
// its second line.
func FuzzCSVSplit(f *testing.F) {
	for _, s := range []string{
		"a,b\n1,2\n",
		"a,b\n\"x\ny\",2\n3\n\"bad\"q,1\n",
		"a,b\n\n1,\"\"\"\"\n\"a\"\"b\",\n",
		"a\nx\"y\n\"open\n1\n",
		"a,b\n1,2,3\n\"x\",\"y\" \n",
		"\"a\nb\",c\n1,2",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte{'\r'}, nil)
		if bytes.HasPrefix(data, []byte("\ufeff")) {
			return
		}
		type row struct {
			line   int64
			fields []any // nil: a dead letter
		}
		var want []row
		cr := csv.NewReader(bytes.NewReader(data))
		hdr, err := cr.Read()
		if err != nil {
			if _, serr := source.NewCSVReader(bytes.NewReader(data)); serr == nil {
				t.Fatalf("encoding/csv rejects the header (%v), the source does not", err)
			}
			return
		}
		names := map[string]bool{}
		fields := make([]arrow.Field, len(hdr))
		for i, h := range hdr {
			if h == "" {
				h = fmt.Sprintf("column_%d", i+1)
			}
			if names[h] {
				return // duplicate names: an error, tested elsewhere
			}
			names[h] = true
			fields[i] = arrow.Field{Name: h, Type: arrow.BinaryTypes.String, Nullable: true}
		}
		// The records after the header, each read by encoding/csv from
		// where the one before ended; a record that does not parse, or
		// has the wrong number of fields, is a dead letter of its first
		// line, and the next is read from its second line (the source's
		// rule, so that an open quote does not swallow the lines after
		// it).
		lineAt := func(off int64) int64 { return int64(bytes.Count(data[:off], []byte{'\n'})) + 1 }
		lineStart := func(line int64) int64 { // the offset of line, or the end
			off := int64(0)
			for l := int64(1); l < line; l++ {
				i := bytes.IndexByte(data[off:], '\n')
				if i < 0 {
					return int64(len(data))
				}
				off += int64(i) + 1
			}
			return off
		}
		for pos := cr.InputOffset(); pos < int64(len(data)); {
			base := lineAt(pos) - 1
			rr := csv.NewReader(bytes.NewReader(data[pos:]))
			rr.FieldsPerRecord = -1
			rec, err := rr.Read()
			if err == io.EOF {
				break
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				want = append(want, row{line: base + int64(pe.StartLine)})
				pos = lineStart(base + int64(pe.StartLine) + 1)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			l, _ := rr.FieldPos(0)
			r := row{line: base + int64(l)}
			if len(rec) != len(hdr) {
				want = append(want, r)
				pos = lineStart(r.line + 1)
				continue
			}
			pos += rr.InputOffset()
			if slices.ContainsFunc(rec, func(v string) bool { return !utf8.ValidString(v) }) {
				// A string column's field must be UTF-8: a dead letter.
				want = append(want, r)
				continue
			}
			for _, v := range rec {
				if v == "" {
					r.fields = append(r.fields, nil)
				} else {
					r.fields = append(r.fields, v)
				}
			}
			want = append(want, r)
		}

		var got []row
		src, err := source.NewCSVReader(bytes.NewReader(data), source.WithSchema(arrow.NewSchema(fields, nil)), source.WithBatchSize(1),
			source.WithDeadLetter(func(d source.DeadLetter) { got = append(got, row{line: d.Offset}) }))
		if err != nil {
			t.Fatalf("the source rejects what encoding/csv reads: %v", err)
		}
		defer src.Close()
		for {
			rec, err := src.Read(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			// One row per batch: the dead letters before it were handed
			// over before Read returned it.
			for _, vals := range sink.Rows(rec) {
				got = append(got, row{fields: vals})
			}
			rec.Release()
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, encoding/csv reads %d\ngot  %v\nwant %v", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i].fields == nil && (want[i].fields != nil || got[i].line != want[i].line) ||
				got[i].fields != nil && !reflect.DeepEqual(got[i].fields, want[i].fields) {
				t.Fatalf("record %d: got %v, encoding/csv %v", i, got[i], want[i])
			}
		}
	})
}
