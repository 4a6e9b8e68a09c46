package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/source"
)

const backfillSynopsis = "backfill --sql FILE --source NAME=PATH [--schema COL:TYPE,...] --spine PATH [--sink PATH | --format csv|jsonl] [--strict] [--time-order DURATION] [--parallelism N]"

var backfillCommand = &command{
	name:    "backfill",
	summary: "compute point-in-time training data: the features of each spine row as of its time",
	usage:   backfillSynopsis,
	run:     backfillMain,
}

type backfillConfig struct {
	sqlFile     string
	sources     bindings
	spine       string
	sinkPath    string
	format      string
	strict      bool
	timeOrder   timeOrder
	parallelism int
	schema      schemaFlag
}

func newBackfillFlags(cfg *backfillConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.sqlFile, "sql", "", "`FILE` holding the query (- reads standard input)")
	fs.Var(&cfg.sources, "source", "bind the query's table `NAME=PATH` to the events: a .csv, .jsonl, .ndjson, .json or .parquet file (CSV and JSON lines may be compressed: .csv.gz, .jsonl.zst), a directory or a glob pattern ('events/*.csv') of such files read in name order, the same in object storage (s3://BUCKET/events/*.parquet?region=R), or a Kafka topic kafka://HOST:PORT/TOPIC?group=G&time_field=ts (format=avro&schema_registry=URL for Avro)")
	fs.Var(&cfg.schema, "schema", schemaUsage+" (the events; the spine's types are inferred)")
	fs.StringVar(&cfg.spine, "spine", "", "`PATH` of the spine: the key columns and the time column of the query, plus labels passed through")
	fs.StringVar(&cfg.sinkPath, "sink", "-", "output `PATH`: .csv, .jsonl, .ndjson or .parquet (.csv.gz, .jsonl.zst: compressed text), a directory of Parquet files (out/ or 'out/*.parquet'), or a Kafka topic kafka://HOST:PORT/TOPIC?key=COLS; - is standard output")
	fs.StringVar(&cfg.format, "format", "", "`csv|jsonl`: the format of standard output (default csv)")
	fs.BoolVar(&cfg.strict, "strict", false, "count only events strictly before each spine row's time (ts < t), not those at it")
	cfg.timeOrder.registerUsage(fs, "CSV or JSON-lines events and spine: promise that in each file every row is at most `DURATION` behind the newest time before it (0s: sorted), so that events and spine are read side by side and training rows go out as they are read, in memory bounded by the windows rather than by the events; a row later than that stops the backfill (Parquet files need no promise: their statistics bound the times to come)")
	fs.IntVar(&cfg.parallelism, "parallelism", 1, "number of window tasks, rows hash-partitioned by key (`N` >= 1)")
	return fs
}

func printBackfillUsage(w io.Writer) {
	var cfg backfillConfig
	printCommandUsage(w, backfillSynopsis,
		"For every row of the spine, computes the query's windowed features as of that\nrow's time over the events: what a lookup at (key, time) would have returned\nonline had every event with ts <= time been ingested (--strict: ts < time).\nThe output has the spine's columns, then one column per feature, one row per\nspine row in spine order.",
		newBackfillFlags(&cfg), "volga backfill --sql spend.sql --source tx=tx.csv --spine labels.csv --sink train.parquet")
}

func parseBackfillArgs(args []string) (*backfillConfig, error) {
	cfg := &backfillConfig{}
	fs := newBackfillFlags(cfg)
	if err := parseFlags("backfill", fs, args); err != nil {
		return nil, err
	}
	if err := required("backfill", "--sql FILE", cfg.sqlFile, "--source NAME=PATH for the query's table", cfg.sources.String(), "--spine PATH", cfg.spine); err != nil {
		return nil, err
	}
	if cfg.parallelism < 1 {
		return nil, usagef("backfill: --parallelism must be at least 1, got %d", cfg.parallelism)
	}
	if cfg.format != "" {
		if cfg.sinkPath != "-" {
			return nil, usagef("backfill: --format applies to standard output only; the extension of --sink %s chooses its format", cfg.sinkPath)
		}
		if f := strings.ToLower(cfg.format); f != "csv" && f != "jsonl" {
			return nil, usagef("backfill: --format must be csv or jsonl, got %q", cfg.format)
		}
	}
	if err := checkSinkPath("backfill", "sink", cfg.sinkPath); err != nil {
		return nil, err
	}
	return cfg, nil
}

func backfillMain(ctx context.Context, e *env, args []string) int {
	cfg, err := parseBackfillArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printBackfillUsage(e.stdout)
		return exitOK
	}
	if err == nil {
		err = backfill(ctx, e, cfg)
	}
	if err != nil {
		return e.fail(ctx, err)
	}
	return exitOK
}

func backfill(ctx context.Context, e *env, cfg *backfillConfig) error {
	q, err := loadQuery("backfill", cfg.sqlFile, cfg.sources, e.stdin)
	if err != nil {
		return err
	}
	dead := &deadLetters{e: e}
	defer dead.summary()
	fileOpts, err := cfg.timeOrder.options(q.name, q.plan)
	if err != nil {
		return err
	}
	events, err := openSource(q.table.path, true, dead.report, cfg.schema.schema, fileOpts...)
	if err != nil {
		return err
	}
	defer events.Close()
	spine, err := openSource(cfg.spine, true, dead.report, nil, fileOpts...)
	if err != nil {
		// Name the flag: "source: open labels.csv" reads as if the events
		// were missing.
		return fmt.Errorf("--spine: %w", err)
	}
	defer spine.Close()
	if err := q.compileCheck(events); err != nil {
		return err
	}
	if err := checkOutputs("backfill", map[string]string{"--source " + q.table.name: q.table.path, "--spine": cfg.spine},
		map[string]string{"--sink": cfg.sinkPath}); err != nil {
		return err
	}
	out, _, err := openSink(cfg.sinkPath, cfg.format, e.stdout, false)
	if err != nil {
		return err
	}
	// Backfill closes out.
	var evSrc source.Source = events
	if e.progress {
		counted := &countingSource{Source: events}
		evSrc = counted
		bar := startProgress(e.stderr, "backfill", estimateRows(q.table.path), counted.rows.Load, e.progressEvery)
		defer bar.stop()
	}
	err = volga.Backfill(ctx, q.text, spine, out,
		volga.WithSource(q.plan.Table, evSrc),
		volga.WithStrict(cfg.strict),
		volga.WithParallelism(cfg.parallelism),
		volga.WithDeadLetters(dead.report))
	if errors.Is(err, pipeline.ErrSpine) {
		// Name the file: the message speaks of "the spine".
		err = fmt.Errorf("--spine %s: %s%s", cfg.spine, strings.TrimPrefix(err.Error(), "volga: "), spineNote(spine, err))
	}
	return err
}

// spineNote tells why a spine column the error names was inferred as
// utf8 when a few of its first values are not of the type most are (a
// time without seconds among RFC 3339 times): the spine's key or time
// column then does not match the events', and the value is the one to
// fix.
func spineNote(spine source.Source, err error) string {
	n, ok := spine.(interface{ InferenceNote(string) string })
	if !ok {
		return ""
	}
	for _, f := range spine.Schema().Fields() {
		if note := n.InferenceNote(f.Name); note != "" && strings.Contains(err.Error(), fmt.Sprintf("%q", f.Name)) {
			return fmt.Sprintf("; note: spine column %q was inferred as utf8 because %s: fix that value", f.Name, note)
		}
	}
	return ""
}
