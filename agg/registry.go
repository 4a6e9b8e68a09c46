package agg

import (
	"fmt"
	"sort"
	"strings"
)

// Def describes an aggregate function of the SQL dialect and the builder.
type Def struct {
	// Name is the lower-case SQL name.
	Name string
	// Signature documents the accepted arguments, e.g. "sum(x numeric)".
	Signature string
	// Doc is a one-line description.
	Doc string
	// MinArgs and MaxArgs bound the argument count (a * counts as one).
	MinArgs, MaxArgs int
	// Bind checks the arguments and returns the bound function. Errors
	// name the function and its signature.
	Bind func(d *Def, args []Arg) (Func, error)
}

// registry maps names (and aliases) to definitions.
var registry = map[string]*Def{}

func register(d *Def, aliases ...string) *Def {
	registry[d.Name] = d
	for _, a := range aliases {
		registry[a] = d
	}
	return d
}

// Lookup returns the definition of the named aggregate (case-insensitive).
func Lookup(name string) (*Def, bool) {
	d, ok := registry[strings.ToLower(name)]
	return d, ok
}

// Names returns every aggregate name and alias, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Bind looks the function up and binds it to args.
func Bind(name string, args []Arg) (Func, error) {
	d, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown aggregate function %q", name)
	}
	if len(args) < d.MinArgs || len(args) > d.MaxArgs {
		return nil, fmt.Errorf("%s takes %s, got %d argument%s: expected %s", d.Name, argCount(d.MinArgs, d.MaxArgs), len(args), plural(len(args)), d.Signature)
	}
	return d.Bind(d, args)
}

func argCount(lo, hi int) string {
	if lo == hi {
		return fmt.Sprintf("%d argument%s", lo, plural(lo))
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sigError is the error for arguments of the wrong kind.
func sigError(d *Def, format string, args ...any) error {
	return fmt.Errorf("%s: %s; expected %s", d.Name, fmt.Sprintf(format, args...), d.Signature)
}
