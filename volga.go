// Package volga computes machine-learning features from event streams,
// inside a Go program.
//
// A pipeline is one SELECT over one source table, written in SQL or with
// the Go builder of package pipeline. Windowed aggregates slide over the
// rows of each key in event time:
//
//	p, err := volga.SQL(`
//	    SELECT user_id, ts, sum(amount) OVER w AS spend_1h
//	    FROM tx
//	    WINDOW w AS (PARTITION BY user_id ORDER BY ts
//	                 RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`,
//	    volga.WithSource("tx", src), volga.WithSink(out), volga.WithMode(volga.Streaming))
//	if err != nil { ... }
//	err = p.Run(ctx)
//
// In Batch mode a bounded source is read to its end and every input row
// gets its features, in input order; the results equal DuckDB's for the
// same SQL. In Streaming mode rows are emitted once the watermark (the
// newest event time seen minus WithMaxOutOfOrder) passes them, with the
// same values the batch run would give. Rows that arrive behind the
// watermark are late: counted, and handed to WithLateSink.
package volga

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

// Mode selects batch or streaming execution.
type Mode = pipeline.Mode

const (
	// Batch reads a bounded source to its end and emits one row per input
	// row in input order.
	Batch = pipeline.Batch
	// Streaming emits rows as the watermark passes their event time.
	Streaming = pipeline.Streaming
)

// Option configures a Pipeline.
type Option func(*config)

type config struct {
	sources   map[string]source.Source
	sink      sink.Sink
	eventTime string
	strict    bool
	run       pipeline.RunOptions
	ckptURL   string // WithCheckpoints: opened by Run
	// clusterInput are the columns WithClusterInput orders the input by.
	clusterInput []string
}

// WithSource binds a source to a table name of the query.
//
// A batch run without a late-row sink, dead-letter handler or checkpoints
// narrows a source that can leave columns out (source.Projector, such as
// Parquet) to the columns the query uses, so that the others are never
// decoded; the source's Schema then shows only those.
func WithSource(table string, s source.Source) Option {
	return func(c *config) { c.sources[strings.ToLower(table)] = s }
}

// WithSink sets where output rows go. Without one, Run discards them.
func WithSink(s sink.Sink) Option { return func(c *config) { c.sink = s } }

// WithMode sets Batch (the default) or Streaming.
func WithMode(m Mode) Option { return func(c *config) { c.run.Mode = m } }

// WithMaxOutOfOrder sets how far behind the newest event time a row may
// arrive and still be on time (streaming; default 0: in order): the
// watermark is the newest event time less d, so a row less than d behind
// the newest is on time and one d or more behind is late.
func WithMaxOutOfOrder(d time.Duration) Option {
	return func(c *config) { c.run.MaxOutOfOrder = d }
}

// WithAllowedLateness applies late rows up to d behind the watermark to
// state, and emits them with their frame as of arrival (streaming; default
// 0: late rows are dropped, counted and sent to the late sink).
func WithAllowedLateness(d time.Duration) Option {
	return func(c *config) { c.run.AllowedLateness = d }
}

// WithIdleTimeout lets a partition of a partitioned source (such as a
// Kafka topic) that has delivered nothing for d stop holding the watermark
// back (streaming; default 0: every partition holds it).
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.run.IdleTimeout = d }
}

// WithWatermarkInterval advances the watermark at most once per d of
// wall-clock time, or sooner once WithWatermarkMaxRows rows were read
// since it last did (streaming; default 0: after every batch read), as
// mini-batching does in other stream processors: rows are emitted, and
// seen by lookups, up to d later, in larger steps, and the window tasks
// visit each key for more rows at a time, which costs several times less
// CPU per row when there are many keys. Results are the same, except that
// a row counts as late only behind the watermark sent, which lags by up to
// d.
func WithWatermarkInterval(d time.Duration) Option {
	return func(c *config) { c.run.WatermarkInterval = d }
}

