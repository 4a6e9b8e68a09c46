package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/request"
)

const serveSynopsis = "serve --sql FILE --source NAME=PATH [--schema COL:TYPE,...] [--listen ADDR] [--mode batch|stream] [--time-order DURATION] [--max-out-of-order DURATION] [--watermark-interval DURATION [--watermark-max-rows N]] [--idle-timeout DURATION] [--parallelism N] [--lookup-retention DURATION] [--max-body BYTES] [--checkpoints URL [--checkpoint-interval DURATION]] [--state-dir DIR] [--memory-budget BYTES] [--row-pages ROWS] [--log-level LEVEL]"

var serveCommand = &command{
	name:    "serve",
	summary: "ingest a file with one SQL pipeline and serve point-in-time lookups over HTTP",
	usage:   serveSynopsis,
	run: func(ctx context.Context, e *env, args []string) int {
		return serveMain(ctx, e, args, nil)
	},
}

// shutdownTimeout bounds how long serve waits for requests in flight
// after SIGINT or SIGTERM.
const shutdownTimeout = 10 * time.Second

// serverTimeouts bound how long the lookup server of serve and group
// waits on a client, so that clients that stall (sending a body a byte at
// a time, never reading the answer, keeping a connection open idle) do
// not hold connections and goroutines for ever: the request's headers
// (readHeader), the whole request (read), the answer from the end of the
// headers (write: a lookup, or a batch of them, takes far less) and an
// idle keep-alive connection (idle). Tests shorten them.
var serverTimeouts = struct{ readHeader, read, write, idle time.Duration }{
	readHeader: 10 * time.Second,
	read:       time.Minute,
	write:      2 * time.Minute,
	idle:       2 * time.Minute,
}

type serveConfig struct {
	sqlFile       string
	sources       bindings
	listen        string
	mode          volga.Mode
	maxOutOfOrder time.Duration
	timeOrder     timeOrder
	wm            watermarkFlags
	parallelism   int
	maxBody       int64
	retention     time.Duration
	logLevel      slog.Level
	state         stateConfig
	schema        schemaFlag
}

func newServeFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.sqlFile, "sql", "", "`FILE` holding the query (- reads standard input)")
	fs.Var(&cfg.sources, "source", "bind the query's table `NAME=PATH` to a .csv, .jsonl, .ndjson, .json or .parquet file (CSV and JSON lines may be compressed: .csv.gz, .jsonl.zst), a directory or a glob pattern ('events/*.csv') of such files read in name order, the same in object storage (s3://BUCKET/events/*.parquet?region=R), or a Kafka topic kafka://HOST:PORT/TOPIC?group=G&time_field=ts (format=avro&schema_registry=URL for Avro)")
	fs.Var(&cfg.schema, "schema", schemaUsage)
	fs.StringVar(&cfg.listen, "listen", "localhost:8080", "`ADDR`ess to serve HTTP on, host:port (port 0 picks a free one)")
	fs.Var(modeFlag{&cfg.mode}, "mode", "`batch|stream`: how the file is ingested; batch accepts any order, stream drops rows more than --max-out-of-order late (default batch)")
	fs.Var(durationFlag{&cfg.maxOutOfOrder}, "max-out-of-order", "stream mode: how far behind the newest event time a row may arrive and still be on time (`DURATION`)")
	cfg.timeOrder.register(fs)
	cfg.wm.register(fs)
	fs.IntVar(&cfg.parallelism, "parallelism", 1, "number of window tasks, rows hash-partitioned by key (`N` >= 1)")
	fs.Int64Var(&cfg.maxBody, "max-body", request.DefaultMaxBodyBytes, "largest request body accepted, in `BYTES`")
	fs.Var(durationFlag{&cfg.retention}, "lookup-retention", "answer lookups at times down to `DURATION` before the newest event (default: each key's newest event on, the watermark for a key quiet for longer than the longest frame); memory grows with it")
	cfg.logLevel = slog.LevelWarn
	fs.Var(logLevelFlag{&cfg.logLevel}, "log-level", "log at this `LEVEL` and above to standard error: debug, info, warn or error")
	addStateFlags(fs, &cfg.state)
	return fs
}

