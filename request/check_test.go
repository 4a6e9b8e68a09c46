package request_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/request"
)

const logText = `{"key":{"user_id":1},"at":"2024-01-03T10:00:00Z","watermark":"+inf","features":{"n":2,"s":3.5,"m":{"a":1},"l":[1,2]}}

[{"key":{"user_id":2},"at":1704276000000,"watermark":null,"features":{"n":0,"s":null,"m":{},"l":[]}}]
`

func TestReadLog(t *testing.T) {
	recs, err := request.ReadLog(strings.NewReader(logText))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Key["user_id"] != int64(1) || !r.At.Equal(time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)) ||
		r.Features.Watermark != request.EndWatermark || strings.Join(r.Features.Names, ",") != "n,s,m,l" {
		t.Errorf("record 0 = %+v", r)
	}
	if recs[1].Features.Watermark != request.NoWatermark || !recs[1].At.Equal(r.At) {
		t.Errorf("record 1 = %+v", recs[1])
	}
	for _, bad := range []string{`{"error":"x"}`, `{"at":0,"features":{}}`, `{"key":{},"at":0}`, `{"key":{},"at":"noon","features":{}}`, `{`} {
		if _, err := request.ReadLog(strings.NewReader("\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: err = %v, want one naming line 2", bad, err)
		}
	}
}