// WithWatermarkMaxRows bounds a WithWatermarkInterval mini-batch: once n
// rows were read since the last watermark, the next one is sent without
// waiting for the interval (default pipeline.DefaultWatermarkMaxRows,
// 131 072; negative: no bound). A source that can deliver faster than the
// pipeline processes (a backlog, a replay) would otherwise pile up an
// interval's worth of reading as pending rows, released in one step:
// stream-4 with a 100 ms interval peaked at 1.4-1.7 GB with up to 2.3 s
// between outputs without the bound, 1.0 GB and 0.2 s with it, and ran no
// slower.
func WithWatermarkMaxRows(n int) Option {
	return func(c *config) { c.run.WatermarkMaxRows = n }
}

// WithParallelism runs n window tasks per PARTITION BY key set, rows
// hash-partitioned by key. Results are identical for every n.
func WithParallelism(n int) Option { return func(c *config) { c.run.Parallelism = n } }

// WithClusteredBy promises that a batch input comes clustered by the
// columns cols: every row with given values of them before any row with
// other values, as in an export sorted by user (the order of each key's
// rows is free). The first OVER windows must partition by them (and maybe
// more). Input in that order is far from time order, so without the
// promise a batch run holds every row to the end of the input; with it,
// each key's rows go out, and its state is dropped, once the input has
// moved on to another key: memory is bounded by the keys being read, not
// by the input. Lookup then answers a finished key with
// window.ErrKeyDropped (with a state store, as with WithCheckpoints or
// WithMemoryBudget, states are kept). A query of GROUP BY windows only
// (tumble/hop, grouped by the columns and maybe more) emits each key's
// windows once the input has moved on, key by key in the order of their
// first rows, each key's windows by start (not by window start across
// keys, as without the promise). A key that comes back after another
// key's rows stops the run with an error wrapping window.ErrNotClustered.
// For CSV and JSON lines in time order, see source.WithTimeOrder instead;
// Parquet row groups in time order need nothing.
func WithClusteredBy(cols ...string) Option {
	return func(c *config) { c.run.ClusteredBy = cols }
}

// WithClusterInput has a batch run order its input by the columns cols
// itself before the windows see it, as a database sorts the partitions
// of a window function, and then run as WithClusteredBy promises: key by
// key, each key's rows going out, and its state dropped, once the run
// has moved on to the next key (Lookup then answers window.ErrKeyDropped
// for a finished key). The source's rows (the columns the query uses,
// for a source that can leave columns out) are read whole first
// (source.NewClustered), in memory up to source.ClusteredMemory (1 GiB)
// and spilled beyond it to files parted by key under os.TempDir(), so
// memory holds the input, or a part of it, rather than every key's
// windows at once; and the output comes key by key, the keys in the
// order of their first rows (part by part, when spilled) and each key's
// rows in input order, instead of all rows in input order. To spill
// elsewhere, or at another size, give WithClusteredBy a
// source.NewClustered with source.WithSpill. It pays when frames are long
// against the input's span and each key's state is large: ml-3
// (topn_frequency, sum_cate and top1_ratio over up to 30 days, 5 M events
// of a month, 100 000 users) took 9.1 s and 2.1 GB of peak RSS in input
// order, 3.6-5.1 s and 0.85 GB with it (2026-12-02); and for GROUP BY
// windows, each key's windows then emitted as its rows end (an hourly
// GROUP BY of users over 10 M events: 2.45-2.49 s against 3.13-3.49 in
// input order, for 0.87-0.90 GB of peak RSS against 0.17). The first
// OVER windows must partition by cols (and maybe more), or a query of
// GROUP BY windows only group by them (and maybe more). A run with
// checkpoints refuses it (the clustered rows cannot be replayed from a
// position), as do a streaming run and Backfill.
func WithClusterInput(cols ...string) Option {
	return func(c *config) { c.clusterInput = cols }
}

// WithLateSink receives late rows that were not applied, with the
// source's columns, in the order they come from the window tasks. With
// checkpoints (WithCheckpoints) a transactional sink (sink.Committer, such
// as the file sinks) takes part in them like the output's sink: after a
// crash and restart it holds every late row exactly once; another sink
// gets the late rows after the checkpoint again.
func WithLateSink(s sink.Sink) Option { return func(c *config) { c.run.Late = s } }

