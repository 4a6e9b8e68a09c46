package pipeline

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/window"
)

// fuzzResMerger returns a result merger of two tasks over input batches
// (x, __volga_seq) with one float result.
func fuzzResMerger() *resMerger {
	in := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: seqColName, Type: arrow.PrimitiveTypes.Int64}}, nil)
	full := arrow.NewSchema(append(in.Fields(), arrow.Field{Name: "r", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), nil)
	return &resMerger{mem: memory.DefaultAllocator, seqCol: 1, nIn: 2, inSchema: in, full: full, out: full, proj: []int{0, 1, 2},
		queue: make([][]*resEntry, 2), at: make([]int, 2), ended: make([]bool, 2)}
}

// FuzzResMergerRestore: a result merger's checkpoint part with any header
// (kind, task count: JSON) and cut anywhere is refused with an error or
// taken back whole, never a panic; taken back undamaged it holds what was
// saved. (The Arrow IPC payloads after the header are not mutated: parts
// are checked against their SHA-256 before they are decoded,
// statestore/FORMAT.md, and arrow-go's reader trusts the lengths in them.)
func FuzzResMergerRestore(f *testing.F) {
	m := fuzzResMerger()
	b := array.NewRecordBuilder(memory.DefaultAllocator, m.inSchema)
	for i := range 5 {
		b.Field(0).(*array.Int64Builder).Append(int64(10 * i))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	m.input(b.NewRecordBatch(), nil)
	b.Release()
	m.pos = 1
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	fb.AppendValues([]float64{1.5, 2.5}, nil)
	fb.AppendNull()
	res := &window.Results{Seq: []int64{1, 3, 4}, Chunk: []int32{0, 0, 0}, Row: []int32{0, 1, 2}, Cols: [][]arrow.Array{{fb.NewArray()}}}
	fb.Release()
	m.results(1, res)
	saved, err := m.checkpoint()
	m.release()
	if err != nil {
		f.Fatal(err)
	}
	n, k := binary.Uvarint(saved)
	header, payloads := saved[k:k+int(n)], saved[k+int(n):]
	f.Add(header, uint16(len(saved)))
	f.Add([]byte(`{"kind":"results","tasks":3}`), uint16(len(saved)))
	f.Add([]byte(`{"kind":"merger","tasks":2}`), uint16(len(saved)))
	f.Add(header, uint16(len(saved)/2))
	f.Fuzz(func(t *testing.T, hdr []byte, cut uint16) {
		data := append(binary.AppendUvarint(nil, uint64(len(hdr))), hdr...)
		data = append(data, payloads...)
		data = data[:min(int(cut), len(data))]
		m := fuzzResMerger()
		defer m.release()
		if err := m.restore(data); err != nil {
			return
		}
		if bytes.Equal(data, saved) {
			if m.unwritten() != 4 || len(m.queue[0]) != 0 || len(m.queue[1]) != 1 || m.queue[1][0].r.Len() != 3 {
				t.Fatalf("restored %d unwritten rows and queues %d, %d; want 4, 0, 1 of 3 results", m.unwritten(), len(m.queue[0]), len(m.queue[1]))
			}
		}
	})
}
