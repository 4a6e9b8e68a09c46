// Package workload defines the queries of the benchmark workloads and the
// checksum every engine folds its output into, so that one run shows both
// how fast each engine is and that they all computed the same thing.
package workload

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Features4Query is the features-4 query of BENCHMARKS.md over table tx.
const Features4Query = `SELECT id, user_id, ts,
       sum(amount) OVER w1h AS spend_1h, count(*) OVER w24h AS n_24h,
       avg(amount) OVER w7d AS avg_7d,   max(amount) OVER w1h AS max_1h
FROM tx
WINDOW w1h  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       w24h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '24' HOUR PRECEDING AND CURRENT ROW),
       w7d  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW)`

// Features4Checksum is the checksum of a features-4 output: the number of
// rows and the sum of each feature column. Every output row contributes, so
// an engine cannot skip work it is credited for.
type Features4Checksum struct {
	Rows    int64   `json:"rows"`
	IDs     int64   `json:"ids"`
	Spend1h float64 `json:"spend_1h"`
	N24h    int64   `json:"n_24h"`
	Avg7d   float64 `json:"avg_7d"`
	Max1h   float64 `json:"max_1h"`
}

// Add folds one output row into c.
func (c *Features4Checksum) Add(id int64, spend1h float64, n24h int64, avg7d, max1h float64) {
	c.Rows++
	c.IDs += id
	c.Spend1h += spend1h
	c.N24h += n24h
	c.Avg7d += avg7d
	c.Max1h += max1h
}

// AddRecord folds every row of a features-4 output batch into c, finding
// the columns by name. NULL feature values (which features-4 never
// produces) count as 0.
func (c *Features4Checksum) AddRecord(rec arrow.RecordBatch) error {
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("output has no column %q: %s", name, rec.Schema())
		}
		return rec.Column(idx[0]), nil
	}
	var cols [5]arrow.Array
	for i, name := range []string{"id", "spend_1h", "n_24h", "avg_7d", "max_1h"} {
		a, err := col(name)
		if err != nil {
			return err
		}
		cols[i] = a
	}
	id, ok1 := cols[0].(*array.Int64)
	spend, ok2 := cols[1].(*array.Float64)
	n, ok3 := cols[2].(*array.Int64)
	avg, ok4 := cols[3].(*array.Float64)
	mx, ok5 := cols[4].(*array.Float64)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return fmt.Errorf("unexpected output column types: %s", rec.Schema())
	}
	idv, sv, nv, av, mv := id.Int64Values(), spend.Float64Values(), n.Int64Values(), avg.Float64Values(), mx.Float64Values()
	for i := range idv {
		c.Rows++
		c.IDs += idv[i]
		c.N24h += nv[i]
		if spend.IsValid(i) {
			c.Spend1h += sv[i]
		}
		if avg.IsValid(i) {
			c.Avg7d += av[i]
		}
		if mx.IsValid(i) {
			c.Max1h += mv[i]
		}
	}
	return nil
}

// String renders the checksum for the debug line.
func (c Features4Checksum) String() string {
	return fmt.Sprintf("rows=%d ids=%d spend_1h=%.10g n_24h=%d avg_7d=%.10g max_1h=%.10g",
		c.Rows, c.IDs, c.Spend1h, c.N24h, c.Avg7d, c.Max1h)
}

// Agrees reports whether two checksums describe the same output: counts
// exactly, float sums within 1e-9 relative (engines add the same values in
// different orders).
func (c Features4Checksum) Agrees(o Features4Checksum) bool {
	close := func(a, b float64) bool {
		return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	}
	return c.Rows == o.Rows && c.IDs == o.IDs && c.N24h == o.N24h &&
		close(c.Spend1h, o.Spend1h) && close(c.Avg7d, o.Avg7d) && close(c.Max1h, o.Max1h)
}
