// Command bench runs one benchmark workload of BENCHMARKS.md against every
// engine and prints one line per engine and one per ratio:
//
//	go run ./cmd/bench -workload features-4 -events 10000000
//
//	workload=features-4 events=10000000 engine=volga-batch seconds=1.21 events_per_s=8264462 peak_rss_mb=410
//	workload=features-4 events=10000000 engine=duckdb seconds=4.38 events_per_s=2283105 peak_rss_mb=797
//	workload=features-4 ratio=volga-batch/duckdb time=0.28 rss=0.51
//
// The input is generated once (deterministically from -events and -seed)
// and cached as Parquet in -data-dir. Each engine then runs in a child
// process of its own (this binary re-executed with the hidden -child flag),
// so its peak RSS, read from the child's rusage, is its own. The child
// times only the engine's work and reports the time and a checksum of the
// output on stdout; the checksums go to stderr, and a disagreement between
// engines makes the command fail.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/workload"
)

// config is everything a workload run depends on; the child receives it
// through the same flags as the parent.
type config struct {
	Workload      string
	Events        int
	Seed          uint64
	DataDir       string
	Engines       string
	Parallelism   int
	Decoders      int
	ChannelDepth  int
	DuckThreads   int
	DuckConsume   string
	MaxOutOfOrder time.Duration
	WMInterval    time.Duration
	BatchRows     int
	Lookups       int
	HTTPRate      int
	HTTPDuration  time.Duration
	HTTPClient    string
	IngestRate    int
	// ChildBinary is "auto" (engines other than DuckDB run in a build
	// without DuckDB, see childbin.go) or "self".
	ChildBinary string
	// CPUProfile and MemProfile, when set, are files the child engine
	// writes a CPU profile (of the engine's run) and a heap profile (at
	// its end) to; with several engines the engine name is appended.
	CPUProfile string
	MemProfile string
	// PeakHeapProfile, when set, is a file the child engine writes the
	// heap profile of its largest live heap to (see peakheap.go).
	PeakHeapProfile string
	// Trace, when set, is a file the child engine writes an execution
	// trace of its run to (runtime/trace).
	Trace string
	// Input is the prepared input, set by the parent.
	Input input
}

// input names the prepared input files of a workload.
type input struct {
	// Log is the event log in event-time order (Parquet).
	Log string
	// Arrival holds the log's events in shuffled arrival order (Parquet;
	// stream-4 only).
	Arrival string
}

// result is what a child reports to the parent.
type result struct {
	Seconds float64 `json:"seconds"`
	// Checksum is the checksum of a features-4 output; ML3, when set, that
	// of an ml-3 output instead. Engines are compared only with engines
	// whose output has the same kind of checksum.
	Checksum workload.Features4Checksum `json:"checksum"`
	ML3      *workload.ML3Checksum      `json:"ml3,omitempty"`
	Group    *workload.GroupChecksum    `json:"group,omitempty"`
	// Lines are further report lines printed after the engine's line
	// (the lookup workload's latencies).
	Lines []string `json:"lines,omitempty"`
	// PeakRSSKB is the child's own peak RSS (VmHWM; 0 where the
	// platform does not tell): see selfPeakRSSKB.
	PeakRSSKB int64 `json:"peak_rss_kb,omitempty"`
}

// checksumKind names the kind of checksum r carries: "none" for an
// engine that reports lines instead (lookup).
func (r result) checksumKind() string {
	switch {
	case r.ML3 != nil:
		return "ml-3"
	case r.Group != nil:
		return "group-1"
	case len(r.Lines) > 0 && r.Checksum.Rows == 0:
		return "none"
	}
	return "features-4"
}

func (r result) checksumString() string {
	if r.ML3 != nil {
		return r.ML3.String()
	}
	if r.Group != nil {
		return r.Group.String()
	}
	return r.Checksum.String()
}

