package sink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/sink"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "top_amounts", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
		{Name: "avg_amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"alice", "bob"}, nil)
	b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1704276000000, 1704276000500}, nil)
	lb := b.Field(2).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{30, 12.5}, nil)
	lb.Append(true)
	b.Field(3).(*array.Float64Builder).AppendValues([]float64{21.25, 0}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	csv := sink.NewCSV(os.Stdout)
	if err := csv.Write(context.Background(), rec); err != nil {
		fmt.Println(err)
	}
	csv.Close() // flushes; os.Stdout stays open

	jl := sink.NewJSONL(os.Stdout)
	jl.Write(context.Background(), rec)
	jl.Close()
	// Output:
	// user,ts,top_amounts,avg_amount
	// alice,2024-01-03T10:00:00Z,"30,12.5",21.25
	// bob,2024-01-03T10:00:00.5Z,,
	// {"user":"alice","ts":"2024-01-03T10:00:00Z","top_amounts":[30,12.5],"avg_amount":21.25}
	// {"user":"bob","ts":"2024-01-03T10:00:00.5Z","top_amounts":[],"avg_amount":null}
}

func ExampleFormatValue() {
	b := array.NewMapBuilder(memory.DefaultAllocator, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, false)
	defer b.Release()
	b.Append(true)
	b.KeyBuilder().(*array.StringBuilder).AppendValues([]string{"travel", "food"}, nil)
	b.ItemBuilder().(*array.Int64Builder).AppendValues([]int64{2, 5}, nil)
	m := b.NewArray()
	defer m.Release()
	fmt.Println(sink.FormatValue(m, 0))
	// Output: food:5,travel:2
}

// The engine's calls around checkpoints: rows become visible at Commit,
// and Recover brings the file back to the checkpoint it restarts from.
func ExampleCreateCSV_checkpoints() {
	dir, err := os.MkdirTemp("", "volga-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "out.csv")
	show := func(when string) {
		b, _ := os.ReadFile(path)
		fmt.Printf("%-22s %q\n", when+":", b)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "user", Type: arrow.BinaryTypes.String}}, nil)
	batch := func(users ...string) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues(users, nil)
		return b.NewRecordBatch()
	}
	ctx := context.Background()

	s, _ := sink.CreateCSV(path)
	s.Write(ctx, batch("alice"))
	state1, _ := s.PrepareCommit(ctx, 1) // saved in the checkpoint of epoch 1
	show("prepared 1")
	s.Commit(ctx, 1) // the checkpoint of epoch 1 is complete
	show("committed 1")
	s.Write(ctx, batch("bob"))
	s.PrepareCommit(ctx, 2)
	s.Commit(ctx, 2)
	show("committed 2")
	s.Close()

	// A restart from the checkpoint of epoch 1 (that of epoch 2 was found
	// corrupt): the rows of epoch 2 go, and are written again.
	s, _ = sink.CreateCSV(path)
	s.Recover(ctx, 1, state1)
	show("recovered to 1")
	s.Write(ctx, batch("bob"))
	s.PrepareCommit(ctx, 2)
	s.Commit(ctx, 2)
	s.Close()
	show("replayed 2")
	// Output:
	// prepared 1:            ""
	// committed 1:           "user\nalice\n"
	// committed 2:           "user\nalice\nbob\n"
	// recovered to 1:        "user\nalice\n"
	// replayed 2:            "user\nalice\nbob\n"
}
