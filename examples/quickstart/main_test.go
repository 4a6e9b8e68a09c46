package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestQuickstart runs the example and checks what it prints against a
// brute-force computation over the generated events: every printed
// feature value, the row counts and the late rows.
func TestQuickstart(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()

	// The stragglers, and only they, are late: each is at least 15 minutes
	// behind the events before it, the bound is 30s, and every other event
	// is at most 20s older than its arrival.
	events := defaultEvents()
	var onTime, stragglers []event
	for _, e := range events {
		if e.Straggler {
			stragglers = append(stragglers, e)
		} else {
			onTime = append(onTime, e)
		}
	}
	if len(stragglers) == 0 {
		t.Fatal("the generator made no stragglers; the example shows no late rows")
	}
	wantSummary := fmt.Sprintf("rows in: %d, rows out: %d, late rows: %d ", len(events), len(onTime), len(stragglers))
	if !strings.Contains(out, wantSummary) {
		t.Errorf("output lacks the summary %q:\n%s", wantSummary, out)
	}
	var wantLate []string
	for _, e := range stragglers {
		wantLate = append(wantLate, fmt.Sprintf("late: %-7s %s  %8.2f", e.User, e.TS.Format(time.TimeOnly), e.Amount))
	}

	// Rows are emitted in event-time order (arrival order among equal
	// times), as the watermark passes them.
	emitted := slices.Clone(onTime)
	slices.SortStableFunc(emitted, func(a, b event) int { return a.TS.Compare(b.TS) })

	var gotLate []string
	printed := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "late:") {
			gotLate = append(gotLate, line)
			continue
		}
		f := strings.Fields(line)
		if len(f) != 7 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue // the header
		}
		printed++
		if n < 1 || n > len(emitted) || (n-1)%printEvery != 0 {
			t.Errorf("printed row number %d: out of range or not a multiple of %d plus one", n, printEvery)
			continue
		}
		e := emitted[n-1]
		want := fmt.Sprintf("%d %s %s %.2f %s", n, e.User, e.TS.Format(time.TimeOnly), e.Amount, bruteForce(onTime, e))
		if got := strings.Join(f, " "); got != want {
			t.Errorf("row %d:\n got  %s\n want %s (brute force)", n, got, want)
		}
	}
	if wantPrinted := (len(onTime) + printEvery - 1) / printEvery; printed != wantPrinted {
		t.Errorf("printed %d rows, want %d", printed, wantPrinted)
	}
	if !slices.Equal(gotLate, wantLate) {
		t.Errorf("late rows:\n%s\nwant:\n%s", strings.Join(gotLate, "\n"), strings.Join(wantLate, "\n"))
	}

	if want := fmt.Sprintf("builder rows out: %d, identical to the SQL pipeline's: true", len(onTime)); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// bruteForce computes spend_1h, n_24h and max_1h for e by scanning every
// on-time event, rendered as the example prints them.
func bruteForce(onTime []event, e event) string {
	var spend, maxAmount float64
	var n24 int
	for _, o := range onTime {
		if o.User != e.User || o.TS.After(e.TS) {
			continue
		}
		if !o.TS.Before(e.TS.Add(-time.Hour)) {
			spend += o.Amount
			maxAmount = max(maxAmount, o.Amount)
		}
		if !o.TS.Before(e.TS.Add(-24 * time.Hour)) {
			n24++
		}
	}
	return fmt.Sprintf("%.2f %d %.2f", spend, n24, maxAmount)
}

// TestGeneratorDeterministic guards the example's reproducibility: the
// same seed gives the same stream.
func TestGeneratorDeterministic(t *testing.T) {
	a, b := generateEvents(500, 7), generateEvents(500, 7)
	if !slices.Equal(a, b) {
		t.Fatal("two streams from the same seed differ")
	}
	if c := generateEvents(500, 8); slices.Equal(a, c) {
		t.Fatal("streams from different seeds are equal")
	}
}
