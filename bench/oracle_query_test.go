package bench

import (
	"fmt"
	"slices"
	"strings"
)

// The oracle queries are built from parts so that each can be rendered
// twice: as volga SQL, and as the DuckDB SQL that must give the same
// result. The two differ in exactly three ways, all about making DuckDB's
// answer deterministic or spelling a function DuckDB's way:
//
//  1. count_distinct(x) becomes count(DISTINCT x).
//  2. ROWS frames order by (ts, id) in DuckDB. Volga orders rows with equal
//     event time by arrival, and id is the arrival position in every
//     oracle data set, so the two orders are the same. RANGE frames keep
//     ORDER BY ts: DuckDB allows only one ORDER BY key with an offset.
//  3. first_value(x) / last_value(x) over a RANGE frame become
//     arg_min_null(x, epoch_ms(ts) * 1000000 + id) / arg_max_null(...):
//     the value at the earliest / latest row of the frame in (ts, arrival)
//     order, a NULL x included (as first_value RESPECT NULLS). DuckDB's own
//     first_value under ORDER BY ts picks an unspecified row among peers
//     (rows with equal ts), and the random data has many peers, so the
//     native form is only compared on data without peers in the partition
//     (TestOracleNativeFirstLast), which also checks that this rewrite
//     means what first_value means.

// frame is a window frame clause.
type frame struct {
	sql  string // e.g. "RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW"
	rows bool   // a ROWS frame
}

// exclude returns the frame with EXCLUDE CURRENT ROW.
func (f frame) exclude() frame {
	return frame{sql: f.sql + " EXCLUDE CURRENT ROW", rows: f.rows}
}

func rangeFrame(lo, hi string) frame {
	return frame{sql: "RANGE BETWEEN " + lo + " AND " + hi}
}

func rowsFrame(n int) frame {
	return frame{sql: fmt.Sprintf("ROWS BETWEEN %d PRECEDING AND CURRENT ROW", n), rows: true}
}

// window is a window definition: named (in the WINDOW clause) or inline.
type window struct {
	name      string
	partition string // e.g. "user_id, merchant"
	frame     frame
	inline    bool // rendered as OVER (spec) at each use
}

func (w window) spec(duck bool) string {
	order := "ts"
	if duck && w.frame.rows {
		order = "ts, id"
	}
	return fmt.Sprintf("PARTITION BY %s ORDER BY %s %s", w.partition, order, w.frame.sql)
}

// feature is one windowed aggregate in the SELECT list.
type feature struct {
	fn, arg string // fn(arg); arg may be "*" or "DISTINCT x"
	win     *window
	alias   string
}

func (f feature) sql(duck bool) string {
	call := fmt.Sprintf("%s(%s)", f.fn, f.arg)
	if duck {
		switch {
		case f.fn == "count_distinct":
			call = fmt.Sprintf("count(DISTINCT %s)", f.arg)
		case (f.fn == "first_value" || f.fn == "last_value") && !f.win.frame.rows:
			fn := map[string]string{"first_value": "arg_min_null", "last_value": "arg_max_null"}[f.fn]
			call = fmt.Sprintf("%s(%s, epoch_ms(ts) * 1000000 + id)", fn, f.arg)
		}
	}
	over := f.win.name
	if f.win.inline {
		over = "(" + f.win.spec(duck) + ")"
	}
	return fmt.Sprintf("%s OVER %s AS %s", call, over, f.alias)
}

// oracleQuery is one query of the oracle suite over table t.
type oracleQuery struct {
	name     string
	project  []string // plain SELECT items before the features
	features []feature
	where    string
	// nativeFirstLast renders first_value/last_value unchanged for DuckDB
	// (only meaningful on data without peers).
	nativeFirstLast bool
}

// partitionsBy reports whether every window of q partitions by col (and
// maybe more).
func (q oracleQuery) partitionsBy(col string) bool {
	for _, f := range q.features {
		if !slices.Contains(strings.Split(f.win.partition, ", "), col) {
			return false
		}
	}
	return len(q.features) > 0
}

// volga renders the query in volga's dialect.
func (q oracleQuery) volga() string { return q.render(false) }

// duck renders the query for DuckDB, ordered by id so the rows line up
// with volga's batch output (input order, and id is the input position).
func (q oracleQuery) duck() string {
	return "SELECT * FROM (\n" + q.render(!q.nativeFirstLast) + "\n) ORDER BY id"
}