// WithDeadLetters receives rows the engine cannot process, such as a NULL
// event time, one beyond pipeline.MinEventTime or MaxEventTime (±2^62
// ms), or an expression that fails on the row (a CAST of text that
// is not a number, an integer overflow); the run goes on without them.
// Sources have dead-letter options of their own for records they cannot
// decode.
func WithDeadLetters(f source.DeadLetterFunc) Option {
	return func(c *config) { c.run.DeadLetters = f }
}

// WithEventTime names the event-time column when no window's ORDER BY
// does (a query with no windows has none).
func WithEventTime(col string) Option { return func(c *config) { c.eventTime = col } }

// WithLogger sets the logger for operational messages (default: none).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.run.Logger = l } }

// WithChannelDepth sets how many batches may wait on each edge between
// operators (default 4); it bounds memory when the sink is slow. In a
// batch run over input clustered by key (WithClusteredBy) with several
// window tasks, the rows, not the batches, bound what waits for each
// first-stage task: 65 536 of them, so that one task's release does not
// leave the others without input.
func WithChannelDepth(n int) Option { return func(c *config) { c.run.ChannelDepth = n } }

// WithAllocator sets the Arrow memory allocator (default: Go's heap).
// Without it, the window tasks build their results in a pool of buffers
// reused once freed, which never leave the run (the output holds copies
// on Go's heap); with it, m allocates every buffer, those too, so that a
// memory.CheckedAllocator accounts for all of them.
func WithAllocator(m memory.Allocator) Option { return func(c *config) { c.run.Mem = m } }

// WithLookupRetention keeps window state so that Lookup can answer for
// times down to d behind the watermark (default 0: lookups are served from
// each key's newest event on, or from the watermark for a key with no
// event for longer than the longest frame). Memory grows with d.
func WithLookupRetention(d time.Duration) Option {
	return func(c *config) { c.run.LookupRetention = d }
}

// WithStrict makes Backfill use only events strictly before each spine
// row's time (ts < t), so that nothing at the spine row's own time leaks
// into its features.
func WithStrict(strict bool) Option { return func(c *config) { c.strict = strict } }

// Backfill computes point-in-time training data: for each row of spine,
// the query's windowed features as of that row's time, exactly what Lookup
// would have returned online had every event with ts <= t been ingested
// (ts < t with WithStrict). A spine row is not an event and, as in a
// lookup, never in its own frame: EXCLUDE CURRENT ROW in the query changes
// nothing, and only WithStrict leaves out the events at the spine row's
// own time. The spine has the query's PARTITION BY columns
// and its ORDER BY time column, under the same names and types as the
// events, plus any other columns (labels, ids), which are passed through.
// The output, written to out (which Backfill closes), has the spine's
// columns in spine order, then one column per windowed aggregate of the
// query in SELECT order, one row per spine row, in spine order. Bind the
// events to the query's table with WithSource. It is one pass over events
// and spine, not one lookup per spine row. When both sources bound the
// times still to come (source.LowerBounder: Parquet row groups, in-memory
// batches, CSV and JSON lines with source.WithTimeOrder), they are read
// side by side, lowest bound first, and the rows of a spine in time order
// go out as they are read, in memory bounded by the windows (a sort-merge);
// otherwise the events are read first, then the spine, and everything
// waits for the end.
func Backfill(ctx context.Context, query string, spine source.Source, out sink.Sink, opts ...Option) error {
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		return abandon(err, out)
	}
	cfg := config{sources: map[string]source.Source{}}
	for _, o := range opts {
		o(&cfg)
	}
	events, ok := cfg.sources[strings.ToLower(plan.Table)]
	if !ok {
		return abandon(plan.ErrorAt(plan.Table, "no source bound to table %q; use volga.WithSource", plan.Table), out)
	}
	if len(cfg.clusterInput) > 0 {
		return abandon(errors.New("volga: WithClusterInput does not apply to backfills (events and spine are read in time order)"), out)
	}
	// The window operators register there, for WithMetrics's
	// volga_window_* metrics.
	cfg.run.Live = &pipeline.Live{}
	return pipeline.Backfill(ctx, plan, events, spine, out, cfg.eventTime, cfg.strict, cfg.run)
}

