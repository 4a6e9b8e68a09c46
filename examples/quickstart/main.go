// Quickstart computes per-user spending features over a simulated stream
// of card transactions, first with SQL, then with the Go builder.
//
// It needs no files: the events come from a deterministic generator
// (2,000 transactions of five users over six simulated hours, slightly out
// of order, with a few stragglers that arrive far too late). Run it with
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// featuresSQL is the pipeline of part 1. For every transaction: the user's
// spend and largest amount over the last hour, and their number of
// transactions over the last day, the transaction itself included.
const featuresSQL = `
SELECT user_id, ts, amount,
       sum(amount) OVER last_hour AS spend_1h,
       count(*)    OVER last_day  AS n_24h,
       max(amount) OVER last_hour AS max_1h
FROM transactions
WINDOW last_hour AS (PARTITION BY user_id ORDER BY ts
                     RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       last_day  AS (PARTITION BY user_id ORDER BY ts
                     RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)`

// maxOutOfOrder is how far behind the newest event a transaction may
// arrive and still count. The generator stays within it, except for its
// stragglers.
const maxOutOfOrder = 30 * time.Second

// printEvery is how often part 1 prints an emitted row: the stream has
// about 2,000 and a table of them all would scroll away.
const printEvery = 50

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run runs both parts and writes their output to w.
func run(ctx context.Context, w io.Writer) error {
	sqlRows, err := runSQL(ctx, w)
	if err != nil {
		return err
	}
	return runBuilder(ctx, w, sqlRows)
}

// runSQL is part 1: the SQL pipeline in streaming mode. It prints every
// printEvery-th row as it is emitted, then a summary, and returns every
// output row.
func runSQL(ctx context.Context, w io.Writer) ([][]any, error) {
	fmt.Fprintf(w, "Part 1: SQL, streaming, out-of-orderness bound %s\n\n", maxOutOfOrder)

	var rows [][]any
	printer := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		for _, row := range sink.Rows(rec) {
			if len(rows)%printEvery == 0 {
				if len(rows) == 0 {
					fmt.Fprintf(w, "%6s  %-7s %-8s %8s %9s %6s %8s\n", "row", "user", "time", "amount", "spend_1h", "n_24h", "max_1h")
				}
				printRow(w, len(rows)+1, row)
			}
			rows = append(rows, row)
		}
		return nil
	})
	late := sink.NewCollector()
	defer late.Release()

	p, err := volga.SQL(featuresSQL,
		volga.WithSource("transactions", newGenerator(defaultEvents())),
		volga.WithSink(printer),
		volga.WithMode(volga.Streaming),
		volga.WithMaxOutOfOrder(maxOutOfOrder),
		volga.WithLateSink(late),
	)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	st := p.Stats()
	fmt.Fprintf(w, "\nrows in: %d, rows out: %d, late rows: %d (not emitted, not applied), took %s\n",
		st.RowsIn, st.RowsOut, st.LateDropped, time.Since(start).Round(time.Millisecond))
	for _, r := range late.Rows() {
		fmt.Fprintf(w, "  late: %-7s %s  %8.2f\n", r[0], r[1].(time.Time).Format(time.TimeOnly), r[2])
	}
	return rows, nil
}

// printRow prints one output row of the features (user_id, ts, amount,
// spend_1h, n_24h, max_1h).
func printRow(w io.Writer, n int, r []any) {
	fmt.Fprintf(w, "%6d  %-7s %-8s %8.2f %9.2f %6d %8.2f\n",
		n, r[0], r[1].(time.Time).Format(time.TimeOnly), r[2], r[3], r[4], r[5])
}

// runBuilder is part 2: the same pipeline written with the Go builder, run
// over the same stream. Both front ends produce the same plan, so the
// rows must be identical.
func runBuilder(ctx context.Context, w io.Writer, sqlRows [][]any) error {
	fmt.Fprint(w, "\nPart 2: the same features with the Go builder\n\n")

	lastHour := pipeline.Over("user_id").Range(time.Hour)
	lastDay := pipeline.Over("user_id").Range(24 * time.Hour)
	b := pipeline.From("transactions").
		EventTime("ts").
		Select("user_id", "ts", "amount").
		Agg("spend_1h", pipeline.Sum("amount"), lastHour).
		Agg("n_24h", pipeline.CountAll(), lastDay).
		Agg("max_1h", pipeline.Max("amount"), lastHour)

	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.Build(b,
		volga.WithSource("transactions", newGenerator(defaultEvents())),
		volga.WithSink(out),
		volga.WithMode(volga.Streaming),
		volga.WithMaxOutOfOrder(maxOutOfOrder),
	)
	if err != nil {
		return err
	}
	if err := p.Run(ctx); err != nil {
		return err
	}
	rows := out.Rows()
	fmt.Fprintf(w, "builder rows out: %d, identical to the SQL pipeline's: %v\n", len(rows), reflect.DeepEqual(rows, sqlRows))
	fmt.Fprintf(w, "output schema: %s\n", schemaLine(p.Schema()))
	return nil
}

// schemaLine renders a schema as "name type, ...".
func schemaLine(s *arrow.Schema) string {
	var out string
	for i, f := range s.Fields() {
		if i > 0 {
			out += ", "
		}
		out += f.Name + " " + f.Type.String()
	}
	return out
}
