package volga_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/agg"
	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/sink"
)

// TestMLCompileErrors: wrong argument counts or types, k <= 0, constants
// out of range and unsupported category types are rejected by volga.SQL
// with an error naming the function, its expected signature and the
// call's line and column.
func TestMLCompileErrors(t *testing.T) {
	const over = " OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)"
	for _, tt := range []struct {
		call, reason string
	}{
		{"top(amount)", "takes 2 arguments, got 1"},
		{"top(amount, 0)", "k must be an integer between 1"},
		{"top(amount, -3)", "k must be an integer between 1"},
		{"top(amount, 2.5)", "k must be an integer between 1"},
		{"top(amount, price)", "k must be a constant"},
		{"topn_frequency(category)", "takes 2 arguments, got 1"},
		{"topn_frequency(category, 0)", "k must be an integer between 1"},
		{"topn_frequency(category, 'a')", "k must be an integer between 1"},
		{"top1_ratio(amount, 3)", "takes 1 argument, got 2"},
		{"count_where(amount)", "takes 2 arguments, got 1"},
		{"count_where(amount, category)", "the condition must be a boolean"},
		{"sum_where(category, flag)", "got value argument of type utf8"},
		{"min_where(price, 1)", "the condition must be a boolean"},
		{"sum_cate(amount, price)", "category type float64 is unsupported"},
		{"count_cate(amount)", "takes 2 arguments, got 1"},
		{"avg_cate(category, tag)", "got value argument of type utf8"},
		{"max_cate(price, 'food')", "the category must be a column or expression"},
		{"count_cate_where(amount, category, flag)", "the condition must be a boolean"},
		{"sum_cate_where(amount, flag, score)", "category type float64 is unsupported"},
		{"min_cate_where(amount, flag)", "takes 3 arguments, got 2"},
		{"ew_avg(price)", "takes 2 arguments, got 1"},
		{"ew_avg(price, 0)", "alpha must be in (0, 1]"},
		{"ew_avg(price, 1.5)", "alpha must be in (0, 1]"},
		{"ew_avg(category, 0.5)", "got argument of type utf8"},
		{"drawdown(category)", "got argument of type utf8"},
		{"drawdown(price, 1)", "takes 1 argument, got 2"},
		{"approx_percentile(price, 1.5)", "q must be in [0, 1]"},
		{"approx_percentile(price, score)", "q must be a constant"},
		{"approx_percentile(category, 0.5)", "got argument of type utf8"},
		{"approx_count_distinct()", "takes 1 argument, got 0"},
		{"approx_count_distinct(price, 2)", "takes 1 argument, got 2"},
	} {
		t.Run(tt.call, func(t *testing.T) {
			name := tt.call[:strings.IndexByte(tt.call, '(')]
			def, ok := agg.Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			// The call starts at line 3, column 5.
			query := "SELECT id,\n  count(*)" + over + " AS n,\n    " + tt.call + over + " AS x\nFROM events"
			_, err := volga.SQL(query, volga.WithSource("events", testutil.NewSource(testutil.MLEventSchema)))
			if err == nil {
				t.Fatalf("volga.SQL accepted %s", tt.call)
			}
			var se *pipeline.SQLError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v, want a *pipeline.SQLError", err, err)
			}
			msg := err.Error()
			for _, part := range []string{name, tt.reason, "expected " + def.Signature} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not contain %q", msg, part)
				}
			}
			if se.Line != 3 || se.Column != 5 || se.Near != tt.call {
				t.Errorf("error at line %d, column %d, near %q; want line 3, column 5, near %q", se.Line, se.Column, se.Near, tt.call)
			}
		})
	}
	// A * where a value is needed is rejected by the parser, pointing at
	// the * itself.
	_, err := volga.SQL("SELECT id, avg_where(*, flag) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS x FROM events",
		volga.WithSource("events", testutil.NewSource(testutil.MLEventSchema)))
	if se := (*pipeline.SQLError)(nil); !errors.As(err, &se) || se.Near != "*" || se.Line != 1 || se.Column != 22 {
		t.Errorf("avg_where(*, flag): got %v, want an SQLError at the * (line 1, column 22)", err)
	}
	// The same checks in a GROUP BY query.
	_, err = volga.SQL("SELECT user_id, top(amount, 0) AS t FROM events GROUP BY user_id, tumble(ts, INTERVAL '1' SECOND)",
		volga.WithSource("events", testutil.NewSource(testutil.MLEventSchema)))
	var se *pipeline.SQLError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "expected top(") || se.Line != 1 || se.Column != 17 {
		t.Errorf("GROUP BY top(amount, 0): got %v, want an SQLError at line 1, column 17 with the signature", err)
	}
}

