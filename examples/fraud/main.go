// Fraud computes card-level fraud features from a Kafka topic of card
// transactions, scores candidate transactions against the live state, and
// builds a point-in-time training set.
//
// It needs no Kafka installation: the example starts kfake, an in-process
// Kafka cluster speaking the real wire protocol on a loopback port, and
// produces 600 generated transactions (three days, six cards, a few fraud
// bursts) to its topic "transactions". Run it with
//
//	go run ./examples/fraud
//
// It then
//
//  1. runs a streaming pipeline over the topic (read to its end) with the
//     features of every transaction, each with and without the transaction
//     itself (EXCLUDE CURRENT ROW),
//  2. scores candidate transactions: Pipeline.Lookup with a candidate row,
//     the features the card would have if the transaction went through,
//  3. builds training data with volga.Backfill over a spine of labelled
//     transactions, in strict mode (only events before each spine row).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
	"github.com/volga-go/volga/source/kafka"
)

// featuresSQL holds the card-level features. The *_prev variants exclude
// the current transaction from its own frame: the card's history as it
// was just before the transaction, which is what a model scoring it sees,
// so it is what a model must be trained on.
const featuresSQL = `
SELECT id, card_id, ts, merchant, amount,
       sum(amount)              OVER last_hour      AS spend_1h,
       count(*)                 OVER last_day       AS n_24h,
       count(DISTINCT merchant) OVER last_day       AS merchants_24h,
       max(amount)              OVER last_week      AS max_7d,
       sum(amount)              OVER last_hour_prev AS spend_1h_prev,
       count(*)                 OVER last_day_prev  AS n_24h_prev,
       count(DISTINCT merchant) OVER last_day_prev  AS merchants_24h_prev,
       max(amount)              OVER last_week_prev AS max_7d_prev
FROM transactions
WINDOW last_hour      AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       last_day       AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW),
       last_week      AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW),
       last_hour_prev AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW),
       last_day_prev  AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW),
       last_week_prev AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)`

// trainingSQL is what Backfill computes for each labelled transaction. In
// strict mode the frames end just before the spine row's time, so the
// plain windows already leave the transaction itself out.
const trainingSQL = `
SELECT card_id, ts,
       sum(amount)              OVER last_hour AS spend_1h,
       count(*)                 OVER last_day  AS n_24h,
       count(DISTINCT merchant) OVER last_day  AS merchants_24h,
       max(amount)              OVER last_week AS max_7d
FROM transactions
WINDOW last_hour AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       last_day  AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW),
       last_week AS (PARTITION BY card_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)`

const topic = "transactions"

// txnSchema is the schema of the JSON messages on the topic.
var txnSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "card_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
}, nil)

// Output sizes: the stream has 600 rows, only a few of each part are shown.
const (
	printEvery     = 60 // part 1 prints every printEvery-th emitted row
	spineEvery     = 25 // the spine has every spineEvery-th transaction, plus the fraud ones
	printTrainRows = 12 // part 3 prints the first rows of the training set
)

// candidates are the transactions part 2 scores, at scoreOffset after the
// end of the stream: an ordinary one and a suspicious one.
var candidates = []struct {
	Card, Merchant string
	Amount         float64
}{
	{"card-2", "shop-02", 42.50},
	{"card-4", "shop-37", 1890.00},
	{"card-6", "shop-41", 2500.00},
}

const scoreOffset = 5 * time.Minute

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fraud:", err)
		os.Exit(1)
	}
}

// run starts the in-process Kafka cluster, produces the transactions and
// runs the three parts, writing their output to w.
func run(ctx context.Context, w io.Writer) error {
	txns := defaultTxns()

	// kfake is a Kafka cluster inside this process, listening on a
	// loopback port. A deployment would pass its own brokers instead.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		return err
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	if err := produce(ctx, brokers, txns); err != nil {
		return err
	}
	fmt.Fprintf(w, "produced %d transactions to topic %q on an in-process Kafka cluster (kfake)\n\n", len(txns), topic)

	p, err := stream(ctx, w, brokers)
	if err != nil {
		return err
	}
	if err := score(ctx, w, p, txns[len(txns)-1].TS.Add(scoreOffset)); err != nil {
		return err
	}
	return train(ctx, w, brokers, txns)
}

// produce writes the transactions to the topic as JSON messages keyed by
// card, in order (the topic has one partition).
func produce(ctx context.Context, brokers []string, txns []txn) error {
	msgs := make([]kafkago.Message, len(txns))
	for i, t := range txns {
		v, err := json.Marshal(map[string]any{
			"id": t.ID, "card_id": t.Card, "merchant": t.Merchant, "amount": t.Amount,
			"ts": t.TS.Format(time.RFC3339Nano),
		})
		if err != nil {
			return err
		}
		msgs[i] = kafkago.Message{Key: []byte(t.Card), Value: v}
	}
	wr := &kafkago.Writer{Addr: kafkago.TCP(brokers...), Topic: topic, BatchTimeout: time.Millisecond, BatchSize: 1000, RequiredAcks: kafkago.RequireAll}
	err := wr.WriteMessages(ctx, msgs...)
	if cerr := wr.Close(); err == nil {
		err = cerr
	}
	return err
}