// Pipeline is a compiled pipeline bound to its source and sink.
type Pipeline struct {
	compiled *pipeline.Compiled
	src      source.Source
	cfg      config
	stats    pipeline.Stats
	live     pipeline.Live
	mu       sync.Mutex
	ran      bool
	stop     chan struct{}
	stopOnce sync.Once
}

// Stop ends a running pipeline gracefully and returns at once; Run then
// returns nil when the pipeline has wound down. Reading stops (a source
// waiting for data is interrupted). With WithCheckpoints a final
// checkpoint is taken first, holding the rows still waiting for the
// watermark, so that the next run on the same bucket resumes exactly
// there: this is how a service shuts down on SIGTERM or SIGINT. Without
// checkpoints the input ends there as if the source had ended, and every
// pending row is emitted. Stop before Run makes Run stop at once; calling
// it again does nothing.
func (p *Pipeline) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
}

// SQL compiles a query of the Volga SQL dialect. The table in its FROM
// clause must be bound with WithSource. Errors in the query are
// *pipeline.SQLError values naming the offending text and its position.
func SQL(query string, opts ...Option) (*Pipeline, error) {
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		return nil, err
	}
	return FromPlan(plan, opts...)
}

// Build compiles a pipeline written with the Go builder.
func Build(b *pipeline.Builder, opts ...Option) (*Pipeline, error) {
	plan, err := b.Plan()
	if err != nil {
		return nil, err
	}
	return FromPlan(plan, append([]Option{WithEventTime(b.EventTimeColumn())}, opts...)...)
}

// inferenceNote adds to a query's compile error what the source knows of
// how it inferred its schema, when that is the likely cause: it inferred
// it from no rows at all (an input with a header only, an empty JSON-lines
// file), so every column is utf8; or a column the error names is utf8
// because of a few values among many of another type (a typo in a column
// of numbers or times). A query that is right otherwise fails on the
// column's type and blames itself.
func inferenceNote(err error, src source.Source) error {
	note := ""
	if s, ok := src.(interface{ SampledRows() (int, bool) }); ok {
		if n, inferred := s.SampledRows(); inferred && n == 0 {
			note = "; note: the source has no data rows, so its column types could not be inferred (each column reads as utf8): give its schema (source.WithSchema), or skip an empty input"
		}
	}
	var se *pipeline.SQLError
	if s, ok := src.(interface{ InferenceNote(string) string }); ok && note == "" {
		text := err.Error()
		for _, f := range src.Schema().Fields() {
			if n := s.InferenceNote(f.Name); n != "" && strings.Contains(text, f.Name) {
				note = fmt.Sprintf("; note: column %q was inferred as utf8 because %s: fix that value, or give the schema (source.WithSchema)", f.Name, n)
				break
			}
		}
	}
	if note == "" {
		return err
	}
	if errors.As(err, &se) {
		c := *se
		c.Msg += note
		return &c
	}
	return fmt.Errorf("%w%s", err, note)
}