// The functions reference, docs/functions.md, is generated from the
// registry (agg.Names, Def.Signature, Def.Doc, Func.Retractable) and from
// the examples below, whose outputs are computed by the engine and checked
// against the brute-force reference. TestFunctionsDoc fails when the page
// is stale; regenerate it with
//
//	VOLGA_UPDATE_DOCS=1 go test -run TestFunctionsDoc .
const functionsDoc = "docs/functions.md"

// docTable is the tiny table of the examples.
var docTable = &testutil.Table{
	Schema: arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil),
	Rows: [][]any{
		{int64(1), int64(1), int64(1000), int64(30), 2.5, "food", true},
		{int64(2), int64(1), int64(2000), int64(10), nil, "fuel", false},
		{int64(3), int64(2), int64(2500), nil, 4.0, "food", nil},
		{int64(4), int64(1), int64(3000), int64(30), 1.5, "food", true},
		{int64(5), int64(2), int64(4000), int64(-5), 8.0, nil, true},
		{int64(6), int64(1), int64(5000), int64(20), 3.0, "fuel", true},
	},
}

// docWindow is the window of the examples: each row sees the rows of its
// user of the 10 seconds before it, without itself, so the first row of
// each user has an empty frame.
var docWindow = testutil.Window{Keys: []string{"user_id"}, Time: "ts",
	Frame: testutil.Frame{Preceding: 10_000, ExcludeCurrent: true}}

// docFunc is what the page says about one function beyond the registry.
type docFunc struct {
	result, empty string
	example       testutil.Agg
}

// cateValue is the value type of the _cate maps of each base aggregate.
var cateValue = map[string]string{"count": "int64", "sum": "type of sum(x)", "avg": "float64", "min": "type of x", "max": "type of x"}

var baseDocs = map[string]docFunc{
	"count": {"int64", "NULL values of x are not counted; 0 for an empty frame", testutil.Agg{Func: "count", Arg: "amount"}},
	"sum":   {"int64 for integer x, float64 for float x", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "sum", Arg: "amount"}},
	"avg":   {"float64", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "avg", Arg: "price"}},
	"min":   {"type of x", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "min", Arg: "category"}},
	"max":   {"type of x", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "max", Arg: "price"}},
}

func docFuncs() map[string]docFunc {
	m := map[string]docFunc{
		"count_distinct":        {"int64", "NULL is not a value; 0 for an empty frame", testutil.Agg{Func: "count_distinct", Arg: "category"}},
		"var_samp":              {"float64", "NULL values are skipped; NULL when there are fewer than two", testutil.Agg{Func: "var_samp", Arg: "amount"}},
		"var_pop":               {"float64", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "var_pop", Arg: "amount"}},
		"stddev_samp":           {"float64", "NULL values are skipped; NULL when there are fewer than two", testutil.Agg{Func: "stddev_samp", Arg: "price"}},
		"stddev_pop":            {"float64", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "stddev_pop", Arg: "price"}},
		"first_value":           {"type of x", "the value of the earliest row, even when it is NULL; NULL for an empty frame", testutil.Agg{Func: "first_value", Arg: "price"}},
		"last_value":            {"type of x", "the value of the latest row, even when it is NULL; NULL for an empty frame", testutil.Agg{Func: "last_value", Arg: "price"}},
		"top":                   {"list<type of x>", "NULL values are skipped; an empty list (never NULL) when there are none", testutil.Agg{Func: "top", Arg: "amount", Param: int64(2)}},
		"topn_frequency":        {"list<struct<value: type of x, count: int64>>", "NULL values are skipped; an empty list (never NULL) when there are none", testutil.Agg{Func: "topn_frequency", Arg: "category", Param: int64(2)}},
		"top1_ratio":            {"float64", "NULL values are skipped; 0 (not NULL) when there are none", testutil.Agg{Func: "top1_ratio", Arg: "category"}},
		"ew_avg":                {"float64", "NULL and NaN values are skipped (they take no weight); NULL when there are none", testutil.Agg{Func: "ew_avg", Arg: "price", Param: 0.5}},
		"drawdown":              {"float64", "NULL and negative values are skipped; 0 for one value; NULL when there are none", testutil.Agg{Func: "drawdown", Arg: "amount"}},
		"approx_percentile":     {"float64", "NULL values are skipped; NULL when there are none", testutil.Agg{Func: "approx_percentile", Arg: "price", Param: 0.5}},
		"approx_count_distinct": {"int64", "NULL is not a value; 0 for an empty frame", testutil.Agg{Func: "approx_count_distinct", Arg: "category"}},
	}
	for base, d := range baseDocs {
		m[base] = d
		where := d.example
		where.Func, where.Cond = base+"_where", "flag"
		if base == "count" {
			where.Arg = ""
		}
		m[base+"_where"] = docFunc{result: d.result, empty: "only rows where c is TRUE (NULL is FALSE) and x is not NULL count; " +
			strings.TrimPrefix(d.empty, "NULL values are skipped; "), example: where}
		ca := d.example
		ca.Func, ca.Cate = base+"_cate", "category"
		if ca.Arg == "category" {
			ca.Arg = "amount"
		}
		m[base+"_cate"] = docFunc{result: "map<type of g, " + cateValue[base] + ">",
			empty: "rows with NULL g or NULL x are skipped; keys ascending; an empty map (never NULL) when no row is left", example: ca}
		cw := ca
		cw.Func, cw.Cond = base+"_cate_where", "flag"
		m[base+"_cate_where"] = docFunc{result: "map<type of g, " + cateValue[base] + ">",
			empty: "only rows where c is TRUE (NULL is FALSE), with non-NULL g and x; keys ascending; an empty map (never NULL) when no row is left", example: cw}
	}
	return m
}

