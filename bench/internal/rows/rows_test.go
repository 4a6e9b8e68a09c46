package rows

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestToleranceEqual(t *testing.T) {
	tol := DefaultTolerance
	cases := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, int64(0), false},
		{int64(3), int64(3), true},
		{int64(3), float64(3), false}, // types must match: sum(int) is int64
		{1e6, 1e6 * (1 + 5e-10), true},
		{1e6, 1e6 * (1 + 5e-9), false},
		{0.0, 3e-10, true}, // absolute floor
		{0.0, 3e-9, false},
		{math.NaN(), math.NaN(), true},
		{math.Inf(1), math.Inf(1), true},
		{math.Inf(1), math.MaxFloat64, false},
		{"a", "a", true},
		{time.UnixMilli(5).UTC(), time.UnixMilli(5).In(time.FixedZone("x", 3600)), true},
	}
	for _, c := range cases {
		if got := tol.Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", Format(c.a), Format(c.b), got, c.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	if v := Canonical(big.NewInt(-42)); v != int64(-42) {
		t.Errorf("HUGEINT -42 canonicalises to %v", v)
	}
	if v := Canonical(int32(7)); v != int64(7) {
		t.Errorf("int32 7 canonicalises to %v(%T)", v, v)
	}
	if v := Canonical([]byte("x")); v != "x" {
		t.Errorf("[]byte canonicalises to %v(%T)", v, v)
	}
}

func TestDiffReport(t *testing.T) {
	want := Table{Names: []string{"id", "k", "v"}, Rows: [][]any{{int64(0), "a", 1.0}, {int64(1), "b", nil}, {int64(2), "c", 3.0}}}
	if d := Diff(want, want, DefaultTolerance, []string{"id", "k"}, 5); d != "" {
		t.Fatalf("equal tables differ:\n%s", d)
	}
	got := Table{Names: want.Names, Rows: [][]any{{int64(0), "a", 1.0}, {int64(1), "b", 2.0}, {int64(2), "c", 3.0}}}
	d := Diff(want, got, DefaultTolerance, []string{"id", "k"}, 5)
	for _, s := range []string{`row 1 [id=1 k="b"]`, "v: want NULL, got 2(f64)", "1 of 3 rows differ", "v=1"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	if d := Diff(want, Table{Names: want.Names, Rows: want.Rows[:2]}, DefaultTolerance, nil, 5); !strings.Contains(d, "row count differs: want 3, got 2") {
		t.Errorf("short table not reported:\n%s", d)
	}
	if d := Diff(want, Table{Names: []string{"id", "k", "w"}}, DefaultTolerance, nil, 5); !strings.Contains(d, "column names differ") {
		t.Errorf("renamed column not reported:\n%s", d)
	}
}

func TestSortedBy(t *testing.T) {
	tb := Table{Names: []string{"id"}, Rows: [][]any{{int64(2)}, {nil}, {int64(1)}}}
	s := tb.SortedBy("id")
	if s.Rows[0][0] != nil || s.Rows[1][0] != int64(1) || s.Rows[2][0] != int64(2) {
		t.Errorf("SortedBy: %v", s.Rows)
	}
	if tb.Rows[0][0] != int64(2) {
		t.Errorf("SortedBy modified its receiver")
	}
}
