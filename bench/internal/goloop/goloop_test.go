package goloop

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/workload"
)

// TestFeatures4MatchesDuckDB checks the hand-written loop row by row
// against DuckDB on a small event log with few users, so windows hold many
// rows and equal timestamps are common.
func TestFeatures4MatchesDuckDB(t *testing.T) {
	const seed = 11
	c := gen.NewFeatures4(20_000, seed)
	c.Users = 40
	c.Days = 2
	var recs []arrow.RecordBatch
	if err := c.Generate(4096, func(r arrow.RecordBatch) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	// Coarsen timestamps to seconds to create many peers.
	for _, r := range recs {
		ts := r.Column(2).(*array.Timestamp).TimestampValues()
		for i := range ts {
			ts[i] = ts[i] / 1000 * 1000
		}
	}
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.LoadRecords(ctx, "tx", gen.Features4Schema, recs); err != nil {
		t.Fatal(err)
	}
	_, want, err := db.Query(ctx, "SELECT * FROM ("+workload.Features4Query+") ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var wantSum workload.Features4Checksum
	for _, r := range want {
		wantSum.Add(r[0].(int64), r[3].(float64), r[4].(int64), r[5].(float64), r[6].(float64))
	}

	f := NewFeatures4()
	for _, r := range recs {
		ids := r.Column(0).(*array.Int64).Int64Values()
		users := r.Column(1).(*array.Int64).Int64Values()
		ts := r.Column(2).(*array.Timestamp).TimestampValues()
		amounts := r.Column(3).(*array.Float64).Float64Values()
		for i := range ids {
			f.Add(ids[i], users[i], int64(ts[i]), amounts[i])
		}
	}
	got := f.Finish()
	if !got.Agrees(wantSum) {
		t.Errorf("seed %d: go-loop checksum differs from DuckDB:\n got  %s\n want %s", seed, got, wantSum)
	}
}
