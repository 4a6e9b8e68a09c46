package workload

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ML3Query is the ml-3 workload of BENCHMARKS.md over the features-4
// events (table tx): three ML aggregates per user, each over its own
// window.
const ML3Query = `SELECT id, user_id, ts,
       topn_frequency(merchant, 5) OVER w7d AS top_merchants_7d,
       sum_cate(amount, merchant) OVER w24h AS spend_by_merchant_24h,
       top1_ratio(merchant) OVER w30d AS top1_ratio_30d
FROM tx
WINDOW w24h AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '24' HOUR PRECEDING AND CURRENT ROW),
       w7d  AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '7' DAY PRECEDING AND CURRENT ROW),
       w30d AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '30' DAY PRECEDING AND CURRENT ROW)`

// ML3Checksum folds an ml-3 output into numbers two engines can compare.
// Every entry of every list and map contributes, with its position and
// value, so that a wrong order, a wrong tie-break or a missing entry
// changes the checksum:
//
//   - topn_frequency: the number of entries, the sum of counts, and
//     TopnHash, the wrapping sum over entries of
//     fnv64(value) * (position+1) * count (exact, order-sensitive);
//   - sum_cate: the number of entries, the sum of values, and the sum of
//     value * (fnv64(key) mod 1021) (floats: 1e-9 relative);
//   - top1_ratio: the sum of the ratios.
type ML3Checksum struct {
	Rows         int64   `json:"rows"`
	IDs          int64   `json:"ids"`
	TopnEntries  int64   `json:"topn_entries"`
	TopnCounts   int64   `json:"topn_counts"`
	TopnHash     uint64  `json:"topn_hash"`
	CateEntries  int64   `json:"cate_entries"`
	CateSum      float64 `json:"cate_sum"`
	CateWeighted float64 `json:"cate_weighted"`
	Top1Sum      float64 `json:"top1_sum"`
}

// Hash64 is the FNV-1a hash of s, the value hash of ML3Checksum.
func Hash64(s string) uint64 {
	// FNV-1a (hash/fnv's New64a), inline: no hash.Hash, no []byte copy.
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// AddRow counts one output row.
func (c *ML3Checksum) AddRow(id int64, top1 float64) {
	c.Rows++
	c.IDs += id
	c.Top1Sum += top1
}

// AddTopn folds the entry at position pos of a topn_frequency list.
func (c *ML3Checksum) AddTopn(pos int, valueHash uint64, count int64) {
	c.TopnEntries++
	c.TopnCounts += count
	c.TopnHash += valueHash * uint64(pos+1) * uint64(count)
}

// AddCate folds one (key, value) entry of a sum_cate map.
func (c *ML3Checksum) AddCate(keyHash uint64, v float64) {
	c.CateEntries++
	c.CateSum += v
	c.CateWeighted += v * float64(keyHash%1021)
}

// AddRecord folds every row of an ml-3 output batch into c. The column
// types are those of SPEC.md section 4: topn_frequency is
// list<struct<value: string, count: int64>>, sum_cate map<string,
// float64>, top1_ratio float64.
func (c *ML3Checksum) AddRecord(rec arrow.RecordBatch) error {
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("output has no column %q: %s", name, rec.Schema())
		}
		return rec.Column(idx[0]), nil
	}
	var cols [4]arrow.Array
	for i, name := range []string{"id", "top_merchants_7d", "spend_by_merchant_24h", "top1_ratio_30d"} {
		a, err := col(name)
		if err != nil {
			return err
		}
		cols[i] = a
	}
	id, ok1 := cols[0].(*array.Int64)
	topn, ok2 := cols[1].(*array.List)
	cate, ok3 := cols[2].(*array.Map)
	top1, ok4 := cols[3].(*array.Float64)
	if !(ok1 && ok2 && ok3 && ok4) {
		return fmt.Errorf("unexpected ml-3 output column types: %s", rec.Schema())
	}
	entries, ok := topn.ListValues().(*array.Struct)
	if !ok || entries.NumField() != 2 {
		return fmt.Errorf("topn_frequency entries are %s, want struct<value, count>", topn.ListValues().DataType())
	}
	tv, ok1 := entries.Field(0).(*array.String)
	tc, ok2 := entries.Field(1).(*array.Int64)
	ck, ok3 := cate.Keys().(*array.String)
	cv, ok4 := cate.Items().(*array.Float64)
	if !(ok1 && ok2 && ok3 && ok4) {
		return fmt.Errorf("unexpected ml-3 nested types: %s", rec.Schema())
	}
	// Hashed directly: a map of the batch's values cost more than the
	// hash of these short strings (1.5 s of ml-3's 10 M rows).
	hash := Hash64
	for i := 0; i < id.Len(); i++ {
		r := math.NaN()
		if top1.IsValid(i) {
			r = top1.Value(i)
		}
		c.AddRow(id.Value(i), r)
		lo, hi := topn.ValueOffsets(i)
		for j := lo; j < hi; j++ {
			c.AddTopn(int(j-lo), hash(tv.Value(int(j))), tc.Value(int(j)))
		}
		lo, hi = cate.ValueOffsets(i)
		for j := lo; j < hi; j++ {
			c.AddCate(hash(ck.Value(int(j))), cv.Value(int(j)))
		}
	}
	return nil
}

// String renders the checksum for the debug line.
func (c ML3Checksum) String() string {
	return fmt.Sprintf("rows=%d ids=%d topn_entries=%d topn_counts=%d topn_hash=%d cate_entries=%d cate_sum=%.10g cate_weighted=%.10g top1_sum=%.10g",
		c.Rows, c.IDs, c.TopnEntries, c.TopnCounts, c.TopnHash, c.CateEntries, c.CateSum, c.CateWeighted, c.Top1Sum)
}

// Agrees reports whether two checksums describe the same output: counts
// and hashes exactly, float sums within 1e-9 relative.
func (c ML3Checksum) Agrees(o ML3Checksum) bool {
	close := func(a, b float64) bool {
		return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	}
	return c.Rows == o.Rows && c.IDs == o.IDs && c.TopnEntries == o.TopnEntries &&
		c.TopnCounts == o.TopnCounts && c.TopnHash == o.TopnHash && c.CateEntries == o.CateEntries &&
		close(c.CateSum, o.CateSum) && close(c.CateWeighted, o.CateWeighted) && close(c.Top1Sum, o.Top1Sum)
}
