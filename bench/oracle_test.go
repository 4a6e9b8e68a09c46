package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/volga-go/volga/bench/internal/duck"
	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/rows"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

const (
	// oracleBatchRows is the size of the input batches: odd, so batch
	// boundaries fall everywhere relative to keys and peers.
	oracleBatchRows = 97
	// streamBound is the out-of-orderness of the streaming runs: arrival is
	// shuffled within it and the watermark allows for it, so no row is
	// late. The data has a row every 5.4 s on average, so rows move by
	// dozens of places.
	streamBound = 5 * time.Minute
	// diffRows is how many differing rows a failure shows.
	diffRows = 8
)

// diffContext are the columns a failure shows to locate a row.
var diffContext = []string{"id", "user_id", "merchant", "ts"}

// oracleFixture is one random data set loaded into DuckDB.
type oracleFixture struct {
	seed uint64
	data []oracleRow
	db   *duck.DB
}

func newOracleFixture(t *testing.T, seed uint64, o oracleDataOptions) *oracleFixture {
	t.Helper()
	f := &oracleFixture{seed: seed, data: newOracleRows(seed, o)}
	db, err := duck.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	recs := oracleRecords(f.data, 4096)
	if err := db.LoadRecords(context.Background(), "t", oracleSchema, recs); err != nil {
		t.Fatal(err)
	}
	f.db = db
	return f
}

// duckdb runs q's DuckDB rendering.
func (f *oracleFixture) duckdb(t *testing.T, q oracleQuery) rows.Table {
	t.Helper()
	names, rs, err := f.db.Query(context.Background(), q.duck())
	if err != nil {
		t.Fatalf("seed %d: %v", f.seed, err)
	}
	return rows.Table{Names: names, Rows: rs}
}

// volga runs q's volga rendering over data (in that arrival order).
func (f *oracleFixture) volga(data []oracleRow, q oracleQuery, o volgarun.Options) (rows.Table, error) {
	src := volgarun.Memory(oracleSchema, oracleRecords(data, oracleBatchRows))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return volgarun.Collect(ctx, q.volga(), "t", src, o)
}

// check fails t with a readable diff when got differs from want.
func (f *oracleFixture) check(t *testing.T, q oracleQuery, what string, want, got rows.Table) bool {
	t.Helper()
	d := rows.Diff(want, got, rows.DefaultTolerance, diffContext, diffRows)
	if d == "" {
		return true
	}
	t.Errorf("%s differs (seed %d; rerun with -oracle.seed=%d -run '%s')\n%s\nvolga query:\n%s",
		what, f.seed, f.seed, t.Name(), d, q.volga())
	return false
}

// checkBatch checks a batch result: first its values, matching rows by id,
// then that the rows come in input order (want's order). Separating the two
// keeps an ordering bug from drowning in a diff of every row.
func (f *oracleFixture) checkBatch(t *testing.T, q oracleQuery, what string, want, got rows.Table) bool {
	t.Helper()
	if !f.check(t, q, what+" (rows matched by id)", want.SortedBy("id"), got.SortedBy("id")) {
		return false
	}
	id := want.Col("id")
	for i := range want.Rows {
		if w, g := want.Rows[i][id], got.Rows[i][id]; w != g {
			t.Errorf("%s: values agree but rows are not in input order (seed %d): output row %d has id %s, want id %s",
				what, f.seed, i, rows.Format(g), rows.Format(w))
			return false
		}
	}
	return true
}

