package main

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// event is one generated card transaction.
type event struct {
	User   string
	TS     time.Time // event time, milliseconds
	Amount float64   // whole cents
	// Straggler marks an event that arrives long after its event time,
	// much further behind the stream than the out-of-orderness bound.
	Straggler bool
}

// Shape of the generated stream.
const (
	numEvents   = 2000
	streamSpan  = 6 * time.Hour
	maxJitter   = 20 * time.Second // below maxOutOfOrder
	batchEvents = 10               // events per batch: the watermark moves between batches
	seed        = 42
)

var (
	streamStart = time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	// users, weighted: alice and bob buy more often than the others.
	users = []string{"alice", "alice", "alice", "bob", "bob", "carol", "dave", "erin"}
)

// defaultEvents is the stream the quickstart runs on.
func defaultEvents() []event { return generateEvents(numEvents, seed) }

// generateEvents returns n transactions in arrival order. Event times
// advance about streamSpan/n per event; each event is up to maxJitter
// older than its arrival (out of order, but within the bound), and about
// one in 250 is a straggler, 15 to 45 minutes older than its arrival.
func generateEvents(n int, seed uint64) []event {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	step := streamSpan / time.Duration(n)
	clock := streamStart
	out := make([]event, 0, n)
	for i := range n {
		clock = clock.Add(step/2 + time.Duration(r.Int64N(int64(step))))
		e := event{User: users[r.IntN(len(users))]}
		if i > 100 && r.IntN(250) == 0 {
			e.Straggler = true
			e.TS = clock.Add(-15*time.Minute - time.Duration(r.Int64N(int64(30*time.Minute))))
		} else {
			e.TS = clock.Add(-time.Duration(r.Int64N(int64(maxJitter))))
		}
		e.TS = e.TS.Truncate(time.Millisecond)
		// Amounts in whole cents: most small, a few large.
		cents := 100 + r.IntN(4900)
		if r.IntN(20) == 0 {
			cents *= 10
		}
		e.Amount = float64(cents) / 100
		out = append(out, e)
	}
	return out
}

// eventSchema is the schema of the generated batches.
var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// generator is a source.Source that replays events in batches of
// batchEvents rows, as a stream would deliver them.
type generator struct {
	events []event
	next   int
	closed bool
}

func newGenerator(events []event) *generator { return &generator{events: events} }

// Schema returns the schema of the batches.
func (g *generator) Schema() *arrow.Schema { return eventSchema }

// Read returns the next batch, or io.EOF after the last event.
func (g *generator) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if g.closed {
		return nil, errors.New("generator: read after Close")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if g.next >= len(g.events) {
		return nil, io.EOF
	}
	end := min(g.next+batchEvents, len(g.events))
	b := array.NewRecordBuilder(memory.DefaultAllocator, eventSchema)
	defer b.Release()
	users := b.Field(0).(*array.StringBuilder)
	ts := b.Field(1).(*array.TimestampBuilder)
	amounts := b.Field(2).(*array.Float64Builder)
	for _, e := range g.events[g.next:end] {
		users.Append(e.User)
		ts.Append(arrow.Timestamp(e.TS.UnixMilli()))
		amounts.Append(e.Amount)
	}
	g.next = end
	return b.NewRecordBatch(), nil
}

// Close ends the stream.
func (g *generator) Close() error {
	g.closed = true
	return nil
}