// validate rejects option values that have no meaning, rather than
// running with a silent default.
func (cfg *config) validate() error {
	r := &cfg.run
	switch {
	case r.Parallelism < 0:
		return fmt.Errorf("volga: parallelism must be positive, got %d", r.Parallelism)
	case r.Checkpoints != nil && cfg.ckptURL == "" && r.Checkpoints.Bucket == nil:
		return errors.New("volga: checkpoint options need a bucket: use volga.WithCheckpoints or volga.WithCheckpointBucket")
	case r.PageRows < 0:
		return fmt.Errorf("volga: row paging needs a positive page size, got %d", r.PageRows)
	case r.MemoryBudget < 0:
		return fmt.Errorf("volga: memory budget must not be negative, got %d", r.MemoryBudget)
	}
	if r.Mode != pipeline.Batch && r.Mode != pipeline.Streaming {
		return fmt.Errorf("volga: unknown mode %d: use volga.Batch or volga.Streaming", int(r.Mode))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"max out-of-orderness", r.MaxOutOfOrder}, {"allowed lateness", r.AllowedLateness},
		{"watermark interval", r.WatermarkInterval}, {"idle timeout", r.IdleTimeout},
		{"lookup retention", r.LookupRetention},
	} {
		if d.v < 0 {
			return fmt.Errorf("volga: the %s must not be negative, got %v", d.name, d.v)
		}
	}
	if r.ChannelDepth < 0 {
		return fmt.Errorf("volga: channel depth must not be negative, got %d", r.ChannelDepth)
	}
	if ck := r.Checkpoints; ck != nil {
		if ck.Interval < 0 {
			return fmt.Errorf("volga: the checkpoint interval must not be negative, got %v", ck.Interval)
		}
		if ck.Retain < 0 {
			return fmt.Errorf("volga: checkpoints to retain must not be negative, got %d", ck.Retain)
		}
	}
	return nil
}

// FromPlan compiles a logical plan.
func FromPlan(plan *pipeline.Plan, opts ...Option) (*Pipeline, error) {
	cfg := config{sources: map[string]source.Source{}}
	for _, o := range opts {
		o(&cfg)
	}
	src, ok := cfg.sources[strings.ToLower(plan.Table)]
	if !ok {
		names := make([]string, 0, len(cfg.sources))
		for n := range cfg.sources {
			names = append(names, n)
		}
		return nil, plan.ErrorAt(plan.Table, "no source bound to table %q (bound: %s); use volga.WithSource", plan.Table, strings.Join(names, ", "))
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(cfg.clusterInput) > 0 {
		var err error
		if src, err = clusterInput(src, &cfg); err != nil {
			return nil, err
		}
	}
	c, err := pipeline.Compile(plan, src.Schema(), cfg.eventTime)
	if err != nil {
		return nil, inferenceNote(err, cfg.sources[strings.ToLower(plan.Table)])
	}
	c = project(plan, src, c, &cfg)
	if cfg.sink == nil {
		cfg.sink = sink.NewCallback(func(context.Context, arrow.RecordBatch) error { return nil })
	}
	return &Pipeline{compiled: c, src: src, cfg: cfg, stop: make(chan struct{})}, nil
}

// clusterInput returns src ordered by cfg.clusterInput
// (WithClusterInput), promised so to the run.
func clusterInput(src source.Source, cfg *config) (source.Source, error) {
	cols := cfg.clusterInput
	switch {
	case cfg.run.Mode != pipeline.Batch:
		return nil, errors.New("volga: WithClusterInput applies to batch runs only (it reads the whole input first)")
	case cfg.run.Checkpoints != nil || cfg.ckptURL != "":
		return nil, errors.New("volga: WithClusterInput cannot be checkpointed (its rows cannot be replayed from a position); over input already sorted by key, WithClusteredBy can")
	case len(cfg.run.ClusteredBy) > 0 && !slices.EqualFunc(cfg.run.ClusteredBy, cols, strings.EqualFold):
		return nil, fmt.Errorf("volga: WithClusterInput(%v) and WithClusteredBy(%v) name different columns", cols, cfg.run.ClusteredBy)
	}
	cl, err := source.NewClustered(src, cols)
	if err != nil {
		return nil, fmt.Errorf("volga: WithClusterInput: %w", err)
	}
	cfg.run.ClusteredBy = cols
	return cl, nil
}

// Schema is the schema of the output rows.
func (p *Pipeline) Schema() *arrow.Schema { return p.compiled.Output }

// Run executes the pipeline until its source ends (or ctx is cancelled)
// and closes the sink. A run that fails (an error, a cancelled ctx
// included) abandons the sinks that publish at Close (sink.Abandoner):
// without checkpoints a file sink then leaves its file as it was, rather
// than publish partial output; use Stop to end a stream with its output
// published. A Pipeline runs once.
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.ran {
		p.mu.Unlock()
		return errors.New("volga: a pipeline runs once; compile it again to rerun")
	}
	p.ran = true
	p.mu.Unlock()
	cfg := p.cfg
	if cfg.run.Checkpoints != nil {
		ck := *cfg.run.Checkpoints
		cfg.run.Checkpoints = &ck
	}
	closeBucket, err := cfg.openCheckpointBucket(ctx)
	if err != nil {
		return abandon(err, p.cfg.sink, cfg.run.Late)
	}
	defer closeBucket()
	opts := cfg.run
	opts.Stats = &p.stats
	opts.Live = &p.live
	opts.Stop = p.stop
	return p.compiled.Run(ctx, p.src, p.cfg.sink, opts)
}

