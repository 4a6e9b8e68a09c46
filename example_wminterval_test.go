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

// A stream of many keys with the watermark advanced at most every 50 ms:
// the rows come out in fewer, larger steps, with the same values as when
// it advances after every batch.
func ExampleWithWatermarkInterval() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	// 20 000 transactions of 1 000 users, a second apart, in batches of 100.
	var batches []arrow.RecordBatch
	for b0 := 0; b0 < 20_000; b0 += 100 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := b0; i < b0+100; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i*7919) % 1000)
			b.Field(1).(*array.Int64Builder).Append(int64(i) * 1000)
			b.Field(2).(*array.Float64Builder).Append(float64(i%50) + 0.25)
		}
		batches = append(batches, b.NewRecordBatch())
		b.Release()
	}
	run := func(interval time.Duration) (last []any, writes int) {
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(`
SELECT user_id, ts, sum(amount) OVER w AS spend_1h, count(*) OVER w AS n_1h
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
			volga.WithSource("tx", source.NewMemory(schema, batches...)), volga.WithSink(out),
			volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(time.Second), volga.WithWatermarkInterval(interval))
		if err != nil {
			fmt.Println(err)
			return nil, 0
		}
		if err := p.Run(context.Background()); err != nil {
			fmt.Println(err)
			return nil, 0
		}
		rows := out.Rows()
		return rows[len(rows)-1], len(rows)
	}
	everyBatch, n1 := run(0)
	every50ms, n2 := run(50 * time.Millisecond)
	fmt.Println("rows:", n1, n2)
	fmt.Println("last row, watermark after every batch:", everyBatch)
	fmt.Println("last row, watermark every 50 ms:      ", every50ms)
	// Output:
	// rows: 20000 20000
	// last row, watermark after every batch: [81 19999000 197 4]
	// last row, watermark every 50 ms:       [81 19999000 197 4]
}
