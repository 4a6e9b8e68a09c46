package volgatest

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultTolerance is the relative tolerance Expect allows between floats
// unless Tolerance says otherwise: enough to absorb a different summation
// order, far too little to hide a wrong value.
const DefaultTolerance = 1e-9

// maxReports bounds how many mismatches one failure message lists.
const maxReports = 10

// CompareOption configures Expect.
type CompareOption func(*compareConfig)

type compareConfig struct {
	tol      float64
	anyOrder bool
	key      []string
}

// Tolerance sets the relative tolerance for floats: got and want are equal
// when |got-want| <= rel * max(|got|, |want|). Zero compares exactly. Two
// NaNs are equal.
func Tolerance(rel float64) CompareOption { return func(c *compareConfig) { c.tol = rel } }

// AnyOrder matches rows regardless of order: each want row takes the first
// equal got row not taken yet; the rest are reported missing or extra.
// Streaming output is in event-time order and batch output in input order,
// so AnyOrder lets one expectation serve both.
func AnyOrder() CompareOption { return func(c *compareConfig) { c.anyOrder = true } }

// Key names the columns that identify a row in failure messages (by
// default the pipeline's PARTITION BY columns when got is a *Result).
func Key(cols ...string) CompareOption {
	return func(c *compareConfig) { c.key = append([]string(nil), cols...) }
}

// table is a set of rows to compare, with its columns in display order.
type table struct {
	cols    []string
	rows    []map[string]any
	fromCSV bool
}

func toTable(v any) (table, error) {
	switch x := v.(type) {
	case *Result:
		cols := make([]string, 0, x.Schema.NumFields())
		for _, f := range x.Schema.Fields() {
			cols = append(cols, f.Name)
		}
		return table{cols: cols, rows: x.Rows}, nil
	case []map[string]any:
		seen := map[string]bool{}
		var cols []string
		for _, r := range x {
			for k := range r {
				if !seen[k] {
					seen[k] = true
					cols = append(cols, k)
				}
			}
		}
		sort.Strings(cols)
		return table{cols: cols, rows: x}, nil
	case string:
		rows, schema, err := readCSV(x)
		if err != nil {
			return table{}, fmt.Errorf("CSV literal: %w", err)
		}
		t := table{fromCSV: true}
		for _, f := range schema.Fields() {
			t.cols = append(t.cols, f.Name)
		}
		for _, r := range rows {
			m := make(map[string]any, len(r))
			for j, c := range t.cols {
				m[c] = r[j]
			}
			t.rows = append(t.rows, m)
		}
		return t, nil
	}
	return table{}, fmt.Errorf("rows are %T, want *volgatest.Result, []map[string]any or a CSV string", v)
}

// Expect compares the rows got with the rows want and reports differences
// with t.Errorf; it returns whether they matched. Each of got and want is
// a *Result, a []map[string]any, or a CSV literal with a header line
// (values typed as CSV infers them; an empty field is NULL).
//
// Only the columns want names are compared: a column of want that got
// lacks is a mismatch, a column of got that want does not name is
// ignored. Rows are compared in order unless AnyOrder is given. Numbers
// compare by value whatever their Go type (floats within Tolerance,
// DefaultTolerance by default), times by instant (a want time may be an
// RFC 3339 string), lists and maps element by element; when want comes
// from a CSV literal, a string got value also matches the text of want.
// The message lists the first mismatches by row index, key and column
// with the got and want values, and the missing and extra rows.
func Expect(t testing.TB, got, want any, opts ...CompareOption) bool {
	t.Helper()
	cfg := compareConfig{tol: DefaultTolerance}
	if r, ok := got.(*Result); ok && r.Pipeline != nil {
		cfg.key = r.Pipeline.KeyColumns()
	}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := toTable(got)
	if err != nil {
		t.Errorf("volgatest: Expect: got: %v", err)
		return false
	}
	w, err := toTable(want)
	if err != nil {
		t.Errorf("volgatest: Expect: want: %v", err)
		return false
	}
	c := comparer{cfg: cfg, cols: w.cols, loose: w.fromCSV}
	var problems []string
	if cfg.anyOrder {
		problems = c.unordered(g.rows, w.rows)
	} else {
		problems = c.ordered(g.rows, w.rows)
	}
	if len(problems) == 0 {
		return true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "volgatest: rows differ (got %d rows, want %d):", len(g.rows), len(w.rows))
	for i, p := range problems {
		if i == maxReports {
			fmt.Fprintf(&b, "\n\t... and %d more", len(problems)-maxReports)
			break
		}
		b.WriteString("\n\t")
		b.WriteString(p)
	}
	t.Errorf("%s", b.String())
	return false
}

