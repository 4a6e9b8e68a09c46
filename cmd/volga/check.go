package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/request"
)

const checkSynopsis = "check --sql FILE --source NAME=PATH [--schema COL:TYPE,...] --log PATH [--tolerance X] [--abs-tolerance X] [--examples N] [--time-order DURATION]"

var checkCommand = &command{
	name:    "check",
	summary: "check logged lookups against features recomputed offline (online/offline consistency)",
	usage:   checkSynopsis,
	run:     checkMain,
}

type checkConfig struct {
	sqlFile   string
	sources   bindings
	log       string
	tolerance float64
	absTol    float64
	examples  int
	timeOrder timeOrder
	schema    schemaFlag
}

func newCheckFlags(cfg *checkConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.sqlFile, "sql", "", "`FILE` holding the query that served the lookups")
	fs.Var(&cfg.sources, "source", "bind the query's table `NAME=PATH` to the events the lookups saw")
	fs.Var(&cfg.schema, "schema", schemaUsage)
	fs.StringVar(&cfg.log, "log", "", "`PATH` of the logged lookups: responses of volga serve, one JSON object per line (- reads standard input); a line that is not a lookup (malformed JSON, a logged error response) is reported as a dead letter and skipped")
	fs.Float64Var(&cfg.tolerance, "tolerance", 1e-9, "largest relative difference `X` between two numbers that still match (0: exact)")
	fs.Float64Var(&cfg.absTol, "abs-tolerance", 0, "largest absolute difference `X` between two numbers, not both integers, that still match whatever their relative difference (for values near 0)")
	fs.IntVar(&cfg.examples, "examples", 10, "how many differences to list (`N`; 0: only the counts)")
	cfg.timeOrder.registerUsage(fs, "CSV or JSON-lines events: promise that each row is at most `DURATION` behind the newest event time before it (0s: sorted), so that the events are read side by side with the logged lookups and let go as they are, in memory bounded by the windows; a row later than that stops the check (Parquet events need no promise)")
	return fs
}

func printCheckUsage(w io.Writer) {
	var cfg checkConfig
	printCommandUsage(w, checkSynopsis,
		"Recomputes every logged lookup offline (a backfill over a spine of the logged\nkeys and times) and compares the served feature values with the recomputed\nones. Prints a report; the exit status is 1 when any value differs or is\nmissing on one side, or a log line was skipped as not a lookup.",
		newCheckFlags(&cfg), "volga check --sql spend.sql --source tx=tx.csv --log lookups.jsonl")
}

func parseCheckArgs(args []string) (*checkConfig, error) {
	cfg := &checkConfig{}
	fs := newCheckFlags(cfg)
	if err := parseFlags("check", fs, args); err != nil {
		return nil, err
	}
	if err := required("check", "--sql FILE", cfg.sqlFile, "--source NAME=PATH for the query's table", cfg.sources.String(), "--log PATH", cfg.log); err != nil {
		return nil, err
	}
	switch {
	case cfg.tolerance < 0:
		return nil, usagef("check: --tolerance must not be negative, got %g", cfg.tolerance)
	case cfg.absTol < 0:
		return nil, usagef("check: --abs-tolerance must not be negative, got %g", cfg.absTol)
	case cfg.examples < 0:
		return nil, usagef("check: --examples must not be negative, got %d", cfg.examples)
	case cfg.log == "-" && cfg.sqlFile == "-":
		return nil, usagef("check: --sql and --log cannot both read standard input")
	}
	return cfg, nil
}

func checkMain(ctx context.Context, e *env, args []string) int {
	cfg, err := parseCheckArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printCheckUsage(e.stdout)
		return exitOK
	}
	var rep checkReport
	if err == nil {
		rep, err = check(ctx, e, cfg)
	}
	if err != nil {
		return e.fail(ctx, err)
	}
	fmt.Fprint(e.stdout, rep)
	if !rep.OK() {
		return exitFailure
	}
	if rep.skipped > 0 {
		// The values compared match, but not every logged line was a
		// lookup that could be compared.
		return exitFailure
	}
	return exitOK
}

// checkReport is request.Check's report and the number of log lines
// skipped as not lookups.
type checkReport struct {
	*request.Report
	skipped int
}

// readLog reads the logged lookups of the file name (r). A line that is
// not one (malformed JSON, a line cut short, a logged error response) is
// reported as a dead letter and skipped, and the rest are checked; a log
// with no lookup at all is an error, that of its first line.
func readLog(r io.Reader, name string, e *env) ([]request.Record, int, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, err
	}
	served, firstErr := request.ReadLog(bytes.NewReader(b))
	if firstErr == nil {
		return served, 0, nil
	}
	served = nil
	type bad struct {
		line int
		err  error
	}
	var skipped []bad
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		recs, err := request.ReadLog(bytes.NewReader(line))
		if err != nil {
			skipped = append(skipped, bad{i + 1, err})
			continue
		}
		served = append(served, recs...)
	}
	if len(served) == 0 {
		return nil, 0, firstErr
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stderr, "volga: dead letter: %s:%d: %s\n", name, s.line, oneLine(strings.TrimPrefix(s.err.Error(), "request: log line 1: ")))
	}
	fmt.Fprintf(e.stderr, "volga: %d log line%s skipped: not lookups; the other %d checked\n", len(skipped), plural(int64(len(skipped))), len(served))
	return served, len(skipped), nil
}

func check(ctx context.Context, e *env, cfg *checkConfig) (checkReport, error) {
	q, err := loadQuery("check", cfg.sqlFile, cfg.sources, e.stdin)
	if err != nil {
		return checkReport{}, err
	}
	var served []request.Record
	var skipped int
	if cfg.log == "-" {
		served, skipped, err = readLog(e.stdin, "-", e)
	} else {
		f, ferr := os.Open(cfg.log)
		if ferr != nil {
			return checkReport{}, fmt.Errorf("--log: %w", ferr)
		}
		served, skipped, err = readLog(f, cfg.log, e)
		f.Close()
	}
	if err != nil {
		return checkReport{}, fmt.Errorf("%s: %w", cfg.log, err)
	}
	dead := &deadLetters{e: e}
	defer dead.summary()
	fileOpts, err := cfg.timeOrder.options(q.name, q.plan)
	if err != nil {
		return checkReport{}, err
	}
	events, err := openSource(q.table.path, true, dead.report, cfg.schema.schema, fileOpts...)
	if err != nil {
		return checkReport{}, err
	}
	defer events.Close()
	if err := q.compileCheck(events); err != nil {
		return checkReport{}, err
	}
	recomputed, err := volga.Recompute(ctx, q.text, served, volga.WithSource(q.plan.Table, events), volga.WithDeadLetters(dead.report))
	if err != nil {
		return checkReport{}, err
	}
	// In CheckOptions 0 means the default, and a negative value none.
	opts := request.CheckOptions{RelTolerance: cfg.tolerance, AbsTolerance: cfg.absTol, MaxExamples: cfg.examples}
	if opts.RelTolerance == 0 {
		opts.RelTolerance = -1
	}
	if opts.MaxExamples == 0 {
		opts.MaxExamples = -1
	}
	return checkReport{request.Check(served, recomputed, opts), skipped}, nil
}
