package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// TestOracleGroupSpecialValues checks GROUP BY tumble/hop windows over
// NaN, infinities, signed zeros and empty strings against DuckDB, grouped
// by keys with NULLs (a string key whose empty string is not NULL, an
// int32 key), on times on both sides of the Unix epoch (windows before
// 1970 aligned to it too), with hop windows whose slide does and does not
// divide their size and one of sixty windows a row; in batch mode with
// parallelism 1 and 2 and in streaming mode with shuffled arrival.
func TestOracleGroupSpecialValues(t *testing.T) {
	seed := *oracleSeed + 11
	ctx := context.Background()
	data, ts := specialRows(seed, 1200)
	// From 45 minutes before the epoch on.
	shift := oracleStart.UnixMilli() + 45*60*1000
	for i := range data {
		data[i][2] = data[i][2].(int64) - shift
		ts[i] -= shift
	}
	if ts[0] >= 0 || ts[len(ts)-1] <= 0 {
		t.Fatalf("times %d..%d do not straddle the epoch", ts[0], ts[len(ts)-1])
	}
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.LoadRecords(ctx, "t", specialSchema, specialRecords(data, oracleBatchRows)); err != nil {
		t.Fatal(err)
	}
	perm := gen.ArrivalOrder(ts, streamBound, seed)
	arrival := make([][]any, len(perm))
	for i, p := range perm {
		arrival[i] = data[p]
	}
	modes := []struct {
		name string
		in   [][]any
		opt  volgarun.Options
	}{
		{"batch_p1", data, volgarun.Options{Parallelism: 1}},
		{"batch_p2", data, volgarun.Options{Parallelism: 2}},
		{"stream_p1", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 1}},
		{"stream_p2", arrival, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: 2}},
	}
	const sec, minute = int64(1000), int64(60_000)
	queries := []groupQuery{
		{name: "tumble_7m_s", keys: []string{"s"}, win: tumbleWin("INTERVAL '7' MINUTE", 7*minute), aggs: specialAggs},
		{name: "tumble_1m_i_user", keys: []string{"i", "user_id"}, win: tumbleWin("INTERVAL '1' MINUTE", minute), aggs: specialAggs},
		{name: "hop_3m_10m_user", keys: []string{"user_id"}, win: hopWin("INTERVAL '3' MINUTE", 3*minute, "INTERVAL '10' MINUTE", 10*minute), aggs: specialAggs},
		{name: "hop_2m_6m_s_i", keys: []string{"s", "i"}, win: hopWin("INTERVAL '2' MINUTE", 2*minute, "INTERVAL '6' MINUTE", 6*minute), aggs: specialAggs},
		{name: "hop_1s_1m_i", keys: []string{"i"}, win: hopWin("INTERVAL '1' SECOND", sec, "INTERVAL '1' MINUTE", minute), aggs: specialAggs},
		{name: "hop_equal_5m_s", keys: []string{"s"}, win: hopWin("INTERVAL '5' MINUTE", 5*minute, "INTERVAL '5' MINUTE", 5*minute), aggs: specialAggs},
	}
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			names, rs, err := db.Query(ctx, q.duck(false))
			if err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, q.duck(false))
			}
			order := append(append([]string(nil), q.keys...), "window_start")
			want := rows.Table{Names: names, Rows: rs}.SortedByCols(order...)
			if len(want.Rows) < 50 {
				t.Fatalf("DuckDB returned only %d windows", len(want.Rows))
			}
			nulls, before := false, false
			for _, r := range want.Rows {
				for _, k := range q.keys {
					nulls = nulls || r[want.Col(k)] == nil
				}
				before = before || r[want.Col("window_start")].(time.Time).Before(time.Unix(0, 0))
			}
			if nullable := q.keys[0] != "user_id"; nulls != nullable || !before {
				t.Fatalf("DuckDB's answer has a NULL key: %v (want %v), a window before 1970: %v (want true)", nulls, nullable, before)
			}
			for _, m := range modes {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				got, err := volgarun.Collect(cctx, q.volga(), "t", volgarun.Memory(specialSchema, specialRecords(m.in, oracleBatchRows)), m.opt)
				cancel()
				if err != nil {
					t.Fatalf("%s: seed %d: volga: %v", m.name, seed, err)
				}
				if d := rows.Diff(want, got.SortedByCols(order...), rows.DefaultTolerance, order, diffRows); d != "" {
					t.Errorf("%s: volga vs DuckDB differ (seed %d)\n%s\nvolga query:\n%s\nDuckDB query:\n%s", m.name, seed, d, q.volga(), strings.TrimSpace(q.duck(false)))
				}
			}
		})
	}
}
