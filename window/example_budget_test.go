package window_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/statestore"
	"github.com/volga-go/volga/window"
)

// A memory budget bounds the key state an Operator holds in memory: past
// it, the least recently used keys are encoded into the store (here an
// in-memory one; in a pipeline a view of the task's Badger store) and read
// back when a row of theirs is released or a lookup asks for them. Results
// do not change. The key index itself (key -> id, about 60 bytes plus the
// encoded key per key) stays in memory. Evictions happen at the end of
// Advance (and of a Push applying late rows), so within one call the keys
// it touches may take the working set above the budget for a while.
//
// Checkpoint writes the keys changed since the last write and returns the
// rest of the operator's state; Restore, on a fresh operator over the same
// store contents, carries on exactly where it left off.
func ExampleConfig_memoryBudget() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	sum, _ := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	store := statestore.NewMemory()
	cfg := window.Config{
		TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3},
		Windows:      []window.Spec{{Frame: window.Frame{Preceding: 60_000}, Aggs: []agg.Func{sum}}},
		Store:        store,
		MemoryBudget: 64 << 10, // 64 KiB of key state
	}
	op, err := window.New(cfg, schema)
	if err != nil {
		panic(err)
	}
	defer op.Close()

	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 10_000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.Int64Builder).Append(int64(i % 5000)) // 5000 users
		b.Field(3).(*array.Float64Builder).Append(1)
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	if _, _, err := op.Push(rec); err != nil {
		panic(err)
	}
	outs, err := op.Advance(context.Background(), window.End)
	if err != nil {
		panic(err)
	}
	for _, o := range outs {
		o.Release()
	}
	st := op.Stats()
	fmt.Println("keys:", st.Keys)
	fmt.Println("within budget:", st.ResidentBytes <= cfg.MemoryBudget)
	fmt.Println("most keys in the store:", st.ResidentKeys < st.Keys/2, store.Len() > st.Keys/2)

	meta, err := op.Checkpoint()
	if err != nil {
		panic(err)
	}
	st = op.Stats()
	fmt.Println("checkpoint wrote only resident keys:", st.CheckpointKeys <= int64(st.ResidentKeys))
	restored, _ := window.New(cfg, schema)
	fmt.Println("restore:", restored.Restore(meta))
	// Output:
	// keys: 5000
	// within budget: true
	// most keys in the store: true true
	// checkpoint wrote only resident keys: true
	// restore: <nil>
}
