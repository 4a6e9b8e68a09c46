package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/volga-go/volga/internal/testutil"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/volgatest"
)

// TestSpecEmptyAndNullFrames checks the "empty frame / all NULL" column
// of SPEC section 4 and the one-value cases, on specEvents with the frame
// of the last second before each row, the row excluded: id 1 (the first
// row of key a) has an empty frame, id 7 (1500) has id 1 alone (x = 1),
// and id 2 (2000) has ids 1, 7 and its peer 3, whose nullif(x, x) values
// are all NULL.
func TestSpecEmptyAndNullFrames(t *testing.T) {
	const w = " OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)"
	none := []sink.MapEntry{}
	tests := []struct {
		call                 string
		empty, one, allNulls any
	}{
		{"count(*)", int64(0), int64(1), int64(3)}, // count(*) counts rows, NULL or not
		{"count(%s)", int64(0), int64(1), int64(0)},
		{"sum(%s)", nil, int64(1), nil},
		{"avg(%s)", nil, 1.0, nil},
		{"min(%s)", nil, int64(1), nil},
		{"max(%s)", nil, int64(1), nil},
		{"stddev_samp(%s)", nil, nil, nil}, // samp of one value: NULL
		{"stddev(%s)", nil, nil, nil},
		{"var_samp(%s)", nil, nil, nil},
		{"variance(%s)", nil, nil, nil},
		{"stddev_pop(%s)", nil, 0.0, nil},
		{"var_pop(%s)", nil, 0.0, nil},
		{"first_value(%s)", nil, int64(1), nil},
		{"last_value(%s)", nil, int64(1), nil},
		{"count_distinct(%s)", int64(0), int64(1), int64(0)},
		{"count(DISTINCT %s)", int64(0), int64(1), int64(0)},
		{"top1_ratio(%s)", 0.0, 1.0, 0.0},
		{"topn_frequency(%s, 2)", []any{}, []any{map[string]any{"value": int64(1), "count": int64(1)}}, []any{}},
		{"count_where(%s, x > 0)", int64(0), int64(1), int64(0)},
		{"sum_where(%s, x > 0)", nil, int64(1), nil},
		{"count_cate(%s, k)", none, []sink.MapEntry{{Key: "a", Value: int64(1)}}, none},
		{"sum_cate(%s, k)", none, []sink.MapEntry{{Key: "a", Value: int64(1)}}, none},
		{"ew_avg(%s, 0.5)", nil, 1.0, nil},
		{"drawdown(%s)", nil, 0.0, nil}, // one value: 0
	}
	for _, tt := range tests {
		t.Run(tt.call, func(t *testing.T) {
			q := fmt.Sprintf("SELECT id, "+tt.call+w+" AS v, "+tt.call+w+" AS n FROM tx", "x", "nullif(x, x)")
			if tt.call == "count(*)" {
				q = "SELECT id, count(*)" + w + " AS v, count(*)" + w + " AS n FROM tx"
			}
			got := volgatest.Run(t, q, volgatest.CSV(specEvents))
			byID := map[int64]map[string]any{}
			for _, r := range got.Rows {
				byID[r["id"].(int64)] = r
			}
			for _, c := range []struct {
				what string
				v    any
				want any
			}{
				{"empty frame (id 1)", byID[1]["v"], tt.empty},
				{"one value (id 7)", byID[7]["v"], tt.one},
				{"all NULL (id 2)", byID[2]["n"], tt.allNulls},
			} {
				if !testutil.Equal(c.v, c.want) {
					t.Errorf("%s: %s = %#v, want %#v", tt.call, c.what, c.v, c.want)
				}
			}
		})
	}
}

// groupEvents is the input of the SPEC section 5 tests, ts in epoch
// milliseconds: key a at 500, 1500 and 2500, the NULL key at 1000 and
// 1200, key b before the epoch at -700.
const groupEvents = `
id,k,ts,x
1,a,500,1
2,a,1500,2
3,,1000,4
4,a,2500,8
5,b,-700,16
6,,1200,32
`

