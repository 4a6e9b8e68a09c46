package bench

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/goloop"
	"github.com/volga-go/volga/bench/internal/workload"
)

// ml3OracleQuery computes what the ml-3 features are made of with a
// self-join in DuckDB, which has no topn_frequency, sum_cate or
// top1_ratio: for each event a and each merchant m of a's user's events b
// in a's 30-day frame (a.ts - 30 days <= b.ts <= a.ts, peers included),
// m's count in the 7-day and 30-day frames and its count and amount sum
// in the 24-hour frame, ordered as topn_frequency orders entries (count
// descending, then value). Quadratic in the events per user: an oracle for
// small data, not a benchmark peer.
const ml3OracleQuery = `
SELECT a.id, b.merchant AS m,
       count(*) FILTER (WHERE b.ts >= a.ts - INTERVAL 7 DAY) AS n7,
       count(*) FILTER (WHERE b.ts >= a.ts - INTERVAL 24 HOUR) AS n24,
       sum(b.amount) FILTER (WHERE b.ts >= a.ts - INTERVAL 24 HOUR) AS s24,
       count(*) AS n30
FROM tx a JOIN tx b
  ON a.user_id = b.user_id AND b.ts <= a.ts AND b.ts >= a.ts - INTERVAL 30 DAY
GROUP BY a.id, b.merchant
ORDER BY a.id, n7 DESC, m`

// TestML3Checksum checks the ml-3 checksum of volga's batch mode and of
// the hand-written go-loop against one computed from DuckDB's self-join,
// on an event log of 40 days with few users and merchants (so windows
// hold many rows, counts tie often and merchants leave the 24-hour window)
// and timestamps coarsened to seconds (so peers are common).
func TestML3Checksum(t *testing.T) {
	const seed = 5
	c := gen.NewFeatures4(12_000, seed)
	c.Users, c.Merchants, c.Days = 30, 12, 40
	var recs []arrow.RecordBatch
	if err := c.Generate(1000, func(r arrow.RecordBatch) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ts := r.Column(2).(*array.Timestamp).TimestampValues()
		for i := range ts {
			ts[i] = ts[i] / 1000 * 1000
		}
	}
	ctx := context.Background()
	db, err := duck.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.LoadRecords(ctx, "tx", gen.Features4Schema, recs); err != nil {
		t.Fatal(err)
	}
	_, rs, err := db.Query(ctx, ml3OracleQuery)
	if err != nil {
		t.Fatal(err)
	}
	var want workload.ML3Checksum
	for lo := 0; lo < len(rs); {
		id := rs[lo][0].(int64)
		hi := lo
		var maxN, total int64
		pos := 0
		for ; hi < len(rs) && rs[hi][0].(int64) == id; hi++ {
			r := rs[hi]
			h := workload.Hash64(r[1].(string))
			n7, n24, n30 := r[2].(int64), r[3].(int64), r[5].(int64)
			if n7 > 0 && pos < 5 {
				want.AddTopn(pos, h, n7)
				pos++
			}
			if n24 > 0 {
				want.AddCate(h, r[4].(float64))
			}
			maxN, total = max(maxN, n30), total+n30
		}
		want.AddRow(id, float64(maxN)/float64(total))
		lo = hi
	}
	if want.Rows != int64(c.Events) {
		t.Fatalf("DuckDB oracle has %d rows, want %d", want.Rows, c.Events)
	}

	loop := goloop.NewML3()
	for _, r := range recs {
		ids := r.Column(0).(*array.Int64).Int64Values()
		users := r.Column(1).(*array.Int64).Int64Values()
		ts := r.Column(2).(*array.Timestamp).TimestampValues()
		amounts := r.Column(3).(*array.Float64).Float64Values()
		merchants := r.Column(4).(*array.String)
		for i := range ids {
			loop.Add(ids[i], users[i], int64(ts[i]), amounts[i], merchants.Value(i))
		}
	}
	if got := loop.Finish(); !got.Agrees(want) {
		t.Errorf("go-loop ml-3 checksum differs from DuckDB's:\n got  %s\n want %s", got, want)
	}

	checkVolgaChecksum(t, ctx, "ml-3", workload.ML3Query, recs, want)
}
