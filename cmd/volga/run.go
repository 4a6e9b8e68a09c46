package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/internal/textcodec"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"
)

const runSynopsis = "run --sql FILE --source NAME=PATH [--source ...] [--schema COL:TYPE,...] [--mode batch|stream] [--time-order DURATION] [--clustered-by COLS | --cluster-input COLS] [--max-out-of-order DURATION] [--watermark-interval DURATION [--watermark-max-rows N]] [--idle-timeout DURATION] [--parallelism N] [--sink PATH] [--checkpoints URL [--checkpoint-interval DURATION]] [--state-dir DIR] [--memory-budget BYTES] [--row-pages ROWS] [--log-level LEVEL]"

var runCommand = &command{
	name:    "run",
	summary: "run one SQL pipeline over CSV, JSON-lines or Parquet files",
	usage:   runSynopsis,
	run:     runMain,
}

// runConfig is the parsed command line of volga run.
type runConfig struct {
	sqlFile         string
	sources         bindings
	mode            volga.Mode
	maxOutOfOrder   time.Duration
	timeOrder       timeOrder
	clusteredBy     string
	clusterInput    string
	wm              watermarkFlags
	allowedLateness time.Duration
	parallelism     int
	sinkPath        string
	format          string
	lateSink        string
	batchSize       int
	logLevel        slog.Level
	state           stateConfig
	schema          schemaFlag
}

// binding is one --source NAME=PATH.
type binding struct{ name, path string }

// bindings collects repeated --source flags.
type bindings []binding

func (b *bindings) String() string {
	var parts []string
	for _, x := range *b {
		parts = append(parts, x.name+"="+x.path)
	}
	return strings.Join(parts, " ")
}

func (b *bindings) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	name, path = strings.TrimSpace(name), strings.TrimSpace(path)
	if !ok || name == "" || path == "" {
		return errors.New("want NAME=PATH, e.g. tx=transactions.csv")
	}
	for _, x := range *b {
		if strings.EqualFold(x.name, name) {
			return fmt.Errorf("table %q is bound twice", name)
		}
	}
	*b = append(*b, binding{name: name, path: path})
	return nil
}

// modeFlag parses --mode.
type modeFlag struct{ m *volga.Mode }

func (f modeFlag) String() string {
	if f.m == nil {
		return "batch"
	}
	return f.m.String()
}

func (f modeFlag) Set(v string) error {
	switch strings.ToLower(v) {
	case "batch":
		*f.m = volga.Batch
	case "stream", "streaming":
		*f.m = volga.Streaming
	default:
		return errors.New("want batch or stream")
	}
	return nil
}

// watermarkFlags are the stream-mode watermark flags of run, serve and
// group.
type watermarkFlags struct {
	interval time.Duration
	maxRows  int
	idle     time.Duration
}

func (w *watermarkFlags) register(fs *flag.FlagSet) {
	fs.Var(durationFlag{&w.interval}, "watermark-interval", "stream mode: advance the watermark at most once per `DURATION` of wall-clock time (e.g. 100ms; sooner every --watermark-max-rows rows read): rows come out, and reach lookups, up to that much later, at much less CPU per row with many keys")
	fs.IntVar(&w.maxRows, "watermark-max-rows", pipeline.DefaultWatermarkMaxRows, "stream mode, with --watermark-interval: send the watermark early once `N` rows were read since the last one (a backlog read faster than processed stays bounded); -1: no bound")
	fs.Var(durationFlag{&w.idle}, "idle-timeout", "stream mode, Kafka source: a partition that has delivered nothing for `DURATION` (e.g. 30s) stops holding the watermark back, so that a quiet or empty partition does not stop the output; 0: every partition holds it")
}

// check refuses --watermark-max-rows without --watermark-interval, which
// it only tunes.
func (w *watermarkFlags) check(cmd string, fs *flag.FlagSet) error {
	if f := fs.Lookup("watermark-max-rows"); f.Value.String() != f.DefValue && w.interval == 0 {
		return usagef("%s: --watermark-max-rows applies with --watermark-interval only", cmd)
	}
	return nil
}