func (q oracleQuery) render(duck bool) string {
	var b strings.Builder
	items := append([]string(nil), q.project...)
	var wins []*window
	for _, f := range q.features {
		items = append(items, f.sql(duck))
		if !f.win.inline && !containsWin(wins, f.win) {
			wins = append(wins, f.win)
		}
	}
	b.WriteString("SELECT " + strings.Join(items, ",\n       "))
	b.WriteString("\nFROM t")
	if q.where != "" {
		b.WriteString("\nWHERE " + q.where)
	}
	for i, w := range wins {
		if i == 0 {
			b.WriteString("\nWINDOW ")
		} else {
			b.WriteString(",\n       ")
		}
		fmt.Fprintf(&b, "%s AS (%s)", w.name, w.spec(duck))
	}
	return b.String()
}

func containsWin(ws []*window, w *window) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// aggs is a list of (fn, arg) pairs applied to one window.
type aggs [][2]string

// over makes features of every (fn, arg) in a over w, named
// fn_arg_window.
func (a aggs) over(w *window) []feature {
	var fs []feature
	for _, fa := range a {
		arg := strings.NewReplacer("*", "star", "DISTINCT ", "dist_", " ", "").Replace(fa[1])
		fs = append(fs, feature{fn: fa[0], arg: fa[1], win: w, alias: fmt.Sprintf("%s_%s_%s", fa[0], arg, w.name)})
	}
	return fs
}

// allAggs is every standard aggregate of SPEC.md section 4, over int64,
// float64, string and timestamp arguments.
var allAggs = aggs{
	{"count", "*"}, {"count", "amount"}, {"count", "merchant"},
	{"sum", "qty"}, {"sum", "amount"},
	{"avg", "amount"}, {"avg", "qty"},
	{"min", "amount"}, {"max", "amount"}, {"min", "qty"}, {"max", "qty"},
	{"min", "merchant"}, {"max", "merchant"}, {"min", "ts"}, {"max", "ts"},
	{"stddev_samp", "amount"}, {"stddev_pop", "amount"},
	{"var_samp", "qty"}, {"var_pop", "qty"},
	{"stddev", "price"}, {"variance", "price"}, {"var_pop", "price"}, {"stddev_pop", "price"},
	{"first_value", "amount"}, {"last_value", "amount"},
	{"first_value", "merchant"}, {"last_value", "qty"},
	{"count_distinct", "merchant"}, {"count", "DISTINCT price"}, {"count_distinct", "qty"},
}

// someAggs is a smaller mix for the secondary windows of a query.
var someAggs = aggs{
	{"count", "*"}, {"sum", "amount"}, {"sum", "qty"}, {"avg", "price"},
	{"max", "qty"}, {"min", "merchant"}, {"var_samp", "amount"}, {"stddev_pop", "price"},
	{"first_value", "qty"}, {"last_value", "merchant"}, {"count_distinct", "price"},
}

// frameKind is one frame shape of SPEC.md section 3, instantiated at three
// sizes (one per window of a query).
type frameKind struct {
	name   string
	frames [3]frame
}

var frameKinds = []frameKind{
	{"range_current", [3]frame{
		rangeFrame("INTERVAL '10' MINUTE PRECEDING", "CURRENT ROW"),
		rangeFrame("INTERVAL '1' HOUR PRECEDING", "CURRENT ROW"),
		rangeFrame("INTERVAL '90' SECONDS PRECEDING", "CURRENT ROW"),
	}},
	{"range_offset", [3]frame{
		rangeFrame("INTERVAL '1' HOUR PRECEDING", "INTERVAL '5' MINUTE PRECEDING"),
		rangeFrame("INTERVAL '30' MINUTES PRECEDING", "INTERVAL '1' MINUTE PRECEDING"),
		rangeFrame("INTERVAL '2' HOURS PRECEDING", "INTERVAL '90000' MILLISECOND PRECEDING"),
	}},
	// Point frames hold only the rows exactly that long before the current
	// one (two thirds of the rows are on the minute, so there are some).
	{"range_point", [3]frame{
		rangeFrame("INTERVAL '1' MINUTE PRECEDING", "INTERVAL '1' MINUTE PRECEDING"),
		rangeFrame("INTERVAL '10' MINUTE PRECEDING", "INTERVAL '600' SECOND PRECEDING"),
		rangeFrame("INTERVAL '5' MINUTE PRECEDING", "INTERVAL '5' MINUTE PRECEDING"),
	}},
	{"unbounded_current", [3]frame{
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW"),
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW"),
		rangeFrame("UNBOUNDED PRECEDING", "CURRENT ROW"),
	}},
	{"unbounded_offset", [3]frame{
		rangeFrame("UNBOUNDED PRECEDING", "INTERVAL '30' MINUTE PRECEDING"),
		rangeFrame("UNBOUNDED PRECEDING", "INTERVAL '1' HOUR PRECEDING"),
		rangeFrame("UNBOUNDED PRECEDING", "INTERVAL '10' SECOND PRECEDING"),
	}},
	{"rows", [3]frame{rowsFrame(5), rowsFrame(1), rowsFrame(20)}},
}

