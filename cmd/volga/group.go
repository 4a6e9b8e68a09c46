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
	"path/filepath"
	"regexp"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
	"github.com/volga-go/volga/sink"
)

const groupSynopsis = "group --sql FILE --source NAME=kafka://HOST:PORT/TOPIC?group=G&time_field=ts [--schema COL:TYPE,...] --checkpoints URL [--sink PATH] [--listen ADDR [--advertise URL]] [--key-encoding json|raw] [--balancer murmur2|hash] [--max-out-of-order DURATION] [--allowed-lateness DURATION] [--late-sink PATH] [--watermark-interval DURATION [--watermark-max-rows N]] [--idle-timeout DURATION] [--parallelism N] [--lookup-retention DURATION] [--max-body BYTES] [--checkpoint-interval DURATION] [--state-dir DIR] [--memory-budget BYTES] [--row-pages ROWS] [--log-level LEVEL]"

var groupCommand = &command{
	name:    "group",
	summary: "run one SQL pipeline as a member of a Kafka consumer group, partitions handed over through checkpoints",
	usage:   groupSynopsis,
	run: func(ctx context.Context, e *env, args []string) int {
		return groupMain(ctx, e, args, nil)
	},
}

// partitionPlaceholder is replaced by the partition number (0003) in the
// --sink path of volga group.
const partitionPlaceholder = "{partition}"

type groupConfig struct {
	sqlFile       string
	sources       bindings
	sink          string
	lateSink      string
	listen        string
	advertise     string
	keyEncoding   string
	balancer      string
	maxOutOfOrder time.Duration
	lateness      time.Duration
	wm            watermarkFlags
	parallelism   int
	retention     time.Duration
	maxBody       int64
	logLevel      slog.Level
	state         stateConfig
	schema        schemaFlag
}

func newGroupFlags(cfg *groupConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("group", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.sqlFile, "sql", "", "`FILE` holding the query (- reads standard input)")
	fs.Var(&cfg.sources, "source", "bind the query's table `NAME=URL` to a Kafka topic read as a consumer group's member: kafka://HOST:PORT/TOPIC?group=G&time_field=ts")
	fs.Var(&cfg.schema, "schema", schemaUsage)
	fs.StringVar(&cfg.sink, "sink", "", "write each partition's output to `PATH`, in which "+partitionPlaceholder+" stands for the partition (out/part-{partition}.csv: .csv, .jsonl, .ndjson or .parquet, exactly-once with the checkpoints), or to a Kafka topic kafka://HOST:PORT/TOPIC?key=COLS")
	fs.StringVar(&cfg.listen, "listen", "", "serve lookups of the partitions this member owns, and Prometheus metrics, over HTTP on `ADDR`ess host:port (port 0 picks a free one)")
	fs.StringVar(&cfg.advertise, "advertise", "", "the `URL` other members name to clients asking this one for a key it does not own (default http:// and the --listen address)")
	cfg.keyEncoding = "json"
	fs.StringVar(&cfg.keyEncoding, "key-encoding", cfg.keyEncoding, "how the producers encode the PARTITION BY key into message keys, so that lookups find its partition: `json|raw` (json: \"alice\", [\"alice\",42] for several columns; raw: alice, 42)")
	cfg.balancer = "murmur2"
	fs.StringVar(&cfg.balancer, "balancer", cfg.balancer, "how the producers choose a message's partition from its key: `murmur2|hash` (murmur2: the Java client's default; hash: FNV-1a, Sarama's)")
	fs.Var(durationFlag{&cfg.maxOutOfOrder}, "max-out-of-order", "how far behind the newest event time of its partition a row may arrive and still be on time (`DURATION`)")
	fs.Var(durationFlag{&cfg.lateness}, "allowed-lateness", "apply late rows up to this `DURATION` behind the watermark instead of dropping them")
	fs.StringVar(&cfg.lateSink, "late-sink", "", "write each partition's late rows that were dropped to `PATH`, in which "+partitionPlaceholder+" stands for the partition, exactly-once with the checkpoints")
	cfg.wm.register(fs)
	fs.IntVar(&cfg.parallelism, "parallelism", 1, "number of window tasks of each partition's pipeline (`N` >= 1)")
	fs.Var(durationFlag{&cfg.retention}, "lookup-retention", "answer lookups at times down to `DURATION` before the newest event of the key's partition")
	fs.Int64Var(&cfg.maxBody, "max-body", request.DefaultMaxBodyBytes, "largest request body accepted, in `BYTES`")
	cfg.logLevel = slog.LevelWarn
	fs.Var(logLevelFlag{&cfg.logLevel}, "log-level", "log at this `LEVEL` and above to standard error: debug, info, warn or error")
	addStateFlags(fs, &cfg.state)
	return fs
}

