package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/volgarun"
	"github.com/volga-go/volga/bench/internal/workload"
)

// TestGroupChecksum checks the group-1 workload's checksum of volga's
// batch mode (GroupQuery, from time-ordered batches that bound the times
// to come, so windows go out before the end) against DuckDB's
// (GroupDuckChecksum over GroupDuckQuery) on an event log with few users,
// so that hourly windows hold several rows.
func TestGroupChecksum(t *testing.T) {
	c := gen.NewFeatures4(20_000, 9)
	c.Users, c.Days = 40, 10
	var recs []arrow.RecordBatch
	if err := c.Generate(1000, func(r arrow.RecordBatch) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
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
	var want workload.GroupChecksum
	if err := db.SQL.QueryRowContext(ctx, workload.GroupDuckChecksum).Scan(&want.Windows, &want.Users, &want.Starts, &want.Lengths, &want.N, &want.Spend, &want.Max); err != nil {
		t.Fatal(err)
	}
	if want.N != int64(c.Events) || want.Windows < 1000 || want.Windows > want.N/2 {
		t.Fatalf("DuckDB: %d windows of %d rows for %d events: not the shape the test needs", want.Windows, want.N, c.Events)
	}
	if want.Lengths != want.Windows*3_600_000 {
		t.Fatalf("DuckDB windows are not an hour long: %s", want)
	}
	checkVolgaChecksum(t, ctx, "group-1", workload.GroupQuery, recs, want)
}

// checkVolgaChecksum runs query in batch mode over recs (the features-4
// events as table tx) with one task and with two, folding the output into
// a checksum of type C, and fails t unless each agrees with want
// (DuckDB's); name names the workload in the message.
func checkVolgaChecksum[C fmt.Stringer, P interface {
	*C
	AddRecord(arrow.RecordBatch) error
	Agrees(C) bool
}](t *testing.T, ctx context.Context, name, query string, recs []arrow.RecordBatch, want C) {
	t.Helper()
	for _, par := range []int{1, 2} {
		var got C
		err := volgarun.Run(ctx, query, "tx", volgarun.Memory(gen.Features4Schema, recs), volgarun.Options{Parallelism: par},
			func(_ context.Context, rec arrow.RecordBatch) error { return P(&got).AddRecord(rec) })
		if err != nil {
			t.Fatal(err)
		}
		if !P(&got).Agrees(want) {
			t.Errorf("volga batch (parallelism %d) %s checksum differs from DuckDB's:\n got  %s\n want %s", par, name, got, want)
		}
	}
}
