package volga_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// A 30-day window over a stream of one busy user: with row paging the
// rows in the middle of the 30 days wait in the on-disk state store, not
// in memory, and the results are the same.
func ExampleWithRowPaging() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	// 60 days, 500 transactions a day, one batch a day.
	const day = 24 * 3600 * 1000
	var batches []arrow.RecordBatch
	for d := range 60 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range 500 {
			b.Field(0).(*array.Int64Builder).Append(7)
			b.Field(1).(*array.Int64Builder).Append(int64(d)*day + int64(i)*(day/500))
			b.Field(2).(*array.Float64Builder).Append(float64((d*500+i)%97) + 0.5)
		}
		batches = append(batches, b.NewRecordBatch())
		b.Release()
	}
	run := func(opts ...volga.Option) []any {
		out := sink.NewCollector()
		defer out.Release()
		opts = append(opts, volga.WithSource("tx", source.NewMemory(schema, batches...)), volga.WithSink(out),
			volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second))
		p, err := volga.SQL(`
SELECT user_id, ts, sum(amount) OVER w AS spend_30d, count(*) OVER w AS n_30d,
       max(amount) OVER w AS max_30d, drawdown(amount) OVER w AS drawdown_30d
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '30' DAY PRECEDING AND CURRENT ROW)`, opts...)
		if err != nil {
			fmt.Println(err)
			return nil
		}
		if err := p.Run(context.Background()); err != nil {
			fmt.Println(err)
			return nil
		}
		rows := out.Rows()
		return rows[len(rows)-1]
	}
	plain := run()
	paged := run(volga.WithRowPaging(1024))
	fmt.Println("last row:", paged[2:])
	fmt.Println("same as without paging:", fmt.Sprint(plain) == fmt.Sprint(paged))
	for _, b := range batches {
		b.Release()
	}
	// Output:
	// last row: [727701.5 15001 96.5 0.9948186528497409]
	// same as without paging: true
}
