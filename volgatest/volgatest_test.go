package volgatest_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/volgatest"
)

// fakeT records what a helper reports instead of failing the test.
type fakeT struct {
	testing.TB
	helpers int
	errors  []string
	fatals  []string
}

func (f *fakeT) Helper() { f.helpers++ }
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

// mustPass fails t if the fake recorded any failure.
func (f *fakeT) mustPass(t *testing.T) {
	t.Helper()
	if len(f.errors)+len(f.fatals) > 0 || f.helpers == 0 {
		t.Fatalf("helpers=%d errors=%q fatals=%q", f.helpers, f.errors, f.fatals)
	}
}

// mustFail checks that exactly one error was recorded, containing every
// fragment.
func (f *fakeT) mustFail(t *testing.T, fragments ...string) {
	t.Helper()
	if len(f.errors) != 1 {
		t.Fatalf("want 1 error, got %q (fatals %q)", f.errors, f.fatals)
	}
	for _, s := range fragments {
		if !strings.Contains(f.errors[0], s) {
			t.Errorf("error %q lacks %q", f.errors[0], s)
		}
	}
}

const wantSpend = `
user_id,ts,amount,spend_1h,n_1h
u1,2024-01-01T00:00:00Z,10,10,1
u2,2024-01-01T00:10:00Z,7,7,1
u1,2024-01-01T00:30:00Z,5,15,2
u1,2024-01-01T01:15:00Z,1,6,2
`

func TestExpectPassesRightValues(t *testing.T) {
	got := volgatest.Run(t, spendQuery, volgatest.CSV(txEvents))
	ft := &fakeT{}
	if !volgatest.Expect(ft, got, wantSpend) {
		t.Error("Expect returned false")
	}
	ft.mustPass(t)
}

func TestExpectCatchesWrongValue(t *testing.T) {
	got := volgatest.Run(t, spendQuery, volgatest.CSV(txEvents))
	ft := &fakeT{}
	wrong := strings.Replace(wantSpend, "5,15,2", "5,16,2", 1)
	if volgatest.Expect(ft, got, wrong) {
		t.Error("Expect returned true")
	}
	ft.mustFail(t, `row 2 (user_id="u1"): column spend_1h: got 15, want 16`)
	if ft.helpers == 0 {
		t.Error("Expect did not call Helper")
	}
}

func TestExpectMissingAndExtraRows(t *testing.T) {
	got := volgatest.Run(t, spendQuery, volgatest.CSV(txEvents))
	lines := strings.Split(strings.TrimSpace(wantSpend), "\n")

	ft := &fakeT{}
	volgatest.Expect(ft, got, strings.Join(lines[:3], "\n"))
	ft.mustFail(t, "got 4 rows, want 2", "row 2: extra: {", "row 3: extra: {", `ts=2024-01-01T01:15:00Z`)

	ft = &fakeT{}
	more := strings.Join(append(lines, "u3,2024-01-01T02:00:00Z,1,1,1"), "\n")
	volgatest.Expect(ft, got, more)
	ft.mustFail(t, "got 4 rows, want 5", `row 4: missing: {user_id="u3"`)

	ft = &fakeT{}
	volgatest.Expect(ft, got, more, volgatest.AnyOrder())
	ft.mustFail(t, `want row 4 (user_id="u3"): missing`)
}

func TestExpectMissingColumn(t *testing.T) {
	ft := &fakeT{}
	volgatest.Expect(ft, []map[string]any{{"a": 1}}, []map[string]any{{"a": 1, "b": 2}})
	ft.mustFail(t, "row 0: column b: missing from got, want 2")
}

func TestExpectReportsAtMostTen(t *testing.T) {
	var got, want []map[string]any
	for i := range 30 {
		got = append(got, map[string]any{"k": int64(i), "v": 1.0})
		want = append(want, map[string]any{"k": i, "v": 2.0})
	}
	ft := &fakeT{}
	volgatest.Expect(ft, got, want, volgatest.Key("k"))
	ft.mustFail(t, "row 0 (k=0): column v: got 1, want 2", "row 9 (k=9)", "... and 20 more")
	if strings.Contains(ft.errors[0], "row 10 ") {
		t.Errorf("more than 10 reports: %s", ft.errors[0])
	}
}

