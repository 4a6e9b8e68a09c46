package volgatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// Option configures Run.
type Option func(*runConfig)

type runConfig struct {
	streaming bool
	maxOOO    time.Duration
	order     func(Events) ([]int, error)
	extra     []volga.Option
}

// Streaming runs the pipeline in streaming mode with the given maximum
// out-of-orderness (volga.WithMaxOutOfOrder). The events arrive one per
// source batch, so the watermark moves after every event, in the order
// chosen with Arrival or Shuffled (by default, the order they were given
// in).
func Streaming(maxOutOfOrder time.Duration) Option {
	return func(c *runConfig) { c.streaming, c.maxOOO = true, maxOutOfOrder }
}

// Arrival makes the events arrive in the order perm gives: perm[k] is the
// index of the event that arrives k-th. perm must be a permutation of the
// event indices.
func Arrival(perm []int) Option {
	perm = append([]int(nil), perm...)
	return func(c *runConfig) {
		c.order = func(e Events) ([]int, error) {
			if len(perm) != e.Len() {
				return nil, fmt.Errorf("Arrival: %d indices for %d events", len(perm), e.Len())
			}
			seen := make([]bool, len(perm))
			for _, i := range perm {
				if i < 0 || i >= len(perm) || seen[i] {
					return nil, fmt.Errorf("Arrival: %v is not a permutation of 0..%d", perm, len(perm)-1)
				}
				seen[i] = true
			}
			return perm, nil
		}
	}
}

// Shuffled makes the events arrive in a random order, reproducible from
// seed, in which no event arrives `within` or more behind the newest event
// time (column ts) seen before it. With Streaming(within) no event is
// then late, and streaming results must equal batch results.
func Shuffled(ts string, within time.Duration, seed uint64) Option {
	return func(c *runConfig) {
		c.order = func(e Events) ([]int, error) {
			col := e.schema.FieldIndices(ts)
			if len(col) != 1 {
				return nil, fmt.Errorf("Shuffled: no column %q in the events", ts)
			}
			// Sort by event time plus a jitter in [0, within): an event
			// overtaken by a later one is less than `within` older than it.
			rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			keys := make([]float64, e.Len())
			for i, r := range e.rows {
				t, ok := toTime(r[col[0]])
				if !ok {
					return nil, fmt.Errorf("Shuffled: event %d has no time in column %q", i, ts)
				}
				keys[i] = float64(t.UnixMilli()) + rng.Float64()*float64(within.Milliseconds())
			}
			perm := make([]int, e.Len())
			for i := range perm {
				perm[i] = i
			}
			sort.SliceStable(perm, func(a, b int) bool { return keys[perm[a]] < keys[perm[b]] })
			return perm, nil
		}
	}
}

// With passes options to the pipeline (volga.WithParallelism,
// volga.WithAllowedLateness, ...). Run sets the source, the sink and the
// mode itself.
func With(opts ...volga.Option) Option {
	return func(c *runConfig) { c.extra = append(c.extra, opts...) }
}

// Result is the outcome of Run.
type Result struct {
	// Schema is the schema of the output rows.
	Schema *arrow.Schema
	// Rows are the output rows in the order the pipeline wrote them, as
	// the Go values of sink.Value, keyed by column name.
	Rows []map[string]any
	// Stats are the pipeline's counters at the end of the run.
	Stats pipeline.StatsSnapshot
	// Pipeline is the finished pipeline; its state answers lookups.
	Pipeline *volga.Pipeline
	// Arrival is the order the events arrived in: Arrival[k] is the
	// index of the event that arrived k-th (the identity when neither
	// Arrival nor Shuffled was given). Print it to reproduce a failing
	// Shuffled seed with Arrival.
	Arrival []int
}

// Run compiles query (SQL text or a *pipeline.Builder), binds events to
// its table and runs it to the end of the events, in batch mode unless
// Streaming is given. Errors stop the test with Fatalf.
func Run(t testing.TB, query any, events Events, opts ...Option) *Result {
	t.Helper()
	var cfg runConfig
	for _, o := range opts {
		o(&cfg)
	}
	if events.err != nil {
		t.Fatalf("%v", events.err)
		return nil
	}
	var plan *pipeline.Plan
	var err error
	switch q := query.(type) {
	case string:
		plan, err = pipeline.ParseSQL(q)
	case *pipeline.Builder:
		plan, err = q.Plan()
	default:
		t.Fatalf("volgatest: Run: query is %T, want SQL text or *pipeline.Builder", query)
		return nil
	}
	if err != nil {
		t.Fatalf("volgatest: %v", err)
		return nil
	}

	var order []int
	if cfg.order != nil {
		if order, err = cfg.order(events); err != nil {
			t.Fatalf("volgatest: %v", err)
			return nil
		}
	}
	if order == nil {
		order = make([]int, events.Len())
		for i := range order {
			order[i] = i
		}
	}
	var recs []arrow.RecordBatch
	if cfg.streaming {
		for _, i := range order {
			rec, err := events.record([]int{i})
			if err != nil {
				t.Fatalf("volgatest: %v", err)
				return nil
			}
			recs = append(recs, rec)
		}
	} else {
		rec, err := events.record(order)
		if err != nil {
			t.Fatalf("volgatest: %v", err)
			return nil
		}
		recs = append(recs, rec)
	}
	src := source.NewMemory(events.schema, recs...)
	for _, r := range recs {
		r.Release()
	}
	out := sink.NewCollector()
	vopts := []volga.Option{volga.WithSource(plan.Table, src), volga.WithSink(out)}
	if cfg.streaming {
		vopts = append(vopts, volga.WithMode(volga.Streaming), volga.WithMaxOutOfOrder(cfg.maxOOO))
	}
	vopts = append(vopts, cfg.extra...)
	var p *volga.Pipeline
	if b, ok := query.(*pipeline.Builder); ok {
		p, err = volga.Build(b, vopts...)
	} else {
		p, err = volga.FromPlan(plan, vopts...)
	}
	if err != nil {
		t.Fatalf("volgatest: %v", err)
		return nil
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("volgatest: run: %v", err)
		return nil
	}
	res := &Result{Schema: p.Schema(), Stats: p.Stats(), Pipeline: p, Arrival: order}
	for _, rec := range out.Records() {
		for _, row := range sink.Rows(rec) {
			m := make(map[string]any, len(row))
			for j, f := range rec.Schema().Fields() {
				m[f.Name] = row[j]
			}
			res.Rows = append(res.Rows, m)
		}
	}
	return res
}

// Lookup returns every windowed feature of the query for key as of time
// at, from the state the run left (see volga.Pipeline.Lookup), keyed by
// feature name. Errors stop the test with Fatalf.
func (r *Result) Lookup(t testing.TB, key map[string]any, at time.Time) map[string]any {
	t.Helper()
	res, err := r.Pipeline.Lookup(context.Background(), key, at, nil)
	if err != nil {
		t.Fatalf("volgatest: lookup %v at %s: %v", key, at.UTC().Format(time.RFC3339Nano), err)
		return nil
	}
	m := make(map[string]any, len(res.Names))
	for i, n := range res.Names {
		m[n] = res.Values[i]
	}
	return m
}