func printGroupUsage(w io.Writer) {
	var cfg groupConfig
	printCommandUsage(w, groupSynopsis,
		"Joins the Kafka consumer group named by the source URL's group parameter and runs\nthe query in stream mode over each partition the group assigns to this process,\nits state checkpointed under the partition's prefix (p0003/) of the --checkpoints\nbucket, which every member must share. On a rebalance every member stops its\npartitions with a final checkpoint before the group hands them over; the new\nowner restores the state and reads on from the checkpointed offset. A member\nthe group dropped while it ran (paused past its session timeout) writes no\ncheckpoint and publishes no output once the group went on, then rejoins.\nProducers must key messages by the query's PARTITION BY columns. With\n--listen, POST /v1/features answers for the keys of the partitions this member\nowns and names the owner of the others (421 Misdirected Request,\nX-Volga-Owner); GET /metrics has a pipeline per partition (volga-p0003).\nSIGINT or SIGTERM stops the member with final checkpoints (exit status 0).",
		newGroupFlags(&cfg), "volga group --sql spend.sql --source tx='kafka://broker:9092/tx?group=features&time_field=ts' \\\n      --checkpoints s3://ckpt/features --sink /shared/out/part-{partition}.csv --listen :8080 --advertise http://10.0.0.7:8080")
}

func parseGroupArgs(args []string) (*groupConfig, error) {
	cfg := &groupConfig{}
	fs := newGroupFlags(cfg)
	if err := parseFlags("group", fs, args); err != nil {
		return nil, err
	}
	if err := required("group", "--sql FILE", cfg.sqlFile, "--source NAME=URL for the query's table", cfg.sources.String(), "--checkpoints URL (the members hand partitions over through it)", cfg.state.checkpoints); err != nil {
		return nil, err
	}
	switch {
	case cfg.sink == "" && cfg.listen == "":
		return nil, usagef("group: give --sink PATH, --listen ADDR or both: without them the features go nowhere")
	case cfg.sink != "" && !isKafka(cfg.sink) && !strings.Contains(cfg.sink, partitionPlaceholder):
		return nil, usagef("group: --sink %s: a file path needs %s, replaced by each partition's number, so that partitions write files of their own", cfg.sink, partitionPlaceholder)
	case cfg.lateSink != "" && (isKafka(cfg.lateSink) || !strings.Contains(cfg.lateSink, partitionPlaceholder)):
		return nil, usagef("group: --late-sink %s: want a file path with %s, replaced by each partition's number", cfg.lateSink, partitionPlaceholder)
	case cfg.advertise != "" && cfg.listen == "":
		return nil, usagef("group: --advertise applies with --listen only")
	case cfg.keyEncoding != "json" && cfg.keyEncoding != "raw":
		return nil, usagef("group: --key-encoding must be json or raw, got %q", cfg.keyEncoding)
	case cfg.balancer != "murmur2" && cfg.balancer != "hash":
		return nil, usagef("group: --balancer must be murmur2 or hash, got %q", cfg.balancer)
	case cfg.parallelism < 1:
		return nil, usagef("group: --parallelism must be at least 1, got %d", cfg.parallelism)
	case cfg.maxBody < 1:
		return nil, usagef("group: --max-body must be at least 1, got %d", cfg.maxBody)
	}
	// Refuse an extension no sink takes now rather than when the group
	// assigns the first partition.
	for _, f := range []struct{ name, path string }{{"sink", cfg.sink}, {"late-sink", cfg.lateSink}} {
		if err := checkSinkPath("group", f.name, f.path); err != nil {
			return nil, err
		}
	}
	if err := cfg.wm.check("group", fs); err != nil {
		return nil, err
	}
	for _, b := range cfg.sources {
		if !isKafka(b.path) {
			return nil, usagef("group: --source %s=%s: want a Kafka topic, kafka://HOST:PORT/TOPIC?group=G&time_field=ts", b.name, redactURL(b.path))
		}
	}
	// A member's --state-dir holds a state store per partition (p0003),
	// each emptied when its partition starts: volga run's check (the
	// directory is a store, or empty) would refuse it once a member ran.
	stateDir := cfg.state.stateDir
	cfg.state.stateDir = ""
	err := cfg.state.check("group", fs)
	cfg.state.stateDir = stateDir
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		if err := checkGroupStateDir(stateDir); err != nil {
			return nil, usagef("group: --state-dir %s: %v", stateDir, err)
		}
	}
	return cfg, nil
}

