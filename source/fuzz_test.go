package source_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

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
