package window_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/window"
)

// sharedBatch returns the schema, an operator configuration (sum of
// amount over the last minute per user) and a batch of six events of
// three users, for the examples of operators sharing a batch.
func sharedBatch() (*arrow.Schema, window.Config, arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	sum, _ := agg.Bind("sum", []agg.Arg{{Type: arrow.PrimitiveTypes.Float64, Col: 0}})
	cfg := window.Config{
		TsCol: 0, SeqCol: 1, KeyCols: []int{2}, ArgCols: []int{3}, BatchOrder: true,
		Windows:     []window.Spec{{Frame: window.Frame{Preceding: 60_000}, Aggs: []agg.Func{sum}}},
		ResultNames: []string{"spend_1m"},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, user := range []int64{1, 2, 1, 2, 1, 3} {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 1000)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.Int64Builder).Append(user)
		b.Field(3).(*array.Float64Builder).Append(float64(10 * (i + 1)))
	}
	return schema, cfg, b.NewRecordBatch()
}

// rowsOfPart returns the rows of rec whose user (column 2) has parity
// part: odd users go to the first operator, even ones to the second.
func rowsOfPart(rec arrow.RecordBatch, part int64) []int32 {
	var rows []int32
	for i, u := range rec.Column(2).(*array.Int64).Int64Values() {
		if u%2 != part {
			rows = append(rows, int32(i))
		}
	}
	return rows
}

// Two operators share one input batch, each taking the rows of its own
// keys with PushRows (no copy), and hand over their results alone with
// AdvanceResults, in sequence order: the caller, who has the batch, puts
// each row's result beside its own columns. This is how a parallel batch
// run of package pipeline writes list, map and string results.
func ExampleOperator_AdvanceResults() {
	schema, cfg, rec := sharedBatch()
	defer rec.Release()
	spend := make([]float64, rec.NumRows()) // by sequence number
	for part := range int64(2) {
		op, err := window.New(cfg, schema)
		if err != nil {
			panic(err)
		}
		if _, _, err := op.PushRows(rec, rowsOfPart(rec, part)); err != nil {
			panic(err)
		}
		err = op.AdvanceResults(context.Background(), window.End, func(r *window.Results) error {
			defer r.Release()
			for k, seq := range r.Seq {
				spend[seq] = r.Cols[r.Chunk[k]][0].(*array.Float64).Value(int(r.Row[k]))
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
		op.Close()
	}
	users := rec.Column(2).(*array.Int64).Int64Values()
	for i, u := range users {
		fmt.Printf("row %d user %d spend_1m %.0f\n", i, u, spend[i])
	}
	// Output:
	// row 0 user 1 spend_1m 10
	// row 1 user 2 spend_1m 20
	// row 2 user 1 spend_1m 40
	// row 3 user 2 spend_1m 60
	// row 4 user 1 spend_1m 90
	// row 5 user 3 spend_1m 60
}

// Two operators share one input batch and write their rows' results in
// place into the batch's Dest (PushRowsTo); once they have reported every
// row done (Results.Done), the Dest's arrays are the batch's result
// columns, in its own row order, ready to go beside its columns. This is
// how a parallel batch run of package pipeline writes numeric results.
func ExampleOperator_PushRowsTo() {
	schema, cfg, rec := sharedBatch()
	defer rec.Release()
	dst, err := window.NewDest([]arrow.DataType{arrow.PrimitiveTypes.Float64}, int(rec.NumRows()))
	if err != nil {
		panic(err)
	}
	done := 0
	nulls := make([][]int32, 1) // by aggregate: the rows whose result is NULL
	for part := range int64(2) {
		op, err := window.New(cfg, schema)
		if err != nil {
			panic(err)
		}
		if _, _, err := op.PushRowsTo(rec, rowsOfPart(rec, part), dst); err != nil {
			panic(err)
		}
		err = op.AdvanceResults(context.Background(), window.End, func(r *window.Results) error {
			defer r.Release()
			for _, d := range r.Done {
				done += d.Rows
				for a, rows := range d.Nulls {
					nulls[a] = append(nulls[a], rows...)
				}
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
		op.Close()
	}
	if done != dst.Rows() {
		panic("rows missing")
	}
	cols := dst.Arrays(nulls)
	defer cols[0].Release()
	out := array.NewRecordBatch(arrow.NewSchema(append(schema.Fields(), arrow.Field{Name: "spend_1m", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), nil),
		append(rec.Columns(), cols[0]), rec.NumRows())
	defer out.Release()
	users := out.Column(2).(*array.Int64).Int64Values()
	spend := out.Column(4).(*array.Float64).Float64Values()
	for i := range users {
		fmt.Printf("row %d user %d spend_1m %.0f\n", i, users[i], spend[i])
	}
	fmt.Println("NULL results:", out.Column(4).NullN())
	// Output:
	// row 0 user 1 spend_1m 10
	// row 1 user 2 spend_1m 20
	// row 2 user 1 spend_1m 40
	// row 3 user 2 spend_1m 60
	// row 4 user 1 spend_1m 90
	// row 5 user 3 spend_1m 60
	// NULL results: 0
}