// agrees compares the checksums of two results of the same kind.
func (r result) agrees(o result) bool {
	if r.ML3 != nil && o.ML3 != nil {
		return r.ML3.Agrees(*o.ML3)
	}
	if r.Group != nil && o.Group != nil {
		return r.Group.Agrees(*o.Group)
	}
	return r.Checksum.Agrees(o.Checksum)
}

// engineFunc runs one engine on the prepared input inside a child process.
type engineFunc func(ctx context.Context, c config) (result, error)

// workloadDef describes a workload: its engines (the first is the baseline
// every ratio is taken against) and how to prepare its input.
type workloadDef struct {
	// Engines lists the engines run by default, baseline first.
	Engines []string
	// Prepare generates or locates the input in the parent process; the
	// children find it in config.Input.
	Prepare func(c config) (input, error)
	// Run holds the engines.
	Run map[string]engineFunc
	// Ratios prints the ratio lines; nil means printRatios.
	Ratios func(wl string, done []measured)
	// Pending, when set, says the workload is not implemented yet and why.
	Pending string
}

// workloads is the registry of the workloads of BENCHMARKS.md.
var workloads = map[string]workloadDef{
	"features-4": {
		Engines: []string{"duckdb", "volga-batch", "go-loop"},
		Prepare: prepareFeatures4,
		// volga-batch-ckpt, volga-batch-budget and volga-batch-clustered
		// (volga.WithClusterInput) run on request (-engines).
		Run: map[string]engineFunc{
			"duckdb":                runDuckDB,
			"volga-batch":           runVolgaBatch,
			"go-loop":               runGoLoop,
			"volga-batch-ckpt":      runVolgaBatchCkpt,
			"volga-batch-budget":    runVolgaBatchBudget,
			"volga-batch-clustered": runVolgaBatchClustered,
		},
		Ratios: durableRatios("duckdb", "volga-batch"),
	},
	"features-4-arrival": {
		// features-4 in batch over the events in arrival order (each up
		// to -max-out-of-order late, stream-4's input), as an export of
		// a stream is: both engines read that file.
		Engines: []string{"duckdb", "volga-batch"},
		Prepare: prepareArrivalLog,
		Run: map[string]engineFunc{
			"duckdb":      runDuckDB,
			"volga-batch": runVolgaBatch,
		},
		Ratios: func(wl string, done []measured) { printRatios(wl, "duckdb", done) },
	},
	"features-4-by-user": {
		// features-4 in batch over the events sorted by user (each
		// user's in time order), as a training-set export by entity is:
		// both engines read that file; volga is promised the order
		// (volga.WithClusteredBy). volga-batch-held, on request
		// (-engines), runs without the promise.
		Engines: []string{"duckdb", "volga-batch"},
		Prepare: prepareByUserLog,
		Run: map[string]engineFunc{
			"duckdb":           runDuckDB,
			"volga-batch":      runVolgaBatch,
			"volga-batch-held": runVolgaBatchHeld,
		},
		Ratios: func(wl string, done []measured) { printRatios(wl, "duckdb", done) },
	},
	"stream-4": {
		// volga-stream-budget runs on request (-engines).
		Engines: []string{"duckdb", "volga-stream", "volga-stream-ckpt"},
		Prepare: prepareStream4,
		Run: map[string]engineFunc{
			"duckdb":              runDuckDB,
			"volga-stream":        runVolgaStream,
			"volga-stream-ckpt":   runVolgaStreamCkpt,
			"volga-stream-budget": runVolgaStreamBudget,
		},
		Ratios: durableRatios("duckdb", "volga-stream"),
	},
	"ml-3": {
		// DuckDB has no topn_frequency, sum_cate or top1_ratio; the
		// features-4 run is the reference the target is stated against.
		// volga-batch-clustered orders the input by user first
		// (volga.WithClusterInput): its output comes key by key.
		// Each ml-3 run is paired with the features-4 run just after it,
		// and the clustered one runs three times: on a noisy machine one
		// run of each said little (in the twenty-second session's runs
		// the ratio went from 0.35 to 0.60 within minutes).
		Engines: []string{"volga-batch", "volga-batch-features-4",
			"volga-batch-clustered", "volga-batch-features-4",
			"volga-batch-clustered", "volga-batch-features-4",
			"volga-batch-clustered", "volga-batch-features-4", "go-loop"},
		Prepare: prepareFeatures4,
		Run: map[string]engineFunc{
			"volga-batch":            runVolgaBatchML3,
			"volga-batch-clustered":  runVolgaBatchML3Clustered,
			"go-loop":                runGoLoopML3,
			"volga-batch-features-4": runVolgaBatch,
		},
		Ratios: printML3Ratios,
	},
	"group-1": {
		// Hourly tumbling windows per user over the features-4 events:
		// the batch GROUP BY path, against DuckDB's GROUP BY time_bucket.
		// volga-batch-clustered (volga.WithClusterInput: the run orders
		// the input by user first, and its output comes user by user)
		// runs on request (-engines).
		Engines: []string{"duckdb", "volga-batch"},
		Prepare: prepareFeatures4,
		Run: map[string]engineFunc{
			"duckdb":                runDuckDBGroup,
			"volga-batch":           runVolgaBatchGroup,
			"volga-batch-clustered": runVolgaBatchGroupClustered,
		},
		Ratios: func(wl string, done []measured) { printRatios(wl, "duckdb", done) },
	},
	"scaling": {
		// features-4 in batch with parallelism 1 and 2, alternating, three
		// times (an engine name ending -pN runs with parallelism N): the
		// median of three pairs leaves out one disturbed pair (in a script
		// of the eighteenth session the two parallelism-1 runs took 33 and
		// 14 % more CPU than usual, which made the pairs' ratios 1.78 and
		// 1.81 against 1.53 and 1.54 just after).
		Engines: []string{"volga-batch-p1", "volga-batch-p2", "volga-batch-p1", "volga-batch-p2", "volga-batch-p1", "volga-batch-p2"},
		Prepare: prepareFeatures4,
		Run: map[string]engineFunc{
			"volga-batch-p1": runVolgaBatch,
			"volga-batch-p2": runVolgaBatch,
		},
		Ratios: printScalingRatios,
	},
	"group-1-by-user": {
		// group-1 over the events sorted by user (features-4-by-user's
		// file): volga is promised the order (volga.WithClusteredBy) and
		// emits each user's windows once the input has moved on.
		// volga-batch-held, on request (-engines), runs without the
		// promise and holds every window to the end (about 8 GB at 10 M
		// events).
		Engines: []string{"duckdb", "volga-batch"},
		Prepare: prepareByUserLog,
		Run: map[string]engineFunc{
			"duckdb":           runDuckDBGroup,
			"volga-batch":      runVolgaBatchGroup,
			"volga-batch-held": runVolgaBatchGroupHeld,
		},
		Ratios: func(wl string, done []measured) { printRatios(wl, "duckdb", done) },
	},
	"lookup": {
		Engines: []string{"volga"},
		Prepare: prepareFeatures4,
		Run:     map[string]engineFunc{"volga": runLookup},
		Ratios:  func(string, []measured) {},
	},
	"checkpoint": {
		// volga-stream is the uninterrupted run the three checkpointed
		// runs' output is compared with (checkpoint.go).
		Engines: []string{"volga", "volga-stream"},
		Prepare: prepareCheckpoint,
		Run: map[string]engineFunc{
			"volga":        runCheckpoint,
			"volga-stream": runCheckpointPlain,
		},
		Ratios: printCheckpointRatios,
	},
}