func TestExpectTolerance(t *testing.T) {
	got := []map[string]any{{"x": 1.0 + 1e-12}}
	ft := &fakeT{}
	volgatest.Expect(ft, got, []map[string]any{{"x": 1.0}})
	ft.mustPass(t)

	ft = &fakeT{}
	volgatest.Expect(ft, got, []map[string]any{{"x": 1.0}}, volgatest.Tolerance(0))
	ft.mustFail(t, "column x: got 1.000000000001, want 1")

	got = []map[string]any{{"x": 100.5}}
	ft = &fakeT{}
	volgatest.Expect(ft, got, "x\n100")
	ft.mustFail(t, "got 100.5, want 100")
	ft = &fakeT{}
	volgatest.Expect(ft, got, "x\n100", volgatest.Tolerance(0.01))
	ft.mustPass(t)

	ft = &fakeT{}
	volgatest.Expect(ft, []map[string]any{{"x": math.NaN()}}, []map[string]any{{"x": math.NaN()}})
	ft.mustPass(t)
}

func TestExpectValueKinds(t *testing.T) {
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	got := []map[string]any{{
		"n": int64(3), "f": 3.0, "t": ts, "s": "7", "null": nil,
		"list": []any{int64(1), 2.5}, "m": map[string]any{"a": int64(1)},
	}}
	ft := &fakeT{}
	volgatest.Expect(ft, got, []map[string]any{{
		"n": 3, "f": 3, "t": "2024-01-01T00:00:00Z", "s": "7", "null": nil,
		"list": []any{1, 2.5}, "m": map[string]any{"a": 1},
	}})
	ft.mustPass(t)

	ft = &fakeT{}
	volgatest.Expect(ft, got, "n,f,t,s,null\n3,3.0,2024-01-01T00:00:00Z,7,") // "7" from CSV is 7
	ft.mustPass(t)

	ft = &fakeT{}
	volgatest.Expect(ft, got, []map[string]any{{"s": 7, "null": 0, "t": ts.Add(time.Millisecond)}})
	ft.mustFail(t, `column null: got NULL, want 0`, `column s: got "7", want 7`,
		"column t: got 2024-01-01T00:00:00Z, want 2024-01-01T00:00:00.001Z")
}

func TestExpectBadInput(t *testing.T) {
	ft := &fakeT{}
	volgatest.Expect(ft, 42, "x\n1")
	ft.mustFail(t, "got: rows are int")
	ft = &fakeT{}
	volgatest.Expect(ft, "x\n1", "x,y\n1,2,3")
	ft.mustFail(t, "want: CSV literal")
}

// Streaming within the bound equals batch, for any arrival order.
func TestStreamingShuffledEqualsBatch(t *testing.T) {
	var b strings.Builder
	b.WriteString("user_id,ts,amount\n")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		fmt.Fprintf(&b, "u%d,%s,%d\n", i%7, start.Add(time.Duration(i*i%997)*time.Minute).Format(time.RFC3339), i%13)
	}
	events := volgatest.CSV(b.String())
	batch := volgatest.Run(t, spendQuery, events)
	for seed := range uint64(5) {
		got := volgatest.Run(t, spendQuery, events,
			volgatest.Streaming(10*time.Minute), volgatest.Shuffled("ts", 10*time.Minute, seed))
		if got.Stats.LateDropped != 0 {
			t.Errorf("seed %d: %d late rows", seed, got.Stats.LateDropped)
		}
		volgatest.Expect(t, got, batch.Rows, volgatest.AnyOrder())
	}
}

func TestArrivalMakesLateRows(t *testing.T) {
	got := volgatest.Run(t, spendQuery, volgatest.CSV(txEvents),
		volgatest.Streaming(0), volgatest.Arrival([]int{3, 0, 1, 2}))
	if got.Stats.LateDropped != 3 || len(got.Rows) != 1 {
		t.Fatalf("late %d, rows %v", got.Stats.LateDropped, got.Rows)
	}
}