func printServeUsage(w io.Writer) {
	var cfg serveConfig
	printCommandUsage(w, serveSynopsis,
		"Ingests the file bound to the query's table to its end, then serves the query's\nwindowed features as of any time over HTTP: POST /v1/features with\n{\"key\": {...}, \"at\": \"RFC 3339 time\"}, GET /healthz, GET /readyz, and Prometheus\nmetrics on GET /metrics. It listens from the start; lookups and /readyz\nanswer 503 until the file is read. A Kafka topic in stream mode, which\nnever ends, is served as it is read. SIGINT or SIGTERM stops the server\ngracefully (exit status 0).",
		newServeFlags(&cfg), "volga serve --sql spend.sql --source tx=tx.csv --listen :8080")
	fmt.Fprint(w, "\n"+checkpointHelp+"  Restarted after ingesting its input, serve restores the state from the\n  final checkpoint instead of reading the input again.\n")
}

func parseServeArgs(args []string) (*serveConfig, error) {
	cfg := &serveConfig{}
	fs := newServeFlags(cfg)
	if err := parseFlags("serve", fs, args); err != nil {
		return nil, err
	}
	if err := required("serve", "--sql FILE", cfg.sqlFile, "--source NAME=PATH for the query's table", cfg.sources.String(), "--listen ADDR", cfg.listen); err != nil {
		return nil, err
	}
	switch {
	case cfg.parallelism < 1:
		return nil, usagef("serve: --parallelism must be at least 1, got %d", cfg.parallelism)
	case cfg.maxBody < 1:
		return nil, usagef("serve: --max-body must be at least 1, got %d", cfg.maxBody)
	}
	if err := streamOnly("serve", cfg.mode, fs, "max-out-of-order", "watermark-interval", "watermark-max-rows", "idle-timeout"); err != nil {
		return nil, err
	}
	if err := cfg.wm.check("serve", fs); err != nil {
		return nil, err
	}
	if err := cfg.timeOrder.check("serve", cfg.mode); err != nil {
		return nil, err
	}
	if err := cfg.state.check("serve", fs); err != nil {
		return nil, err
	}
	return cfg, nil
}

// serveMain is volga serve. ready, when not nil, is called with the
// listening address once the input is ingested and the server accepts
// lookups (tests listen on port 0 and read the port back).
func serveMain(ctx context.Context, e *env, args []string, ready func(addr string)) int {
	cfg, err := parseServeArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printServeUsage(e.stdout)
		return exitOK
	}
	if err == nil {
		err = serve(ctx, e, cfg, ready)
	}
	if err != nil {
		return e.fail(ctx, err)
	}
	return exitOK
}

func serve(ctx context.Context, e *env, cfg *serveConfig, ready func(string)) error {
	q, err := loadQuery("serve", cfg.sqlFile, cfg.sources, e.stdin)
	if err != nil {
		return err
	}
	logger := newLogger(e.stderr, cfg.logLevel)
	reg := newRegistry()
	dead := &deadLetters{e: e}
	fileOpts, err := cfg.timeOrder.options(q.name, q.plan)
	if err != nil {
		return err
	}
	src, err := openSource(q.table.path, cfg.mode == volga.Batch, dead.report, cfg.schema.schema, fileOpts...)
	if err != nil {
		return err
	}
	defer src.Close()
	opts := []volga.Option{
		volga.WithSource(q.plan.Table, src),
		volga.WithMode(cfg.mode),
		volga.WithParallelism(cfg.parallelism),
		volga.WithDeadLetters(dead.report),
		volga.WithLookupRetention(cfg.retention),
		volga.WithLogger(logger),
		volga.WithMetrics(reg),
	}
	opts = append(opts, cfg.state.options()...)
	if cfg.mode == volga.Streaming {
		opts = append(opts, volga.WithMaxOutOfOrder(cfg.maxOutOfOrder))
		opts = append(opts, cfg.wm.options()...)
	}
	p, err := volga.FromPlan(q.plan, opts...)
	if err != nil {
		return queryError(q.name, err)
	}
	if err := p.CanLookup(); err != nil {
		return fmt.Errorf("%s: %w", q.name, err)
	}
	// Listen before ingesting, so that a bad or busy address fails fast.
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer ln.Close()

	if cfg.mode == volga.Streaming && unboundedSource(q.table.path) {
		return serveWhileRunning(ctx, e, cfg, q.table.path, p, ln, reg, logger, dead, ready)
	}
	return serveAfterIngest(ctx, e, cfg, q.table.path, p, ln, reg, logger, dead, ready)
}

