package testutil

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// The cross-mode suites (modes_test.go in the root package, and the
// DuckDB point-in-time oracle in bench/) share what is defined here: the
// random events, their arrival order, the windows of the queries and the
// random (key, time) query points, so that both check the same data.

// ModesMaxOutOfOrder is the out-of-orderness (ms) of the arrival order
// ModesData returns: with a watermark of the newest event time minus
// this bound, no row is late.
const ModesMaxOutOfOrder int64 = 5 * 60_000

// ModesEventConfig shapes the events of the cross-mode suites: two
// users and three merchants (NULL keys too), an event every 30 s on
// average over hours, a quarter of them at the previous event's time
// (peers), NULLs in every value column. With 700 rows each user has
// about 320 events, so late lookups over the day-long window merge tiles
// (frames of more than 256 rows).
func ModesEventConfig(rows int) EventConfig {
	return EventConfig{Rows: rows, Users: 2, Merchants: 3, Start: 1_700_000_000_000, StepMs: 10_000, MaxSteps: 6,
		DupRate: 0.25, NullRate: 0.15, NullKeys: true}
}

// ModesData generates rows events (MLEventSchema) for seed and returns
// them in a random arrival order within ModesMaxOutOfOrder (rows with
// equal event time keep their generated order): row i of the result is
// the i-th to arrive, and id is still the position in event-time order.
func ModesData(seed uint64, rows int) *Table {
	rng := Rand(seed)
	tab := MLEvents(rng, ModesEventConfig(rows))
	return tab.Subset(Shuffle(rng, tab, "ts", nil, ModesMaxOutOfOrder))
}

// ModesWhere is the WHERE clause of the cross-mode queries (ModesKeep is
// the same predicate on a row of MLEventSchema).
const ModesWhere = "amount IS NULL OR amount > -40"

// ModesKeep reports whether row passes ModesWhere.
func ModesKeep(row []any) bool {
	a := row[EventSchema.FieldIndices("amount")[0]]
	return a == nil || a.(int64) > -40
}

// ModesWindow is a named window of a cross-mode query with its
// aggregates.
type ModesWindow struct {
	Name  string
	Keys  []string
	Frame Frame
	Aggs  []Agg
}

const (
	modesMinute = int64(60_000)
	modesHour   = 60 * modesMinute
	modesDay    = 24 * modesHour
)

// ModesLookupWindows are the windows of the query every mode serves
// (lookups included: no UNBOUNDED frame): RANGE over an hour with and
// without EXCLUDE CURRENT ROW, ROWS with and without it, a RANGE frame
// ending before the current row over the string key, and two day-long
// RANGE frames (one per key) whose lookups merge tiles.
var ModesLookupWindows = []ModesWindow{
	{Name: "h1", Keys: []string{"user_id"}, Frame: Frame{Preceding: modesHour}, Aggs: []Agg{
		{Func: "count"}, {Func: "count", Arg: "price"}, {Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"},
		{Func: "avg", Arg: "price"}, {Func: "min", Arg: "category"}, {Func: "max", Arg: "amount"},
		{Func: "var_samp", Arg: "price"}, {Func: "stddev_pop", Arg: "amount"},
		{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "category"},
		{Func: "count_distinct", Arg: "category"},
		{Func: "top", Arg: "amount", Param: int64(3)}, {Func: "topn_frequency", Arg: "category", Param: int64(2)},
		{Func: "top1_ratio", Arg: "tag"}, {Func: "count_where", Cond: "flag"}, {Func: "sum_where", Arg: "price", Cond: "flag"},
		{Func: "avg_cate", Arg: "price", Cate: "merchant"}, {Func: "count_cate", Arg: "amount", Cate: "category"},
		{Func: "ew_avg", Arg: "price", Param: 0.3}, {Func: "drawdown", Arg: "score"},
		{Func: "approx_percentile", Arg: "price", Param: 0.5}, {Func: "approx_count_distinct", Arg: "tag"},
	}},
	{Name: "h1x", Keys: []string{"user_id"}, Frame: Frame{Preceding: modesHour, ExcludeCurrent: true}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "price"}, {Func: "max", Arg: "category"}, {Func: "last_value", Arg: "amount"},
		{Func: "avg", Arg: "amount"},
	}},
	{Name: "r4", Keys: []string{"user_id"}, Frame: Frame{Rows: true, Preceding: 4}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "price"}, {Func: "avg", Arg: "amount"}, {Func: "first_value", Arg: "category"},
		{Func: "last_value", Arg: "price"}, {Func: "min", Arg: "price"}, {Func: "top", Arg: "score", Param: int64(2)},
	}},
	{Name: "r3x", Keys: []string{"user_id"}, Frame: Frame{Rows: true, Preceding: 3, ExcludeCurrent: true}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "max", Arg: "price"}, {Func: "first_value", Arg: "price"},
	}},
	{Name: "m30", Keys: []string{"merchant"}, Frame: Frame{Preceding: 30 * modesMinute, EndPreceding: 5 * modesMinute}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "avg", Arg: "price"}, {Func: "min", Arg: "amount"},
		{Func: "max", Arg: "category"}, {Func: "var_pop", Arg: "price"}, {Func: "first_value", Arg: "price"},
		{Func: "count_distinct", Arg: "user_id"},
	}},
	{Name: "d1", Keys: []string{"user_id"}, Frame: Frame{Preceding: modesDay}, Aggs: []Agg{
		{Func: "count"}, {Func: "count", Arg: "amount"}, {Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"},
		{Func: "avg", Arg: "price"}, {Func: "min", Arg: "price"}, {Func: "max", Arg: "amount"}, {Func: "min", Arg: "category"},
		{Func: "var_samp", Arg: "price"}, {Func: "stddev_samp", Arg: "amount"},
		{Func: "first_value", Arg: "price"}, {Func: "last_value", Arg: "amount"}, {Func: "count_distinct", Arg: "category"},
		{Func: "topn_frequency", Arg: "tag", Param: int64(3)}, {Func: "sum_cate", Arg: "amount", Cate: "category"},
		{Func: "max_where", Arg: "price", Cond: "flag"}, {Func: "drawdown", Arg: "score"},
	}},
	{Name: "m12", Keys: []string{"merchant"}, Frame: Frame{Preceding: 12 * modesHour}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "price"}, {Func: "avg", Arg: "amount"}, {Func: "max", Arg: "price"},
		{Func: "min", Arg: "category"}, {Func: "var_pop", Arg: "amount"}, {Func: "last_value", Arg: "category"},
		{Func: "top1_ratio", Arg: "category"},
	}},
}