// partitionDir matches the name of a partition's state directory under
// a member's --state-dir.
var partitionDir = regexp.MustCompile(`^p[0-9]{4,}$`)

// checkGroupStateDir refuses a --state-dir that holds anything but the
// partitions' state stores (pNNNN, each a store or empty): a member
// empties those, so a mistyped directory must not be one of other files.
func checkGroupStateDir(dir string) error {
	entries, err := readStateDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || !partitionDir.MatchString(e.Name()) {
			return fmt.Errorf("holds %s, not a partition's state store (p0003); a member empties those, so name a new or empty directory, or one a member ran with", e.Name())
		}
		if err := checkStateDir(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("%s: %v", e.Name(), err)
		}
	}
	return nil
}

// groupMain is volga group. ready, when not nil, is called with the
// listening address (empty without --listen) once the server accepts
// requests and the member is joining the group (tests listen on port 0
// and read the port back).
func groupMain(ctx context.Context, e *env, args []string, ready func(addr string)) int {
	cfg, err := parseGroupArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printGroupUsage(e.stdout)
		return exitOK
	}
	if err == nil {
		err = runGroup(ctx, e, cfg, ready)
	}
	if err != nil {
		return e.fail(ctx, err)
	}
	return exitOK
}

func runGroup(ctx context.Context, e *env, cfg *groupConfig, ready func(string)) error {
	q, err := loadQuery("group", cfg.sqlFile, cfg.sources, e.stdin)
	if err != nil {
		return err
	}
	src, err := kafkaSourceConfig(q.table.path, false)
	if err != nil {
		return err
	}
	src.Schema = cfg.schema.schema
	if src.GroupID == "" {
		return usagef("group: --source %s=%s: the URL needs ?group=G, the consumer group this process joins", q.table.name, redactURL(q.table.path))
	}
	if src.StopAtEnd {
		return usagef("group: --source %s=%s: stop_at_end does not apply: a member runs until stopped", q.table.name, redactURL(q.table.path))
	}
	logger := newLogger(e.stderr, cfg.logLevel)
	dead := &deadLetters{e: e}
	src.DeadLetter = dead.report
	gc := volga.GroupConfig{
		Source:             src,
		CheckpointURL:      cfg.state.bucketURL,
		CheckpointInterval: cfg.state.interval,
		StateDir:           cfg.state.stateDir,
		KeyEncoder:         volga.JSONKey,
		Balancer:           &kafkago.Murmur2Balancer{},
	}
	if cfg.keyEncoding == "raw" {
		gc.KeyEncoder = volga.RawKey
	}
	if cfg.balancer == "hash" {
		gc.Balancer = &kafkago.Hash{}
	}
	if cfg.sink != "" {
		gc.Sink = func(p int) (sink.Sink, error) { return openOutput(partitionPath(cfg.sink, p)) }
	}
	if cfg.lateSink != "" {
		gc.LateSink = func(p int) (sink.Sink, error) { return sink.Open(partitionPath(cfg.lateSink, p)) }
	}
	reg := newRegistry()
	var ln net.Listener
	if cfg.listen != "" {
		// Listen before joining, so that a bad or busy address fails
		// fast and the advertised address is known.
		if ln, err = net.Listen("tcp", cfg.listen); err != nil {
			return fmt.Errorf("group: %w", err)
		}
		defer ln.Close()
		gc.Advertise = cfg.advertise
		if gc.Advertise == "" {
			gc.Advertise = "http://" + ln.Addr().String()
		}
	}
	opts := []volga.Option{
		volga.WithMaxOutOfOrder(cfg.maxOutOfOrder),
		volga.WithAllowedLateness(cfg.lateness),
		volga.WithParallelism(cfg.parallelism),
		volga.WithLookupRetention(cfg.retention),
		volga.WithDeadLetters(dead.report),
		volga.WithLogger(logger),
		volga.WithMetrics(reg),
	}
	opts = append(opts, cfg.wm.options()...)
	if cfg.state.memoryBudget > 0 {
		opts = append(opts, volga.WithMemoryBudget(cfg.state.memoryBudget))
	}
	if cfg.state.rowPages > 0 {
		opts = append(opts, volga.WithRowPaging(cfg.state.rowPages))
	}
	g, err := volga.NewGroup(q.text, gc, opts...)
	if err != nil {
		if strings.HasPrefix(err.Error(), "source/kafka:") {
			return err // the topic's fault (it names it), not the query's
		}
		return queryError(q.name, err)
	}

	var srv *http.Server
	served := make(chan error, 1)
	addr := ""
	if ln != nil {
		if srv, err = newLookupServer(reg, logger, cfg.maxBody, g.Handler, nil); err != nil {
			return fmt.Errorf("group: %w", err)
		}
		addr = ln.Addr().String()
		go func() { served <- srv.Serve(ln) }()
	}

	// SIGINT or SIGTERM (ctx) stops the member gracefully: Run, on a
	// context of its own, writes the final checkpoints before it returns.
	ran := make(chan error, 1)
	go func() { ran <- g.Run(context.Background()) }()
	fmt.Fprintf(e.stderr, "volga: joining consumer group %q of topic %s (%d partitions)", src.GroupID, src.Topic, g.Partitions())
	if addr != "" {
		fmt.Fprintf(e.stderr, ", serving on %s as %s", addr, gc.Advertise)
	}
	fmt.Fprintln(e.stderr)
	if ready != nil {
		ready(addr)
	}
	var runErr error
	select {
	case runErr = <-ran:
	case err := <-served:
		g.Stop()
		<-ran
		return fmt.Errorf("group: %w", err)
	case <-ctx.Done():
		g.Stop()
		runErr = <-ran
	}
	if srv != nil {
		if err := shutdown(srv); err != nil && runErr == nil {
			runErr = fmt.Errorf("group: shutting down: %w", err)
		}
	}
	dead.summary()
	if runErr != nil {
		return runErr
	}
	fmt.Fprintln(e.stderr, "volga: left the consumer group")
	return nil
}

// partitionPath returns path with partitionPlaceholder replaced by the
// four-digit number of partition p.
func partitionPath(path string, p int) string {
	return strings.ReplaceAll(path, partitionPlaceholder, fmt.Sprintf("%04d", p))
}
