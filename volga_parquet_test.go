package volga_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestParquetRoundTripOfFeatureTypes: every Arrow type the engine emits
// for features (lists, lists of structs, maps, timestamps, NULLs) goes
// through the Parquet sink and comes back from the Parquet source with the
// same values as the in-memory output.
func TestParquetRoundTripOfFeatureTypes(t *testing.T) {
	rng := testutil.Rand(7)
	tab := testutil.Events(rng, testutil.DefaultEvents(300))
	query := `SELECT id, user_id, ts,
		top(amount, 3) OVER w AS top3,
		topn_frequency(category, 2) OVER w AS freq,
		sum_cate(price, category) OVER w AS by_cat,
		count_cate(amount, category) OVER w AS n_by_cat,
		max(category) OVER w AS max_cat,
		avg(price) OVER w AS avg_price
	FROM events
	WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	run := func(out sink.Sink) {
		t.Helper()
		p, err := volga.SQL(query, volga.WithSource("events", testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 64)...)), volga.WithSink(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mem := sink.NewCollector()
	run(mem)
	path := filepath.Join(t.TempDir(), "features.parquet")
	pq, err := sink.NewParquet(path, nil, sink.WithRowGroupSize(100))
	if err != nil {
		t.Fatal(err)
	}
	run(pq)
	src, err := source.NewParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	back := sink.NewCollector()
	for {
		rec, err := src.Read(context.Background())
		if err != nil {
			break
		}
		if err := back.Write(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	want, got := mem.Rows(), back.Rows()
	if len(got) != len(want) {
		t.Fatalf("read back %d rows, wrote %d", len(got), len(want))
	}
	cols := []string{"id", "user_id", "ts", "top3", "freq", "by_cat", "n_by_cat", "max_cat", "avg_price"}
	if d := testutil.Diff(cols, got, want, nil); d != "" {
		t.Fatalf("Parquet round trip changed values:\n%s", d)
	}
	if !arrow.TypeEqual(src.Schema().Field(4).Type, mem.Records()[0].Schema().Field(4).Type) {
		t.Errorf("topn_frequency came back as %s, was %s", src.Schema().Field(4).Type, mem.Records()[0].Schema().Field(4).Type)
	}
}