// newSource reads the topic from its start to the end it has now.
func newSource(brokers []string) (*kafka.Source, error) {
	return kafka.NewSource(kafka.Config{
		Brokers:   brokers,
		Topic:     topic,
		Schema:    txnSchema,
		TimeField: "ts",
		StopAtEnd: true, // a bounded run, so the example ends
	})
}

// stream is part 1: the features pipeline in streaming mode over the
// topic. It prints every printEvery-th row and returns the finished
// pipeline, whose state still answers lookups.
func stream(ctx context.Context, w io.Writer, brokers []string) (*volga.Pipeline, error) {
	fmt.Fprintln(w, "Part 1: streaming features from Kafka (with the transaction / without it)")
	src, err := newSource(brokers)
	if err != nil {
		return nil, err
	}
	defer src.Close()

	n := 0
	printer := sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error {
		for _, r := range sink.Rows(rec) {
			if n%printEvery == 0 {
				if n == 0 {
					fmt.Fprintf(w, "%52s | %-30s | %s\n", "", "with the transaction", "without it (EXCLUDE CURRENT ROW)")
					fmt.Fprintf(w, "%5s %4s %-7s %-15s %-8s %8s | %9s %5s %5s %8s | %9s %5s %5s %8s\n",
						"row", "id", "card", "time", "merchant", "amount",
						"spend_1h", "n_24h", "m_24h", "max_7d", "spend_1h", "n_24h", "m_24h", "max_7d")
				}
				fmt.Fprintf(w, "%5d %4d %-7s %-15s %-8s %8.2f | %9s %5d %5d %8s | %9s %5d %5d %8s\n",
					n+1, r[0], r[1], r[2].(time.Time).Format("Jan 2 15:04:05"), r[3], r[4],
					num(r[5]), r[6], r[7], num(r[8]), num(r[9]), r[10], r[11], num(r[12]))
			}
			n++
		}
		return nil
	})
	p, err := volga.SQL(featuresSQL,
		volga.WithSource("transactions", src),
		volga.WithSink(printer),
		volga.WithMode(volga.Streaming),
		volga.WithMaxOutOfOrder(time.Second),
	)
	if err != nil {
		return nil, err
	}
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	st := p.Stats()
	fmt.Fprintf(w, "rows in: %d, rows out: %d\n\n", st.RowsIn, st.RowsOut)
	return p, nil
}

// score is part 2: scoring-time lookups. For each candidate transaction,
// the features of its card as of now (the candidate counted in the plain
// windows, as if it went through; not in the *_prev ones).
func score(ctx context.Context, w io.Writer, p *volga.Pipeline, now time.Time) error {
	fmt.Fprintf(w, "Part 2: scoring candidate transactions at %s\n", now.Format(time.DateTime))
	for _, c := range candidates {
		row := map[string]any{"card_id": c.Card, "merchant": c.Merchant, "amount": c.Amount, "ts": now}
		res, err := p.Lookup(ctx, map[string]any{"card_id": c.Card}, now, row)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "candidate %s %s %.2f:", c.Card, c.Merchant, c.Amount)
		for i, name := range res.Names {
			fmt.Fprintf(w, " %s=%s", name, num(res.Values[i]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// train is part 3: a training set from a spine of labelled transactions
// (id, card_id, ts, is_fraud), each with the features as of just before
// it (strict mode), computed by Backfill over a fresh read of the topic.
func train(ctx context.Context, w io.Writer, brokers []string, txns []txn) error {
	spine := spineOf(txns)
	fmt.Fprintf(w, "Part 3: training set, volga.Backfill (strict) over a spine of %d labelled transactions\n", spine.NumRows())
	src, err := newSource(brokers)
	if err != nil {
		return err
	}
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	err = volga.Backfill(ctx, trainingSQL, source.NewMemory(spine.Schema(), spine), out,
		volga.WithSource("transactions", src), volga.WithStrict(true))
	if err != nil {
		return err
	}
	rows := out.Rows()
	fmt.Fprintf(w, "%4s %-7s %-15s %5s | %9s %5s %5s %8s\n", "id", "card", "time", "fraud", "spend_1h", "n_24h", "m_24h", "max_7d")
	for _, r := range rows[:min(printTrainRows, len(rows))] {
		fmt.Fprintf(w, "%4d %-7s %-15s %5t | %9s %5d %5d %8s\n",
			r[0], r[1], r[2].(time.Time).Format("Jan 2 15:04:05"), r[3], num(r[4]), r[5], r[6], num(r[7]))
	}
	fmt.Fprintf(w, "training rows: %d\n", len(rows))
	return nil
}

// spineOf builds the spine: every spineEvery-th transaction and every
// fraudulent one, with its label.
func spineOf(txns []txn) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "card_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "is_fraud", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, t := range spineTxns(txns) {
		b.Field(0).(*array.Int64Builder).Append(t.ID)
		b.Field(1).(*array.StringBuilder).Append(t.Card)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(t.TS.UnixMilli()))
		b.Field(3).(*array.BooleanBuilder).Append(t.Fraud)
	}
	return b.NewRecordBatch()
}

// spineTxns are the transactions of the spine, in time order.
func spineTxns(txns []txn) []txn {
	var out []txn
	for _, t := range txns {
		if t.ID%spineEvery == 0 || t.Fraud {
			out = append(out, t)
		}
	}
	return out
}

// num renders a numeric feature: "-" for NULL (an empty frame).
func num(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case float64:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprint(v)
	}
}