// options returns the watermark options the flags set.
func (w *watermarkFlags) options() []volga.Option {
	return []volga.Option{volga.WithWatermarkInterval(w.interval), volga.WithWatermarkMaxRows(w.maxRows), volga.WithIdleTimeout(w.idle)}
}

// durationFlag parses a non-negative time.Duration ("5s", "1m30s").

// streamOnly refuses, outside stream mode, any of the named flags set to
// other than its default.
func streamOnly(cmd string, mode volga.Mode, fs *flag.FlagSet, names ...string) error {
	if mode == volga.Streaming {
		return nil
	}
	for _, name := range names {
		if f := fs.Lookup(name); f.Value.String() != f.DefValue {
			return usagef("%s: --%s applies to --mode stream only", cmd, name)
		}
	}
	return nil
}

// timeOrder is --time-order: a batch run's promise of how late rows of a
// CSV or JSON-lines input may be (source.WithTimeOrder).
type timeOrder struct {
	d   time.Duration
	set bool
}

func (t *timeOrder) register(fs *flag.FlagSet) {
	t.registerUsage(fs, "batch mode, CSV or JSON-lines input: promise that each row is at most `DURATION` behind the newest event time before it (0s: sorted), so that OVER windows emit rows as the input is read rather than at its end; a row later than that stops the run (Parquet input needs no promise: its statistics bound the times to come)")
}

// registerUsage registers --time-order with the help text usage.
func (t *timeOrder) registerUsage(fs *flag.FlagSet, usage string) {
	fs.Var(timeOrderFlag{t}, "time-order", usage)
}

// check refuses --time-order outside batch mode.
func (t *timeOrder) check(cmd string, mode volga.Mode) error {
	if t.set && mode != volga.Batch {
		return usagef("%s: --time-order applies to --mode batch only; in stream mode --max-out-of-order bounds how late rows may be", cmd)
	}
	return nil
}

// options returns the source option of the promise for the event-time
// column of plan (none when --time-order is not given).
func (t *timeOrder) options(queryName string, plan *pipeline.Plan) ([]source.Option, error) {
	if !t.set {
		return nil, nil
	}
	col := plan.OrderBy()
	if col == "" {
		return nil, fmt.Errorf("%s: --time-order: the query has no event-time column (no OVER window or tumble/hop)", queryName)
	}
	return []source.Option{source.WithTimeOrder(col, t.d)}, nil
}

type timeOrderFlag struct{ t *timeOrder }

func (f timeOrderFlag) String() string {
	if f.t == nil {
		return "0s"
	}
	return f.t.d.String()
}

func (f timeOrderFlag) Set(v string) error {
	if err := (durationFlag{&f.t.d}).Set(v); err != nil {
		return err
	}
	f.t.set = true
	return nil
}

type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m (%v)", strings.TrimPrefix(err.Error(), "time: "))
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

// logLevelFlag parses --log-level: debug, info, warn or error.
type logLevelFlag struct{ l *slog.Level }

func (f logLevelFlag) String() string {
	if f.l == nil {
		return "warn"
	}
	return strings.ToLower(f.l.String())
}

func (f logLevelFlag) Set(v string) error {
	switch l := strings.ToLower(v); l {
	case "debug", "info", "warn", "error":
		return f.l.UnmarshalText([]byte(l))
	}
	return errors.New("want debug, info, warn or error")
}

// newLogger logs to w at level and above, as text. Lines of the
// pipeline's log and the command's own messages share w, hence the lock.
// Above info, the pipeline's record of its own failure is left out: the
// command prints that error as its one line (at info and below the
// record, with the run's counts, comes first).
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	var h slog.Handler = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	if level > slog.LevelInfo {
		h = skipFailure{h}
	}
	return slog.New(h)
}

// failedMessage is the message of the record a pipeline logs when its run
// fails (pipeline/observe.go); TestRunErrorOneLine checks it is left out.
const failedMessage = "volga: pipeline failed"

