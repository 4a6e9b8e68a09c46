package source_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/volga-go/volga/source"
)

var (
	rvCorruptOnce sync.Once
	rvCorruptData []byte
)

// rvCorruptBase returns the bytes of a small Parquet file of every column
// type of rvPqSchema, in three row groups of small pages, with NULLs.
func rvCorruptBase(t *testing.T) []byte {
	rvCorruptOnce.Do(func() {
		p := filepath.Join(t.TempDir(), "base.parquet")
		r := rand.New(rand.NewPCG(7, 7))
		rec := rvPqBatch(r, 0, 50, 0.2)
		defer rec.Release()
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		// Without the Arrow schema in the metadata: arrow-go v18.8.0
		// decodes a damaged one into allocations of gigabytes
		// (ipc.fieldFromFB), which is not the source's to guard.
		w, err := pqarrow.NewFileWriter(rvPqSchema, f, parquet.NewWriterProperties(
			parquet.WithMaxRowGroupLength(20), parquet.WithDataPageSize(256), parquet.WithDictionaryDefault(true)),
			pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rvCorruptData = b
	})
	return rvCorruptData
}

// FuzzParquetCorrupt reads damaged Parquet files: a valid file with bytes
// changed, or cut short. Opening or reading may fail, with an error; no
// panic may escape (in the goroutines that decode ahead included), and
// every batch returned has columns of its length.
func FuzzParquetCorrupt(f *testing.F) {
	f.Add(uint32(0), byte(0xff), uint32(0), false)
	f.Add(uint32(100), byte(1), uint32(0), false)
	f.Add(uint32(0), byte(0), uint32(20), true)
	f.Add(uint32(4), byte(0x80), uint32(9), false)
	f.Fuzz(func(t *testing.T, at uint32, xor byte, cut uint32, fromEnd bool) {
		base := rvCorruptBase(t)
		data := append([]byte(nil), base...)
		// Change a byte: anywhere, or near the footer, where the
		// metadata is.
		i := int(at) % len(data)
		if fromEnd {
			i = len(data) - 1 - int(at)%min(len(data), 2048)
		}
		data[i] ^= xor
		if c := int(cut) % len(data); c > 0 && cut%3 == 0 {
			data = data[:len(data)-c]
		}
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, pages := range []bool{true, false} {
			old := source.SetPageDecoding(pages)
			mem := memory.NewGoAllocator()
			src, err := source.NewParquetFiles([]string{p}, source.WithBatchSize(7), source.WithDecoders(2), source.WithAllocator(mem))
			if err != nil {
				source.SetPageDecoding(old)
				continue
			}
			for range 1000 {
				rec, err := src.Read(context.Background())
				if err != nil {
					break
				}
				for k, c := range rec.Columns() {
					if int64(c.Len()) != rec.NumRows() {
						t.Fatalf("column %d holds %d rows of a batch of %d", k, c.Len(), rec.NumRows())
					}
				}
				rec.Release()
			}
			src.Close()
			source.SetPageDecoding(old)
		}
	})
}
