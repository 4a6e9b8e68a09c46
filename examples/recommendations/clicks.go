package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// click is one generated click event.
type click struct {
	User     string
	Item     string
	Category string
	TS       time.Time // event time, milliseconds, strictly increasing
}

// Shape of the generated stream.
const (
	numClicks  = 500
	streamSpan = 36 * time.Hour
	seed       = 11
)

var (
	streamStart = time.Date(2024, 9, 2, 6, 0, 0, 0, time.UTC)
	users       = []string{"ana", "ben", "chloe", "dev"}
	categories  = []string{"books", "games", "garden", "music", "sports"}
)

// defaultClicks is the stream the example runs on.
func defaultClicks() []click { return generateClicks(numClicks, seed) }

// itemCategory is the category of item i: items are spread over the
// categories round robin.
func itemCategory(i int) string { return categories[i%len(categories)] }

// generateClicks returns n clicks in event-time order. Each user favours
// one category (two clicks in three) and, within a category, its first
// items; the rest of the clicks go anywhere.
func generateClicks(n int, seed uint64) []click {
	r := rand.New(rand.NewPCG(seed, 0xc11c))
	step := streamSpan / time.Duration(n)
	clock := streamStart
	out := make([]click, 0, n)
	for range n {
		clock = clock.Add(step/2 + time.Duration(r.Int64N(int64(step)))).Truncate(time.Millisecond)
		u := r.IntN(len(users))
		var item int
		if r.IntN(3) < 2 {
			// The favourite category u: items u, u+5, u+10, ...; low ones more often.
			item = u + len(categories)*min(r.IntN(4), r.IntN(6))
		} else {
			item = r.IntN(30)
		}
		out = append(out, click{User: users[u], Item: fmt.Sprintf("item-%02d", item), Category: itemCategory(item), TS: clock})
	}
	return out
}

// clickSchema is the schema of the click batches.
var clickSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.BinaryTypes.String},
	{Name: "item", Type: arrow.BinaryTypes.String},
	{Name: "category", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
}, nil)

// clickBatches converts clicks into Arrow batches of at most size rows.
func clickBatches(clicks []click, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, clickSchema)
	defer b.Release()
	for i, c := range clicks {
		b.Field(0).(*array.StringBuilder).Append(c.User)
		b.Field(1).(*array.StringBuilder).Append(c.Item)
		b.Field(2).(*array.StringBuilder).Append(c.Category)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(c.TS.UnixMilli()))
		if (i+1)%size == 0 || i == len(clicks)-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return out
}