func main() {
	var c config
	child := flag.String("child", "", "internal: run one engine in this process and report JSON on stdout")
	httpLoadSpec := flag.String("http-load", "", "internal: run an HTTP load (JSON spec) in this process and report JSON on stdout")
	flag.StringVar(&c.Workload, "workload", "features-4", "workload to run: features-4, features-4-arrival, features-4-by-user, stream-4, ml-3, group-1, group-1-by-user, scaling, lookup, checkpoint")
	flag.IntVar(&c.Events, "events", 10_000_000, "number of generated events")
	flag.Uint64Var(&c.Seed, "seed", 1, "generator seed")
	flag.StringVar(&c.DataDir, "data-dir", defaultDataDir(), "directory caching the generated Parquet files")
	flag.StringVar(&c.Engines, "engines", "", "comma-separated engines to run (default: all of the workload's)")
	flag.IntVar(&c.Parallelism, "parallelism", runtime.NumCPU(), "volga window parallelism")
	flag.IntVar(&c.ChannelDepth, "channel-depth", 0, "volga batches waiting on each edge between stages (volga.WithChannelDepth; 0: the default)")
	flag.IntVar(&c.Decoders, "decoders", 0, "volga Parquet decoding goroutines (0: the source's default, min(GOMAXPROCS, 4)); with -decoders equal to -parallelism, the parallelism bounds every parallel part of the run")
	flag.IntVar(&c.DuckThreads, "duckdb-threads", 0, "DuckDB threads (0: DuckDB's default, all cores)")
	flag.StringVar(&c.DuckConsume, "duckdb-consume", "sql", "how DuckDB's output is consumed: sql (checksum computed by DuckDB over every output row) or rows (every row scanned into Go through database/sql)")
	flag.DurationVar(&c.MaxOutOfOrder, "max-out-of-order", 5*time.Second, "stream-4: arrival shuffle bound and watermark out-of-orderness")
	flag.DurationVar(&c.WMInterval, "watermark-interval", 0, "stream-4: advance the watermark at most once per interval (volga.WithWatermarkInterval; 0: after every batch)")
	flag.IntVar(&c.BatchRows, "batch-rows", 8192, "stream-4: rows per in-memory source batch")
	flag.IntVar(&c.Lookups, "lookups", 200_000, "lookup: in-process lookups per window length")
	flag.IntVar(&c.HTTPRate, "http-rate", 5000, "lookup: HTTP requests per second (fixed rate, open loop)")
	flag.DurationVar(&c.HTTPDuration, "http-duration", 10*time.Second, "lookup: how long the HTTP load runs")
	flag.StringVar(&c.HTTPClient, "http-client", "inproc", "lookup: where the HTTP load generator runs: inproc (goroutines of the server's process) or process (a process of its own, as a separate load generator does)")
	flag.IntVar(&c.IngestRate, "ingest-rate", 10_000, "lookup: events per second ingested while the HTTP load runs")
	flag.StringVar(&c.ChildBinary, "child-binary", "auto", "where engines other than DuckDB run: auto (a build of this command without DuckDB, so that their peak RSS does not include DuckDB's library; this executable if it cannot be built) or self (this executable)")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of each engine's run to this file (suffixed with the engine name)")
	flag.StringVar(&c.MemProfile, "memprofile", "", "write a heap profile at the end of each engine's run to this file (suffixed with the engine name)")
	flag.StringVar(&c.PeakHeapProfile, "peak-heap-profile", "", "write the heap profile of the garbage collection with the largest live heap of each engine's run to this file (suffixed with the engine name): what is in memory at the peak")
	flag.StringVar(&c.Trace, "trace", "", "write an execution trace of each engine's run to this file (suffixed with the engine name; go tool trace): the library marks its checkpoint steps as regions volga.checkpoint.barrier, volga.checkpoint.write and volga.checkpoint.encode")
	flag.StringVar(&c.Input.Log, "input-log", "", "internal: prepared event log")
	flag.StringVar(&c.Input.Arrival, "input-arrival", "", "internal: prepared arrival-order events")
	flag.Parse()

	if *httpLoadSpec != "" {
		os.Exit(runHTTPLoad(*httpLoadSpec))
	}
	if *child != "" {
		os.Exit(runChild(*child, c))
	}
	if err := runParent(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "volga-bench")
	}
	return filepath.Join(os.TempDir(), "volga-bench")
}

