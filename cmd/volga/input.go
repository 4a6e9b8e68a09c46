package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/source"
)

// query is a parsed query file and the --source binding of its table.
type query struct {
	name, text string // file name (for error messages) and contents
	plan       *pipeline.Plan
	table      binding
}

// loadQuery reads and parses the query file and finds the binding of its
// table among sources; cmd names the command in errors.
func loadQuery(cmd, sqlFile string, sources bindings, stdin io.Reader) (*query, error) {
	name, text, err := readQuery(sqlFile, stdin)
	if err != nil {
		return nil, err
	}
	plan, err := pipeline.ParseSQL(text)
	if err != nil {
		return nil, queryError(name, err)
	}
	q := &query{name: name, text: text, plan: plan}
	found := false
	for _, b := range sources {
		if !strings.EqualFold(b.name, plan.Table) {
			return nil, fmt.Errorf("--source %s=%s: the query reads only table %q", b.name, redactURL(b.path), plan.Table)
		}
		q.table, found = b, true
	}
	if !found {
		return nil, fmt.Errorf("%s: the query reads table %q, but no --source binds it; add --source %s=PATH", name, plan.Table, plan.Table)
	}
	if plan.Group != nil || len(plan.Windows) == 0 {
		return nil, fmt.Errorf("%s: %s needs a query with sliding windows (aggregates OVER a window), not GROUP BY or none", name, cmd)
	}
	return q, nil
}

// compileCheck compiles the query against the events' schema, so that
// query errors are reported, with their position, before any output is
// created.
func (q *query) compileCheck(events source.Source) error {
	if _, err := volga.FromPlan(q.plan, volga.WithSource(q.plan.Table, events)); err != nil {
		return queryError(q.name, err)
	}
	return nil
}

// deadLetters reports undecodable records on standard error and counts
// them; safe for concurrent use.
type deadLetters struct {
	e  *env
	mu sync.Mutex
	n  int64
}

func (d *deadLetters) report(l source.DeadLetter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	where := l.Source
	if l.Offset > 0 {
		where += ":" + strconv.FormatInt(l.Offset, 10)
	}
	fmt.Fprintf(d.e.stderr, "volga: dead letter: %s: %s\n", where, oneLine(l.Reason))
}

func (d *deadLetters) summary() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n > 0 {
		fmt.Fprintf(d.e.stderr, "volga: %d dead letter%s skipped\n", d.n, plural(d.n))
	}
}

// parseFlags parses args with fs and checks the flags every command of
// this file needs. Errors are usage errors; flag.ErrHelp is returned as
// is.
func parseFlags(cmd string, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %s (see 'volga help %s')", cmd, doubleDash(err.Error()), cmd)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q; flags come as --name value (see 'volga help %s')", cmd, fs.Arg(0), cmd)
	}
	return nil
}

// doubleDash writes the flag names in a message of package flag as the
// docs and the other messages do, --name, where flag writes -name.
func doubleDash(msg string) string {
	for _, p := range []string{"defined: -", "for flag -", "for -", "argument: -"} {
		if i := strings.Index(msg, p); i >= 0 && !strings.HasPrefix(msg[i+len(p):], "-") {
			return msg[:i+len(p)] + "-" + msg[i+len(p):]
		}
	}
	return msg
}

// required returns a usage error for the first empty value.
func required(cmd string, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			return usagef("%s: missing %s (see 'volga help %s')", cmd, kv[i], cmd)
		}
	}
	return nil
}

// printCommandUsage prints the synopsis, a description and the flags.
func printCommandUsage(w io.Writer, synopsis, about string, fs *flag.FlagSet, example string) {
	fmt.Fprintf(w, "usage: volga %s\n\n%s\n\nflags:\n", synopsis, about)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nexample:\n  %s\n", example)
}
