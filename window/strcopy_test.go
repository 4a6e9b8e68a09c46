package window_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/window"
)

// poisonAllocator is a Go allocator that overwrites the buffers it frees,
// as an allocator reusing or returning them (a C allocator, a pool)
// would change them.
type poisonAllocator struct{ memory.GoAllocator }

func (p *poisonAllocator) Free(b []byte) {
	for i := range b {
		b[i] = 'X'
	}
}

// TestStringsOutliveInputBatches: with an allocator other than Go's
// (Config.Mem, the input batches' too), string arguments of rows still in
// frames are intact after their batches were released and freed. Once
// the interner was full (4 MB of distinct values here), they pointed
// into the freed buffers: last_value read garbage.
func TestStringsOutliveInputBatches(t *testing.T) {
	mem := &poisonAllocator{}
	cat := rdSchema.FieldIndices("category")[0]
	last, err := agg.Bind("last_value", []agg.Arg{{Type: rdSchema.Field(cat).Type, Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := window.Config{TsCol: rdTsCol, SeqCol: rdSeqCol, KeyCols: []int{rdSchema.FieldIndices("ki")[0]},
		ArgCols: []int{cat}, Mem: mem,
		Windows: []window.Spec{{Frame: window.Frame{Preceding: 10, EndPreceding: 1}, Aggs: []agg.Func{last}}}}
	op, err := window.New(cfg, rdSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	value := func(b int64) string { return fmt.Sprintf("v%06d", b) + strings.Repeat(".", 1000) }
	const n = 4500 // 4.5 MB of distinct values
	for b := range int64(n) {
		r := make([]any, rdSchema.NumFields())
		r[0], r[rdSchema.FieldIndices("ki")[0]], r[rdTsCol], r[cat], r[rdProbeCol], r[rdSeqCol] = b, int64(1), 1000+b, value(b), false, b
		rec := testutil.BuildRecord(mem, rdSchema, [][]any{r})
		if _, _, err := op.Push(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		outs, err := op.Advance(context.Background(), 1000+b)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			rows := testutil.Rows(o)
			o.Release()
			got := rows[0][rdSchema.NumFields()]
			if b > 0 && got != value(b-1) {
				t.Fatalf("row %d: last_value of the row before = %.20q, want %.20q", b, got, value(b-1))
			}
		}
	}
}
