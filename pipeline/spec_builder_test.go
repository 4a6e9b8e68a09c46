package pipeline_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/source"
)

// TestSpecBuilderEqualsSQL pairs SQL queries with the builder code that
// writes the same pipeline, one for each frame kind and each aggregate
// family of SPEC sections 3-5, and checks that both compile to the same
// output schema and give the same rows in the same order.
func TestSpecBuilderEqualsSQL(t *testing.T) {
	const from = "\nFROM events\n"
	over := func(frame string) string {
		return " OVER (PARTITION BY user_id ORDER BY ts " + frame + ")"
	}
	shared := pipeline.Over("user_id") // changed between uses: two windows
	tests := []struct {
		name string
		sql  string
		b    *pipeline.Builder
	}{
		{"range, current row",
			"SELECT id, sum(amount)" + over("RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW") + " AS s, count(*)" + over("RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW") + " AS n, count(price)" + over("RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW") + " AS np, avg(price)" + over("RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW") + " AS a" + from,
			pipeline.From("events").EventTime("ts").Select("id").
				Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").Range(2*time.Second)).
				Agg("n", pipeline.CountAll(), pipeline.Over("user_id").Range(2*time.Second)).
				Agg("np", pipeline.Count("price"), pipeline.Over("user_id").Range(2*time.Second)).
				Agg("a", pipeline.Avg("price"), pipeline.Over("user_id").Range(2*time.Second))},
		{"range, exclude current row",
			"SELECT id, min(merchant) OVER w AS mn, max(price) OVER w AS mx, first_value(amount) OVER w AS f, last_value(amount) OVER w AS l" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Range(3 * time.Second).ExcludeCurrent()
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("mn", pipeline.Min("merchant"), w).Agg("mx", pipeline.Max("price"), w).
					Agg("f", pipeline.Fn("first_value", "amount"), w).Agg("l", pipeline.Fn("last_value", "amount"), w)
			}()},
		{"range ending preceding",
			"SELECT id, var_samp(price) OVER w AS v, stddev_pop(price) OVER w AS sd, count(DISTINCT category) OVER w AS c, stddev(price) OVER w AS s2, variance(amount) OVER w AS v2, var_pop(amount) OVER w AS v3, stddev_samp(amount) OVER w AS s3" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND INTERVAL 1 SECOND PRECEDING)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").RangeBetween(5*time.Second, time.Second)
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("v", pipeline.Fn("var_samp", "price"), w).Agg("sd", pipeline.Fn("stddev_pop", "price"), w).
					Agg("c", pipeline.CountDistinct("category"), w).Agg("s2", pipeline.Fn("stddev", "price"), w).
					Agg("v2", pipeline.Fn("variance", "amount"), w).Agg("v3", pipeline.Fn("var_pop", "amount"), w).
					Agg("s3", pipeline.Fn("stddev_samp", "amount"), w)
			}()},
		{"unbounded",
			"SELECT id, count(*)" + over("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW") + " AS n, sum(price)" + over("") + " AS s, max(amount)" + over("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW") + " AS mx" + from,
			pipeline.From("events").EventTime("ts").Select("id").
				Agg("n", pipeline.CountAll(), pipeline.Over("user_id").Unbounded()).
				Agg("s", pipeline.Sum("price"), pipeline.Over("user_id")).
				Agg("mx", pipeline.Max("amount"), pipeline.Over("user_id").Unbounded().ExcludeCurrent())},
		{"unbounded ending preceding",
			"SELECT id, count(*)" + over("RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1' SECOND PRECEDING") + " AS n, avg(amount)" + over("RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL '1500' MILLISECONDS PRECEDING") + " AS a" + from,
			pipeline.From("events").EventTime("ts").Select("id").
				Agg("n", pipeline.CountAll(), pipeline.Over("user_id").UnboundedUntil(time.Second)).
				Agg("a", pipeline.Avg("amount"), pipeline.Over("user_id").UnboundedUntil(1500*time.Millisecond))},
		{"rows",
			"SELECT id, avg(price) OVER w AS a, first_value(merchant) OVER w AS f, last_value(merchant) OVER w AS l, sum(amount)" + over("ROWS BETWEEN 3 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW") + " AS s, max(price)" + over("ROWS BETWEEN 0 PRECEDING AND CURRENT ROW") + " AS p" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts ROWS 3 PRECEDING)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Rows(3)
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("a", pipeline.Avg("price"), w).Agg("f", pipeline.Fn("first_value", "merchant"), w).Agg("l", pipeline.Fn("last_value", "merchant"), w).
					Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").Rows(3).ExcludeCurrent()).
					Agg("p", pipeline.Max("price"), pipeline.Over("user_id").Rows(0))
			}()},
		{"ranking and frequency",
			"SELECT id, top(amount, 3) OVER w AS t3, topn_frequency(merchant, 2) OVER w AS tf, top1_ratio(category) OVER w AS r" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Range(10 * time.Second)
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("t3", pipeline.Fn("top", "amount", 3), w).Agg("tf", pipeline.Fn("topn_frequency", "merchant", 2), w).
					Agg("r", pipeline.Fn("top1_ratio", "category"), w)
			}()},
		{"conditional",
			"SELECT id, count_where(*, amount > 10) OVER w AS c, count_where(price, amount > 10) OVER w AS cp, sum_where(amount, price > 1) OVER w AS s, avg_where(price, category = 'a') OVER w AS a, min_where(amount, price > 1) OVER w AS mn, max_where(merchant, amount < 0) OVER w AS mx" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '4' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Range(4 * time.Second).ExcludeCurrent()
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("c", pipeline.Call{Func: "count_where", Star: true, Args: []any{"amount > 10"}}, w).
					Agg("cp", pipeline.Fn("count_where", "price", "amount > 10"), w).
					Agg("s", pipeline.Fn("sum_where", "amount", "price > 1"), w).
					Agg("a", pipeline.Fn("avg_where", "price", "category = 'a'"), w).
					Agg("mn", pipeline.Fn("min_where", "amount", "price > 1"), w).
					Agg("mx", pipeline.Fn("max_where", "merchant", "amount < 0"), w)
			}()},
		{"per category",
			"SELECT id, count_cate(amount, category) OVER w AS c, sum_cate(amount, merchant) OVER w AS s, avg_cate(price, category) OVER w AS a, min_cate(price, merchant) OVER w AS mn, max_cate(amount, category) OVER w AS mx, sum_cate_where(amount, price > 1, category) OVER w AS sw, count_cate_where(price, amount > 0, merchant) OVER w AS cw" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '6' SECOND PRECEDING AND CURRENT ROW)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Range(6 * time.Second)
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("c", pipeline.Fn("count_cate", "amount", "category"), w).Agg("s", pipeline.Fn("sum_cate", "amount", "merchant"), w).
					Agg("a", pipeline.Fn("avg_cate", "price", "category"), w).Agg("mn", pipeline.Fn("min_cate", "price", "merchant"), w).
					Agg("mx", pipeline.Fn("max_cate", "amount", "category"), w).
					Agg("sw", pipeline.Fn("sum_cate_where", "amount", "price > 1", "category"), w).
					Agg("cw", pipeline.Fn("count_cate_where", "price", "amount > 0", "merchant"), w)
			}()},
		{"time series and approximate",
			"SELECT id, ew_avg(price, 0.5) OVER w AS e, drawdown(price) OVER w AS d, approx_percentile(price, 0.9) OVER w AS p, approx_count_distinct(merchant) OVER w AS acd" + from +
				"WINDOW w AS (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 5 PRECEDING AND CURRENT ROW)",
			func() *pipeline.Builder {
				w := pipeline.Over("user_id").Rows(5)
				return pipeline.From("events").EventTime("ts").Select("id").
					Agg("e", pipeline.Fn("ew_avg", "price", 0.5), w).Agg("d", pipeline.Fn("drawdown", "price"), w).
					Agg("p", pipeline.Fn("approx_percentile", "price", 0.9), w).Agg("acd", pipeline.Fn("approx_count_distinct", "merchant"), w)
			}()},
		{"two keys, expressions, WHERE, literal argument",
			"SELECT id, lower(merchant) AS m, amount * 2 + 1 AS a2, count_where(*, category = 'it''s') OVER (PARTITION BY user_id, merchant ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS c, sum(amount * 2) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS s" + from +
				"WHERE price IS NULL OR price > 1",
			pipeline.From("events").EventTime("ts").Where("price IS NULL OR price > 1").
				Select("id").SelectAs("m", "lower(merchant)").SelectAs("a2", "amount * 2 + 1").
				Agg("c", pipeline.Call{Func: "count_where", Star: true, Args: []any{"category = 'it''s'"}}, pipeline.Over("user_id", "merchant").Range(3*time.Second)).
				Agg("s", pipeline.Sum("amount * 2"), pipeline.Over("merchant").Range(3*time.Second))},
		{"one window definition changed between uses",
			"SELECT id, sum(amount)" + over("RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW") + " AS s1, sum(amount)" + over("RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW") + " AS s5, sum(amount)" + over("RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW") + " AS s5x" + from,
			pipeline.From("events").EventTime("ts").Select("id").
				Agg("s1", pipeline.Sum("amount"), shared.Range(time.Second)).
				Agg("s5", pipeline.Sum("amount"), shared.Range(5*time.Second)).
				Agg("s5x", pipeline.Sum("amount"), shared.ExcludeCurrent())},
		{"tumble",
			"SELECT user_id, window_start, window_end, count(*) AS n, sum(amount) AS s, topn_frequency(category, 1) AS t, avg(price) AS a" + from +
				"GROUP BY user_id, tumble(ts, INTERVAL '2' SECOND)",
			pipeline.From("events").EventTime("ts").Tumble(2*time.Second, "user_id").
				Select("user_id", "window_start", "window_end").
				Agg("n", pipeline.CountAll(), nil).Agg("s", pipeline.Sum("amount"), nil).
				Agg("t", pipeline.Fn("topn_frequency", "category", 1), nil).Agg("a", pipeline.Avg("price"), nil)},
		{"hop",
			"SELECT window_start, user_id, merchant, count(*) AS n, max(price) AS mx, count_cate(amount, category) AS cc" + from +
				"WHERE amount > 0 GROUP BY user_id, merchant, hop(ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND)",
			pipeline.From("events").EventTime("ts").Where("amount > 0").Hop(time.Second, 3*time.Second, "user_id", "merchant").
				Select("window_start", "user_id", "merchant").
				Agg("n", pipeline.CountAll(), nil).Agg("mx", pipeline.Max("price"), nil).
				Agg("cc", pipeline.Fn("count_cate", "amount", "category"), nil)},
		{"tumble without keys",
			"SELECT window_end, count(DISTINCT user_id) AS u, sum(amount) AS s" + from + "GROUP BY tumble(ts, INTERVAL 5 SECONDS)",
			pipeline.From("events").EventTime("ts").Tumble(5*time.Second).Select("window_end").
				Agg("u", pipeline.CountDistinct("user_id"), nil).Agg("s", pipeline.Sum("amount"), nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, seed := range testutil.Seeds(2) {
				tab := testutil.Events(testutil.Rand(seed), testutil.DefaultEvents(300))
				fromSQL, ps := run(t, seed, tt.sql, tab)
				fromGo, pb := runBuilderPipeline(t, seed, tt.b, tab)
				if !pb.Schema().Equal(ps.Schema()) {
					t.Fatalf("builder schema %s\nSQL schema %s", pb.Schema(), ps.Schema())
				}
				if len(fromSQL) == 0 {
					t.Fatal("no output")
				}
				cols := make([]string, ps.Schema().NumFields())
				for i, f := range ps.Schema().Fields() {
					cols[i] = f.Name
				}
				if d := testutil.Diff(cols, fromGo, fromSQL, nil); d != "" || len(fromGo) != len(fromSQL) {
					t.Fatalf("seed %d: builder output (%d rows) differs from SQL output (%d rows):\n%s", seed, len(fromGo), len(fromSQL), d)
				}
			}
		})
	}
}