// ModesUnboundedWindows are the windows of the second query, with
// UNBOUNDED PRECEDING frames (which lookups do not serve).
var ModesUnboundedWindows = []ModesWindow{
	{Name: "u", Keys: []string{"user_id"}, Frame: Frame{Unbounded: true}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "amount"}, {Func: "sum", Arg: "price"}, {Func: "avg", Arg: "price"},
		{Func: "min", Arg: "category"}, {Func: "max", Arg: "price"}, {Func: "var_samp", Arg: "price"},
		{Func: "first_value", Arg: "amount"}, {Func: "last_value", Arg: "price"}, {Func: "count_distinct", Arg: "category"},
		{Func: "top", Arg: "amount", Param: int64(2)}, {Func: "sum_where", Arg: "price", Cond: "flag"},
	}},
	{Name: "u10", Keys: []string{"merchant"}, Frame: Frame{Unbounded: true, EndPreceding: 10 * modesMinute}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "price"}, {Func: "max", Arg: "amount"}, {Func: "first_value", Arg: "category"},
	}},
	{Name: "ux", Keys: []string{"user_id"}, Frame: Frame{Unbounded: true, ExcludeCurrent: true}, Aggs: []Agg{
		{Func: "count"}, {Func: "sum", Arg: "price"}, {Func: "last_value", Arg: "amount"}, {Func: "stddev_pop", Arg: "price"},
	}},
}

// FeatureName is the output column of aggregate a over window w.
func (w ModesWindow) FeatureName(a Agg) string { return w.Name + "_" + a.Name() }

// FrameSQL renders a frame with the largest unit that divides it exactly
// (HOUR, MINUTE, SECOND or MILLISECOND).
func FrameSQL(f Frame) string {
	iv := func(ms int64) string {
		for _, u := range []struct {
			name string
			ms   int64
		}{{"DAY", modesDay}, {"HOUR", modesHour}, {"MINUTE", modesMinute}, {"SECOND", 1000}} {
			if ms%u.ms == 0 {
				return fmt.Sprintf("INTERVAL '%d' %s", ms/u.ms, u.name)
			}
		}
		return fmt.Sprintf("INTERVAL '%d' MILLISECOND", ms)
	}
	var s string
	end := "CURRENT ROW"
	if f.EndPreceding > 0 {
		end = iv(f.EndPreceding) + " PRECEDING"
	}
	switch {
	case f.Rows:
		s = fmt.Sprintf("ROWS BETWEEN %d PRECEDING AND CURRENT ROW", f.Preceding)
	case f.Unbounded:
		s = "RANGE BETWEEN UNBOUNDED PRECEDING AND " + end
	default:
		s = "RANGE BETWEEN " + iv(f.Preceding) + " PRECEDING AND " + end
	}
	if f.ExcludeCurrent {
		s += " EXCLUDE CURRENT ROW"
	}
	return s
}