// runChild runs one engine and prints its result as one JSON line.
func runChild(engine string, c config) int {
	w, ok := workloads[c.Workload]
	if !ok || w.Run[engine] == nil {
		fmt.Fprintf(os.Stderr, "bench: no engine %q for workload %q\n", engine, c.Workload)
		return 2
	}
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile + "." + engine)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
	}
	if c.Trace != "" {
		f, err := os.Create(c.Trace + "." + engine)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
		defer trace.Stop()
	}
	var peak *peakHeap
	if c.PeakHeapProfile != "" {
		peak = startPeakHeap()
	}
	res, err := w.Run[engine](context.Background(), c)
	if c.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	if peak != nil {
		live, err := peak.finish(c.PeakHeapProfile + "." + engine)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "# %s: peak live heap %.1f MB, profile in %s.%s; %s\n", engine, float64(live)/(1<<20), c.PeakHeapProfile, engine, peak.report())
	}
	if c.MemProfile != "" {
		if f, err := os.Create(c.MemProfile + "." + engine); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", engine, err)
		return 1
	}
	res.PeakRSSKB = selfPeakRSSKB()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// measured is one engine's outcome as seen by the parent.
type measured struct {
	engine string
	result
	peakRSSMB float64
	// cpuSeconds is the child's user+system CPU time, whole process: a
	// hint for how busy a shared machine was (seconds far above
	// cpuSeconds/cores means the engine waited for a CPU).
	cpuSeconds float64
}