type comparer struct {
	cfg   compareConfig
	cols  []string // want's columns
	loose bool     // want from CSV: strings match text
}

func (c comparer) ordered(got, want []map[string]any) []string {
	var out []string
	for i := 0; i < len(got) && i < len(want); i++ {
		for _, col := range c.cols {
			wv, wok := want[i][col]
			if !wok {
				continue
			}
			gv, gok := got[i][col]
			switch {
			case !gok:
				out = append(out, fmt.Sprintf("row %d%s: column %s: missing from got, want %s", i, c.key(want[i]), col, render(wv)))
			case !c.equal(gv, wv):
				out = append(out, fmt.Sprintf("row %d%s: column %s: got %s, want %s", i, c.key(want[i]), col, render(gv), render(wv)))
			}
		}
	}
	for i := len(got); i < len(want); i++ {
		out = append(out, fmt.Sprintf("row %d: missing: %s", i, c.row(want[i])))
	}
	for i := len(want); i < len(got); i++ {
		out = append(out, fmt.Sprintf("row %d: extra: %s", i, c.row(got[i])))
	}
	return out
}

func (c comparer) unordered(got, want []map[string]any) []string {
	used := make([]bool, len(got))
	var out []string
	for i, w := range want {
		found := false
		for j, g := range got {
			if !used[j] && c.rowEqual(g, w) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("want row %d%s: missing: %s", i, c.key(w), c.row(w)))
		}
	}
	for j, g := range got {
		if !used[j] {
			out = append(out, fmt.Sprintf("got row %d%s: extra: %s", j, c.key(g), c.row(g)))
		}
	}
	return out
}

func (c comparer) rowEqual(g, w map[string]any) bool {
	for _, col := range c.cols {
		wv, wok := w[col]
		if !wok {
			continue
		}
		gv, gok := g[col]
		if !gok || !c.equal(gv, wv) {
			return false
		}
	}
	return true
}

// key renders the key columns of a row, as " (k=v, ...)".
func (c comparer) key(r map[string]any) string {
	var parts []string
	for _, k := range c.cfg.key {
		if v, ok := r[k]; ok {
			parts = append(parts, k+"="+render(v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// row renders the compared columns of a row.
func (c comparer) row(r map[string]any) string {
	parts := make([]string, 0, len(c.cols))
	for _, col := range c.cols {
		if v, ok := r[col]; ok {
			parts = append(parts, col+"="+render(v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (c comparer) equal(got, want any) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	if gi, ok := toInt(got); ok {
		if wi, ok := toInt(want); ok {
			return gi == wi
		}
	}
	if gu, ok := toUint(got); ok {
		if wu, ok := toUint(want); ok {
			return gu == wu
		}
	}
	if gf, ok := toFloat(got); ok {
		if wf, ok := toFloat(want); ok {
			return floatEqual(gf, wf, c.cfg.tol)
		}
	}
	if gt, ok := got.(time.Time); ok {
		if wt, ok := toTime(want); ok {
			return gt.Equal(wt)
		}
		return false
	}
	switch g := got.(type) {
	case []any:
		w, ok := want.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range g {
			if !c.equal(g[i], w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, gv := range g {
			wv, ok := w[k]
			if !ok || !c.equal(gv, wv) {
				return false
			}
		}
		return true
	case string:
		if c.loose {
			if _, isString := want.(string); !isString {
				return g == render(want)
			}
		}
	}
	return reflect.DeepEqual(got, want)
}

func floatEqual(a, b, rel float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// render formats a value for messages: NULL, quoted strings, RFC 3339
// times, shortest floats.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return fmt.Sprint(v)
}
