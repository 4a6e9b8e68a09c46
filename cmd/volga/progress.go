package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/volga-go/volga/source"
)

// A batch run or backfill on a terminal shows one line of progress on
// standard error while it reads its input: rows read, rows per second and,
// when the input's size is known, the share read and an estimate of the
// time left. It redraws the line in place and ends it when the input is
// read. When standard error is not a terminal (a pipe, a file, CI), it
// prints nothing.

// terminal and progressEvery are variables so that tests can draw the
// progress line into a buffer, quickly.
var (
	terminal      = isTerminal
	progressEvery = 250 * time.Millisecond
)

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// countingSource counts the rows its source returns. It is used only for
// progress, in batch runs, where the optional interfaces a wrapper hides
// (positions, partitions) play no part.
type countingSource struct {
	source.Source
	rows atomic.Int64
	done atomic.Bool
}

// LowerBound passes on the bound of the source under it
// (source.LowerBounder), which a batch run needs to let rows go before the
// end of its input: hidden by the counter, a run drawing its progress held
// every row to the end.
func (c *countingSource) LowerBound(col string) (int64, bool) {
	if lb, ok := c.Source.(source.LowerBounder); ok {
		return lb.LowerBound(col)
	}
	return 0, false
}

func (c *countingSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := c.Source.Read(ctx)
	if rec != nil {
		c.rows.Add(rec.NumRows())
	}
	if err == io.EOF {
		c.done.Store(true)
	}
	return rec, err
}

// progress draws the progress line until stopped.
type progress struct {
	w     io.Writer
	what  string
	total int64 // estimated rows; 0 when unknown
	count func() int64
	start time.Time
	stopc chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// startProgress draws the line every interval until stop is called.
func startProgress(w io.Writer, what string, total int64, count func() int64, interval time.Duration) *progress {
	p := &progress{w: w, what: what, total: total, count: count, start: time.Now(), stopc: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stopc:
				return
			case <-t.C:
				fmt.Fprintf(p.w, "\r%s\x1b[K", p.line(time.Since(p.start)))
			}
		}
	}()
	return p
}

// stop ends the line with the final count.
func (p *progress) stop() {
	p.once.Do(func() {
		close(p.stopc)
		p.wg.Wait()
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", p.line(time.Since(p.start)))
	})
}

// line renders the progress after elapsed.
func (p *progress) line(elapsed time.Duration) string {
	n := p.count()
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	l := fmt.Sprintf("volga: %s: %s rows read, %s rows/s", p.what, humanCount(float64(n)), humanCount(rate))
	if p.total > 0 {
		share := min(float64(n)/float64(p.total), 1)
		l += fmt.Sprintf(", %.0f%%", 100*share)
		if rate > 0 && share < 1 {
			left := time.Duration(float64(p.total-n) / rate * float64(time.Second))
			l += ", about " + left.Round(time.Second).String() + " left"
		}
	}
	return l
}

// humanCount renders 1234567 as 1.2M.
func humanCount(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.1fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// estimateRows estimates the rows of an input file: exact for Parquet
// (from its footer), from the file size and the lines in its first 64 KiB
// for CSV and JSON lines, 0 (unknown) otherwise.
func estimateRows(path string) int64 {
	if isKafka(path) {
		return 0
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet":
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			return 0
		}
		defer r.Close()
		return r.NumRows()
	case ".csv", ".jsonl", ".ndjson", ".json":
		f, err := os.Open(path)
		if err != nil {
			return 0
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			return 0
		}
		buf := make([]byte, 64<<10)
		n, _ := io.ReadFull(bufio.NewReader(f), buf)
		lines := int64(strings.Count(string(buf[:n]), "\n"))
		if lines == 0 {
			return 1
		}
		if int64(n) >= st.Size() {
			if strings.EqualFold(filepath.Ext(path), ".csv") {
				lines-- // the header
			}
			return max(lines, 0)
		}
		return st.Size() * lines / int64(n)
	}
	return 0
}