// skipFailure is a handler that drops the failedMessage record.
type skipFailure struct{ slog.Handler }

func (h skipFailure) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && r.Message == failedMessage {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h skipFailure) WithAttrs(attrs []slog.Attr) slog.Handler {
	return skipFailure{h.Handler.WithAttrs(attrs)}
}

func (h skipFailure) WithGroup(name string) slog.Handler {
	return skipFailure{h.Handler.WithGroup(name)}
}

// syncWriter serializes writes to w from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func newRunFlags(cfg *runConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line by the caller
	fs.StringVar(&cfg.sqlFile, "sql", "", "`FILE` holding the query (- reads standard input)")
	fs.Var(&cfg.sources, "source", "bind the query's table `NAME=PATH` to a .csv, .jsonl, .ndjson, .json or .parquet file (CSV and JSON lines may be compressed: .csv.gz, .jsonl.zst), a directory or a glob pattern ('events/*.csv') of such files read in name order, the same in object storage (s3://BUCKET/events/*.parquet?region=R), or a Kafka topic kafka://HOST:PORT/TOPIC?group=G&time_field=ts (format=avro&schema_registry=URL for Avro)")
	fs.Var(modeFlag{&cfg.mode}, "mode", "`batch|stream`: read to the end and keep input order, or emit rows as the watermark passes them (default batch)")
	fs.Var(durationFlag{&cfg.maxOutOfOrder}, "max-out-of-order", "stream mode: how far behind the newest event time a row may arrive and still be on time (`DURATION`, e.g. 5s)")
	fs.Var(&cfg.schema, "schema", schemaUsage)
	cfg.timeOrder.register(fs)
	fs.StringVar(&cfg.clusterInput, "cluster-input", "", "batch mode: read the whole input first and order it by the comma-separated `COLS` (each key's rows in input order; beyond 1 GiB spilled to the temporary directory, parted by key), then run as --clustered-by does: output key by key, memory holding the input rather than every key's windows (pays for long frames with large per-key state); not with --checkpoints")
	fs.StringVar(&cfg.clusteredBy, "clustered-by", "", "batch mode: promise that the input comes key by key, clustered by the comma-separated `COLS` (sorted by them, say; the first OVER windows must partition by them, or the GROUP BY windows group by them), so that each key's rows (or windows) go out, and its state is freed, once the input moves on to another key rather than at its end; a key that comes back stops the run")
	cfg.wm.register(fs)
	fs.Var(durationFlag{&cfg.allowedLateness}, "allowed-lateness", "stream mode: apply late rows up to this `DURATION` behind the watermark instead of dropping them")
	fs.IntVar(&cfg.parallelism, "parallelism", 1, "number of window tasks, rows hash-partitioned by key (`N` >= 1)")
	fs.IntVar(&cfg.batchSize, "batch-size", source.DefaultBatchSize, "rows per batch read from the source (`N` >= 1); in stream mode the watermark advances between batches")
	fs.StringVar(&cfg.sinkPath, "sink", "-", "output `PATH`: .csv, .jsonl, .ndjson or .parquet (.csv.gz, .jsonl.zst: compressed text), a directory of Parquet files (out/ or 'out/*.parquet'), or a Kafka topic kafka://HOST:PORT/TOPIC?key=COLS; - is standard output")
	fs.StringVar(&cfg.format, "format", "", "`csv|jsonl`: the format of standard output (default csv)")
	fs.StringVar(&cfg.lateSink, "late-sink", "", "stream mode: write late rows that were dropped to `PATH` (.csv, .jsonl, ...); with --checkpoints a file gets each of them exactly once")
	cfg.logLevel = slog.LevelWarn
	fs.Var(logLevelFlag{&cfg.logLevel}, "log-level", "log the pipeline's messages at this `LEVEL` and above to standard error: debug, info, warn or error")
	addStateFlags(fs, &cfg.state)
	return fs
}