// abandon ends the sinks of a run or backfill that failed before it
// started, as the engine ends those of a run that fails (Abandon where
// the sink has it, so that no empty or partial file is published, else
// Close), and returns err with their errors, if any.
func abandon(err error, sinks ...sink.Sink) error {
	for _, s := range sinks {
		if s == nil {
			continue
		}
		var cerr error
		if a, ok := s.(sink.Abandoner); ok {
			cerr = a.Abandon()
		} else {
			cerr = s.Close()
		}
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("volga: closing sink: %w", cerr))
		}
	}
	return err
}

// LookupResult holds the features of one key at one time; see Lookup.
type LookupResult = pipeline.LookupResult

// Lookup returns every windowed feature of the query for a key as of time
// at (request mode), from the state of the running pipeline, or of a
// finished one: for each window, the aggregate over the rows of the key in
// the frame a row at (key, at) would have, without that row. key maps each
// PARTITION BY column (KeyColumns) to a value. row, when not nil, is a
// candidate row (source column -> value) counted in its own frame as if it
// had arrived, without being stored, as when scoring a transaction that is
// happening now.
//
// The result counts the rows released by the watermark it reports; rows
// still waiting for the watermark are not in it yet. Lookups are safe to
// call from many goroutines while the pipeline runs. Lookups need bounded
// frames (no UNBOUNDED PRECEDING), and times no older than the newest
// event of the key minus the longest window.
func (p *Pipeline) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (LookupResult, error) {
	return p.live.Lookup(ctx, key, at, row)
}

// FeatureRow holds the features of one lookup for LookupInto, numbers
// unboxed; reused, it lets lookups allocate nothing.
type FeatureRow = pipeline.FeatureRow

// LookupInto is Lookup writing the features into dst, whose memory it
// reuses: once dst has served a lookup of this pipeline, a lookup of
// numeric features allocates nothing, where Lookup allocates its result
// and boxes every number (four allocations for four features over 30
// days), and so charges the garbage collector's assist work to the
// lookups while it marks. Read dst with its Float64, Int64, IsNull and
// Value methods. Keep a FeatureRow per goroutine. The key map is the
// caller's: putting an int64 of 256 or more into a map[string]any boxes
// it, which allocates.
func (p *Pipeline) LookupInto(ctx context.Context, dst *FeatureRow, key map[string]any, at time.Time, row map[string]any) error {
	return p.live.LookupInto(ctx, dst, key, at, row)
}

// Ready reports whether Lookup answers yet, as a readiness probe:
// nil once the pipeline has started (and after it ended),
// pipeline.ErrNotRunning before, and CanLookup's error for a pipeline
// that never answers lookups. A batch run answers from its start, as of
// the rows read so far; to serve a bounded input only once it is read,
// wait for Run to return.
func (p *Pipeline) Ready() error { return p.live.Ready() }

// CanLookup reports why the pipeline cannot serve lookups (no sliding
// windows, or an UNBOUNDED PRECEDING frame); nil when it can.
func (p *Pipeline) CanLookup() error { return p.compiled.CanLookup() }

// KeyColumns are the columns a Lookup key must give: the union of the
// query's PARTITION BY columns.
func (p *Pipeline) KeyColumns() []string { return p.compiled.LookupKeys() }

// Stats returns the row counters of the run so far.
func (p *Pipeline) Stats() pipeline.StatsSnapshot { return p.stats.Snapshot() }