// runBuilderPipeline runs b over tab (batches drawn with seed) and
// returns its output rows and the pipeline.
func runBuilderPipeline(t *testing.T, seed uint64, b *pipeline.Builder, tab *testutil.Table) ([][]any, *volga.Pipeline) {
	t.Helper()
	rows := runBuilder(t, seed, b, tab)
	src := source.NewMemory(tab.Schema)
	defer src.Close()
	p, err := volga.Build(b, volga.WithSource("events", src))
	if err != nil {
		t.Fatal(err)
	}
	return rows, p
}

// TestSpecBuilderErrors: builder misuse is reported by Plan or Build as a
// clear error naming the problem, never a panic.
func TestSpecBuilderErrors(t *testing.T) {
	w := pipeline.Over("user_id").Range(time.Second)
	ev := func() *pipeline.Builder { return pipeline.From("events").EventTime("ts") }
	tests := []struct {
		name string
		b    *pipeline.Builder
		msg  string
	}{
		{"no table", pipeline.From("").EventTime("ts").Select("id"), "From needs a table name"},
		{"selects nothing", ev(), "selects nothing"},
		{"empty expression", ev().Select(""), "empty expression"},
		{"no key", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over()), "Over needs at least one key column"},
		{"blank key", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id", "")), "empty key column name"},
		{"unknown key", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("usr")), `unknown column "usr"`},
		{"no event time", pipeline.From("events").Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id")), "needs OrderBy or the pipeline an EventTime column"},
		{"unknown event time", pipeline.From("events").EventTime("time").Agg("s", pipeline.Sum("amount"), w), `unknown column "time"`},
		{"no window", ev().Agg("s", pipeline.Sum("amount"), nil), `aggregate "s" has no window`},
		{"empty range", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").Range(0)), "invalid range frame"},
		{"range ends before it starts", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").RangeBetween(time.Second, 2*time.Second)), "invalid range frame"},
		{"range below a millisecond", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").Range(time.Microsecond)), "whole milliseconds"},
		{"negative unbounded end", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").UnboundedUntil(-time.Second)), "invalid unbounded frame"},
		{"negative rows", ev().Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").Rows(-1)), "ROWS frame needs n >= 0"},
		{"duplicate names", ev().Agg("s", pipeline.Sum("amount"), w).Agg("s", pipeline.Max("amount"), w), `duplicate output column name "s"`},
		{"duplicate select", ev().Select("id", "ID"), `duplicate output column name "ID"`},
		{"unknown aggregate", ev().Agg("s", pipeline.Fn("summ", "amount"), w), `unknown aggregate function "summ"`},
		{"no function", ev().Agg("s", pipeline.Call{}, w), "unknown aggregate function"},
		{"missing argument", ev().Agg("s", pipeline.Fn("sum"), w), "sum takes 1 argument, got 0"},
		{"unsupported argument", ev().Agg("s", pipeline.Fn("top", "amount", uint(3)), w), "unsupported argument 3 of type uint"},
		{"nil argument", ev().Agg("s", pipeline.Fn("sum", nil), w), "unsupported argument"},
		{"bad constant", ev().Agg("s", pipeline.Fn("top", "amount", 0), w), "k must be an integer between 1"},
		{"DISTINCT on sum", ev().Agg("s", pipeline.Call{Func: "sum", Distinct: true, Args: []any{"amount"}}, w), "DISTINCT is only supported in count(DISTINCT x)"},
		{"aggregate in Select", ev().Select("sum(amount)"), "aggregate sum cannot be used in Select"},
		{"aggregate in Where", ev().Where("count(*) > 1").Select("id"), "aggregate count cannot be used in Where"},
		{"window in a tumble pipeline", ev().Tumble(time.Second, "user_id").Agg("s", pipeline.Sum("amount"), w), "pass a nil window to Agg"},
		{"tumble of zero", ev().Tumble(0, "user_id").Agg("s", pipeline.Sum("amount"), nil), "window sizes must be positive whole milliseconds"},
		{"hop slide longer than size", ev().Hop(2*time.Second, time.Second, "user_id").Agg("s", pipeline.Sum("amount"), nil), "the slide (2s) must not be longer than the size (1s)"},
		{"two group windows", ev().Tumble(time.Second).Hop(time.Second, 2*time.Second).Agg("n", pipeline.CountAll(), nil), "already has a tumble or hop window"},
		{"group without event time", pipeline.From("events").Tumble(time.Second).Agg("n", pipeline.CountAll(), nil), "need the pipeline's EventTime column"},
		{"non-key column in a tumble pipeline", ev().Tumble(time.Second, "user_id").Select("amount").Agg("n", pipeline.CountAll(), nil), "must be a GROUP BY key, window_start, window_end or an aggregate"},
	}
	tab := testutil.Events(testutil.Rand(1), testutil.DefaultEvents(10))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := source.NewMemory(tab.Schema)
			defer src.Close()
			_, err := volga.Build(tt.b, volga.WithSource("events", src))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want one containing %q", err, tt.msg)
			}
		})
	}
}

// TestSpecBuilderPlanIsACopy: Plan returns a plan of its own; building
// on afterwards, or calling Plan again, changes no plan already returned.
func TestSpecBuilderPlanIsACopy(t *testing.T) {
	w := pipeline.Over("user_id").Range(time.Second)
	b := pipeline.From("events").EventTime("ts").Select("id").Agg("s", pipeline.Sum("amount"), w)
	p1, err := b.Plan()
	if err != nil {
		t.Fatal(err)
	}
	b.EventTime("other").Agg("n", pipeline.CountAll(), w)
	p2, err := b.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.Items) != 2 || len(p1.Windows) != 1 || p1.Windows[0].OrderBy != "ts" || p1.Items[1].Agg.Window != p1.Windows[0] {
		t.Errorf("first plan changed: %d items, windows %+v", len(p1.Items), p1.Windows)
	}
	if len(p2.Items) != 3 || len(p2.Windows) != 1 || p2.Windows[0].OrderBy != "other" || p2.Items[2].Agg.Window != p2.Windows[0] || p2.Items[1].Agg.Window != p2.Windows[0] {
		t.Errorf("second plan: %d items, windows %+v", len(p2.Items), p2.Windows)
	}
	if slices.Contains(p2.Windows, p1.Windows[0]) {
		t.Error("the two plans share a window")
	}
}
