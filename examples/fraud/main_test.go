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

// TestFraud runs the example (Kafka cluster included) and checks every
// printed feature value, of the three parts, against a brute-force scan
// of the generated transactions.
func TestFraud(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	txns := defaultTxns()

	if want := fmt.Sprintf("rows in: %d, rows out: %d", len(txns), len(txns)); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}

	var streamed, scored, trained int
	spine := spineTxns(txns)
	now := txns[len(txns)-1].TS.Add(scoreOffset)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(strings.ReplaceAll(line, "|", " "))
		switch {
		case strings.HasPrefix(line, "candidate "):
			// candidate CARD MERCHANT AMOUNT: name=value ...
			c := candidates[scored]
			scored++
			cand := txn{Card: c.Card, Merchant: c.Merchant, Amount: c.Amount, TS: now}
			history := append(slices.Clone(txns), cand)
			incl := features(history, cand, now, false)
			excl := features(txns, cand, now, true)
			want := fmt.Sprintf("candidate %s %s %.2f: spend_1h=%s n_24h=%s merchants_24h=%s max_7d=%s spend_1h_prev=%s n_24h_prev=%s merchants_24h_prev=%s max_7d_prev=%s",
				c.Card, c.Merchant, c.Amount, incl[0], incl[1], incl[2], incl[3], excl[0], excl[1], excl[2], excl[3])
			if line != want {
				t.Errorf("lookup:\n got  %s\n want %s (brute force)", line, want)
			}
		case len(f) == 16: // part 1: row id card Mon D hh:mm:ss merchant amount, 4 + 4 features
			n, err := strconv.Atoi(f[0])
			if err != nil {
				continue // the header
			}
			streamed++
			if n < 1 || n > len(txns) || (n-1)%printEvery != 0 {
				t.Errorf("printed row number %d: out of range or not a multiple of %d plus one", n, printEvery)
				continue
			}
			// One partition, strictly increasing times: rows come out in
			// production order.
			tx := txns[n-1]
			want := append([]string{f[0], strconv.FormatInt(tx.ID, 10), tx.Card}, strings.Fields(tx.TS.Format("Jan 2 15:04:05"))...)
			want = append(want, tx.Merchant, fmt.Sprintf("%.2f", tx.Amount))
			want = append(want, features(txns, tx, tx.TS, false)...)
			want = append(want, features(txns, tx, tx.TS, true)...)
			if !slices.Equal(f, want) {
				t.Errorf("row %d:\n got  %v\n want %v (brute force)", n, f, want)
			}
		case len(f) == 10: // part 3: id card Mon D hh:mm:ss fraud, 4 features
			id, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue // the header
			}
			if trained >= len(spine) {
				t.Fatalf("more training rows printed than the spine has")
			}
			tx := spine[trained]
			trained++
			if tx.ID != id {
				t.Errorf("training row %d: id %d, want %d (spine order)", trained, id, tx.ID)
			}
			// Strict: only events strictly before the spine row count.
			want := append([]string{f[0], tx.Card}, strings.Fields(tx.TS.Format("Jan 2 15:04:05"))...)
			want = append(want, strconv.FormatBool(tx.Fraud))
			want = append(want, features(txns, tx, tx.TS, true)...)
			if !slices.Equal(f, want) {
				t.Errorf("training row %d:\n got  %v\n want %v (brute force)", trained, f, want)
			}
		}
	}
	if want := (len(txns) + printEvery - 1) / printEvery; streamed != want {
		t.Errorf("part 1 printed %d rows, want %d", streamed, want)
	}
	if scored != len(candidates) {
		t.Errorf("part 2 printed %d lookups, want %d", scored, len(candidates))
	}
	if want := min(printTrainRows, len(spine)); trained != want {
		t.Errorf("part 3 printed %d rows, want %d", trained, want)
	}
	if want := fmt.Sprintf("training rows: %d", len(spine)); !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
	if !slices.ContainsFunc(spine[:min(printTrainRows, len(spine))], func(t txn) bool { return t.Fraud }) {
		t.Error("the printed training rows show no fraud label")
	}
}

// features computes spend_1h, n_24h, merchants_24h and max_7d of card
// tx.Card at time at by scanning history: the rows at or before at, within
// each window (bounds inclusive), leaving tx itself out when exclude is
// set. They are rendered as the example prints them.
func features(history []txn, tx txn, at time.Time, exclude bool) []string {
	var spend, maxAmount float64
	var inHour, inWeek bool
	n24 := 0
	merchants := map[string]bool{}
	for _, o := range history {
		if o.Card != tx.Card || o.TS.After(at) || (exclude && o.TS.Equal(tx.TS)) {
			continue
		}
		age := at.Sub(o.TS)
		if age <= time.Hour {
			spend += o.Amount
			inHour = true
		}
		if age <= 24*time.Hour {
			n24++
			merchants[o.Merchant] = true
		}
		if age <= 7*24*time.Hour {
			maxAmount = max(maxAmount, o.Amount)
			inWeek = true
		}
	}
	s, m := "-", "-"
	if inHour {
		s = fmt.Sprintf("%.2f", spend)
	}
	if inWeek {
		m = fmt.Sprintf("%.2f", maxAmount)
	}
	return []string{s, strconv.Itoa(n24), strconv.Itoa(len(merchants)), m}
}

// TestGeneratorDeterministic guards the example's reproducibility and the
// property the test relies on: strictly increasing event times.
func TestGeneratorDeterministic(t *testing.T) {
	a, b := generateTxns(300, 3), generateTxns(300, 3)
	if !slices.Equal(a, b) {
		t.Fatal("two streams from the same seed differ")
	}
	for i := 1; i < len(a); i++ {
		if !a[i].TS.After(a[i-1].TS) {
			t.Fatalf("transaction %d is not after the one before it", i+1)
		}
	}
}
