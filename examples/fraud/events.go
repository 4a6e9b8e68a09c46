package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// txn is one generated card transaction.
type txn struct {
	ID       int64
	Card     string
	Merchant string
	Amount   float64   // whole cents
	TS       time.Time // event time, milliseconds, strictly increasing
	Fraud    bool      // the label: part of a burst on a stolen card
}

// Shape of the generated stream.
const (
	numTxns    = 600
	streamSpan = 3 * 24 * time.Hour
	seed       = 7
)

var (
	streamStart = time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	cards       = []string{"card-1", "card-2", "card-3", "card-4", "card-5", "card-6"}
)

// defaultTxns is the stream the example runs on.
func defaultTxns() []txn { return generateTxns(numTxns, seed) }

// generateTxns returns n transactions in event-time order, with strictly
// increasing millisecond timestamps. Each card shops at a few merchants
// of its own; about one transaction in 100 starts a fraud burst: four to
// six large purchases on that card at unknown merchants within 20 minutes,
// all labelled fraudulent.
func generateTxns(n int, seed uint64) []txn {
	r := rand.New(rand.NewPCG(seed, 0xf4a0d))
	step := streamSpan / time.Duration(n)
	clock := streamStart
	out := make([]txn, 0, n)
	add := func(card, merchant string, cents int, fraud bool, gap time.Duration) {
		clock = clock.Add(gap).Truncate(time.Millisecond)
		out = append(out, txn{
			ID: int64(len(out) + 1), Card: card, Merchant: merchant,
			Amount: float64(cents) / 100, TS: clock, Fraud: fraud,
		})
	}
	for len(out) < n {
		card := r.IntN(len(cards))
		if len(out) > 50 && r.IntN(100) == 0 {
			burst := 4 + r.IntN(3)
			for range burst {
				add(cards[card], fmt.Sprintf("shop-%02d", 20+r.IntN(30)), 20000+r.IntN(80000), true,
					time.Minute+time.Duration(r.Int64N(int64(3*time.Minute))))
			}
			continue
		}
		// Regular spending: merchants 0-7, the card's favourite ones more often.
		m := (card + r.IntN(3)) % 8
		if r.IntN(4) == 0 {
			m = r.IntN(8)
		}
		add(cards[card], fmt.Sprintf("shop-%02d", m), 300+r.IntN(9700), false,
			step/2+time.Duration(r.Int64N(int64(step))))
	}
	return out[:n]
}