// docValue renders a value for the page: NULL, [a, b] for lists,
// value:count for topn_frequency entries, {k: v} for maps.
func docValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = docValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return docValue(v["value"]) + ":" + docValue(v["count"])
	case []sink.MapEntry:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = docValue(e.Key) + ": " + docValue(e.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// runDoc runs query over the doc table and returns the output schema and
// rows.
func runDoc(t *testing.T, query string) (*arrow.Schema, [][]any) {
	t.Helper()
	src := testutil.NewSource(docTable.Schema, docTable.Record(nil, 0, len(docTable.Rows)))
	defer src.Close()
	out := sink.NewCollector()
	defer out.Release()
	p, err := volga.SQL(query, volga.WithSource("tx", src), volga.WithSink(out))
	if err != nil {
		t.Fatalf("%s\n%v", query, err)
	}
	if err := p.Run(t.Context()); err != nil {
		t.Fatalf("%s\n%v", query, err)
	}
	return p.Schema(), out.Rows()
}

func markdownTable(schema *arrow.Schema, rows [][]any) string {
	var sb strings.Builder
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	sb.WriteString("| " + strings.Join(names, " | ") + " |\n|" + strings.Repeat(" --- |", len(names)) + "\n")
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = docValue(v)
		}
		sb.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return sb.String()
}

// retractable binds the example call to the doc table's column types and
// asks the bound function.
func retractable(t *testing.T, a testutil.Agg) bool {
	t.Helper()
	col := func(name string) agg.Arg {
		return agg.Arg{Type: docTable.Schema.Field(docTable.Col(name)).Type, Col: 0}
	}
	args := []agg.Arg{{Star: true, Col: -1}}
	if a.Arg != "" {
		args[0] = col(a.Arg)
	}
	if a.Cond != "" {
		args = append(args, col(a.Cond))
	}
	if a.Cate != "" {
		args = append(args, col(a.Cate))
	}
	if a.Param != nil {
		args = append(args, agg.Arg{IsConst: true, Const: a.Param, Col: -1})
	}
	f, err := agg.Bind(a.Func, args)
	if err != nil {
		t.Fatalf("bind %s: %v", a.SQL(), err)
	}
	return f.Retractable()
}

const docWindowSQL = "WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)"

var docGroupExamples = []struct {
	title string
	w     testutil.GroupWindow
	aggs  []testutil.Agg
}{
	{"Tumbling windows of 2 seconds", testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 2000, Slide: 2000},
		[]testutil.Agg{{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "topn_frequency", Arg: "category", Param: int64(1)}}},
	{"Hopping windows of 3 seconds every second", testutil.GroupWindow{Keys: []string{"user_id"}, Time: "ts", Size: 3000, Slide: 1000},
		[]testutil.Agg{{Func: "count"}, {Func: "max", Arg: "price"}, {Func: "count_cate", Arg: "amount", Cate: "category"}}},
}

func docGroupSQL(w testutil.GroupWindow, aggs []testutil.Agg) string {
	items := []string{"user_id", "window_start", "window_end"}
	for _, a := range aggs {
		items = append(items, a.SQL()+" AS "+strings.TrimSuffix(a.Func, "_frequency"))
	}
	win := fmt.Sprintf("tumble(ts, INTERVAL '%d' SECOND)", w.Size/1000)
	if w.Slide != w.Size {
		win = fmt.Sprintf("hop(ts, INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", w.Slide/1000, w.Size/1000)
	}
	return "SELECT " + strings.Join(items, ", ") + "\nFROM tx\nGROUP BY user_id, " + win
}

