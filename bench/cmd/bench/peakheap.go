package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// peakHeap keeps the heap profile of the garbage collection cycle that
// left the largest live heap: the in-use objects at a run's memory peak,
// which a profile taken at the run's end (-memprofile) no longer shows.
type peakHeap struct {
	stop chan struct{}
	done chan struct{}
	// best is the profile of the cycle with the largest live heap, live
	// its size in bytes.
	best []byte
	live uint64
	// rss is the largest resident set size seen (from /proc/self/status),
	// classes the runtime's memory classes at that moment.
	rss     uint64
	classes []metrics.Sample
}

// startPeakHeap polls the runtime's GC metrics every 10 ms and profiles
// the heap after each completed cycle whose live heap is the largest so
// far (a heap profile reports the objects live at the last completed
// cycle).
func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *peakHeap) loop() {
	defer close(p.done)
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	var classes []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") {
			classes = append(classes, metrics.Sample{Name: d.Name})
		}
	}
	var cycles uint64
	var buf bytes.Buffer
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if rss := readRSS(); rss > p.rss {
			p.rss = rss
			metrics.Read(classes)
			p.classes = slices.Clone(classes)
		}
		metrics.Read(s)
		c, live := s[0].Value.Uint64(), s[1].Value.Uint64()
		if c == cycles || live <= p.live {
			cycles = c
			continue
		}
		cycles = c
		buf.Reset()
		if pprof.Lookup("heap").WriteTo(&buf, 0) == nil {
			p.best = append(p.best[:0], buf.Bytes()...)
			p.live = live
		}
	}
}

// readRSS returns the process's resident set size in bytes (0 where
// /proc is not there).
func readRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// report describes the memory at the largest RSS seen: the runtime's
// memory classes of more than 1 MB.
func (p *peakHeap) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "largest RSS seen %.1f MB; runtime memory classes then (MB):", float64(p.rss)/(1<<20))
	for _, c := range p.classes {
		if c.Value.Kind() == metrics.KindUint64 && c.Value.Uint64() >= 1<<20 {
			fmt.Fprintf(&b, " %s=%.1f", strings.TrimPrefix(c.Name, "/memory/classes/"), float64(c.Value.Uint64())/(1<<20))
		}
	}
	return b.String()
}

// finish stops polling and writes the kept profile to file.
func (p *peakHeap) finish(file string) (liveBytes uint64, err error) {
	close(p.stop)
	<-p.done
	return p.live, os.WriteFile(file, p.best, 0o644)
}