func runParent(c config) error {
	w, ok := workloads[c.Workload]
	if !ok {
		return fmt.Errorf("unknown workload %q", c.Workload)
	}
	if w.Pending != "" {
		return fmt.Errorf("workload %s is not implemented yet: %s", c.Workload, w.Pending)
	}
	engines := w.Engines
	if c.Engines != "" {
		engines = strings.Split(c.Engines, ",")
		for _, e := range engines {
			if w.Run[e] == nil {
				return fmt.Errorf("workload %s has no engine %q (have %v)", c.Workload, e, w.Engines)
			}
		}
	}
	in, err := w.Prepare(c)
	if err != nil {
		return err
	}
	c.Input = in

	if c.ChildBinary != "auto" && c.ChildBinary != "self" {
		return fmt.Errorf("unknown -child-binary %q (want auto or self)", c.ChildBinary)
	}
	bins := &childBinaries{mode: c.ChildBinary}
	defer bins.cleanup()
	var done []measured
	for _, e := range engines {
		bin, label, err := bins.forEngine(e)
		if err != nil {
			return err
		}
		m, err := runEngine(bin, e, c)
		if err != nil {
			return err
		}
		var tail string
		if strings.HasPrefix(e, "volga") {
			dec := "auto"
			if c.Decoders > 0 {
				dec = strconv.Itoa(c.Decoders)
			}
			tail = fmt.Sprintf(" cpu_s=%.2f parallelism=%d decoders=%s", m.cpuSeconds, engineParallelism(e, c.Parallelism), dec)
			if c.WMInterval > 0 && strings.HasPrefix(e, "volga-stream") {
				tail += " watermark_interval=" + c.WMInterval.String()
			}
		}
		if label != "" {
			tail += " binary=" + label
		}
		fmt.Printf("workload=%s events=%d engine=%s seconds=%.2f events_per_s=%.0f peak_rss_mb=%.0f%s\n",
			c.Workload, c.Events, e, m.Seconds, float64(c.Events)/m.Seconds, m.peakRSSMB, tail)
		for _, l := range m.Lines {
			fmt.Println(l)
		}
		fmt.Fprintf(os.Stderr, "# workload=%s engine=%s process_cpu_s=%.2f checksum (%s) %s\n", c.Workload, e, m.cpuSeconds, m.checksumKind(), m.checksumString())
		done = append(done, m)
	}
	if w.Ratios != nil {
		w.Ratios(c.Workload, done)
	} else {
		printRatios(c.Workload, w.Engines[0], done)
	}

	// Every engine is checked against the first one with the same kind of
	// checksum.
	first := map[string]measured{}
	compared := 0
	for _, m := range done {
		if m.checksumKind() == "none" {
			continue
		}
		f, ok := first[m.checksumKind()]
		if !ok {
			first[m.checksumKind()] = m
			continue
		}
		if !m.agrees(f.result) {
			return fmt.Errorf("checksum of %s differs from %s:\n  %s\n  %s",
				m.engine, f.engine, m.checksumString(), f.checksumString())
		}
		compared++
	}
	if compared > 0 {
		fmt.Fprintf(os.Stderr, "# checksums agree (%d comparisons)\n", compared)
	}
	return nil
}

