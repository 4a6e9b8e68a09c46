package pipeline_test

import (
	"context"
	"testing"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// TestBatchReadsOnlyUsedColumns: a batch run narrows a Parquet source to
// the columns the query uses (keys, event time, arguments, WHERE, output)
// with the same output as over every column; a run that writes late rows
// or dead letters keeps every column.
func TestBatchReadsOnlyUsedColumns(t *testing.T) {
	tab := testutil.MLEvents(testutil.Rand(9), testutil.ModesEventConfig(1500))
	path := writeEvents(t, tab, 128)
	query := `SELECT id, ts, sum(price) OVER w AS s, count(*) OVER w AS n, max(amount) OVER w AS m
		FROM events WHERE amount IS NULL OR amount > 0
		WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`
	want := sink.NewCollector()
	p, err := volga.SQL(query, volga.WithSource("events", testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(1), 100)...)), volga.WithSink(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []volga.Option
		cols []string
	}{
		{"batch", nil, []string{"id", "user_id", "ts", "amount", "price"}},
		{"late sink", []volga.Option{volga.WithLateSink(sink.NewCollector())}, nil},
		{"dead letters", []volga.Option{volga.WithDeadLetters(func(source.DeadLetter) {})}, nil},
		{"streaming", []volga.Option{volga.WithMode(volga.Streaming)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := source.NewParquet(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			got := sink.NewCollector()
			p, err := volga.SQL(query, append([]volga.Option{volga.WithSource("events", src), volga.WithSink(got), volga.WithParallelism(2)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range src.Schema().Fields() {
				names = append(names, f.Name)
			}
			wantCols := tc.cols
			if wantCols == nil {
				for _, f := range tab.Schema.Fields() {
					wantCols = append(wantCols, f.Name)
				}
			}
			if len(names) != len(wantCols) || testutil.Diff(nil, [][]any{toAny(names)}, [][]any{toAny(wantCols)}, nil) != "" {
				t.Fatalf("source columns %v, want %v", names, wantCols)
			}
			if err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The input is in time order: every mode emits it in that order.
			if d := testutil.Diff([]string{"id", "ts", "s", "n", "m"}, got.Rows(), want.Rows(), nil); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