// renderFunctionsDoc builds docs/functions.md, checking every example's
// engine output against the reference on the way.
func renderFunctionsDoc(t *testing.T) string {
	funcs := docFuncs()
	var sb strings.Builder
	sb.WriteString(`# Aggregate functions

<!-- Generated by TestFunctionsDoc (volga_ml_test.go) from the registry of
package agg and engine runs checked against the reference implementation.
Do not edit by hand: VOLGA_UPDATE_DOCS=1 go test -run TestFunctionsDoc . -->

Every aggregate of the dialect, standard (SPEC section 4; identical to DuckDB)
and ML-oriented (engine-specific). Each can be used over a sliding window
(` + "`<agg>(...) OVER w`" + `) or in a tumbling/hopping ` + "`GROUP BY`" + ` (see the end of the page).
The same names work in the Go builder: ` + "`pipeline.Fn(\"topn_frequency\", \"merchant\", 3)`" + `.

Conventions:

- **Frame order** is (event time, arrival order); it matters for ` + "`first_value`" + `,
  ` + "`last_value`" + `, ` + "`ew_avg`" + ` and ` + "`drawdown`" + `.
- **NULL** arguments are skipped unless the entry says otherwise. A *condition*
  ` + "`c`" + ` selects the rows where it is TRUE; NULL counts as FALSE.
- **Constant arguments** (` + "`k`, `alpha`, `q`" + `) must be literals.
- **Retractable** aggregates remove a value exactly when it leaves the frame;
  **mergeable-only** ones are evaluated from partial aggregates or raw rows.
  Results never depend on which path was taken.
- Wrong argument counts or types, ` + "`k <= 0`" + `, constants out of range and unsupported
  category types are rejected when the query is compiled, with the function's
  signature and the line and column of the call.
- ` + "`approx_percentile`" + ` is exact — DuckDB's ` + "`quantile_cont`" + `, linear interpolation between
  the closest ranks, ` + "`v[⌊p⌋] + (p-⌊p⌋)(v[⌊p⌋+1]-v[⌊p⌋])`" + ` with ` + "`p = q(n-1)`" + ` — over
  sliding windows, and in tumble/hop windows of up to 1024 values; beyond that
  a compactor sketch keeps the rank of the result within ` + "`N·H/1024`" + ` of the exact
  one (H the number of sketch levels, ` + "`⌈log2(N/1024)⌉+1`" + `: at most 0.6% of N for
  N = 10^5). ` + "`approx_count_distinct`" + ` is exact over sliding windows and up to 1000
  distinct values, then a HyperLogLog estimate with a standard error of 1.6%.

## The example table

Every example runs over this table, ` + "`tx`" + `, ts in epoch milliseconds:

`)
	sb.WriteString(markdownTable(docTable.Schema, docTable.Rows))
	sb.WriteString(`
and, unless it says otherwise, over the window

` + "```sql\n" + docWindowSQL + "\n```" + `

so that each row sees its user's rows of the 10 seconds before it, without
itself: rows 1 and 3 (the first of each user) have an empty frame. Values are
shown as NULL, ` + "`[a, b]`" + ` for lists, ` + "`value:count`" + ` for ` + "`topn_frequency`" + ` entries and
` + "`{key: value}`" + ` for maps. The CSV sink writes lists as ` + "`a,b`" + `,
` + "`topn_frequency`" + ` as ` + "`v1:c1,v2:c2`" + `, maps as ` + "`k1:v1,k2:v2`" + ` and NULL as an empty field;
JSON and Parquet keep the real types.

## Index

| function | signature | result | retractable |
| --- | --- | --- | --- |
`)
	names := agg.Names()
	type entry struct {
		name, sig, result string
		retract           bool
	}
	var entries []entry
	for _, n := range names {
		def, _ := agg.Lookup(n)
		if def.Name != n {
			entries = append(entries, entry{name: n, sig: "alias of `" + def.Name + "`"})
			continue
		}
		f, ok := funcs[n]
		if !ok {
			t.Errorf("no documentation for aggregate %q: add it to docFuncs", n)
			continue
		}
		entries = append(entries, entry{name: n, sig: "`" + def.Signature + "`", result: f.result, retract: retractable(t, f.example)})
	}
	for _, e := range entries {
		r := "mergeable only"
		if e.retract {
			r = "yes"
		}
		if e.result == "" {
			r = ""
		}
		cell := strings.NewReplacer("|", `\|`).Replace
		fmt.Fprintf(&sb, "| [`%s`](#%s) | %s | %s | %s |\n", e.name, e.name, cell(e.sig), cell(e.result), r)
	}
	sb.WriteString("\n## Functions\n")
	for _, n := range names {
		def, _ := agg.Lookup(n)
		if def.Name != n {
			fmt.Fprintf(&sb, "\n### %s\n\nAn alias of [`%s`](#%s).\n", n, def.Name, def.Name)
			continue
		}
		f, ok := funcs[n]
		if !ok {
			continue
		}
		ret := "mergeable only"
		if retractable(t, f.example) {
			ret = "retractable"
		}
		fmt.Fprintf(&sb, "\n### %s\n\n`%s`\n\n%s\n\n- Result: %s.\n- NULLs and empty frames: %s.\n- %s.\n",
			n, def.Signature, def.Doc, f.result, f.empty, strings.ToUpper(ret[:1])+ret[1:])
		if n == "count_distinct" {
			sb.WriteString("- Also written `count(DISTINCT x)`.\n")
		}
		if n == "count" {
			sb.WriteString("- `count(*)` counts rows, NULLs included.\n")
		}
		query := "SELECT id, user_id, " + f.example.SQL() + " OVER w AS v\nFROM tx\n" + docWindowSQL
		schema, got := runDoc(t, query)
		want := testutil.Compute(docTable, docWindow, []testutil.Agg{f.example})
		for i := range got {
			if !testutil.Equal(got[i][2], want[i][0]) {
				t.Errorf("%s: row %d: engine %s, reference %v", f.example.SQL(), i, docValue(got[i][2]), want[i][0])
			}
		}
		fmt.Fprintf(&sb, "\n```sql\n%s\n```\n\n%s", query, markdownTable(schema, got))
	}
	sb.WriteString(`
## Tumbling and hopping windows

` + "`GROUP BY <keys>, tumble(ts, INTERVAL size)`" + ` or
` + "`GROUP BY <keys>, hop(ts, INTERVAL slide, INTERVAL size)`" + ` (slide <= size) evaluates
the aggregates (without OVER) per key and window ` + "`[start, start + size)`" + `, windows
aligned to the Unix epoch and starting every slide. One row is emitted per key
and window that received at least one row, once the watermark reaches the
window's end: ` + "`window_start`" + ` and ` + "`window_end`" + ` (timestamps when the event time is a
timestamp, epoch milliseconds when it is an int64), the key columns and the
aggregates. The SELECT list may only hold GROUP BY keys, ` + "`window_start`" + `,
` + "`window_end`" + ` and aggregates. NULL is a key of its own. Batch output is ordered
by window start, then by the arrival of each window's first row; in
streaming, rows arriving behind the watermark are late: dropped from every
window, counted (` + "`Stats().LateDropped`" + `) and handed to the late sink. With
` + "`WithAllowedLateness(d)`" + `, a late row no more than d behind the watermark with
a window not yet emitted joins its windows not yet emitted, in event-time
order, and counts in ` + "`Stats().LateApplied`" + ` (windows already emitted are not
emitted again); other late rows are dropped as above.
`)
	for _, ex := range docGroupExamples {
		query := docGroupSQL(ex.w, ex.aggs)
		schema, got := runDoc(t, query)
		want := testutil.GroupBy(docTable, ex.w, ex.aggs)
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, reference %d", query, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			if !slices.EqualFunc(got[i], want[i].Values, testutil.Equal) {
				t.Errorf("%s: row %d: engine %v, reference %v", query, i, got[i], want[i].Values)
			}
		}
		fmt.Fprintf(&sb, "\n%s:\n\n```sql\n%s\n```\n\n%s", ex.title, query, markdownTable(schema, got))
	}
	return sb.String()
}

// TestFunctionsDoc: docs/functions.md is up to date with the registry and
// the engine, mentions every registered aggregate name, and its examples
// agree with the reference implementation.
func TestFunctionsDoc(t *testing.T) {
	doc := renderFunctionsDoc(t)
	if os.Getenv("VOLGA_UPDATE_DOCS") != "" {
		if err := os.WriteFile(functionsDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(functionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, n := range agg.Names() {
		if !strings.Contains(page, "### "+n+"\n") {
			t.Errorf("%s has no section for aggregate %q", functionsDoc, n)
		}
	}
	if page != doc {
		t.Errorf("%s is stale (the registry, an example's output or the text changed): regenerate it with\n\tVOLGA_UPDATE_DOCS=1 go test -run TestFunctionsDoc .", functionsDoc)
	}
}