// printML3Ratios prints ml3Lines.
func printML3Ratios(wl string, done []measured) {
	for _, l := range ml3Lines(wl, done) {
		fmt.Println(l)
	}
}

// ml3Lines returns the ml-3 target ratio (volga-batch events/s on ml-3
// over volga-batch events/s on features-4, same data, same run), each ml-3
// run paired with the features-4 run just after it (or, when none
// follows, just before it), with the median of an engine's pairs when it
// ran more than once; then volga-batch against the go-loop. The run that
// orders its input by user first (volga-batch-clustered) is reported
// beside the target ratio, not in its place.
func ml3Lines(wl string, done []measured) []string {
	var out []string
	ratios := map[string][]float64{}
	var order []string
	for i := range done {
		m := &done[i]
		if m.engine != "volga-batch" && m.engine != "volga-batch-clustered" {
			continue
		}
		f4 := -1
		for j := i + 1; j < len(done) && f4 < 0; j++ {
			if done[j].engine == "volga-batch-features-4" {
				f4 = j
			}
		}
		for j := i - 1; j >= 0 && f4 < 0; j-- {
			if done[j].engine == "volga-batch-features-4" {
				f4 = j
			}
		}
		if f4 < 0 {
			continue
		}
		f := &done[f4]
		r := f.Seconds / m.Seconds
		if _, ok := ratios[m.engine]; !ok {
			order = append(order, m.engine)
		}
		ratios[m.engine] = append(ratios[m.engine], r)
		out = append(out, fmt.Sprintf("workload=%s ratio=%s(ml-3)/volga-batch(features-4) events_per_s=%.2f time=%.2f rss=%.2f",
			wl, m.engine, r, m.Seconds/f.Seconds, m.peakRSSMB/f.peakRSSMB))
	}
	for _, e := range order {
		if rs := ratios[e]; len(rs) > 1 {
			out = append(out, fmt.Sprintf("workload=%s ratio=%s(ml-3)/volga-batch(features-4) pairs=%d median_events_per_s=%.2f", wl, e, len(rs), median(rs)))
		}
	}
	var v, g *measured
	for i := range done {
		switch done[i].engine {
		case "volga-batch":
			v = &done[i]
		case "go-loop":
			g = &done[i]
		}
	}
	if v != nil && g != nil {
		out = append(out, fmt.Sprintf("workload=%s ratio=volga-batch/go-loop time=%.2f rss=%.2f",
			wl, v.Seconds/g.Seconds, v.peakRSSMB/g.peakRSSMB))
	}
	return append(out, fmt.Sprintf("workload=%s duckdb=none reason=\"no topn_frequency, sum_cate or top1_ratio in DuckDB; the features-4 run is the reference\"", wl))
}

// median returns the median of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + m) / 2
	}
	return m
}