func TestRunFatals(t *testing.T) {
	for name, tc := range map[string]struct {
		query  any
		events volgatest.Events
		opts   []volgatest.Option
		want   string
	}{
		"bad sql":      {"SELEC x FROM tx", volgatest.CSV(txEvents), nil, "volgatest:"},
		"bad query":    {42, volgatest.CSV(txEvents), nil, "query is int"},
		"bad csv":      {spendQuery, volgatest.CSV("a,b\n1,2,3"), nil, "CSV events"},
		"bad perm":     {spendQuery, volgatest.CSV(txEvents), []volgatest.Option{volgatest.Arrival([]int{0, 0, 1, 2})}, "not a permutation"},
		"short perm":   {spendQuery, volgatest.CSV(txEvents), []volgatest.Option{volgatest.Arrival([]int{0})}, "1 indices for 4 events"},
		"bad shuffled": {spendQuery, volgatest.CSV(txEvents), []volgatest.Option{volgatest.Shuffled("when", time.Second, 1)}, `no column "when"`},
		"bad maps":     {spendQuery, volgatest.Maps([]map[string]any{{"a": 1}, {"a": "x"}}), nil, "mixes"},
	} {
		t.Run(name, func(t *testing.T) {
			ft := &fakeT{}
			if r := volgatest.Run(ft, tc.query, tc.events, tc.opts...); r != nil {
				t.Errorf("got a result")
			}
			if len(ft.fatals) != 1 || !strings.Contains(ft.fatals[0], tc.want) {
				t.Errorf("fatals %q, want one containing %q", ft.fatals, tc.want)
			}
		})
	}
}

func TestTableAndBuilderAndLookup(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	events := volgatest.Table(schema, [][]any{
		{1, t0, 2.5},
		{1, "2024-01-01T00:20:00Z", 1},
		{2, t0, nil},
	})
	if events.Err() != nil || events.Len() != 3 {
		t.Fatal(events.Err())
	}
	b := pipeline.From("tx").EventTime("ts").Select("user_id", "ts").
		Agg("spend_1h", pipeline.Sum("amount"), pipeline.Over("user_id").Range(time.Hour))
	got := volgatest.Run(t, b, events, volgatest.Streaming(time.Hour))
	volgatest.Expect(t, got, []map[string]any{
		{"user_id": 1, "ts": t0, "spend_1h": 2.5},
		{"user_id": 2, "ts": t0, "spend_1h": nil},
		{"user_id": 1, "ts": t0.Add(20 * time.Minute), "spend_1h": 3.5},
	}, volgatest.AnyOrder())
	f := got.Lookup(t, map[string]any{"user_id": 1}, t0.Add(70*time.Minute))
	volgatest.Expect(t, []map[string]any{f}, []map[string]any{{"spend_1h": 1.0}})

	bad := volgatest.Table(schema, [][]any{{"x", t0, 1.0}})
	if bad.Err() == nil || !strings.Contains(bad.Err().Error(), `column "user_id"`) {
		t.Errorf("Table with a bad value: %v", bad.Err())
	}
	if e := volgatest.Table(schema, [][]any{{1}}); e.Err() == nil {
		t.Error("Table with a short row: no error")
	}
}

func TestMapsInference(t *testing.T) {
	e := volgatest.Maps([]map[string]any{
		{"i": 1, "f": 1, "b": true, "t": "2024-01-01T00:00:00Z", "s": "x"},
		{"i": int64(2), "f": 2.5, "t": time.Now(), "s": "2024-01-01T00:00:00Z"},
	})
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	want := "b:bool f:float64 i:int64 s:utf8 t:timestamp[ms, tz=UTC]"
	var parts []string
	for _, f := range e.Schema().Fields() {
		parts = append(parts, f.Name+":"+f.Type.String())
	}
	if got := strings.Join(parts, " "); got != want {
		t.Errorf("schema %s, want %s", got, want)
	}
}