// serveAfterIngest is serve over a bounded input: the server starts at
// once, so that /healthz and /metrics (the ingest's progress) answer
// while the input is read, but lookups and /readyz answer 503 until it
// is read to its end; from then on lookups answer as of all of it.
func serveAfterIngest(ctx context.Context, e *env, cfg *serveConfig, path string, p *volga.Pipeline, ln net.Listener, reg *prometheus.Registry, logger *slog.Logger, dead *deadLetters, ready func(string)) error {
	gate := &ingestGate{path: path, p: p}
	srv, err := newLookupServer(reg, logger, cfg.maxBody, gate.handler(p.Service()), gate.ready)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	fmt.Fprintf(e.stderr, "volga: ingesting %s, listening on %s (lookups answer 503 until it is read)\n", redactURL(path), addr)
	if err := p.Run(ctx); err != nil {
		_ = srv.Close()
		return err
	}
	gate.open.Store(true)
	st := ingestSummary(e, cfg, p, dead)
	fmt.Fprintf(e.stderr, "volga: ingested %d rows, serving on %s\n", st.RowsIn, addr)
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if err := shutdown(srv); err != nil {
		return fmt.Errorf("serve: shutting down: %w", err)
	}
	fmt.Fprintln(e.stderr, "volga: server stopped")
	return nil
}

// ingestGate holds lookups back while serve ingests a bounded input: a
// batch run answers from its start, but only as of the rows read so far.
type ingestGate struct {
	path string
	p    *volga.Pipeline
	open atomic.Bool
}

// ready is /readyz's check: nil once the input is read.
func (g *ingestGate) ready() error {
	if g.open.Load() {
		return nil
	}
	return fmt.Errorf("ingesting %s: %d rows read so far; lookups are answered once it is read to its end", redactURL(g.path), g.p.Stats().RowsIn)
}

// handler returns the lookup handler's constructor for svc gated by g:
// a lookup while g is shut is request.ErrUnavailable (503, counted in
// the request metrics like any other answer).
func (g *ingestGate) handler(svc request.Service) func(...request.HandlerOption) http.Handler {
	gated := gatedService{svc, g}
	return func(opts ...request.HandlerOption) http.Handler { return request.NewHandler(gated, opts...) }
}

// gatedService is a request.Service answering only once its gate opened.
type gatedService struct {
	request.Service
	gate *ingestGate
}

func (s gatedService) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (request.Features, error) {
	if err := s.gate.ready(); err != nil {
		return request.Features{}, request.Unavailable(err)
	}
	return s.Service.Lookup(ctx, key, at, row)
}

// unboundedSource reports whether path names a source that never ends:
// a Kafka topic read in stream mode without stop_at_end=true.
func unboundedSource(path string) bool {
	if !isKafka(path) {
		return false
	}
	kc, err := kafkaSourceConfig(path, false)
	return err == nil && !kc.StopAtEnd
}