// printRatios prints every engine's time and RSS relative to the baseline,
// and volga-batch relative to the go-loop floor when both ran.
func printRatios(wl, baseline string, done []measured) {
	find := func(name string) *measured {
		for i := range done {
			if done[i].engine == name {
				return &done[i]
			}
		}
		return nil
	}
	ratio := func(a, b *measured) {
		fmt.Printf("workload=%s ratio=%s/%s time=%.2f rss=%.2f\n",
			wl, a.engine, b.engine, a.Seconds/b.Seconds, a.peakRSSMB/b.peakRSSMB)
	}
	if base := find(baseline); base != nil {
		for i := range done {
			if done[i].engine != baseline {
				ratio(&done[i], base)
			}
		}
	}
	if v, g := find("volga-batch"), find("go-loop"); v != nil && g != nil {
		ratio(v, g)
	}
}

// engineParallelism is the parallelism engine runs with: N for a name
// ending -pN (the scaling workload's), def otherwise.
func engineParallelism(engine string, def int) int {
	i := strings.LastIndex(engine, "-p")
	if i < 0 {
		return def
	}
	n, err := strconv.Atoi(engine[i+2:])
	if err != nil || n < 1 {
		return def
	}
	return n
}

// printScalingRatios prints scalingLines.
func printScalingRatios(wl string, done []measured) {
	for _, l := range scalingLines(wl, done) {
		fmt.Println(l)
	}
}

// scalingLines returns, for each pair of runs with parallelism 1 and 2 in
// turn, a line with the ratio of their throughputs (the target: >= 1.7),
// of their CPU times (1.00: running on two tasks costs no more CPU) and
// the cores each kept busy on average (CPU time over wall time), then a
// line with the median throughput ratio. On a machine of c cores, a run
// using u cores at parallelism 1 cannot gain more than c/u from
// parallelism.
func scalingLines(wl string, done []measured) []string {
	var out []string
	var ratios []float64
	var p1 *measured
	for i := range done {
		m := &done[i]
		switch engineParallelism(m.engine, 0) {
		case 1:
			p1 = m
		case 2:
			if p1 == nil {
				continue
			}
			r := p1.Seconds / m.Seconds
			ratios = append(ratios, r)
			out = append(out, fmt.Sprintf("workload=%s ratio=p2/p1 events_per_s=%.2f cpu_s=%.2f cores_p1=%.2f cores_p2=%.2f",
				wl, r, m.cpuSeconds/p1.cpuSeconds, p1.cpuSeconds/p1.Seconds, m.cpuSeconds/m.Seconds))
			p1 = nil
		}
	}
	if len(ratios) > 1 {
		out = append(out, fmt.Sprintf("workload=%s ratio=p2/p1 pairs=%d median_events_per_s=%.2f", wl, len(ratios), median(ratios)))
	}
	return out
}

