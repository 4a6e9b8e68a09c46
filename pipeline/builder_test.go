package pipeline_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// TestBuilderMatchesSQL: a pipeline written with the Go builder and the
// same pipeline in SQL produce the same schema and the same rows.
func TestBuilderMatchesSQL(t *testing.T) {
	query := `SELECT id, user_id, price * 2 AS p2,
  sum(amount) OVER w AS spend,
  count(*) OVER w AS n,
  count(DISTINCT category) OVER w AS cats,
  avg(price) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS avg4,
  max(price) OVER (PARTITION BY merchant ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND INTERVAL '1' SECOND PRECEDING) AS mx,
  count(*) OVER (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS before
FROM events
WHERE amount IS NULL OR amount > 0
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)`
	w := pipeline.Over("user_id").Range(2 * time.Second).ExcludeCurrent()
	b := pipeline.From("events").EventTime("ts").
		Where("amount IS NULL OR amount > 0").
		Select("id", "user_id").
		SelectAs("p2", "price * 2").
		Agg("spend", pipeline.Sum("amount"), w).
		Agg("n", pipeline.CountAll(), w).
		Agg("cats", pipeline.CountDistinct("category"), w).
		Agg("avg4", pipeline.Avg("price"), pipeline.Over("user_id").Rows(3)).
		Agg("mx", pipeline.Max("price"), pipeline.Over("merchant").RangeBetween(5*time.Second, time.Second)).
		Agg("before", pipeline.CountAll(), pipeline.Over("user_id").Unbounded().ExcludeCurrent())

	for _, seed := range testutil.Seeds(2) {
		tab := testutil.Events(testutil.Rand(seed), testutil.DefaultEvents(300))
		fromSQL, ps := run(t, seed, query, tab)

		src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
		out := sink.NewCollector()
		pb, err := volga.Build(b, volga.WithSource("events", src), volga.WithSink(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := pb.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		fromGo := out.Rows()
		out.Release()
		src.Close()

		if !pb.Schema().Equal(ps.Schema()) {
			t.Fatalf("builder schema %s\nSQL schema %s", pb.Schema(), ps.Schema())
		}
		if len(fromSQL) == 0 {
			t.Fatal("no output")
		}
		cols := make([]string, pb.Schema().NumFields())
		for i, f := range pb.Schema().Fields() {
			cols[i] = f.Name
		}
		if d := testutil.Diff(cols, fromGo, fromSQL, testutil.Label(tab, nil, "id")); d != "" || !slices.EqualFunc(fromGo, fromSQL, slices.Equal) {
			t.Fatalf("seed %d: builder output differs from SQL output:\n%s", seed, d)
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	for name, b := range map[string]*pipeline.Builder{
		"no window":       pipeline.From("events").EventTime("ts").Agg("s", pipeline.Sum("amount"), nil),
		"bad range":       pipeline.From("events").EventTime("ts").Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id").RangeBetween(time.Second, 2*time.Second)),
		"bad expression":  pipeline.From("events").EventTime("ts").Select("amount +"),
		"selects nothing": pipeline.From("events").EventTime("ts"),
		"no event time":   pipeline.From("events").Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id")),
		"no partition":    pipeline.From("events").EventTime("ts").Agg("s", pipeline.Sum("amount"), pipeline.Over().Range(time.Hour)),
		"empty key":       pipeline.From("events").EventTime("ts").Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id", " ")),
	} {
		if _, err := b.Plan(); err == nil {
			t.Errorf("%s: Plan returned no error", name)
		}
	}
	src := testutil.NewSource(testutil.EventSchema)
	b := pipeline.From("events").EventTime("ts").Agg("s", pipeline.Sum("amount_usd"), pipeline.Over("user_id"))
	if _, err := volga.Build(b, volga.WithSource("events", src)); err == nil {
		t.Error("Build accepted an unknown column")
	}
}

// runBuilder runs the pipeline b builds over tab (batches drawn with
// seed) and returns its output rows.
func runBuilder(t *testing.T, seed uint64, b *pipeline.Builder, tab *testutil.Table) [][]any {
	t.Helper()
	src := testutil.NewSource(tab.Schema, tab.Batches(testutil.Rand(seed), 40)...)
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	pb, err := volga.Build(b, volga.WithSource("events", src), volga.WithSink(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := pb.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	return out.Rows()
}

// TestDoubleQuotedIdentifiers: "double-quoted" names are identifiers, as in
// DuckDB and standard SQL (sqlparser alone would read them as strings), in
// SQL and in builder expressions alike, and give the output of the
// unquoted query.
func TestDoubleQuotedIdentifiers(t *testing.T) {
	const plain = `SELECT id, price * 2 AS p2, sum(amount) OVER w AS spend
FROM events WHERE amount > 0 AND category <> 'x'
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	const quoted = `SELECT "id", "Price" * 2 AS "p2", sum("amount") OVER "w" AS "spend"
FROM events WHERE "amount" > 0 AND "category" <> 'x'
WINDOW "w" AS (PARTITION BY "user_id" ORDER BY "ts" RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	tab := testutil.Events(testutil.Rand(7), testutil.DefaultEvents(200))
	want, _ := run(t, 7, plain, tab)
	got, p := run(t, 7, quoted, tab)
	if d := testutil.Diff([]string{"id", "p2", "spend"}, want, got, testutil.Label(tab, nil, "id")); d != "" || len(got) == 0 {
		t.Fatalf("quoted query differs from the plain one (%d rows):\n%s", len(got), d)
	}
	if names := p.Schema().Field(2).Name; names != "spend" {
		t.Errorf("output column %q, want spend", names)
	}

	b := pipeline.From("events").EventTime("ts").Where(`"amount" > 0 AND "category" <> 'x'`).
		Select(`"id"`).SelectAs("p2", `"Price" * 2`).
		Agg("spend", pipeline.Sum("amount"), pipeline.Over("user_id").Range(2*time.Second))
	if d := testutil.Diff([]string{"id", "p2", "spend"}, want, runBuilder(t, 7, b, tab), testutil.Label(tab, nil, "id")); d != "" {
		t.Fatalf("builder with quoted names differs from SQL:\n%s", d)
	}
}

// TestBuilderRejectsMySQLOperators: in builder expressions as in SQL, // and
// # comments and the || and && operators are errors, not silently a
// comment, OR or AND.
func TestBuilderRejectsMySQLOperators(t *testing.T) {
	for cond, msg := range map[string]string{
		"amount // 2 > 1":            "only -- and /* */ comments",
		"amount > 1 # big":           "only -- and /* */ comments",
		"amount > 1 || amount < 0":   "the || operator is not supported",
		"amount > 1 && amount < 100": "the && operator is not supported",
		`"" > 1`:                     "empty quoted identifier",
	} {
		_, err := pipeline.From("events").EventTime("ts").Where(cond).
			Agg("s", pipeline.Sum("amount"), pipeline.Over("user_id")).Plan()
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Where(%q): %v, want %q", cond, err, msg)
		}
	}
}

// TestDuckDBCastTypes: CAST takes DuckDB's type names (DOUBLE, BIGINT,
// VARCHAR, ...) as well as sqlparser's MySQL ones, in SQL and in builder
// expressions, with the same results.
func TestDuckDBCastTypes(t *testing.T) {
	const mysql = `SELECT id, CAST(amount AS DECIMAL) / 4 AS q, CAST(price AS SIGNED) AS p, CAST(amount AS CHAR) AS s,
  sum(CAST(amount AS DECIMAL)) OVER w AS spend
FROM events WHERE CAST(price AS SIGNED) >= 0
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	const duck = `SELECT id, CAST(amount AS DOUBLE) / 4 AS q, CAST(price AS BIGINT) AS p, CAST(amount AS VARCHAR) AS s,
  sum(CAST(amount AS double)) OVER w AS spend
FROM events WHERE CAST(price AS INTEGER) >= 0
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)`
	tab := testutil.Events(testutil.Rand(5), testutil.DefaultEvents(200))
	cols := []string{"id", "q", "p", "s", "spend"}
	want, pw := run(t, 5, mysql, tab)
	got, pg := run(t, 5, duck, tab)
	if d := testutil.Diff(cols, want, got, testutil.Label(tab, nil, "id")); d != "" || len(got) == 0 {
		t.Fatalf("DuckDB type names differ from the MySQL ones (%d rows):\n%s", len(got), d)
	}
	if !pw.Schema().Equal(pg.Schema()) || pg.Schema().Field(1).Type.ID() != arrow.FLOAT64 || pg.Schema().Field(2).Type.ID() != arrow.INT64 {
		t.Errorf("schemas %s / %s", pw.Schema(), pg.Schema())
	}

	b := pipeline.From("events").EventTime("ts").Where("CAST(price AS INTEGER) >= 0").
		Select("id").SelectAs("q", "CAST(amount AS DOUBLE) / 4").SelectAs("p", "CAST(price AS BIGINT)").SelectAs("s", "CAST(amount AS TEXT)").
		Agg("spend", pipeline.Sum("CAST(amount AS DOUBLE)"), pipeline.Over("user_id").Range(2*time.Second))
	if d := testutil.Diff(cols, want, runBuilder(t, 5, b, tab), testutil.Label(tab, nil, "id")); d != "" {
		t.Fatalf("builder with DuckDB type names differs from SQL:\n%s", d)
	}
}
