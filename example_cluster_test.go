package volga_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// A training-set export sorted by user, each user's transactions over a
// month: far from time order, so a batch run without the promise holds
// every row until the input ends; promised clustered by user, it writes
// each user's rows once the input has moved on to the next user, and its
// memory holds a few users' rows rather than the whole input. The output
// is the same.
func ExampleWithClusteredBy() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	// 2 000 users with 100 transactions each, 7 hours apart, user by user,
	// in batches of 1 000 rows.
	var batches []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for user := range 2000 {
		for k := range 100 {
			b.Field(0).(*array.Int64Builder).Append(int64(user))
			b.Field(1).(*array.Int64Builder).Append(int64(k*7*3600+user) * 1000)
			b.Field(2).(*array.Float64Builder).Append(float64((user+k)%40) + 0.5)
		}
		if b.Field(0).Len() == 1000 {
			batches = append(batches, b.NewRecordBatch())
		}
	}
	b.Release()
	run := func(opts ...volga.Option) (rows int, early bool, last []any) {
		var p *volga.Pipeline
		var firstAt int64 // rows read when the first rows were written
		out := sink.NewCollector()
		defer out.Release()
		first := sink.NewCallback(func(ctx context.Context, rec arrow.RecordBatch) error {
			if firstAt == 0 {
				firstAt = p.Stats().RowsIn
			}
			return out.Write(ctx, rec)
		})
		p, err := volga.SQL(`
SELECT user_id, ts, sum(amount) OVER w AS spend_7d, count(*) OVER w AS n_7d
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)`,
			append([]volga.Option{volga.WithSource("tx", source.NewMemory(schema, batches...)), volga.WithSink(first)}, opts...)...)
		if err != nil {
			fmt.Println(err)
			return 0, false, nil
		}
		if err := p.Run(context.Background()); err != nil {
			fmt.Println(err)
			return 0, false, nil
		}
		all := out.Rows()
		return len(all), firstAt < 200_000, all[len(all)-1]
	}
	n1, early1, last1 := run()
	n2, early2, last2 := run(volga.WithClusteredBy("user_id"))
	fmt.Println("rows:", n1, n2)
	fmt.Println("written before the end of the input:", early1, early2)
	fmt.Println("last row:", last1, last2)
	// Output:
	// rows: 200000 200000
	// written before the end of the input: false true
	// last row: [1999 2496799000 402.5 25] [1999 2496799000 402.5 25]
}

// GROUP BY windows over an export sorted by user: promised clustered by
// user, each user's windows go out once the input has moved on to the
// next user (memory holds one user's windows, not all of them), key by
// key; without the promise they wait for the end of the input, and go out
// by window start across users.
func ExampleWithClusteredBy_groupBy() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	// 3 users, each with a transaction every 8 hours over 2 days.
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for user := range 3 {
		for k := range 6 {
			b.Field(0).(*array.Int64Builder).Append(int64(user))
			b.Field(1).(*array.Int64Builder).Append(int64(k) * 8 * 3600 * 1000)
			b.Field(2).(*array.Float64Builder).Append(float64(10*user + k))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	run := func(opts ...volga.Option) {
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(`
SELECT user_id, window_start, sum(amount) AS spend, count(*) AS n
FROM tx
GROUP BY user_id, tumble(ts, INTERVAL '1' DAY)`,
			append([]volga.Option{volga.WithSource("tx", source.NewMemory(schema, rec)), volga.WithSink(out)}, opts...)...)
		if err == nil {
			err = p.Run(context.Background())
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		rows := out.Rows()
		for i, r := range rows {
			if i > 0 {
				fmt.Print(" ")
			}
			fmt.Print(r)
		}
		fmt.Println()
	}
	run()
	run(volga.WithClusteredBy("user_id"))
	// Output:
	// [0 0 3 3] [1 0 33 3] [2 0 63 3] [0 86400000 12 3] [1 86400000 42 3] [2 86400000 72 3]
	// [0 0 3 3] [0 86400000 12 3] [1 0 33 3] [1 86400000 42 3] [2 0 63 3] [2 86400000 72 3]
}

// A month of transactions in time order, with features over 30-day
// frames: in input order a batch run holds every user's rows and
// per-merchant counts at once; ordering the input by user first, it holds
// the input's rows and one user's state at a time. Each row gets the
// same features; the output comes user by user.
func ExampleWithClusterInput() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "merchant", Type: arrow.BinaryTypes.String},
	}, nil)
	// 30 000 transactions of 300 users, 90 seconds apart, in time order.
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 30000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i*7919) % 300)
		b.Field(2).(*array.Int64Builder).Append(int64(i) * 90_000)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("m%d", (i/600)%2))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	run := func(opts ...volga.Option) [][]any {
		out := sink.NewCollector()
		defer out.Release()
		p, err := volga.SQL(`
SELECT id, user_id, top1_ratio(merchant) OVER w AS top1_30d, topn_frequency(merchant, 2) OVER w AS top2_30d
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '30' DAY PRECEDING AND CURRENT ROW)`,
			append([]volga.Option{volga.WithSource("tx", source.NewMemory(schema, rec)), volga.WithSink(out)}, opts...)...)
		if err != nil {
			fmt.Println(err)
			return nil
		}
		if err := p.Run(context.Background()); err != nil {
			fmt.Println(err)
			return nil
		}
		return out.Rows()
	}
	inOrder := run()
	byUser := run(volga.WithClusterInput("user_id"))
	same := len(inOrder) == len(byUser)
	for _, r := range byUser {
		same = same && fmt.Sprint(r) == fmt.Sprint(inOrder[r[0].(int64)])
	}
	fmt.Println("rows:", len(inOrder), len(byUser), "same features:", same)
	fmt.Println("first rows in input order, users:", inOrder[0][1], inOrder[1][1], inOrder[2][1])
	fmt.Println("first rows ordered by user, users:", byUser[0][1], byUser[1][1], byUser[2][1])
	fmt.Println("a row:", byUser[2])
	// Output:
	// rows: 30000 30000 same features: true
	// first rows in input order, users: 0 119 238
	// first rows ordered by user, users: 0 0 0
	// a row: [600 0 0.6666666666666666 [map[count:2 value:m0] map[count:1 value:m1]]]
}
