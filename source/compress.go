package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/volga-go/volga/internal/textcodec"
)

// decompressor reads a compressed file as the text it holds. It can Seek
// to an offset of the text, from the start (io.SeekStart only), by
// reading again from the start of the file when the offset is behind,
// so that a text source over it restores checkpointed positions.
type decompressor struct {
	files fileSystem
	path  string
	c     *textcodec.Codec
	f     fs.File
	r     io.ReadCloser
	off   int64 // bytes of text read
}

// openDecompressor opens the file at path, compressed with c.
func openDecompressor(files fileSystem, path string, c *textcodec.Codec) (*decompressor, error) {
	d := &decompressor{files: files, path: path, c: c}
	if err := d.reopen(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *decompressor) reopen() error {
	d.closeFile()
	f, err := d.files.open(d.path)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		// No bytes at all (what a sink writes for a run without
		// rows): no text, as an empty uncompressed file.
		d.f, d.r, d.off = f, io.NopCloser(strings.NewReader("")), 0
		return nil
	}
	r, err := d.c.NewReader(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", d.path, err)
	}
	d.f, d.r, d.off = f, r, 0
	return nil
}

func (d *decompressor) Read(p []byte) (int, error) {
	if d.r == nil {
		return 0, ErrClosed
	}
	n, err := d.r.Read(p)
	d.off += int64(n)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", d.path, err)
	}
	return n, err
}

// Seek moves to offset of the text (whence io.SeekStart).
func (d *decompressor) Seek(offset int64, whence int) (int64, error) {
	if whence != io.SeekStart || offset < 0 {
		return 0, errors.New("source: a compressed input seeks only to an offset from its start")
	}
	if offset < d.off || d.r == nil {
		if err := d.reopen(); err != nil {
			return 0, err
		}
	}
	if n, err := io.CopyN(io.Discard, d, offset-d.off); err != nil {
		if err == io.EOF {
			return 0, fmt.Errorf("source: %s: seek to byte %d of the text: it has %d", d.path, offset, d.off)
		}
		return 0, err
	} else if d.off != offset {
		return 0, fmt.Errorf("source: %s: seek to byte %d: read %d", d.path, offset, n)
	}
	return offset, nil
}

func (d *decompressor) closeFile() {
	if d.r != nil {
		_ = d.r.Close()
		d.r = nil
	}
	if d.f != nil {
		_ = d.f.Close()
		d.f = nil
	}
}

// Close closes the decompressor and the file.
func (d *decompressor) Close() error {
	d.closeFile()
	return nil
}