// oracleQueries is the suite: for every frame kind, with and without
// EXCLUDE CURRENT ROW, one query with three windows partitioned by
// user_id (every aggregate), by (user_id, merchant) and by merchant (a
// string key with NULLs); then queries mixing frame kinds with a WHERE
// clause, projected expressions, expression arguments and inline windows.
func oracleQueries() []oracleQuery {
	var qs []oracleQuery
	for _, k := range frameKinds {
		for _, excl := range []bool{false, true} {
			name := k.name
			fr := k.frames
			if excl {
				name += "_exclude"
				for i := range fr {
					fr[i] = fr[i].exclude()
				}
			}
			w1 := &window{name: "w1", partition: "user_id", frame: fr[0]}
			w2 := &window{name: "w2", partition: "user_id, merchant", frame: fr[1]}
			w3 := &window{name: "w3", partition: "merchant", frame: fr[2]}
			q := oracleQuery{name: name, project: []string{"id", "user_id", "merchant", "ts"}}
			q.features = append(q.features, allAggs.over(w1)...)
			q.features = append(q.features, someAggs.over(w2)...)
			q.features = append(q.features, someAggs.over(w3)...)
			qs = append(qs, q)
		}
	}

	day := &window{name: "wd", partition: "user_id", frame: rangeFrame("INTERVAL '1' DAY PRECEDING", "CURRENT ROW")}
	rows := &window{name: "wr", partition: "merchant, user_id", frame: rowsFrame(3).exclude()}
	inline := &window{name: "inline", partition: "user_id", inline: true,
		frame: rangeFrame("INTERVAL '15' MINUTE PRECEDING", "CURRENT ROW").exclude()}
	mixed := func(name, where string) oracleQuery {
		return oracleQuery{
			name:    name,
			where:   where,
			project: []string{"id", "user_id", "merchant", "ts", "amount * 2 + 1 AS amount_x", "qty + 1 AS qty1"},
			features: []feature{
				{fn: "sum", arg: "amount * qty", win: day, alias: "sum_amount_qty_d"},
				{fn: "count", arg: "*", win: day, alias: "n_d"},
				{fn: "avg", arg: "amount", win: day, alias: "avg_amount_d"},
				{fn: "max", arg: "amount", win: rows, alias: "max_amount_r"},
				{fn: "last_value", arg: "amount", win: rows, alias: "last_amount_r"},
				{fn: "count_distinct", arg: "merchant", win: rows, alias: "nd_merchant_r"},
				{fn: "sum", arg: "qty", win: inline, alias: "sum_qty_i"},
				{fn: "min", arg: "price", win: inline, alias: "min_price_i"},
				{fn: "first_value", arg: "qty", win: inline, alias: "first_qty_i"},
				{fn: "stddev_samp", arg: "amount", win: inline, alias: "sd_amount_i"},
			},
		}
	}
	// ROWS BETWEEN 0 PRECEDING: the current row alone, and with EXCLUDE
	// CURRENT ROW an always-empty frame. Valid SQL (DuckDB, PostgreSQL);
	// kept apart so that rejecting it does not hide the other ROWS cases.
	zero := &window{name: "w0", partition: "user_id", frame: rowsFrame(0)}
	zeroX := &window{name: "w0x", partition: "user_id", frame: rowsFrame(0).exclude()}
	edge := aggs{{"count", "*"}, {"sum", "qty"}, {"avg", "amount"}, {"var_pop", "amount"}, {"first_value", "merchant"}, {"count_distinct", "price"}}
	qs = append(qs, oracleQuery{name: "rows_zero", project: []string{"id", "ts"},
		features: append(edge.over(zero), edge.over(zeroX)...)})

	qs = append(qs,
		mixed("mixed", ""),
		mixed("mixed_where", "(qty IS NULL OR qty > 10) AND merchant <> 'shop-07'"),
	)
	return qs
}
