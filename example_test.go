package volga_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// transactions returns a small batch of card transactions: user, event
// time (epoch ms) and amount.
func transactions() arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const minute = 60_000
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 1, 1, 2, 1}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{0, 5 * minute, 10 * minute, 40 * minute, 50 * minute, 75 * minute}, nil)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{20, 5, 30, 15, 7.5, 100}, nil)
	return b.NewRecordBatch()
}

func printRows(out *sink.Collector) {
	for _, row := range out.Rows() {
		fmt.Println(row...)
	}
}

func ExampleSQL() {
	rec := transactions()
	defer rec.Release()
	out := sink.NewCollector()
	defer out.Release()

	// For each transaction: the user's spend and number of transactions in
	// the hour up to it, and how many transactions came before it.
	p, err := volga.SQL(`
SELECT user_id, ts / 60000 AS minute, amount,
       sum(amount) OVER last_hour AS spend_1h,
       count(*)    OVER last_hour AS n_1h,
       count(*)    OVER (PARTITION BY user_id ORDER BY ts
                         RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
                         EXCLUDE CURRENT ROW) AS n_before
FROM tx
WINDOW last_hour AS (PARTITION BY user_id ORDER BY ts
                     RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
		volga.WithSource("tx", source.NewMemory(rec.Schema(), rec)),
		volga.WithSink(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Schema().Field(3).Name, p.Schema().Field(3).Type)
	printRows(out)
	// Output:
	// spend_1h float64
	// 1 0 20 20 1 0
	// 2 5 5 5 1 0
	// 1 10 30 50 2 1
	// 1 40 15 65 3 2
	// 2 50 7.5 12.5 2 1
	// 1 75 100 115 2 3
}

func ExampleBuild() {
	rec := transactions()
	defer rec.Release()
	out := sink.NewCollector()
	defer out.Release()

	// The same features as in the SQL example, written in Go.
	lastHour := pipeline.Over("user_id").Range(time.Hour)
	b := pipeline.From("tx").EventTime("ts").
		Where("amount >= 10").
		Select("user_id", "amount").
		Agg("spend_1h", pipeline.Sum("amount"), lastHour).
		Agg("max_1h", pipeline.Max("amount"), lastHour).
		Agg("avg_last_2", pipeline.Avg("amount"), pipeline.Over("user_id").Rows(1))
	p, err := volga.Build(b,
		volga.WithSource("tx", source.NewMemory(rec.Schema(), rec)),
		volga.WithSink(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	printRows(out)
	// Output:
	// 1 20 20 20 20
	// 1 30 50 30 25
	// 1 15 65 30 22.5
	// 1 100 115 100 57.5
}

func ExampleBuild_tumble() {
	rec := transactions()
	defer rec.Release()
	out := sink.NewCollector()
	defer out.Release()

	// Hourly windows per user, as SQL's GROUP BY user_id,
	// tumble(ts, INTERVAL '1' HOUR): one row per user and hour that had
	// transactions (window bounds in epoch milliseconds, as ts is).
	b := pipeline.From("tx").EventTime("ts").
		Tumble(time.Hour, "user_id").
		Select("user_id", "window_start", "window_end").
		Agg("n", pipeline.CountAll(), nil).
		Agg("spend", pipeline.Sum("amount"), nil)
	p, err := volga.Build(b,
		volga.WithSource("tx", source.NewMemory(rec.Schema(), rec)),
		volga.WithSink(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	printRows(out)
	// Output:
	// 1 0 3600000 3 65
	// 2 0 3600000 2 12.5
	// 1 3600000 7200000 1 100
}