// serveWhileRunning is serve over a source that never ends (a Kafka topic
// in stream mode), which it cannot ingest to its end before serving:
// the server starts at once and answers from the live state as the
// pipeline reads (503 until the pipeline has started; each answer's
// watermark says up to when it is complete). SIGINT or SIGTERM (ctx)
// stops the pipeline gracefully (a final checkpoint with --checkpoints),
// then the server, with exit status 0.
func serveWhileRunning(ctx context.Context, e *env, cfg *serveConfig, path string, p *volga.Pipeline, ln net.Listener, reg *prometheus.Registry, logger *slog.Logger, dead *deadLetters, ready func(string)) error {
	srv, err := newLookupServer(reg, logger, cfg.maxBody, p.Handler, p.Ready)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(context.WithoutCancel(ctx)) }()
	addr := ln.Addr().String()
	fmt.Fprintf(e.stderr, "volga: reading %s until stopped, serving on %s\n", redactURL(path), addr)
	if ready != nil {
		ready(addr)
	}
	var runErr, serveErr error
wait:
	for {
		select {
		case runErr = <-ran:
			if runErr != nil {
				break wait
			}
			ran = nil // the source ended after all: serve what was read
		case serveErr = <-served:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	if ran != nil && runErr == nil {
		p.Stop()
		runErr = <-ran
	}
	shutErr := shutdown(srv)
	ingestSummary(e, cfg, p, dead)
	switch {
	case serveErr != nil:
		return fmt.Errorf("serve: %w", serveErr)
	case runErr != nil:
		return runErr
	case shutErr != nil:
		return fmt.Errorf("serve: shutting down: %w", shutErr)
	}
	fmt.Fprintln(e.stderr, "volga: server stopped")
	return nil
}

// ingestSummary prints the dead letters' summary and the late rows not
// ingested, and returns the pipeline's counts.
func ingestSummary(e *env, cfg *serveConfig, p *volga.Pipeline, dead *deadLetters) pipeline.StatsSnapshot {
	dead.summary()
	st := p.Stats()
	if st.LateDropped > 0 {
		fmt.Fprintf(e.stderr, "volga: %d late row%s not ingested (more than --max-out-of-order %s behind the newest event time)\n",
			st.LateDropped, plural(st.LateDropped), cfg.maxOutOfOrder)
	}
	return st
}

// newRegistry returns a metrics registry of the command's own, holding
// the Go and process collectors; the pipelines' and the HTTP handler's
// metrics join it.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// readyPath is where serve answers its readiness probe.
const readyPath = "/readyz"

// newLookupServer returns the HTTP server of serve and group: the lookup
// handler made by handler (bodies up to maxBody bytes, logging to logger,
// its request metrics on reg) on /, reg's metrics on GET /metrics and,
// when ready is not nil, GET /readyz: 200 when ready gives nil, 503 with
// its error otherwise.
func newLookupServer(reg *prometheus.Registry, logger *slog.Logger, maxBody int64, handler func(...request.HandlerOption) http.Handler, ready func() error) (*http.Server, error) {
	hm, err := request.NewMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"pipeline": volga.DefaultName}, reg))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", handler(request.WithMaxBodyBytes(maxBody), request.WithLogger(logger), request.WithMetrics(hm)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}))
	// Other methods on /metrics and /readyz are 405, not the lookup
	// handler's 404 (the more specific pattern wins over "/").
	getOnly := func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, fmt.Sprintf("method %s not allowed on %s; use GET", r.Method, r.URL.Path), http.StatusMethodNotAllowed)
	}
	mux.HandleFunc("/metrics", getOnly)
	if ready != nil {
		mux.HandleFunc(readyPath, getOnly)
		mux.HandleFunc("GET "+readyPath, func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if err := ready(); err != nil {
				rw.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(rw, "not ready: %v\n", err)
				return
			}
			io.WriteString(rw, "ok\n")
		})
	}
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: serverTimeouts.readHeader,
		ReadTimeout:       serverTimeouts.read,
		WriteTimeout:      serverTimeouts.write,
		IdleTimeout:       serverTimeouts.idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}, nil
}

// shutdown stops srv, letting requests in flight finish for at most
// shutdownTimeout.
func shutdown(srv *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		// Requests still running past the timeout: close their
		// connections rather than leave them open.
		_ = srv.Close()
		return err
	}
	return nil
}