func printRunUsage(w io.Writer) {
	var cfg runConfig
	fs := newRunFlags(&cfg)
	fmt.Fprintf(w, "usage: volga %s\n\n", runSynopsis)
	fmt.Fprint(w, "Runs one SELECT of the Volga SQL dialect over the file bound to its FROM table\nand writes one output row per input row (OVER windows) or per window (GROUP BY).\n\nflags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nexamples:\n  volga run --sql spend.sql --source tx=tx.csv --mode stream --max-out-of-order 5s --sink features.jsonl\n")
	fmt.Fprint(w, "  volga run --sql spend.sql --source tx=tx.csv --sink features.csv --checkpoints file:///var/lib/volga/spend\n")
	fmt.Fprint(w, "\n"+checkpointHelp+`  The CSV, JSON-lines and Parquet outputs are then exactly-once: after any
  crash and restart they equal the output of a run without one. Standard
  output and Kafka get again what followed the checkpoint (at least once).
`)
}

// parseRunArgs parses the flags of volga run. Errors are usage errors.
func parseRunArgs(args []string) (*runConfig, error) {
	cfg := &runConfig{}
	fs := newRunFlags(cfg)
	if err := parseFlags("run", fs, args); err != nil {
		return nil, err
	}
	switch {
	case cfg.sqlFile == "":
		return nil, usagef("run: missing --sql FILE (see 'volga help run')")
	case len(cfg.sources) == 0:
		return nil, usagef("run: missing --source NAME=PATH for the query's table (see 'volga help run')")
	case cfg.parallelism < 1:
		return nil, usagef("run: --parallelism must be at least 1, got %d", cfg.parallelism)
	case cfg.batchSize < 1:
		return nil, usagef("run: --batch-size must be at least 1, got %d", cfg.batchSize)
	}
	if err := streamOnly("run", cfg.mode, fs, "max-out-of-order", "watermark-interval", "watermark-max-rows", "idle-timeout", "allowed-lateness", "late-sink"); err != nil {
		return nil, err
	}
	if err := cfg.wm.check("run", fs); err != nil {
		return nil, err
	}
	if err := cfg.timeOrder.check("run", cfg.mode); err != nil {
		return nil, err
	}
	if cfg.clusteredBy != "" && cfg.mode != volga.Batch {
		return nil, usagef("run: --clustered-by applies to --mode batch only")
	}
	if cfg.clusterInput != "" && cfg.mode != volga.Batch {
		return nil, usagef("run: --cluster-input applies to --mode batch only")
	}
	if cfg.clusterInput != "" && cfg.clusteredBy != "" {
		return nil, usagef("run: --cluster-input orders the input itself; --clustered-by promises it comes so: give one")
	}
	if cfg.format != "" {
		if cfg.sinkPath != "-" {
			return nil, usagef("run: --format applies to standard output only; the extension of --sink %s chooses its format", cfg.sinkPath)
		}
		if f := strings.ToLower(cfg.format); f != "csv" && f != "jsonl" {
			return nil, usagef("run: --format must be csv or jsonl, got %q", cfg.format)
		}
	}
	if err := checkSinkPath("run", "sink", cfg.sinkPath); err != nil {
		return nil, err
	}
	if err := checkSinkPath("run", "late-sink", cfg.lateSink); err != nil {
		return nil, err
	}
	if cfg.lateSink == "-" && cfg.sinkPath == "-" {
		return nil, usagef("run: --late-sink - and the output would both go to standard output; give --sink or --late-sink a file")
	}
	if err := cfg.state.check("run", fs); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkOutputs refuses an output file (flag -> path) that is also an
// input (flag -> path) or another output: an output replaces its file,
// so the input would be lost (or, appended to by a run with checkpoints
// while it is read, read wrong), and two outputs would overwrite each
// other's rows.
func checkOutputs(cmd string, inputs, outputs map[string]string) error {
	oflags := slices.Sorted(maps.Keys(outputs))
	for i, of := range oflags {
		out := outputs[of]
		for _, in := range slices.Sorted(maps.Keys(inputs)) {
			if sameFile(out, inputs[in]) {
				return usagef("%s: %s %s is the file of %s: the output would replace the input; write it elsewhere", cmd, of, out, in)
			}
		}
		for _, other := range oflags[i+1:] {
			if sameFile(out, outputs[other]) {
				return usagef("%s: %s and %s name the same file %s: each would overwrite the other's rows", cmd, of, other, out)
			}
		}
	}
	return nil
}

// sameFile tells whether the paths a and b name one file or directory
// (standard output and Kafka topics name none).
func sameFile(a, b string) bool {
	for _, p := range []string{a, b} {
		if p == "" || p == "-" || isKafka(p) {
			return false
		}
	}
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// checkSinkPath rejects an output path whose format cannot be told from
// its extension before anything runs; cmd and flag (without dashes) name
// the command and the flag in the message.
func checkSinkPath(cmd, flag, p string) error {
	if p == "" || p == "-" || isKafka(p) {
		return nil
	}
	if sink.IsParquetDir(p) {
		return nil // a directory of Parquet files (sink.NewParquetDir)
	}
	ext := strings.ToLower(textcodec.FormatExt(p))
	if c := textcodec.Of(p); c != nil {
		// Compressed text (sink.Open): out.csv.gz, out.jsonl.zst.
		switch ext {
		case ".csv", ".jsonl", ".ndjson":
			return nil
		default:
			return usagef("%s: --%s %s: only CSV and JSON-lines output is compressed (.csv%s, .jsonl%s); Parquet compresses inside", cmd, flag, p, c.Ext, c.Ext)
		}
	}
	switch ext {
	case ".csv", ".jsonl", ".ndjson", ".parquet":
		return nil
	}
	return usagef("%s: --%s %s: cannot tell the output format from its extension: use .csv, .jsonl, .ndjson or .parquet (.csv.gz, .jsonl.zst ... compressed), a directory ending in / for Parquet files per checkpoint, or a kafka:// URL", cmd, flag, p)
}

func runMain(ctx context.Context, e *env, args []string) int {
	cfg, err := parseRunArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printRunUsage(e.stdout)
		return exitOK
	}
	if err != nil {
		return e.fail(ctx, err)
	}
	if err := runPipeline(ctx, e, cfg); err != nil {
		return e.fail(ctx, err)
	}
	return exitOK
}

// runPipeline compiles the query, binds its table, runs it to the end and
// reports dead letters and late rows on standard error.
func runPipeline(ctx context.Context, e *env, cfg *runConfig) (err error) {
	queryName, query, err := readQuery(cfg.sqlFile, e.stdin)
	if err != nil {
		return err
	}
	plan, err := pipeline.ParseSQL(query)
	if err != nil {
		return queryError(queryName, err)
	}

	var bound *binding
	for i := range cfg.sources {
		b := &cfg.sources[i]
		if strings.EqualFold(b.name, plan.Table) {
			bound = b
		}
	}
	if bound == nil {
		return fmt.Errorf("%s: the query reads table %q, but no --source binds it (bound: %s); add --source %s=PATH",
			queryName, plan.Table, cfg.sources.String(), plan.Table)
	}
	for _, b := range cfg.sources {
		if b != *bound {
			return fmt.Errorf("--source %s=%s: the query reads only table %q", b.name, b.path, plan.Table)
		}
	}
	if err := checkOutputs("run", map[string]string{"--source " + bound.name: bound.path},
		map[string]string{"--sink": cfg.sinkPath, "--late-sink": cfg.lateSink}); err != nil {
		return err
	}

	// Dead letters arrive from the source's reading goroutine and from the
	// engine (rows without an event time), log lines from the engine;
	// stderr is shared, so lock.
	stderr := &syncWriter{w: e.stderr}
	var mu sync.Mutex
	var dead int64
	report := func(d source.DeadLetter) {
		mu.Lock()
		defer mu.Unlock()
		dead++
		where := d.Source
		if d.Offset > 0 {
			where += ":" + strconv.FormatInt(d.Offset, 10)
		}
		fmt.Fprintf(stderr, "volga: dead letter: %s: %s\n", where, oneLine(d.Reason))
	}

	fileOpts, err := cfg.timeOrder.options(queryName, plan)
	if err != nil {
		return err
	}
	src, err := openSource(bound.path, cfg.mode == volga.Batch, report, cfg.schema.schema, append(fileOpts, source.WithBatchSize(cfg.batchSize))...)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := src.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	var counted *countingSource
	total := int64(0)
	if e.progress && cfg.mode == volga.Batch {
		counted = &countingSource{Source: src}
		src, total = counted, estimateRows(bound.path)
		if cfg.state.bucketURL != "" {
			// A resumed run reads only what follows its checkpoint: count
			// the rows, without a share of the whole. Checkpoints need the
			// source's positions, which the counter must not hide.
			src, total = progressSource(counted), 0
		}
	}

	opts := []volga.Option{
		volga.WithSource(plan.Table, src),
		volga.WithMode(cfg.mode),
		volga.WithParallelism(cfg.parallelism),
		volga.WithDeadLetters(report),
		volga.WithLogger(newLogger(stderr, cfg.logLevel)),
	}
	opts = append(opts, cfg.state.options()...)
	if cfg.clusteredBy != "" {
		opts = append(opts, volga.WithClusteredBy(splitCols(cfg.clusteredBy)...))
	}
	if cfg.clusterInput != "" {
		opts = append(opts, volga.WithClusterInput(splitCols(cfg.clusterInput)...))
	}
	if cfg.mode == volga.Streaming {
		opts = append(opts, volga.WithMaxOutOfOrder(cfg.maxOutOfOrder), volga.WithAllowedLateness(cfg.allowedLateness))
		opts = append(opts, cfg.wm.options()...)
	}
	// Compile once without the outputs: they are created only once the
	// query compiled, so that a mistake in it leaves no empty file behind.
	if _, err := volga.FromPlan(plan, opts...); err != nil {
		return queryError(queryName, err)
	}
	// The pipeline gets the sink itself, not a wrapper, so that it sees
	// whether the sink takes part in checkpoints (sink.Committer).
	out, flush, err := openSink(cfg.sinkPath, cfg.format, e.stdout, cfg.mode == volga.Streaming)
	if err != nil {
		return err
	}
	if flush {
		out = &flushingSink{Sink: out}
	}
	opts = append(opts, volga.WithSink(out))
	var late sink.Sink
	if cfg.mode == volga.Streaming && cfg.lateSink != "" {
		late, _, err = openSink(cfg.lateSink, "", e.stdout, false)
		if err != nil {
			abandonSink(out) // leaves a file --sink names as it was
			return err
		}
		opts = append(opts, volga.WithLateSink(late))
	}
	p, err := volga.FromPlan(plan, opts...)
	if err != nil {
		abandonSink(out)
		if late != nil {
			abandonSink(late)
		}
		return queryError(queryName, err)
	}

	var bar *progress
	if counted != nil {
		bar = startProgress(stderr, "run", total, counted.rows.Load, e.progressEvery)
	}
	// SIGINT or SIGTERM (ctx done) stops a streaming run, or a run with
	// checkpoints, gracefully: reading stops, a final checkpoint is taken
	// when checkpoints are on (without them the rows read so far are all
	// emitted), the sinks are closed and the command exits 130, as any
	// interrupted command: the input was not read to its end. A second
	// signal kills the process (main restores the default handling). A
	// batch run without checkpoints is cancelled: its output would be
	// incomplete.
	graceful := cfg.mode == volga.Streaming || cfg.state.checkpoints != ""
	runCtx := ctx
	stopped := make(chan struct{})
	if graceful {
		runCtx = context.WithoutCancel(ctx)
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-ctx.Done():
				close(stopped)
				p.Stop()
			case <-finished:
			}
		}()
	}
	runErr := p.Run(runCtx)
	if bar != nil {
		bar.stop()
	}
	var stop error
	select {
	case <-stopped:
		if runErr == nil {
			msg := "stopped by a signal; every row read was emitted"
			if cfg.state.checkpoints != "" {
				msg = "stopped by a signal after a final checkpoint; run the same command again to resume"
			}
			stop = &stoppedError{msg: msg}
		}
	default:
	}
	st := p.Stats()
	if dead > 0 {
		fmt.Fprintf(e.stderr, "volga: %d dead letter%s skipped; %d rows read\n", dead, plural(dead), st.RowsIn)
	}
	if st.LateDropped > 0 {
		where := "raise --max-out-of-order or set --allowed-lateness to keep them"
		if cfg.lateSink != "" {
			where = "written to " + cfg.lateSink
		}
		fmt.Fprintf(e.stderr, "volga: %d late row%s not emitted (at or behind the watermark, the newest event time minus %s); %s\n",
			st.LateDropped, plural(st.LateDropped), cfg.maxOutOfOrder, where)
	}
	if stop != nil {
		return stop
	}
	return runErr
}

