package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// Exit statuses of the volga command.
const (
	exitOK          = 0
	exitFailure     = 1   // the run failed: query error, unreadable file, ...
	exitUsage       = 2   // the command line is wrong
	exitInterrupted = 130 // SIGINT or SIGTERM
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handling so that a
		// second Ctrl-C ends a run that does not stop promptly.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command may use of the process: its standard streams, and
// whether standard error is a terminal (progress lines are drawn only
// there).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	progress       bool
	progressEvery  time.Duration
}

// errorf prints a one-line error message on standard error.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintln(e.stderr, "volga: "+oneLine(fmt.Sprintf(format, args...)))
}

// oneLine folds a possibly multi-line message (errors.Join) onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// command is a subcommand of volga.
type command struct {
	name    string
	summary string // one line, for the command list
	usage   string // the synopsis, without "volga "
	run     func(ctx context.Context, e *env, args []string) int
}

// commands lists the subcommands in the order help shows them. (A function,
// not a variable, because help refers to the list.)
func commands() []*command {
	return []*command{runCommand, serveCommand, groupCommand, backfillCommand, checkCommand, helpCommand, versionCommand}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// run is the whole command line program: it dispatches args (without the
// program name) to a subcommand and returns the exit status. It never
// panics; a panic inside a command is reported as an internal error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, progress: terminal(stderr), progressEvery: progressEvery}
	defer func() {
		if r := recover(); r != nil {
			e.errorf("internal error: %v", r)
			code = exitFailure
		}
	}()
	if len(args) == 0 {
		e.errorf("no command given; commands: %s (see 'volga help')", commandNames())
		return exitUsage
	}
	name := args[0]
	switch {
	case isHelpFlag(name):
		name = "help"
	case name == "-version" || name == "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		e.errorf("unknown command %q; commands: %s (see 'volga help')", name, commandNames())
		return exitUsage
	}
	return c.run(ctx, e, args[1:])
}

var helpCommand = &command{
	name:    "help",
	summary: "show help for volga or for one command",
	usage:   "help [command]",
}

// init completes helpCommand: its run function lists the commands, which
// include helpCommand itself, so it cannot be set in the literal.
func init() { helpCommand.run = runHelp }

// isHelpFlag reports whether arg asks for help, as -h and --help do after
// any command.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

func runHelp(_ context.Context, e *env, args []string) int {
	if len(args) == 1 && isHelpFlag(args[0]) {
		args = []string{"help"}
	}
	switch len(args) {
	case 0:
		printUsage(e.stdout)
		return exitOK
	case 1:
		c := lookup(args[0])
		if c == nil {
			e.errorf("help: unknown command %q; commands: %s", args[0], commandNames())
			return exitUsage
		}
		switch c {
		case runCommand:
			printRunUsage(e.stdout)
		case serveCommand:
			printServeUsage(e.stdout)
		case groupCommand:
			printGroupUsage(e.stdout)
		case backfillCommand:
			printBackfillUsage(e.stdout)
		case checkCommand:
			printCheckUsage(e.stdout)
		default:
			fmt.Fprintf(e.stdout, "usage: volga %s\n\n%s.\n", c.usage, upperFirst(c.summary))
		}
		return exitOK
	}
	e.errorf("help takes at most one command, got %d arguments", len(args))
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "Volga computes ML features from event streams with SQL.\n\nusage: volga <command> [arguments]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'volga help <command>' for the flags of a command.\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

var versionCommand = &command{
	name:    "version",
	summary: "print the version of volga and of Go it was built with",
	usage:   "version",
	run: func(_ context.Context, e *env, args []string) int {
		if len(args) == 1 && isHelpFlag(args[0]) {
			fmt.Fprint(e.stdout, "usage: volga version\n\nPrint the version of volga and of Go it was built with.\n")
			return exitOK
		}
		if len(args) > 0 {
			e.errorf("version takes no arguments")
			return exitUsage
		}
		fmt.Fprintln(e.stdout, versionString())
		return exitOK
	},
}

// versionString describes the build: the module version (or VCS revision)
// and the Go toolchain.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "volga (unknown version)"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("volga %s (%s)", v, bi.GoVersion)
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error of a command to its exit status and prints it.
func (e *env) fail(ctx context.Context, err error) int {
	var ue *usageError
	var se *stoppedError
	switch {
	case errors.As(err, &se):
		e.errorf("%s", se.msg)
		return exitInterrupted
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())):
		e.errorf("interrupted")
		return exitInterrupted
	case errors.As(err, &ue):
		e.errorf("%s", ue.msg)
		return exitUsage
	}
	// The library's errors start with "volga: " too: say it once.
	e.errorf("%s", cliWording(strings.TrimPrefix(err.Error(), "volga: ")))
	return exitFailure
}

// goOptionFlags are the library's names of promises and settings, as its
// errors give them, and the flags that make them on the command line.
var goOptionFlags = strings.NewReplacer(
	"(WithTimeOrder)", "(--time-order)",
	"(ClusteredBy)", "(--clustered-by)",
	"(source.WithSchema)", "(--schema COL:TYPE,...)",
)

// cliWording words a library error in the command line's terms: "a row
// later than promised (WithTimeOrder)" names the flag the user gave,
// --time-order.
func cliWording(msg string) string { return goOptionFlags.Replace(msg) }