// run checks q in every mode against the oracle: batch with parallelism
// 1, 2 and 4 against DuckDB (row for row, in input order), then streaming
// with arrival shuffled within streamBound, parallelism 1 and 3, against
// the batch output after sorting both by id.
func (f *oracleFixture) run(t *testing.T, q oracleQuery) {
	want := f.duckdb(t, q)
	if len(want.Rows) == 0 {
		t.Fatalf("seed %d: DuckDB returned no rows; the test data is broken", f.seed)
	}
	batch := want
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("batch_p%d", par), func(t *testing.T) {
			got, err := f.volga(f.data, q, volgarun.Options{Parallelism: par})
			if err != nil {
				t.Fatalf("seed %d: volga batch: %v\nquery:\n%s", f.seed, err, q.volga())
			}
			if f.checkBatch(t, q, "volga batch vs DuckDB", want, got) && par == 1 {
				batch = got
			}
		})
	}
	if q.partitionsBy("user_id") {
		// The same rows sorted by user, promised so: each user's rows go
		// out once the next user's start, with the values DuckDB gives
		// them, in the new input order.
		byUser := shuffled(f.data, userOrder(f.data))
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("clustered_p%d", par), func(t *testing.T) {
				got, err := f.volga(byUser, q, volgarun.Options{Parallelism: par, ClusteredBy: []string{"user_id"}})
				if err != nil {
					t.Fatalf("seed %d: volga batch clustered by user: %v\nquery:\n%s", f.seed, err, q.volga())
				}
				if !f.check(t, q, "volga batch over input clustered by user (sorted by id) vs DuckDB", want.SortedBy("id"), got.SortedBy("id")) {
					return
				}
				// The rows WHERE keeps, in input order.
				id, kept := got.Col("id"), map[any]bool{}
				for _, r := range want.Rows {
					kept[r[want.Col("id")]] = true
				}
				i := 0
				for _, r := range byUser {
					if !kept[r.id] {
						continue
					}
					if got.Rows[i][id] != r.id {
						t.Fatalf("volga batch clustered by user: values agree but output row %d has id %s, want the input's %d (seed %d)", i, rows.Format(got.Rows[i][id]), r.id, f.seed)
					}
					i++
				}
			})
		}
		// The input in time order, which the run orders by user itself
		// (volga.WithClusterInput): the values DuckDB gives, user by user.
		t.Run("cluster_input_p2", func(t *testing.T) {
			got, err := f.volga(f.data, q, volgarun.Options{Parallelism: 2, ClusterInput: []string{"user_id"}})
			if err != nil {
				t.Fatalf("seed %d: volga batch ordering its input by user: %v\nquery:\n%s", f.seed, err, q.volga())
			}
			f.check(t, q, "volga batch ordering its input by user (sorted by id) vs DuckDB", want.SortedBy("id"), got.SortedBy("id"))
		})
	}
	arrival := shuffled(f.data, gen.ArrivalOrder(timestamps(f.data), streamBound, f.seed))
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("stream_p%d", par), func(t *testing.T) {
			got, err := f.volga(arrival, q, volgarun.Options{Streaming: true, MaxOutOfOrder: streamBound, Parallelism: par})
			if err != nil {
				t.Fatalf("seed %d: volga streaming: %v\nquery:\n%s", f.seed, err, q.volga())
			}
			f.check(t, q, "volga streaming (sorted by id) vs batch", batch.SortedBy("id"), got.SortedBy("id"))
		})
	}
}

// TestOracle runs the whole query suite (every frame kind, with and
// without EXCLUDE CURRENT ROW, times every standard aggregate, plus WHERE,
// expressions and inline windows) on an event log with duplicate
// timestamps, NULLs and a NULLable string key.
func TestOracle(t *testing.T) {
	f := newOracleFixture(t, *oracleSeed, oracleDataOptions{rows: *oracleRows, sorted: true})
	for _, q := range oracleQueries() {
		t.Run(q.name, func(t *testing.T) {
			// Queries share the read-only data and the DuckDB handle; running
			// them in parallel overlaps the engine's pipeline hand-offs.
			t.Parallel()
			f.run(t, q)
		})
	}
}

// TestOracleUnsortedInput checks batch mode on input that is not ordered by
// event time: frames are defined by event time, ties by input position.
func TestOracleUnsortedInput(t *testing.T) {
	f := newOracleFixture(t, *oracleSeed+1, oracleDataOptions{rows: *oracleRows})
	for _, q := range oracleQueries() {
		if q.name != "range_current" && q.name != "rows_exclude" && q.name != "mixed_where" {
			continue
		}
		t.Run(q.name, func(t *testing.T) {
			want := f.duckdb(t, q)
			got, err := f.volga(f.data, q, volgarun.Options{Parallelism: 2})
			if err != nil {
				t.Fatalf("seed %d: volga batch: %v", f.seed, err)
			}
			f.checkBatch(t, q, "volga batch on unsorted input vs DuckDB", want, got)
		})
	}
}

// TestOracleNativeFirstLast runs first_value/last_value over RANGE frames
// unchanged in DuckDB, on data where (user_id, ts) is unique so no row has
// a peer in its user_id partition and DuckDB's answer is deterministic. It
// validates the arg_min_null/arg_max_null rewrite the other tests rely on.
func TestOracleNativeFirstLast(t *testing.T) {
	f := newOracleFixture(t, *oracleSeed+2, oracleDataOptions{rows: *oracleRows, sorted: true, uniqueKeyTS: true})
	var fs []feature
	for i, k := range frameKinds[:4] {
		for j, fr := range []frame{k.frames[0], k.frames[0].exclude()} {
			w := &window{name: fmt.Sprintf("w%d%d", i, j), partition: "user_id", frame: fr}
			fs = append(fs, aggs{{"first_value", "amount"}, {"last_value", "amount"}, {"first_value", "merchant"}, {"last_value", "qty"}}.over(w)...)
		}
	}
	native := oracleQuery{name: "native", project: []string{"id", "user_id", "ts"}, features: fs, nativeFirstLast: true}
	rewritten := native
	rewritten.nativeFirstLast = false
	want := f.duckdb(t, native)
	f.check(t, native, "DuckDB arg_min_null/arg_max_null rewrite vs native first_value/last_value", want, f.duckdb(t, rewritten))
	got, err := f.volga(f.data, native, volgarun.Options{Parallelism: 1})
	if err != nil {
		t.Fatalf("seed %d: volga batch: %v", f.seed, err)
	}
	f.check(t, native, "volga batch vs DuckDB native first_value/last_value", want, got)
}
