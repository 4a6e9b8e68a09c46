// Command hostprobe measures what this machine alone does to
// microsecond latencies (package hostnoise): it times runs of pure CPU
// work, and of random reads over arrays of the given sizes, each run as
// long as -work, and prints their quantiles, one line a probe and round:
//
//	go run ./cmd/hostprobe
//	probe=cpu work_us=2.0 runs=200000 units=1154 p50_us=2.0 p99_us=2.1 p999_us=43.3 over_10us=0.0030
//	probe=mem mib=256 work_us=2.0 runs=200000 units=156 p50_us=1.6 p99_us=4.3 p999_us=51.9 over_10us=0.0044
//	probe=mem mib=2048 work_us=2.0 runs=200000 units=54 p50_us=2.4 p99_us=10.0 p999_us=62.7 over_10us=0.0100
//
// (the 2-core VM of BENCHMARKS.md, one round of each, 2026-12-02).
// units are Spin steps or reads a run; over_10us is the share of runs
// over 10 µs. A latency benchmark's p99 close to the probes' at the same
// length was decided by the machine (BENCHMARKS.md, 2026-12-02, the
// twenty-seventh session: the lookup workload's tail on the 2-core VM).
// The arrays are allocated one at a time and count in the process's
// memory: -sizes 2GiB needs 2 GiB free.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volga-go/volga/bench/internal/hostnoise"
)

func main() {
	work := flag.Duration("work", 2*time.Microsecond, "length of one run of null work")
	runs := flag.Int("runs", 200_000, "runs timed per probe and round")
	rounds := flag.Int("rounds", 3, "rounds of every probe")
	sizes := flag.String("sizes", "256MiB,2GiB", "comma-separated array sizes of the memory probes (KiB, MiB, GiB suffixes); empty for none")
	flag.Parse()
	var bytes []int64
	for f := range strings.SplitSeq(*sizes, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		b, err := parseSize(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hostprobe: -sizes: %v\n", err)
			os.Exit(2)
		}
		bytes = append(bytes, b)
	}
	if *work <= 0 || *runs <= 0 || *rounds <= 0 {
		fmt.Fprintln(os.Stderr, "hostprobe: -work, -runs and -rounds must be positive")
		os.Exit(2)
	}
	lat := make([]float64, 0, *runs)
	iters := hostnoise.SpinItersFor(*work, time.Now)
	for range *rounds {
		lat = hostnoise.AppendSpin(lat[:0], *runs, iters, time.Now)
		fmt.Printf("probe=cpu work_us=%.1f runs=%d units=%d %s\n", us(*work), *runs, iters, quantiles(lat))
	}
	for i, b := range bytes {
		m := hostnoise.NewMem(b, uint64(i+1))
		reads := m.ReadsFor(*work, time.Now)
		for range *rounds {
			lat = m.Append(lat[:0], *runs, reads, time.Now)
			fmt.Printf("probe=mem mib=%d work_us=%.1f runs=%d units=%d %s\n", m.Bytes()>>20, us(*work), *runs, reads, quantiles(lat))
		}
		runtime.GC() // m is dead: free its array before the next one
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// quantiles sorts lat and formats its p50, p99, p999 and the share of
// runs over 10 µs.
func quantiles(lat []float64) string {
	slices.Sort(lat)
	q := func(p float64) float64 { return hostnoise.Quantile(lat, p) }
	over := 0
	if i := slices.IndexFunc(lat, func(v float64) bool { return v > 10 }); i >= 0 {
		over = len(lat) - i
	}
	return fmt.Sprintf("p50_us=%.1f p99_us=%.1f p999_us=%.1f over_10us=%.4f", q(0.50), q(0.99), q(0.999), float64(over)/float64(len(lat)))
}

// parseSize reads a size such as 256MiB, 2GiB, 64KiB or a number of bytes.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (want a positive number of bytes, KiB, MiB or GiB)", s)
	}
	return n * mult, nil
}
