package source

import (
	"bufio"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/arrowutil"
)

// spill holds the parts of an input too large to cluster in memory: Arrow
// IPC streams in a directory of their own, one a part, each row in the
// part its key hashes to, in input order.
type spill struct {
	dir    string
	schema *arrow.Schema
	mem    memory.Allocator
	seed   maphash.Seed
	parts  []*spillPart
	next   int // the next part read
	buf    []byte
	// pending holds batches not written yet, rows their rows: they are
	// written to the parts a chunk of spillChunkRows at a time, so that
	// each part gets batches of some size (a batch's rows over 64 parts
	// made batches of 64 rows: 1.6 allocations a row).
	pending []arrow.RecordBatch
	rows    int
	segs    [][]arrowutil.Seg // scratch: rows by part
}

// spillChunkRows is how many rows a spill gathers before it writes them
// to the parts.
var spillChunkRows = 1 << 20

type spillPart struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	w    *ipc.Writer
	rows int64
}

// newSpill creates the spill's directory under dir (os.TempDir() when "")
// and its parts' files.
func newSpill(dir string, schema *arrow.Schema, mem memory.Allocator) (*spill, error) {
	d, err := os.MkdirTemp(dir, "volga-cluster-*")
	if err != nil {
		return nil, fmt.Errorf("source: clustered: spill: %w", err)
	}
	s := &spill{dir: d, schema: schema, mem: mem, seed: maphash.MakeSeed(),
		parts: make([]*spillPart, ClusteredSpillParts), segs: make([][]arrowutil.Seg, ClusteredSpillParts)}
	for i := range s.parts {
		p := &spillPart{path: filepath.Join(d, fmt.Sprintf("part-%03d.arrows", i))}
		if p.f, err = os.Create(p.path); err != nil {
			s.remove()
			return nil, fmt.Errorf("source: clustered: spill: %w", err)
		}
		p.bw = bufio.NewWriterSize(p.f, 64<<10)
		p.w = ipc.NewWriter(p.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		s.parts[i] = p
	}
	return s, nil
}

// write appends the rows of rec (which it retains) to the parts their
// keys (columns keys) hash to.
func (s *spill) write(rec arrow.RecordBatch, keys []int) error {
	rec.Retain()
	s.pending = append(s.pending, rec)
	s.rows += int(rec.NumRows())
	if s.rows < spillChunkRows {
		return nil
	}
	return s.flush(keys)
}

// flush writes the pending rows to their parts.
func (s *spill) flush(keys []int) error {
	defer func() {
		arrowutil.ReleaseAll(s.pending)
		s.pending, s.rows = s.pending[:0], 0
	}()
	for i := range s.segs {
		s.segs[i] = s.segs[i][:0]
	}
	for b, rec := range s.pending {
		for r := range int32(rec.NumRows()) {
			buf := s.buf[:0]
			for _, k := range keys {
				buf = appendKeyValue(buf, rec.Column(k), int(r))
			}
			s.buf = buf
			p := maphash.Bytes(s.seed, buf) % uint64(len(s.parts))
			s.segs[p] = arrowutil.AppendSeg(s.segs[p], int32(b), r)
		}
	}
	for i, segs := range s.segs {
		if len(segs) == 0 {
			continue
		}
		part, err := arrowutil.GatherRecord(s.mem, s.schema, s.pending, segs)
		if err != nil {
			return fmt.Errorf("source: clustered: spill: %w", err)
		}
		n := part.NumRows()
		err = s.parts[i].w.Write(part)
		part.Release()
		if err != nil {
			return fmt.Errorf("source: clustered: spill: writing %s: %w", s.parts[i].path, err)
		}
		s.parts[i].rows += n
	}
	return nil
}

// finish writes the rows left and closes the parts' writers.
func (s *spill) finish(keys []int) error {
	if err := s.flush(keys); err != nil {
		return err
	}
	for _, p := range s.parts {
		err := p.w.Close()
		if err == nil {
			err = p.bw.Flush()
		}
		if cerr := p.f.Close(); err == nil {
			err = cerr
		}
		p.f = nil
		if err != nil {
			return fmt.Errorf("source: clustered: spill: writing %s: %w", p.path, err)
		}
	}
	return nil
}

// read returns the batches of the next part, whose file it then removes;
// false after the last part.
func (s *spill) read() ([]arrow.RecordBatch, bool, error) {
	if s.next >= len(s.parts) {
		return nil, false, nil
	}
	p := s.parts[s.next]
	s.next++
	defer os.Remove(p.path)
	if p.rows == 0 {
		return nil, true, nil
	}
	f, err := os.Open(p.path)
	if err != nil {
		return nil, false, fmt.Errorf("source: clustered: spill: %w", err)
	}
	defer f.Close()
	r, err := ipc.NewReader(bufio.NewReaderSize(f, 64<<10), ipc.WithSchema(s.schema), ipc.WithAllocator(s.mem))
	if err != nil {
		return nil, false, fmt.Errorf("source: clustered: spill: reading %s: %w", p.path, err)
	}
	defer r.Release()
	var recs []arrow.RecordBatch
	rows := int64(0)
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
		rows += rec.NumRows()
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		arrowutil.ReleaseAll(recs)
		return nil, false, fmt.Errorf("source: clustered: spill: reading %s: %w", p.path, err)
	}
	if rows != p.rows {
		arrowutil.ReleaseAll(recs)
		return nil, false, fmt.Errorf("source: clustered: spill: %s holds %d rows, %d were written", p.path, rows, p.rows)
	}
	return recs, true, nil
}

// remove closes and removes every file of the spill.
func (s *spill) remove() {
	arrowutil.ReleaseAll(s.pending)
	s.pending = nil
	for _, p := range s.parts {
		if p != nil && p.f != nil {
			_ = p.f.Close()
		}
	}
	_ = os.RemoveAll(s.dir)
}

// recordBytes is the size of the values of rec (for a slice, of its rows
// only): what holding it costs, whatever buffers it shares.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += arrayBytes(col)
	}
	return n
}

func arrayBytes(a arrow.Array) int64 {
	n := int64(a.Len())
	bitmap := (n + 7) / 8
	switch a := a.(type) {
	case *array.String:
		return bitmap + 4*n + spanOf(a.ValueOffsets())
	case *array.Binary:
		return bitmap + 4*n + spanOf(a.ValueOffsets())
	case *array.LargeString:
		return bitmap + 8*n + spanOf(a.ValueOffsets())
	case *array.LargeBinary:
		return bitmap + 8*n + spanOf(a.ValueOffsets())
	case *array.Boolean:
		return 2 * bitmap
	}
	if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 {
		return bitmap + n*int64(fw.BitWidth()/8)
	}
	return dataBytes(a.Data())
}

// spanOf is the number of value bytes offsets span.
func spanOf[O int32 | int64](offs []O) int64 {
	if len(offs) == 0 {
		return 0
	}
	return int64(offs[len(offs)-1] - offs[0])
}

// dataBytes is the size of d's buffers and its children's (whole buffers:
// for other types than the above, a slice counts as what it shares).
func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, ch := range d.Children() {
		n += dataBytes(ch)
	}
	return n
}
