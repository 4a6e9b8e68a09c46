package textcodec

import (
	"bytes"
	"io"
	"testing"
)

func TestOf(t *testing.T) {
	for _, c := range []struct{ path, codec, format string }{
		{"a.csv", "", ".csv"},
		{"a.csv.gz", ".gz", ".csv"},
		{"dir.v2/a.JSONL.ZST", ".zst", ".JSONL"},
		{"a.gz", ".gz", ""},
		{"a.parquet", "", ".parquet"},
		{"a.tar.bz2", "", ".bz2"},
	} {
		got := ""
		if k := Of(c.path); k != nil {
			got = k.Ext
		}
		if got != c.codec || FormatExt(c.path) != c.format {
			t.Errorf("%s: codec %q, format %q; want %q, %q", c.path, got, FormatExt(c.path), c.codec, c.format)
		}
	}
}

// FuzzConcatenatedStreams: text cut into pieces, each compressed as a
// stream of its own (a checkpoint epoch of a sink) and the streams
// written one after the other, reads back as the whole text, with gzip
// and zstd.
func FuzzConcatenatedStreams(f *testing.F) {
	f.Add([]byte("id,name\n1,a\n2,b\n"), uint8(3))
	f.Add([]byte{}, uint8(1))
	f.Add(bytes.Repeat([]byte("x,\"y\"\r\n"), 5000), uint8(7))
	f.Fuzz(func(t *testing.T, text []byte, cuts uint8) {
		n := int(cuts%8) + 1
		for _, c := range codecs {
			var file bytes.Buffer
			for i := range n {
				piece := text[i*len(text)/n : (i+1)*len(text)/n]
				w, err := c.NewWriter(&file)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(piece); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			r, err := c.NewReader(bytes.NewReader(file.Bytes()))
			if err != nil {
				t.Fatalf("%s: %v", c.Ext, err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatalf("%s: %v", c.Ext, err)
			}
			if !bytes.Equal(got, text) {
				t.Fatalf("%s, %d streams: read back %d bytes, want %d", c.Ext, n, len(got), len(text))
			}
		}
	})
}