func TestCheck(t *testing.T) {
	served, err := request.ReadLog(strings.NewReader(logText))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	rec := func(user int64, names []string, vals ...any) request.Record {
		return request.Record{Key: map[string]any{"USER_ID": user}, At: at, Features: request.Features{Names: names, Values: vals}}
	}
	names := []string{"n", "s", "m", "l"}
	honest := []request.Record{
		rec(2, names, int64(0), nil, []request.MapEntry{}, []any{}),
		rec(1, names, int64(2), 3.5+1e-12, []request.MapEntry{{Key: "a", Value: int64(1)}}, []any{int64(1), int64(2)}),
	}
	rep := request.Check(served, honest, request.CheckOptions{})
	if !rep.OK() || rep.Matched != 8 || rep.Lookups != 2 || rep.MaxRelDiff == 0 || rep.MaxRelDiff > 1e-11 {
		t.Errorf("honest:\n%s%+v", rep, rep)
	}
	if !strings.HasPrefix(rep.String(), "consistent: 2 lookups checked; feature values: 8 matched, 0 mismatched, 0 missing, 0 extra") {
		t.Errorf("summary:\n%s", rep)
	}

	off := []request.Record{
		rec(1, []string{"n", "s", "m", "extra"}, int64(3), 3.5, []request.MapEntry{{Key: "a", Value: int64(1)}}, int64(9)),
		rec(3, []string{"n"}, int64(1)),
	}
	rep = request.Check(served, off, request.CheckOptions{MaxExamples: 3})
	// user 1: n mismatched, s and m match, l missing, extra extra; user 2
	// missing entirely (4 values); user 3 extra (1 value).
	if rep.OK() || rep.Matched != 2 || rep.Mismatched != 1 || rep.Missing != 5 || rep.Extra != 2 || len(rep.Examples) != 3 {
		t.Errorf("off:\n%s%+v", rep, rep)
	}
	if want := 1.0 / 3; rep.MaxRelDiff != want || rep.MaxRelDiffAt.Feature != "n" {
		t.Errorf("max rel diff %v at %+v, want %v at n", rep.MaxRelDiff, rep.MaxRelDiffAt, want)
	}
	s := rep.String()
	for _, want := range []string{"INCONSISTENT", "n: served 2, recomputed 3", "l: served [1,2], not recomputed", "first 3 of 8 differences"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func ExampleCheck() {
	served, _ := request.ReadLog(strings.NewReader(
		`{"key":{"user_id":1},"at":"2024-01-03T10:00:00Z","features":{"spend_1h":12.5,"n_1h":3}}` + "\n"))
	recomputed := []request.Record{{
		Key: map[string]any{"user_id": 1}, At: time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC),
		Features: request.Features{Names: []string{"spend_1h", "n_1h"}, Values: []any{10.0, int64(3)}},
	}}
	fmt.Print(request.Check(served, recomputed, request.CheckOptions{}))
	// Output:
	// INCONSISTENT: 1 lookup checked; feature values: 1 matched, 1 mismatched, 0 missing, 0 extra
	// largest relative difference: 0.2 (spend_1h, key {"user_id":1} at 2024-01-03T10:00:00Z: served 12.5, recomputed 10)
	// first 1 of 1 differences:
	//   key {"user_id":1} at 2024-01-03T10:00:00Z, spend_1h: served 12.5, recomputed 10
}

// TestCheckIntegersExactly: integers compare exactly, as CheckOptions
// says, also beyond int64 (a uint64 feature) where float64 cannot tell
// neighbours apart; an integer and a float still compare within the
// tolerance.
func TestCheckIntegersExactly(t *testing.T) {
	at := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	one := func(v any) []request.Record {
		return []request.Record{{Key: map[string]any{"u": 1}, At: at, Features: request.Features{Names: []string{"n"}, Values: []any{v}, Watermark: request.EndWatermark}}}
	}
	for _, c := range []struct {
		served, recomputed any
		ok                 bool
	}{
		{uint64(math.MaxUint64), uint64(math.MaxUint64 - 1), false},
		{uint64(math.MaxUint64), uint64(math.MaxUint64), true},
		{uint64(1 << 63), int64(math.MaxInt64), false},
		{uint64(1 << 63), -int64(1 << 62), false},
		{int64(1<<53 + 1), int64(1 << 53), false},
		{int64(3), 3.0000000001, true},
		{uint64(math.MaxUint64), float64(math.MaxUint64), true},
	} {
		rep := request.Check(one(c.served), one(c.recomputed), request.CheckOptions{})
		if rep.OK() != c.ok || rep.Matched+rep.Mismatched != 1 {
			t.Errorf("served %v, recomputed %v: %s", c.served, c.recomputed, rep)
		}
		if !c.ok && rep.MaxRelDiff == 0 {
			t.Errorf("served %v, recomputed %v: mismatched with a relative difference of 0", c.served, c.recomputed)
		}
	}
	// From a log: the text of the numbers.
	served, err := request.ReadLog(strings.NewReader(`{"key":{"u":1},"at":"2024-01-03T10:00:00Z","features":{"n":18446744073709551615}}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep := request.Check(served, one(uint64(math.MaxUint64-1)), request.CheckOptions{}); rep.OK() {
		t.Errorf("logged 18446744073709551615, recomputed 18446744073709551614: %s", rep)
	}
}

// TestCheckUnsettled: a value that differs on a lookup served with a
// watermark earlier than its time (rows of the frame may have been on
// their way) is unsettled, not a mismatch; with the watermark at or past
// the time, or none logged, it is a mismatch; equal values match either
// way.
func TestCheckUnsettled(t *testing.T) {
	const log = `{"key":{"u":1},"at":"2024-01-03T10:00:00Z","watermark":"2024-01-03T09:59:58Z","features":{"n":2,"s":1.5}}
{"key":{"u":2},"at":"2024-01-03T10:00:00Z","watermark":"2024-01-03T10:00:00Z","features":{"n":2}}
{"key":{"u":3},"at":"2024-01-03T10:00:00Z","features":{"n":2}}
{"key":{"u":4},"at":"2024-01-03T10:00:00Z","watermark":null,"features":{"n":0}}
`
	served, err := request.ReadLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	rec := func(u int64, names []string, vals ...any) request.Record {
		return request.Record{Key: map[string]any{"u": u}, At: at, Features: request.Features{Names: names, Values: vals, Watermark: request.EndWatermark}}
	}
	recomputed := []request.Record{
		rec(1, []string{"n", "s"}, int64(3), 1.5), // n differs: served 2 s before its time
		rec(2, []string{"n"}, int64(3)),           // watermark at the time: complete
		rec(3, []string{"n"}, int64(3)),           // no watermark logged: strict
		rec(4, []string{"n"}, int64(1)),           // served before any row
	}
	rep := request.Check(served, recomputed, request.CheckOptions{})
	if rep.Matched != 1 || rep.Unsettled != 2 || rep.Mismatched != 2 || rep.OK() {
		t.Errorf("report %+v:\n%s", rep, rep)
	}
	if !strings.Contains(rep.String(), "2 values differ on lookups served before their time was complete") {
		t.Errorf("summary:\n%s", rep)
	}
	for _, m := range rep.Examples {
		if k := m.Key["u"]; k != int64(2) && k != int64(3) {
			t.Errorf("example of key %v: only the complete lookups' differences are mismatches", k)
		}
	}
	// Only unsettled differences: consistent.
	rep = request.Check(served[:1], recomputed[:1], request.CheckOptions{})
	if !rep.OK() || rep.Unsettled != 1 || rep.Matched != 1 {
		t.Errorf("unsettled only: %+v", rep)
	}
}

// TestCheckTolerances: RelTolerance and MaxExamples of 0 mean the
// defaults and a negative value none (an exact comparison, no examples);
// AbsTolerance matches numbers near zero whose relative difference is
// large (a sum that cancelled out to 1e-17 on one side and 0 on the
// other), but never two different integers.
func TestCheckTolerances(t *testing.T) {
	at := time.Date(2024, 1, 3, 10, 0, 0, 0, time.UTC)
	one := func(v any) []request.Record {
		return []request.Record{{Key: map[string]any{"u": 1}, At: at, Features: request.Features{Names: []string{"x"}, Values: []any{v}, Watermark: request.EndWatermark}}}
	}
	for _, c := range []struct {
		served, recomputed any
		opts               request.CheckOptions
		ok                 bool
	}{
		{1.0, 1.0 + 1e-12, request.CheckOptions{}, true},                  // default 1e-9
		{1.0, 1.0 + 1e-12, request.CheckOptions{RelTolerance: -1}, false}, // exact
		{1.0, 1.0, request.CheckOptions{RelTolerance: -1}, true},          // exact and equal
		{1.0, 1.0 + 1e-6, request.CheckOptions{RelTolerance: 1e-5}, true}, // looser
		{1e-17, 0.0, request.CheckOptions{}, false},                       // relative difference 1
		{1e-17, 0.0, request.CheckOptions{AbsTolerance: 1e-12}, true},     // near zero
		{[]any{1e-17, 2.0}, []any{0.0, 2.0}, request.CheckOptions{AbsTolerance: 1e-12}, true},
		{1e-3, 0.0, request.CheckOptions{AbsTolerance: 1e-12}, false},       // beyond it
		{int64(1), int64(0), request.CheckOptions{AbsTolerance: 10}, false}, // integers exactly
		{int64(1), 1.0 + 1e-13, request.CheckOptions{RelTolerance: -1, AbsTolerance: 1e-12}, true},
	} {
		rep := request.Check(one(c.served), one(c.recomputed), c.opts)
		if rep.OK() != c.ok || rep.Matched+rep.Mismatched != 1 {
			t.Errorf("served %v, recomputed %v, %+v: %s", c.served, c.recomputed, c.opts, rep)
		}
	}
	off := append(one(1.0), one(2.0)[0])
	off[1].Key = map[string]any{"u": 2}
	want := append(one(5.0), one(6.0)[0])
	want[1].Key = map[string]any{"u": 2}
	for _, c := range []struct{ max, want int }{{0, 2}, {1, 1}, {-1, 0}} {
		rep := request.Check(off, want, request.CheckOptions{MaxExamples: c.max})
		if rep.Mismatched != 2 || len(rep.Examples) != c.want {
			t.Errorf("MaxExamples %d: %d mismatched, %d examples, want 2 and %d", c.max, rep.Mismatched, len(rep.Examples), c.want)
		}
	}
}