// ModesSQL renders the volga query over table with the given windows:
// id, the keys, ts and amount, then every aggregate of every window in
// order, under ModesWhere.
func ModesSQL(table string, windows []ModesWindow) string {
	items := []string{"id", "user_id", "merchant", "ts", "amount"}
	var defs []string
	for _, w := range windows {
		for _, a := range w.Aggs {
			items = append(items, fmt.Sprintf("%s OVER %s AS %s", a.SQL(), w.Name, w.FeatureName(a)))
		}
		defs = append(defs, fmt.Sprintf("%s AS (PARTITION BY %s ORDER BY ts %s)", w.Name, strings.Join(w.Keys, ", "), FrameSQL(w.Frame)))
	}
	return "SELECT " + strings.Join(items, ",\n  ") + "\nFROM " + table + "\nWHERE " + ModesWhere + "\nWINDOW " + strings.Join(defs, ",\n  ")
}

// ModesPoint is a (key, time) query point: a lookup, a spine row.
type ModesPoint struct {
	User     any // int64 or nil
	Merchant any // string or nil
	T        int64
}

// ModesSpineSchema is the schema of a spine of ModesPoints: a label, the
// key columns and the time, typed as in MLEventSchema.
var ModesSpineSchema = arrow.NewSchema([]arrow.Field{
	{Name: "label", Type: arrow.BinaryTypes.String},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "merchant", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// ModesSpine is the spine of points: label "p<i>", user_id, merchant, ts.
func ModesSpine(points []ModesPoint) *Table {
	t := &Table{Schema: ModesSpineSchema}
	for i, p := range points {
		t.Rows = append(t.Rows, []any{fmt.Sprintf("p%d", i), p.User, p.Merchant, p.T})
	}
	return t
}

// ModesPoints draws n query points over the events of tab (MLEventSchema):
// many exactly at an event's (user, merchant, time), others near one, at
// a frame edge after one (an hour, 5 or 30 minutes later), at random
// times and keys (a user and a merchant without events, NULL keys),
// after the last event, before the first, and repeats of earlier points.
func ModesPoints(rng *rand.Rand, tab *Table, n int) []ModesPoint {
	cfg := ModesEventConfig(0)
	uc, mc, tc := tab.Col("user_id"), tab.Col("merchant"), tab.Col("ts")
	lo, hi := tab.Rows[0][tc].(int64), tab.Rows[0][tc].(int64)
	for _, r := range tab.Rows {
		lo, hi = min(lo, r[tc].(int64)), max(hi, r[tc].(int64))
	}
	randUser := func() any {
		if rng.IntN(8) == 0 {
			return nil
		}
		return int64(1 + rng.IntN(cfg.Users+1)) // user Users+1 has no events
	}
	randMerchant := func() any {
		if rng.IntN(8) == 0 {
			return nil
		}
		return fmt.Sprintf("m%d", rng.IntN(cfg.Merchants+1)) // m<Merchants> has no events
	}
	var out []ModesPoint
	for len(out) < n {
		r := tab.Rows[rng.IntN(len(tab.Rows))]
		p := ModesPoint{User: r[uc], Merchant: r[mc], T: r[tc].(int64)}
		switch k := rng.IntN(20); {
		case k < 8: // exactly at an event
		case k < 11:
			p.T += rng.Int64N(240_001) - 120_000
		case k < 13:
			p.T += []int64{modesHour, 5 * modesMinute, 30 * modesMinute, 1, modesHour + 1, 12 * modesHour}[rng.IntN(6)]
		case k < 15:
			p = ModesPoint{User: randUser(), Merchant: randMerchant(), T: lo + rng.Int64N(hi-lo+1)}
		case k < 17:
			p = ModesPoint{User: randUser(), Merchant: randMerchant(), T: hi + rng.Int64N(36*modesHour)}
		case k < 18:
			p = ModesPoint{User: randUser(), Merchant: randMerchant(), T: lo - rng.Int64N(2*modesHour)}
		default:
			if len(out) > 0 {
				p = out[rng.IntN(len(out))]
			}
		}
		out = append(out, p)
	}
	return out
}
