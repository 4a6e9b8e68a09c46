package bench

import (
	"cmp"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	oracleSeed = flag.Uint64("oracle.seed", 20240601, "seed of the oracle tests' random data")
	oracleRows = flag.Int("oracle.rows", 4000, "rows of the oracle tests' random data")
)

// oracleSchema is the table every oracle query reads (as table t):
//
//	id       int64          row number = arrival (input) position, unique
//	user_id  int64          200 keys, skewed: a few users own many rows
//	merchant string         30 values and NULL (3%): a string key and argument
//	ts       timestamp[ms]  6 hours; 2/3 of the rows on whole minutes, so
//	                        equal (key, ts) peers are common
//	amount   float64        cents in [-50, 500], NULL 10%
//	price    float64        one of 4 values, NULL 10%: ties, equal-value frames
//	qty      int64          [-5, 100], NULL 10%
var oracleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// oracleStart is the first event time of the random data.
var oracleStart = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// oracleRow is one generated row; pointers are NULLable values.
type oracleRow struct {
	id, user int64
	merchant *string
	ts       int64 // epoch ms
	amount   *float64
	price    *float64
	qty      *int64
}

// oracleDataOptions shapes the random data.
type oracleDataOptions struct {
	rows int
	// sorted orders rows by ts (an event log); otherwise input order is
	// random. id is always the input position.
	sorted bool
	// uniqueKeyTS makes (user_id, ts) unique, so that peers never exist
	// within a user_id partition.
	uniqueKeyTS bool
}

// newOracleRows generates the random rows for seed.
func newOracleRows(seed uint64, o oracleDataOptions) []oracleRow {
	rng := rand.New(rand.NewPCG(seed, 0x6f7261636c65)) // "oracle"
	merchants := make([]string, 30)
	for i := range merchants {
		merchants[i] = fmt.Sprintf("shop-%02d", i)
	}
	span := int64(6 * time.Hour / time.Millisecond)
	start := oracleStart.UnixMilli()
	prices := []float64{1.5, 2.5, 2.5, 10}
	used := map[[2]int64]bool{}
	rs := make([]oracleRow, o.rows)
	for i := range rs {
		r := &rs[i]
		// Skewed users: squaring a uniform concentrates rows on low ids.
		u := rng.Float64()
		r.user = int64(u * u * 200)
		for {
			r.ts = start + rng.Int64N(span)
			if rng.IntN(3) > 0 {
				r.ts -= (r.ts - start) % 60_000 // on the minute: peers
			}
			k := [2]int64{r.user, r.ts}
			if !o.uniqueKeyTS || !used[k] {
				used[k] = true
				break
			}
		}
		if rng.IntN(100) >= 3 {
			m := merchants[rng.IntN(len(merchants))]
			r.merchant = &m
		}
		if rng.IntN(10) > 0 {
			a := float64(rng.IntN(55_001)-5_000) / 100
			r.amount = &a
		}
		if rng.IntN(10) > 0 {
			p := prices[rng.IntN(len(prices))]
			r.price = &p
		}
		if rng.IntN(10) > 0 {
			q := rng.Int64N(106) - 5
			r.qty = &q
		}
	}
	if o.sorted {
		slices.SortStableFunc(rs, func(a, b oracleRow) int { return int(a.ts - b.ts) })
	}
	for i := range rs {
		rs[i].id = int64(i)
	}
	return rs
}

// oracleRecords builds record batches of up to batchRows rows from rs, in
// the order given.
func oracleRecords(rs []oracleRow, batchRows int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, oracleSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rs); lo += batchRows {
		for _, r := range rs[lo:min(lo+batchRows, len(rs))] {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.Int64Builder).Append(r.user)
			appendOpt(b.Field(2).(*array.StringBuilder), r.merchant)
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
			appendOpt(b.Field(4).(*array.Float64Builder), r.amount)
			appendOpt(b.Field(5).(*array.Float64Builder), r.price)
			appendOpt(b.Field(6).(*array.Int64Builder), r.qty)
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return recs
}

func appendOpt[T any](b interface {
	Append(T)
	AppendNull()
}, v *T) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(*v)
}

// shuffled returns rs in the arrival order perm.
func shuffled(rs []oracleRow, perm []int) []oracleRow {
	out := make([]oracleRow, len(perm))
	for i, r := range perm {
		out[i] = rs[r]
	}
	return out
}

// userOrder returns the positions of rs sorted by user (stable).
func userOrder(rs []oracleRow) []int {
	perm := make([]int, len(rs))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(rs[a].user, rs[b].user) })
	return perm
}

// timestamps returns the event times of rs.
func timestamps(rs []oracleRow) []int64 {
	ts := make([]int64, len(rs))
	for i, r := range rs {
		ts[i] = r.ts
	}
	return ts
}