// stoppedError is a run a signal stopped gracefully before its input
// ended: its message is printed and the command exits 130.
type stoppedError struct{ msg string }

func (s *stoppedError) Error() string { return s.msg }

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// readQuery reads the query file; "-" is standard input.
func readQuery(path string, stdin io.Reader) (name, query string, err error) {
	var b []byte
	if path == "-" {
		name = "stdin"
		b, err = io.ReadAll(stdin)
	} else {
		name = path
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return name, "", fmt.Errorf("reading the query: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return name, "", fmt.Errorf("%s: the query is empty", name)
	}
	return name, string(b), nil
}

// queryError renders a query error compiler-style, FILE:LINE:COL: message,
// when it has a position.
func queryError(file string, err error) error {
	var se *pipeline.SQLError
	if !errors.As(err, &se) {
		if m := err.Error(); cliSchemaHint(m) != m {
			return &rewordedError{msg: file + ": " + cliSchemaHint(m), err: err}
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	msg := cliSchemaHint(se.Msg)
	if se.Near != "" {
		msg += fmt.Sprintf(" (near %q)", se.Near)
	} else if se.Line > 0 {
		msg += " (at the end of the query)"
	}
	if se.Line > 0 {
		return fmt.Errorf("%s:%d:%d: %s", file, se.Line, se.Column, msg)
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// rewordedError is an error whose message the command line words in its
// own terms; it wraps the original.
type rewordedError struct {
	msg string
	err error
}

func (r *rewordedError) Error() string { return r.msg }
func (r *rewordedError) Unwrap() error { return r.err }

// openSink opens the output: a file whose extension gives the format, or
// standard output ("-") as CSV or JSON lines. flushEach asks for output to
// standard output to be flushed after every batch, so that a stream shows
// its rows as they are emitted.
func openSink(path, format string, stdout io.Writer, flushEach bool) (sink.Sink, bool, error) {
	if path != "-" && path != "" {
		s, err := openOutput(path)
		return s, false, err
	}
	if strings.EqualFold(format, "jsonl") {
		return sink.NewJSONL(stdout), flushEach, nil
	}
	return sink.NewCSV(stdout), flushEach, nil
}

// abandonSink ends an output the run will not write: a file sink leaves
// its file as it was (sink.Abandoner), where Close would publish an empty
// one.
func abandonSink(s sink.Sink) error {
	if a, ok := s.(sink.Abandoner); ok {
		return a.Abandon()
	}
	return s.Close()
}

// flushingSink flushes standard output after every batch, so that a
// stream shows its rows as they are emitted.
type flushingSink struct{ sink.Sink }

// Write forwards rec and flushes.
func (f *flushingSink) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := f.Sink.Write(ctx, rec); err != nil {
		return err
	}
	if fl, ok := f.Sink.(interface{ Flush() error }); ok {
		return fl.Flush()
	}
	return nil
}

// splitCols splits a comma-separated list of column names.
func splitCols(list string) []string {
	cols := strings.Split(list, ",")
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	return cols
}