// TestSpecGroupWindows checks SPEC section 5 by hand: one row per key and
// window [start, end) that received a row, windows aligned to the Unix
// epoch (also before it), NULL a key of its own; in batch mode ordered by
// window start, then by the arrival of each window's first row.
func TestSpecGroupWindows(t *testing.T) {
	type row struct {
		k          any
		start, end int64
		n, s       int64
	}
	tests := []struct {
		name, group string
		want        []row
	}{
		{
			// Windows of 2 s: [-2000, 0) holds b's -700; [0, 2000) a's 500
			// and 1500 and NULL's 1000 and 1200; [2000, 4000) a's 2500.
			"tumble", "tumble(ts, INTERVAL '2' SECOND)",
			[]row{{"b", -2000, 0, 1, 16}, {"a", 0, 2000, 2, 3}, {nil, 0, 2000, 2, 36}, {"a", 2000, 4000, 1, 8}},
		},
		{
			// Windows of 2 s every second: a row at t is in the windows
			// starting at floor(t/1000)*1000 and one second before. a's
			// 500 is in [-1000, 1000) and [0, 2000); 1500 in [0, 2000)
			// and [1000, 3000); 2500 in [1000, 3000) and [2000, 4000).
			// At start -1000 a's window began with id 1, b's with id 5.
			"hop", "hop(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND)",
			[]row{
				{"b", -2000, 0, 1, 16},
				{"a", -1000, 1000, 1, 1}, {"b", -1000, 1000, 1, 16},
				{"a", 0, 2000, 2, 3}, {nil, 0, 2000, 2, 36},
				{"a", 1000, 3000, 2, 10}, {nil, 1000, 3000, 2, 36},
				{"a", 2000, 4000, 1, 8},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := "SELECT k, window_start, window_end, count(*) AS n, sum(x) AS s FROM tx GROUP BY k, " + tt.group
			got := volgatest.Run(t, q, volgatest.CSV(groupEvents))
			if len(got.Rows) != len(tt.want) {
				t.Fatalf("%d rows, want %d: %v", len(got.Rows), len(tt.want), got.Rows)
			}
			for i, w := range tt.want {
				r := got.Rows[i]
				if r["k"] != w.k || r["window_start"] != w.start || r["window_end"] != w.end || r["n"] != w.n || r["s"] != w.s {
					t.Errorf("row %d: %v, want %+v", i, r, w)
				}
			}
		})
	}
}

// TestSpecNames checks the naming rules of SPEC section 2 as DuckDB has
// them: identifiers match columns whatever their case, quoted or not
// ("double quotes" and `backquotes`), window names too; an output column
// is named by its alias as written, else by the column as the query
// writes it, else by the item's text (an aggregate without its OVER
// clause).
func TestSpecNames(t *testing.T) {
	q := `SELECT ID, "k" AS "Key", ` + "`X`" + ` * 2, x + 1 AS "x plus 1",
  SUM(x) OVER "W" AS Total, count(*) over w
FROM TX
WINDOW w AS (PARTITION BY K ORDER BY Ts ROWS 1 PRECEDING)`
	got := volgatest.Run(t, q, volgatest.CSV(specEvents))
	var names []string
	for _, f := range got.Schema.Fields() {
		names = append(names, f.Name)
	}
	want := []string{"ID", "Key", "`X` * 2", "x plus 1", "Total", "count(*)"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("output columns %q, want %q", names, want)
	}
	// id 2: x = 2, its key's rows before it in (ts, arrival) order end
	// with id 7 (x = 128).
	r := got.Rows[1]
	if r["ID"] != int64(2) || r["Key"] != "a" || r["`X` * 2"] != int64(4) || r["x plus 1"] != int64(3) || r["Total"] != int64(130) || r["count(*)"] != int64(2) {
		t.Errorf("row of id 2: %v", r)
	}
}