// runEngine runs engine in a child process of executable bin (this
// command, or its build without DuckDB) and returns its report with its
// peak RSS.
func runEngine(bin, engine string, c config) (measured, error) {
	args := []string{
		"-child=" + engine,
		"-workload=" + c.Workload,
		fmt.Sprintf("-events=%d", c.Events),
		fmt.Sprintf("-seed=%d", c.Seed),
		"-input-log=" + c.Input.Log,
		"-input-arrival=" + c.Input.Arrival,
		fmt.Sprintf("-parallelism=%d", engineParallelism(engine, c.Parallelism)),
		fmt.Sprintf("-decoders=%d", c.Decoders),
		fmt.Sprintf("-channel-depth=%d", c.ChannelDepth),
		fmt.Sprintf("-duckdb-threads=%d", c.DuckThreads),
		"-duckdb-consume=" + c.DuckConsume,
		"-max-out-of-order=" + c.MaxOutOfOrder.String(),
		"-watermark-interval=" + c.WMInterval.String(),
		fmt.Sprintf("-batch-rows=%d", c.BatchRows),
		fmt.Sprintf("-lookups=%d", c.Lookups),
		fmt.Sprintf("-http-rate=%d", c.HTTPRate),
		"-http-duration=" + c.HTTPDuration.String(),
		"-http-client=" + c.HTTPClient,
		fmt.Sprintf("-ingest-rate=%d", c.IngestRate),
		"-cpuprofile=" + c.CPUProfile,
		"-memprofile=" + c.MemProfile,
		"-peak-heap-profile=" + c.PeakHeapProfile,
		"-trace=" + c.Trace,
	}
	args = append(args, ckptChildArgs()...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return measured{}, fmt.Errorf("engine %s: %w", engine, err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return measured{}, fmt.Errorf("engine %s: bad report %q: %w", engine, out.String(), err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return measured{}, fmt.Errorf("engine %s: no rusage on this platform", engine)
	}
	// Linux reports ru_maxrss in KiB. It is at least the parent's peak
	// at the fork (see selfPeakRSSKB): the child's own figure comes first.
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rss := res.PeakRSSKB
	if rss == 0 {
		rss = ru.Maxrss
	}
	return measured{engine: engine, result: res, peakRSSMB: float64(rss) / 1024, cpuSeconds: cpu.Seconds()}, nil
}

// selfPeakRSSKB returns the process's peak RSS in KiB from
// /proc/self/status (VmHWM), 0 where there is none. The parent does not
// use the child's ru_maxrss alone: Linux starts it at the peak of the
// address space the child was forked from (the parent's, os/exec forks
// with a shared one), so a parent that had generated a 10 M-event input
// in memory in the same invocation gave every child a peak RSS of about
// 950 MB. VmHWM is the child's own address space's.
func selfPeakRSSKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

// prepareFeatures4 generates (or finds in the cache) the features-4 event
// log and returns its path.
func prepareFeatures4(c config) (input, error) {
	start := time.Now()
	path, created, err := gen.EnsureParquet(c.DataDir, gen.NewFeatures4(c.Events, c.Seed))
	if err != nil {
		return input{}, err
	}
	if created {
		fmt.Fprintf(os.Stderr, "# generated %s in %.1fs\n", path, time.Since(start).Seconds())
	}
	return input{Log: path}, nil
}

// prepareArrivalLog prepares the features-4 events in arrival order as
// the log every engine reads (features-4-arrival).
func prepareArrivalLog(c config) (input, error) {
	in, err := prepareStream4(c)
	if err != nil {
		return input{}, err
	}
	return input{Log: in.Arrival}, nil
}

// prepareByUserLog prepares the features-4 events sorted by user as the
// log every engine reads (features-4-by-user).
func prepareByUserLog(c config) (input, error) {
	if _, err := prepareFeatures4(c); err != nil {
		return input{}, err
	}
	start := time.Now()
	path, created, err := gen.EnsureByUserParquet(c.DataDir, gen.NewFeatures4(c.Events, c.Seed))
	if err != nil {
		return input{}, err
	}
	if created {
		fmt.Fprintf(os.Stderr, "# generated %s in %.1fs\n", path, time.Since(start).Seconds())
	}
	return input{Log: path}, nil
}

// prepareStream4 prepares the features-4 log (DuckDB's batch input) and
// its copy in shuffled arrival order (volga-stream's input).
func prepareStream4(c config) (input, error) {
	in, err := prepareFeatures4(c)
	if err != nil {
		return input{}, err
	}
	start := time.Now()
	arrival, created, err := gen.EnsureArrivalParquet(c.DataDir, gen.NewFeatures4(c.Events, c.Seed), c.MaxOutOfOrder)
	if err != nil {
		return input{}, err
	}
	if created {
		fmt.Fprintf(os.Stderr, "# generated %s in %.1fs\n", arrival, time.Since(start).Seconds())
	}
	in.Arrival = arrival
	return in, nil
}
