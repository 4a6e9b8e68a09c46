package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/source"
)

func TestProgressLine(t *testing.T) {
	n := int64(2_500_000)
	p := &progress{what: "run", total: 10_000_000, count: func() int64 { return n }}
	got := p.line(5 * time.Second)
	want := "volga: run: 2.5M rows read, 500k rows/s, 25%, about 15s left"
	if got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	p.total = 0
	if got := p.line(5 * time.Second); got != "volga: run: 2.5M rows read, 500k rows/s" {
		t.Errorf("without a total: %q", got)
	}
	n = 10_000_000
	p.total = 10_000_000
	if got := p.line(20 * time.Second); !strings.HasSuffix(got, ", 100%") {
		t.Errorf("at the end: %q", got)
	}
}

func TestEstimateRows(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.csv")
	if err := os.WriteFile(small, []byte("a,b\n1,2\n3,4\n5,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := estimateRows(small); got != 3 {
		t.Errorf("small CSV: %d rows, want 3", got)
	}
	var sb strings.Builder
	sb.WriteString("id,v\n")
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&sb, "%06d,x\n", i)
	}
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := estimateRows(big); got < 95_000 || got > 105_000 {
		t.Errorf("big CSV: estimated %d rows, want about 100000", got)
	}
	if got := estimateRows(filepath.Join(dir, "x.txt")); got != 0 {
		t.Errorf("unknown format: %d", got)
	}
	if got := estimateRows("kafka://h:1/t"); got != 0 {
		t.Errorf("Kafka: %d", got)
	}
}

// TestRunProgressOnTerminal: on a terminal a batch run draws its progress
// line and ends it with the final count; elsewhere it prints nothing.
func TestRunProgressOnTerminal(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("user_id,ts,amount\n")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&sb, "u%d,%s,%d\n", i%5, base.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), i%100)
	}
	dir := files(t, "q.sql", `SELECT user_id, sum(amount) OVER (PARTITION BY user_id ORDER BY ts
		RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s FROM tx`, "tx.csv", sb.String())
	args := []string{"run", "--sql", "q.sql", "--source", "tx=tx.csv", "--sink", filepath.Join(dir, "out.csv"), "--batch-size", "100"}

	code, _, stderr := cli(t, context.Background(), dir, "", args...)
	if code != 0 || stderr != "" {
		t.Fatalf("not a terminal: exit %d, stderr %q (want silence)", code, stderr)
	}

	oldTerm, oldEvery := terminal, progressEvery
	terminal, progressEvery = func(io.Writer) bool { return true }, time.Millisecond
	defer func() { terminal, progressEvery = oldTerm, oldEvery }()
	code, _, stderr = cli(t, context.Background(), dir, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	last := stderr[strings.LastIndex(stderr, "\r")+1:]
	if !strings.HasPrefix(last, "volga: run: 3000 rows read") || !strings.Contains(last, "100%") || !strings.HasSuffix(last, "\n") {
		t.Errorf("final progress line %q in %q", last, stderr)
	}
}

// TestCountingSourceKeepsBound: the progress counter passes on the bound
// of the times to come of the source under it (a batch run drawing its
// progress otherwise held every row to the end), and knows none over a
// source without one.
func TestCountingSourceKeepsBound(t *testing.T) {
	in := "id,ts\n1,1000\n2,3000\n3,5000\n"
	s, err := source.NewCSVReader(strings.NewReader(in), source.WithBatchSize(2), source.WithTimeOrder("ts", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := &countingSource{Source: s}
	rec, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if got, ok := c.LowerBound("ts"); !ok || got != 2000 || c.rows.Load() != 2 {
		t.Fatalf("bound %d (%v) after %d rows, want 2000 after 2", got, ok, c.rows.Load())
	}
	plain, err := source.NewCSVReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := (&countingSource{Source: plain}).LowerBound("ts"); ok {
		t.Fatal("a bound over a source without one")
	}
}
