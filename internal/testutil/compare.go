package testutil

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/sink"
)

// Tolerances of float comparison: SPEC section 4 asks for 1e-9 relative;
// the absolute floor lets a value expected to be 0 (a variance of equal
// values) come out as a rounding residue.
const (
	RelTol = 1e-9
	AbsTol = 1e-12
)

// Equal reports whether got equals want: floats within RelTol relative
// (AbsTol absolute), NaN equal to NaN, integers of any width by value,
// times by instant, lists ([]any), maps ([]sink.MapEntry) and structs
// (map[string]any) element by element, everything else by ==. A want of
// type Exact must be matched bit for bit, one of type Within within its
// bound.
func Equal(got, want any) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	switch w := want.(type) {
	case Exact:
		g, ok := got.(float64)
		return ok && (g == w.V || math.IsNaN(g) && math.IsNaN(w.V))
	case Within:
		g, ok := got.(float64)
		return ok && math.Abs(g-w.V) <= w.Tol
	case []any:
		g, ok := got.([]any)
		return ok && slices.EqualFunc(g, w, Equal)
	case []sink.MapEntry:
		g, ok := got.([]sink.MapEntry)
		return ok && slices.EqualFunc(g, w, func(a, b sink.MapEntry) bool {
			return Equal(a.Key, b.Key) && Equal(a.Value, b.Value)
		})
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			if gv, ok := g[k]; !ok || !Equal(gv, wv) {
				return false
			}
		}
		return true
	}
	if g, ok := got.(float64); ok {
		w, ok := want.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(g) || math.IsNaN(w) {
			return math.IsNaN(g) && math.IsNaN(w)
		}
		return g == w || math.Abs(g-w) <= max(RelTol*math.Abs(w), AbsTol) // g == w: infinities
	}
	if g, ok := got.(time.Time); ok {
		w, ok := want.(time.Time)
		return ok && g.Equal(w)
	}
	return got == want
}

// Rows converts batches to rows of Go values (sink.Value), in order.
func Rows(recs ...arrow.RecordBatch) [][]any {
	var out [][]any
	for _, r := range recs {
		out = append(out, sink.Rows(r)...)
	}
	return out
}

// Diff compares two results of the same shape and returns "" when they are
// equal, else a readable report: the number of differing cells and, for
// the first few, the row (described by label, e.g. its key and time), the
// column and both values. cols names the columns.
func Diff(cols []string, got, want [][]any, label func(row int) string) string {
	var sb strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&sb, "got %d rows, want %d\n", len(got), len(want))
	}
	if label == nil {
		label = func(int) string { return "-" }
	}
	const show = 12
	bad := 0
	for i := range min(len(got), len(want)) {
		if len(got[i]) != len(want[i]) {
			bad++
			if bad <= show {
				fmt.Fprintf(&sb, "row %d (%s): got %d columns %v, want %d %v\n", i, label(i), len(got[i]), got[i], len(want[i]), want[i])
			}
			continue
		}
		for c := range got[i] {
			if Equal(got[i][c], want[i][c]) {
				continue
			}
			bad++
			if bad <= show {
				name := fmt.Sprint(c)
				if c < len(cols) {
					name = cols[c]
				}
				fmt.Fprintf(&sb, "row %d (%s) column %s: got %s, want %s\n", i, label(i), name, show1(got[i][c]), show1(want[i][c]))
			}
		}
	}
	if bad > show {
		fmt.Fprintf(&sb, "... %d differing cells in all\n", bad)
	}
	return sb.String()
}

func show1(v any) string {
	if v == nil {
		return "NULL"
	}
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case Exact, Within:
		return fmt.Sprint(v)
	case []any, []sink.MapEntry, map[string]any:
		return render(v)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

// Label returns a row labeller for Diff showing the listed columns of the
// rows of t given by index (nil index: row i of t).
func Label(t *Table, index []int, cols ...string) func(int) string {
	return func(i int) string {
		if index != nil {
			if i >= len(index) {
				return "?"
			}
			i = index[i]
		}
		if i >= len(t.Rows) {
			return "?"
		}
		parts := make([]string, len(cols))
		for k, c := range cols {
			v := t.Value(i, c)
			if v == nil {
				v = "NULL"
			}
			parts[k] = fmt.Sprintf("%s=%v", c, v)
		}
		return strings.Join(parts, " ")
	}
}

// render shows a list, map or struct value compactly: [a b], {k:v ...},
// NULL for nil, strings quoted.
func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return fmt.Sprintf("%q", v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case []sink.MapEntry:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = render(e.Key) + ":" + render(e.Value)
		}
		return "{" + strings.Join(parts, " ") + "}"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + render(v[k])
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	return fmt.Sprint(v)
}
