package workload

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// GroupQuery is the group-1 workload over the features-4 events (table
// tx): hourly tumbling windows per user, as a training set of hourly
// aggregates is built.
const GroupQuery = `SELECT user_id, window_start, window_end,
       count(*) AS n, sum(amount) AS spend, max(amount) AS max_amount
FROM tx
GROUP BY user_id, tumble(ts, INTERVAL '1' HOUR)`

// GroupDuckQuery is GroupQuery in DuckDB's dialect: the same windows,
// aligned to the Unix epoch, and columns.
const GroupDuckQuery = `SELECT user_id,
       time_bucket(INTERVAL '1 hour', ts) AS window_start,
       time_bucket(INTERVAL '1 hour', ts) + INTERVAL '1 hour' AS window_end,
       count(*) AS n, sum(amount) AS spend, max(amount) AS max_amount
FROM tx
GROUP BY user_id, time_bucket(INTERVAL '1 hour', ts)`

// GroupDuckChecksum computes GroupChecksum's fields in DuckDB over every
// row of GroupDuckQuery's output, in the order of GroupChecksum's fields.
const GroupDuckChecksum = `SELECT count(*), sum(user_id)::BIGINT, sum(epoch_ms(window_start) // 1000)::BIGINT,
       sum(epoch_ms(window_end) - epoch_ms(window_start))::BIGINT, sum(n)::BIGINT, sum(spend), sum(max_amount)
FROM (` + GroupDuckQuery + `)`

// GroupChecksum is the checksum of a group-1 output: the number of
// windows, the sums of their users, starts (whole seconds: milliseconds
// would overflow at 10 M windows), lengths (ms) and row counts, and the
// sums of the two float aggregates. Every window contributes.
type GroupChecksum struct {
	Windows int64   `json:"windows"`
	Users   int64   `json:"users"`
	Starts  int64   `json:"starts"`
	Lengths int64   `json:"lengths"`
	N       int64   `json:"n"`
	Spend   float64 `json:"spend"`
	Max     float64 `json:"max"`
}

// AddRecord folds every row of a group-1 output batch into c, finding the
// columns by name; window_start and window_end may be timestamps (of any
// unit) or int64 milliseconds.
func (c *GroupChecksum) AddRecord(rec arrow.RecordBatch) error {
	cols := make([]arrow.Array, 6)
	for i, name := range []string{"user_id", "window_start", "window_end", "n", "spend", "max_amount"} {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return fmt.Errorf("output has no column %q: %s", name, rec.Schema())
		}
		cols[i] = rec.Column(idx[0])
	}
	user, ok1 := cols[0].(*array.Int64)
	n, ok2 := cols[3].(*array.Int64)
	spend, ok3 := cols[4].(*array.Float64)
	mx, ok4 := cols[5].(*array.Float64)
	starts, err1 := millis(cols[1])
	ends, err2 := millis(cols[2])
	if !(ok1 && ok2 && ok3 && ok4) || err1 != nil || err2 != nil {
		return fmt.Errorf("unexpected group-1 output column types: %s", rec.Schema())
	}
	for i := 0; i < user.Len(); i++ {
		c.Windows++
		c.Users += user.Value(i)
		c.Starts += starts[i] / 1000
		c.Lengths += ends[i] - starts[i]
		c.N += n.Value(i)
		if spend.IsValid(i) {
			c.Spend += spend.Value(i)
		}
		if mx.IsValid(i) {
			c.Max += mx.Value(i)
		}
	}
	return nil
}

// millis returns a's values in milliseconds.
func millis(a arrow.Array) ([]int64, error) {
	switch a := a.(type) {
	case *array.Int64:
		return a.Int64Values(), nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		out := make([]int64, a.Len())
		for i, v := range a.TimestampValues() {
			out[i] = v.ToTime(unit).UnixMilli()
		}
		return out, nil
	}
	return nil, fmt.Errorf("want int64 or timestamp, got %s", a.DataType())
}

// String renders the checksum for the debug line.
func (c GroupChecksum) String() string {
	return fmt.Sprintf("windows=%d users=%d starts=%d lengths=%d n=%d spend=%.10g max=%.10g",
		c.Windows, c.Users, c.Starts, c.Lengths, c.N, c.Spend, c.Max)
}

// Agrees reports whether two checksums describe the same output: counts
// and sums of integers exactly, float sums within 1e-9 relative.
func (c GroupChecksum) Agrees(o GroupChecksum) bool {
	close := func(a, b float64) bool {
		return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	}
	return c.Windows == o.Windows && c.Users == o.Users && c.Starts == o.Starts && c.Lengths == o.Lengths &&
		c.N == o.N && close(c.Spend, o.Spend) && close(c.Max, o.Max)
}
