package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/pipeline"

	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/hostnoise"
	"github.com/volga-go/volga/bench/internal/volgarun"
)

// The lookup workload (BENCHMARKS.md): point lookups Lookup(user, t)
// against the state of a pipeline that has ingested the features-4 events,
// for four window lengths, in process and then over HTTP on loopback at a
// fixed request rate while ingest continues.
//
// For each window length L (1 h, 1 d, 7 d, 30 d) one pipeline computes four
// features of that window (sum, count, avg and max of amount, PARTITION BY
// user_id), so a lookup of it returns exactly four features. It runs in
// streaming mode (MaxOutOfOrder 1 ms: the log is in event-time order, and
// the millisecond keeps rows that share the newest timestamp across a
// batch boundary on time, where a bound of 0 would make them late) with
// WithLookupRetention covering the whole log plus the continued ingest,
// so a lookup may ask for any time of the log. Its source is the whole log
// from memory, then a gate: the pipeline stays running (idle) while the
// lookups are measured. Ingest is timed until the sink has received every
// row. Then:
//
//   - in process: -lookups lookups (after 2 000 unrecorded warm-up ones)
//     from one goroutine, for users uniform over all users and times
//     uniform over the log's span, each timed alone; p50/p99/p999. A
//     sample of 500 lookups is checked against a brute-force computation
//     over the raw events (the frame ts in [t-L, t], peers at t included).
//   - over HTTP (the 30-day pipeline only): Pipeline.Handler on a
//     127.0.0.1 listener; an open-loop client sends -http-rate requests/s
//     for -http-duration (request i is due at start + i/rate and its
//     latency is counted from that due time, so a client or server that
//     falls behind is charged for it), through 64 keep-alive connections,
//     each with a goroutine sending every 64th request at its due time.
//     "Ingest running" means: while the load runs, the same pipeline keeps
//     ingesting new events at -ingest-rate events/s (the log replayed with
//     its event times shifted past its end, in batches of 500 rows), so
//     lookups contend with window updates, watermark progress and tile
//     building on the same state and the same 2 cores.
//
// Everything is bounded: the number of lookups, the HTTP duration, the
// tail (at most rate * (duration + 5 s) events).

// lookupWindows are the window lengths of the workload.
var lookupWindows = []struct {
	name, interval string
	ms             int64
}{
	{"1h", "INTERVAL '1' HOUR", 3_600_000},
	{"1d", "INTERVAL '1' DAY", 86_400_000},
	{"7d", "INTERVAL '7' DAY", 7 * 86_400_000},
	{"30d", "INTERVAL '30' DAY", 30 * 86_400_000},
}

func lookupQuery(name, interval string) string {
	return fmt.Sprintf(`SELECT id, user_id, ts,
       sum(amount) OVER w AS sum_%[1]s, count(*) OVER w AS n_%[1]s,
       avg(amount) OVER w AS avg_%[1]s, max(amount) OVER w AS max_%[1]s
FROM tx
WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN %[2]s PRECEDING AND CURRENT ROW)`, name, interval)
}

const (
	lookupWarmup   = 2_000
	nullBlock      = 1_000 // lookups between null blocks (measureLookups)
	lookupChecked  = 500
	httpClients    = 64
	tailBatchRows  = 500
	lookupRNGLabel = 0x6c6f6f6b7570 // "lookup"
)

// runLookup runs the lookup workload in this (child) process. Its Seconds
// is the total ingest time of the four pipelines; its Lines the latency
// report.
func runLookup(ctx context.Context, c config) (result, error) {
	schema, recs, err := gen.ReadParquet(c.Input.Log, []string{"id", "user_id", "ts", "amount"}, c.BatchRows)
	if err != nil {
		return result{}, err
	}
	cfg := gen.NewFeatures4(c.Events, c.Seed)
	lo, hi := recs[0].Column(2).(*array.Timestamp).Value(0), lastTs(recs)
	span := int64(hi - lo)
	tailRows := int(float64(c.IngestRate) * (c.HTTPDuration + 5*time.Second).Seconds())
	// Retention: the whole log, the continued ingest's advance of the
	// watermark, and a day of margin.
	retention := time.Duration(span)*time.Millisecond + time.Duration(float64(tailRows)/float64(c.Events)*float64(span))*time.Millisecond + 24*time.Hour
	fmt.Fprintf(os.Stderr, "# lookup: %d events, %d users, span %s, retention %s\n",
		c.Events, cfg.Users, time.Duration(span)*time.Millisecond, retention.Round(time.Hour))

	var res result
	p99 := map[string]float64{}
	for _, w := range lookupWindows {
		if !lookupWindowSelected(w.name) {
			continue
		}
		var tail []arrow.RecordBatch
		if w.name == "30d" {
			tail = shiftedTail(schema, recs, tailRows, span+1, int64(c.Events))
		}
		src := newGatedSource(schema, recs, tail, c.IngestRate)
		p, err := volgarun.Compile(lookupQuery(w.name, w.interval), "tx", src,
			volgarun.Options{Streaming: true, MaxOutOfOrder: time.Millisecond, Parallelism: c.Parallelism, LookupRetention: retention},
			func(context.Context, arrow.RecordBatch) error { return nil })
		if err != nil {
			return result{}, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		runErr := make(chan error, 1)
		start := time.Now()
		go func() { runErr <- p.Run(runCtx) }()
		end, unreleased, err := waitRows(p, int64(c.Events), runErr)
		if err != nil {
			cancel()
			return result{}, fmt.Errorf("window %s: ingest: %w", w.name, err)
		}
		ingest := end.Sub(start).Seconds()
		res.Seconds += ingest
		fmt.Fprintf(os.Stderr, "# lookup window=%s ingest %.2fs (%.0f events/s), %d rows not released by the watermark while the source idles\n",
			w.name, ingest, float64(c.Events)/ingest, unreleased)

		if err := checkLookups(ctx, p, w.name, w.ms, recs, cfg.Users, c.Seed); err != nil {
			cancel()
			return result{}, fmt.Errorf("window %s: %w", w.name, err)
		}
		// Lookup, then LookupInto (a FeatureRow reused: no allocation).
		for _, into := range []bool{false, true} {
			st, err := measureLookups(ctx, p, c.Lookups, cfg.Users, int64(lo), span, c.Seed, into)
			if err != nil {
				cancel()
				return result{}, fmt.Errorf("window %s: %w", w.name, err)
			}
			lat := st.lat
			mode := "inproc"
			if into {
				mode = "inproc-into"
			} else {
				p99[w.name] = pct(lat, 0.99)
			}
			res.Lines = append(res.Lines, fmt.Sprintf("workload=lookup window=%s mode=%s lookups=%d ingest_s=%.2f unreleased=%d p50_us=%.1f p99_us=%.1f p999_us=%.1f cpu_us_per_lookup=%.1f allocs_per_lookup=%.0f bytes_per_lookup=%.0f gc_cycles=%d page_faults=%d null_p50_us=%.1f null_p99_us=%.1f null_p999_us=%.1f",
				w.name, mode, len(lat), ingest, unreleased, pct(lat, 0.50), pct(lat, 0.99), pct(lat, 0.999), st.cpuUs, st.allocs, st.bytes, st.gcCycles, st.faults, pct(st.null, 0.50), pct(st.null, 0.99), pct(st.null, 0.999)))
		}

		if tail != nil {
			line, err := measureHTTP(ctx, p, src, c, int64(lo), span)
			if err != nil {
				cancel()
				return result{}, fmt.Errorf("http: %w", err)
			}
			res.Lines = append(res.Lines, line)
		}
		src.stop()
		err = <-runErr
		cancel()
		if err != nil {
			return result{}, fmt.Errorf("window %s: run: %w", w.name, err)
		}
		runtime.GC()
	}
	if _, ok := p99["1h"]; ok {
		res.Lines = append(res.Lines, fmt.Sprintf("workload=lookup ratio=p99(30d)/p99(1h) value=%.2f", p99["30d"]/p99["1h"]))
	}
	return res, nil
}

// Environment variables of the lookup workload, for profiling the HTTP
// phase on its own (the child process inherits them):
//
//   - VOLGA_BENCH_LOOKUP_WINDOWS: comma-separated window names (1h, 1d,
//     7d, 30d) to run; default all. "30d" alone runs only the pipeline
//     the HTTP load is measured on.
//   - VOLGA_BENCH_HTTP_PROFILE: a file name prefix; the HTTP phase then
//     writes PREFIX.cpu (CPU profile), PREFIX.allocs0 and PREFIX.allocs1
//     (allocation profiles at its start and end: go tool pprof
//     -diff_base PREFIX.allocs0 PREFIX.allocs1), PREFIX.block and
//     PREFIX.mutex (block and mutex profiles of the phase alone).
//   - VOLGA_BENCH_HTTP_SLEEP: when set, the HTTP workers wait for due
//     times with time.Sleep instead of the pacer (millisecond wake-ups,
//     requests in bursts): to see what sending on time costs in CPU.
const (
	envLookupWindows = "VOLGA_BENCH_LOOKUP_WINDOWS"
	envHTTPProfile   = "VOLGA_BENCH_HTTP_PROFILE"
	envHTTPSleep     = "VOLGA_BENCH_HTTP_SLEEP"
)

// lookupWindowSelected reports whether the window named name runs.
func lookupWindowSelected(name string) bool {
	sel := os.Getenv(envLookupWindows)
	if sel == "" {
		return true
	}
	return slices.Contains(strings.Split(sel, ","), name)
}

// httpProfile profiles the HTTP phase when envHTTPProfile is set: start
// begins it, and the function it returns ends it and writes the files.
func httpProfile() (stop func()) {
	prefix := os.Getenv(envHTTPProfile)
	if prefix == "" {
		return func() {}
	}
	write := func(name, suffix string) {
		if name == "allocs" {
			// The allocation profile is as of the last GC: make it now.
			runtime.GC()
		}
		f, err := os.Create(prefix + suffix)
		if err != nil {
			fmt.Fprintf(os.Stderr, "# lookup http profile: %v\n", err)
			return
		}
		defer f.Close()
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			fmt.Fprintf(os.Stderr, "# lookup http profile: %v\n", err)
		}
	}
	write("allocs", ".allocs0")
	runtime.SetBlockProfileRate(10_000) // a sample per 10 µs blocked
	runtime.SetMutexProfileFraction(10)
	cpu, err := os.Create(prefix + ".cpu")
	if err == nil {
		if err = pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			cpu = nil
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "# lookup http profile: no CPU profile: %v\n", err)
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		write("allocs", ".allocs1")
		write("block", ".block")
		write("mutex", ".mutex")
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}
}

func lastTs(recs []arrow.RecordBatch) arrow.Timestamp {
	last := recs[len(recs)-1].Column(2).(*array.Timestamp)
	return last.Value(last.Len() - 1)
}

// waitRows waits until the pipeline has read all n rows and emitted them
// (every row released by the watermark), and returns when the last row was
// emitted and how many were not. Rows within the out-of-orderness bound of
// the newest event time stay pending while the source idles, as the
// watermark has not passed them, so once all rows are read, one second
// without any further emission also ends the wait. (With a bound of 0,
// the 4 "unreleased" rows once seen at 10 M events were late rows: equal
// timestamps split across batches.) It fails if the run ends first or
// nothing is read or emitted for a minute.
func waitRows(p *volga.Pipeline, n int64, runErr chan error) (time.Time, int64, error) {
	var last pipeline.StatsSnapshot
	since := time.Now()
	for {
		st := p.Stats()
		switch {
		case st.RowsOut >= n:
			return time.Now(), 0, nil
		case st.RowsIn != last.RowsIn || st.RowsOut != last.RowsOut:
			last, since = st, time.Now()
		case st.RowsIn >= n && time.Since(since) > time.Second:
			return since, n - st.RowsOut, nil
		case time.Since(since) > time.Minute:
			return since, 0, fmt.Errorf("stalled: %d of %d rows read, %d emitted, watermark %s, no progress for a minute",
				st.RowsIn, n, st.RowsOut, time.UnixMilli(st.Watermark).UTC().Format(time.RFC3339Nano))
		}
		select {
		case err := <-runErr:
			return since, 0, fmt.Errorf("pipeline ended after %d of %d rows: %v", p.Stats().RowsOut, n, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// lookupRequests returns n random (user, time) pairs, deterministic in
// seed and salt: users uniform over [0, users), times uniform over
// [lo, lo+span].
func lookupRequests(n, users int, lo, span int64, seed, salt uint64) ([]int64, []time.Time) {
	rng := rand.New(rand.NewPCG(seed, lookupRNGLabel+salt))
	us, ts := make([]int64, n), make([]time.Time, n)
	for i := range us {
		us[i] = rng.Int64N(int64(users))
		ts[i] = time.UnixMilli(lo + rng.Int64N(span+1))
	}
	return us, ts
}

// lookupStats are the latencies (microseconds, sorted) of the recorded
// lookups and their heap allocations per lookup.
type lookupStats struct {
	lat []float64
	// null are the latencies (microseconds, sorted) of as many runs of
	// pure CPU work as long as the median warm-up lookup, timed in blocks
	// between the lookups' (package hostnoise).
	null          []float64
	allocs, bytes float64
	// faults are the process's page faults while the lookups ran (every
	// thread's: the idle pipeline's included).
	faults int64
	// cpuUs is the process CPU time (user + system, every thread: the
	// idle pipeline's included) per lookup, which a loaded machine does
	// not inflate the way it inflates wall-clock latencies.
	cpuUs float64
	// gcCycles are the GC cycles that ended while the lookups ran: a
	// cycle's marking shares the CPUs with them, and shows in the tail.
	gcCycles uint32
}

// processCPU is the CPU time (user + system) the process has used.
func processCPU() time.Duration {
	cpu, _ := processUsage()
	return cpu
}

// processUsage is the CPU time (user + system) the process has used and
// the page faults it has taken (minor and major: a first touch of memory
// the kernel must map, which on a VM can cost tens of microseconds).
func processUsage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Minflt + ru.Majflt)
}

// measureLookups times n lookups (after a warm-up) from one goroutine.
// Between blocks of nullBlock lookups it times as many runs of pure CPU
// work as long as the warm-up's median lookup (package hostnoise), so that
// the lookups and their null twins see the host in the same moments; the
// CPU time and page faults per lookup leave the null blocks out.
func measureLookups(ctx context.Context, p *volga.Pipeline, n, users int, lo, span int64, seed uint64, into bool) (lookupStats, error) {
	us, ts := lookupRequests(n+lookupWarmup, users, lo, span, seed, 1)
	keys := make([]map[string]any, len(us))
	for i, u := range us {
		keys[i] = map[string]any{"user_id": u}
	}
	lat := make([]float64, 0, n)
	warm := make([]float64, 0, lookupWarmup)
	null := make([]float64, 0, n)
	var (
		row    volga.FeatureRow
		m0, m1 runtime.MemStats
		cpu0   time.Duration
		cpu    time.Duration
		flt0   int64
		flt    int64
		iters  int
	)
	for i := range keys {
		if i == lookupWarmup {
			slices.Sort(warm)
			iters = hostnoise.SpinItersFor(time.Duration(pct(warm, 0.50)*1e3), time.Now)
			runtime.ReadMemStats(&m0)
			cpu0, flt0 = processUsage()
		} else if i > lookupWarmup && (i-lookupWarmup)%nullBlock == 0 {
			c, f := processUsage()
			cpu, flt = cpu+c-cpu0, flt+f-flt0
			null = hostnoise.AppendSpin(null, nullBlock, iters, time.Now)
			cpu0, flt0 = processUsage()
		}
		var (
			d       time.Duration
			err     error
			nValues int
		)
		if into {
			t0 := time.Now()
			err = p.LookupInto(ctx, &row, keys[i], ts[i], nil)
			d = time.Since(t0)
			nValues = row.Len()
		} else {
			t0 := time.Now()
			var r volga.LookupResult
			r, err = p.Lookup(ctx, keys[i], ts[i], nil)
			d = time.Since(t0)
			nValues = len(r.Values)
		}
		if err != nil {
			return lookupStats{}, fmt.Errorf("lookup user %d at %s: %w", us[i], ts[i].UTC().Format(time.RFC3339), err)
		}
		if nValues != 4 {
			return lookupStats{}, fmt.Errorf("lookup returned %d features, want 4", nValues)
		}
		if i >= lookupWarmup {
			lat = append(lat, float64(d.Nanoseconds())/1e3)
		} else {
			warm = append(warm, float64(d.Nanoseconds())/1e3)
		}
	}
	c, f := processUsage()
	cpu, flt = cpu+c-cpu0, flt+f-flt0
	runtime.ReadMemStats(&m1)
	null = hostnoise.AppendSpin(null, n-len(null), iters, time.Now)
	slices.Sort(lat)
	slices.Sort(null)
	// lat's, warm's and null's backing arrays were allocated before m0.
	return lookupStats{lat: lat, null: null, faults: flt, cpuUs: float64(cpu.Microseconds()) / float64(n),
		allocs:   float64(m1.Mallocs-m0.Mallocs) / float64(n),
		bytes:    float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
		gcCycles: m1.NumGC - m0.NumGC}, nil
}

// pct is the q-quantile of sorted (nearest rank), as hostprobe's.
var pct = hostnoise.Quantile

// checkLookups compares lookupChecked lookups with the features computed
// by brute force from the raw events of their users.
func checkLookups(ctx context.Context, p *volga.Pipeline, name string, windowMs int64, recs []arrow.RecordBatch, users int, seed uint64) error {
	lo := int64(recs[0].Column(2).(*array.Timestamp).Value(0))
	span := int64(lastTs(recs)) - lo
	us, ts := lookupRequests(lookupChecked, users, lo, span, seed, 2)
	type ev struct {
		ts     int64
		amount float64
	}
	events := map[int64][]ev{}
	for _, u := range us {
		events[u] = nil
	}
	for _, rec := range recs {
		uc := rec.Column(1).(*array.Int64).Int64Values()
		tc := rec.Column(2).(*array.Timestamp).TimestampValues()
		ac := rec.Column(3).(*array.Float64).Float64Values()
		for i, u := range uc {
			if evs, ok := events[u]; ok {
				events[u] = append(evs, ev{int64(tc[i]), ac[i]})
			}
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) }
	for i, u := range us {
		t := ts[i].UnixMilli()
		var n int64
		sum, mx := 0.0, math.Inf(-1)
		for _, e := range events[u] {
			if e.ts >= t-windowMs && e.ts <= t {
				n++
				sum += e.amount
				mx = math.Max(mx, e.amount)
			}
		}
		r, err := p.Lookup(ctx, map[string]any{"user_id": u}, ts[i], nil)
		if err != nil {
			return err
		}
		got := func(f string) any { v, _ := r.Feature(f + "_" + name); return v }
		ok := got("n") == n
		if n == 0 {
			ok = ok && got("sum") == nil && got("avg") == nil && got("max") == nil
		} else {
			s, ok1 := got("sum").(float64)
			a, ok2 := got("avg").(float64)
			m, ok3 := got("max").(float64)
			ok = ok && ok1 && ok2 && ok3 && near(s, sum) && near(a, sum/float64(n)) && m == mx
		}
		if !ok {
			return fmt.Errorf("lookup user %d at %s: got %v = %v, want n=%d sum=%v avg=%v max=%v (brute force over the raw events)",
				u, ts[i].UTC().Format(time.RFC3339Nano), r.Names, r.Values, n, sum, sum/float64(n), mx)
		}
	}
	fmt.Fprintf(os.Stderr, "# lookup window=%s: %d lookups equal the brute-force features\n", name, len(us))
	return nil
}

// measureHTTP serves p on a loopback listener, opens the source's gate so
// that ingest continues at c.IngestRate, and drives c.HTTPRate requests/s
// for c.HTTPDuration from an open-loop client (see httpLoad). It returns
// the report line.
//
// By default (-http-client inproc) the client runs as goroutines of this
// process. With -http-client process it runs in a process of its own, as
// a separate load generator does; on the 2-core test machine that was
// slower, not faster (p99 3.7-3.9 ms against 1.2-2.2 ms, from the send
// 2.2-3.1 ms against 0.4-0.8), probably because every request and answer
// must then wake a parked thread of the other process, where within one
// Go runtime a thread looking for work often finds the ready socket.
func measureHTTP(ctx context.Context, p *volga.Pipeline, src *gatedSource, c config, lo, span int64) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	day := int64(86_400_000)
	spec := httpLoadSpec{
		Addr:  ln.Addr().String(),
		N:     int(float64(c.HTTPRate) * c.HTTPDuration.Seconds()),
		Rate:  c.HTTPRate,
		Users: gen.NewFeatures4(c.Events, c.Seed).Users,
		Lo:    lo + day, Span: span - day, Seed: c.Seed,
	}
	var load func() (httpLoadResult, error)
	switch c.HTTPClient {
	case "process":
		load = func() (httpLoadResult, error) { return httpLoadChild(ctx, spec) }
	case "inproc":
		load = func() (httpLoadResult, error) { return httpLoad(spec) }
	default:
		return "", fmt.Errorf("-http-client %q: want process or inproc", c.HTTPClient)
	}

	rowsBefore := p.Stats().RowsIn
	src.open()
	stopProfile := httpProfile()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	sched0 := readHist(schedLatencies)
	cpu0 := processCPU()
	start := time.Now()
	lr, err := load()
	if err != nil {
		stopProfile()
		return "", err
	}
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	sched := readHist(schedLatencies).sub(sched0)
	runtime.ReadMemStats(&ms1)
	stopProfile()
	ingested := p.Stats().RowsIn - rowsBefore
	if lr.FirstErr != "" {
		fmt.Fprintf(os.Stderr, "# lookup http: %d failed requests, first: %s\n", lr.Failed, lr.FirstErr)
	}
	lat, fromSend, sendLag := lr.Lat, lr.FromSend, lr.SendLag
	slices.Sort(lat)
	slices.Sort(fromSend)
	slices.Sort(sendLag)
	n := spec.N
	// cpu_us_per_req is this process's CPU time (server, lookups and
	// ingest, and the client with -http-client inproc) per request;
	// cpu_cores the cores it used on average (from the client's start to
	// its end); allocs_per_req and bytes_per_req this process's heap
	// allocations per request (ingest's included), gc_cycles its GC
	// cycles during the load. max_send_lag_ms is how late the client sent
	// its most delayed request: latencies count from due times, so a lag
	// shows up in them, but a large one says the client, not the server,
	// was starved of CPU. The p50/p99 figures split the latency: from_send
	// counts from the moment a client goroutine sent the request (server
	// and both HTTP stacks), send_lag is how long after its due time that
	// was (the pacer's wake-up, a wait for the worker's previous answer,
	// or for a CPU). sched_p99_us and sched_max_us are the 99th percentile
	// and the maximum of the time goroutines of this process waited,
	// runnable, for a CPU during the load (runtime/metrics
	// /sched/latencies, bucket upper bounds).
	return fmt.Sprintf("workload=lookup window=30d mode=http client=%s rate=%d requests=%d errors=%d seconds=%.2f ingest_events_per_s=%.0f p50_us=%.0f p99_us=%.0f p999_us=%.0f cpu_us_per_req=%.1f cpu_cores=%.2f max_send_lag_ms=%.1f p50_from_send_us=%.0f p99_from_send_us=%.0f send_lag_p50_us=%.0f send_lag_p99_us=%.0f allocs_per_req=%.1f bytes_per_req=%.0f gc_cycles=%d sched_p99_us=%.0f sched_max_us=%.0f",
		c.HTTPClient, c.HTTPRate, n, lr.Failed, time.Duration(lr.ElapsedNs).Seconds(), float64(ingested)/elapsed.Seconds(), pct(lat, 0.50), pct(lat, 0.99), pct(lat, 0.999),
		float64(cpu.Microseconds())/float64(n), cpu.Seconds()/elapsed.Seconds(), float64(lr.MaxLagNs)/1e6,
		pct(fromSend, 0.50), pct(fromSend, 0.99), pct(sendLag, 0.50), pct(sendLag, 0.99),
		float64(ms1.Mallocs-ms0.Mallocs)/float64(n), float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n), ms1.NumGC-ms0.NumGC,
		sched.quantile(0.99)*1e6, sched.quantile(1)*1e6), nil
}

// httpLoadSpec is what the HTTP load generator needs: the server's
// address, the number of requests and their rate, and what the requests
// are drawn from (lookupRequests).
type httpLoadSpec struct {
	Addr     string
	N, Rate  int
	Users    int
	Lo, Span int64
	Seed     uint64
}

// httpLoadResult is what the load generator measured, per request in
// request order: Lat from the due time to the answer, FromSend from the
// send, SendLag from the due time to the send (µs).
type httpLoadResult struct {
	Lat, FromSend, SendLag []float64
	Failed                 int64
	FirstErr               string
	MaxLagNs               int64 // how late the most delayed request was sent
	ElapsedNs              int64
}

// httpLoad runs the load of spec in this process and returns what it
// measured.
//
// The client is built to cost the shared 2 cores little and to send on
// time: each of httpClients worker goroutines owns one keep-alive
// connection and speaks HTTP/1.1 on it directly (one write of a prepared
// request, the status line and headers parsed, the body read whole and
// its status checked; see rawConn), and sends every httpClients-th request
// itself (as wrk2 does), with no hand-over from a sender goroutine, after
// waiting for its due time with a pacer (a timerfd on Linux) rather than
// time.Sleep, which wakes an idle process only at millisecond boundaries.
func httpLoad(spec httpLoadSpec) (httpLoadResult, error) {
	n := spec.N
	us, ts := lookupRequests(n, spec.Users, spec.Lo, spec.Span, spec.Seed, 3)
	reqs := make([][]byte, n)
	for i := range reqs {
		reqs[i] = rawRequest(spec.Addr, "/v1/features", fmt.Appendf(nil, `{"key":{"user_id":%d},"at":%d}`, us[i], ts[i].UnixMilli()))
	}
	conns := make([]*rawConn, httpClients)
	defer func() {
		for _, rc := range conns {
			if rc != nil {
				rc.close()
			}
		}
	}()
	// Open and warm the connections up (not recorded).
	var err error
	for i := range conns {
		if conns[i], err = dialRaw(spec.Addr); err != nil {
			return httpLoadResult{}, fmt.Errorf("warm-up: %w", err)
		}
		if status, err := conns[i].do(reqs[i%n]); err != nil || status != http.StatusOK {
			return httpLoadResult{}, fmt.Errorf("warm-up request: status %d, %v", status, err)
		}
	}
	paces := make([]*pacer, len(conns))
	defer func() {
		for _, pc := range paces {
			if pc != nil {
				pc.close()
			}
		}
	}()
	for k := range paces {
		if paces[k], err = newPacer(); err != nil {
			return httpLoadResult{}, err
		}
	}

	res := httpLoadResult{Lat: make([]float64, n), FromSend: make([]float64, n), SendLag: make([]float64, n)}
	lags := make([]time.Duration, len(conns))
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Duration(float64(time.Second) / float64(spec.Rate))
	coarse := os.Getenv(envHTTPSleep) != ""
	// Worker k sends requests k, k+W, k+2W... (W workers), each at its
	// due time, on its own connection: a request whose worker is still
	// waiting for its previous answer goes out late, and the lateness is
	// in its latency.
	for k, rc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += len(conns) {
				due := start.Add(time.Duration(i) * interval)
				if coarse {
					time.Sleep(time.Until(due))
				} else if err := paces[k].sleep(time.Until(due)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, "pacer: "+err.Error())
				}
				sent := time.Now()
				status, err := rc.do(reqs[i])
				done := time.Now()
				res.Lat[i] = float64(done.Sub(due).Nanoseconds()) / 1e3
				res.FromSend[i] = float64(done.Sub(sent).Nanoseconds()) / 1e3
				res.SendLag[i] = float64(sent.Sub(due).Nanoseconds()) / 1e3
				lags[k] = max(lags[k], sent.Sub(due))
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("status %d", status)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	res.ElapsedNs = int64(time.Since(start))
	res.MaxLagNs = int64(slices.Max(lags))
	res.Failed = failed.Load()
	if e := firstErr.Load(); e != nil {
		res.FirstErr = e.(string)
	}
	return res, nil
}

// httpLoadChild runs the load of spec in a child process (this binary
// re-executed with -http-load) and returns what it measured.
func httpLoadChild(ctx context.Context, spec httpLoadSpec) (httpLoadResult, error) {
	self, err := os.Executable()
	if err != nil {
		return httpLoadResult{}, err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return httpLoadResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-http-load="+string(js))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return httpLoadResult{}, fmt.Errorf("http load process: %w", err)
	}
	var res httpLoadResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return httpLoadResult{}, fmt.Errorf("http load process: bad report: %w", err)
	}
	if len(res.Lat) != spec.N || len(res.FromSend) != spec.N || len(res.SendLag) != spec.N {
		return httpLoadResult{}, fmt.Errorf("http load process: %d latencies for %d requests", len(res.Lat), spec.N)
	}
	return res, nil
}

// runHTTPLoad is the -http-load process: it runs the load described by
// the JSON spec and prints what it measured as JSON on stdout.
func runHTTPLoad(spec string) int {
	var s httpLoadSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -http-load: %v\n", err)
		return 2
	}
	res, err := httpLoad(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: http load: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// schedLatencies is the runtime metric of how long goroutines wait,
// runnable, before they run.
const schedLatencies = "/sched/latencies:seconds"

// hist is a snapshot of a runtime/metrics histogram.
type hist struct {
	counts  []uint64
	buckets []float64 // len(counts)+1 boundaries
}

func readHist(name string) hist {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return hist{}
	}
	h := s[0].Value.Float64Histogram()
	return hist{counts: slices.Clone(h.Counts), buckets: slices.Clone(h.Buckets)}
}

// sub returns h minus an earlier snapshot of the same histogram.
func (h hist) sub(earlier hist) hist {
	if len(earlier.counts) != len(h.counts) {
		return h
	}
	out := hist{counts: slices.Clone(h.counts), buckets: h.buckets}
	for i, c := range earlier.counts {
		out.counts[i] -= c
	}
	return out
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (NaN for an empty histogram).
func (h hist) quantile(q float64) float64 {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			if ub := h.buckets[i+1]; !math.IsInf(ub, 1) {
				return ub
			}
			return h.buckets[i]
		}
	}
	return h.buckets[len(h.buckets)-1]
}

// rawRequest is the whole HTTP/1.1 request posting body to path.
func rawRequest(host, path string, body []byte) []byte {
	b := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, len(body))
	return append(b, body...)
}

// rawConn is one keep-alive HTTP/1.1 client connection of the load
// generator: it writes a prepared request in one write and reads the
// response (status line, headers, a Content-Length or chunked body) with
// no allocation, where net/http's client spends two goroutines and
// ~40 allocations a request. It serves one request at a time.
type rawConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
}

// rawTimeout bounds one request, as the client's timeout did.
const rawTimeout = 10 * time.Second

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{addr: addr, c: c, br: bufio.NewReaderSize(c, 4096)}, nil
}

func (rc *rawConn) close() {
	if rc.c != nil {
		rc.c.Close()
	}
}

// do sends req and reads the whole response; it returns the status. On an
// error the connection is closed, and the next request dials a new one.
func (rc *rawConn) do(req []byte) (int, error) {
	if rc.c == nil {
		c, err := net.Dial("tcp", rc.addr)
		if err != nil {
			return 0, err
		}
		rc.c = c
		rc.br.Reset(c)
	}
	status, keep, err := rc.roundTrip(req)
	if err != nil || !keep {
		rc.c.Close()
		rc.c = nil
	}
	return status, err
}

func (rc *rawConn) roundTrip(req []byte) (status int, keep bool, err error) {
	if err := rc.c.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		return 0, false, err
	}
	if _, err := rc.c.Write(req); err != nil {
		return 0, false, err
	}
	line, err := rc.br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	keep = line[7] == '1'
	length, chunked := -1, false
	for {
		h, err := rc.br.ReadSlice('\n')
		if err != nil {
			return status, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return status, false, fmt.Errorf("malformed header %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return status, false, fmt.Errorf("malformed Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			keep = keep && !bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		return status, keep, rc.discardChunked()
	case length >= 0:
		_, err := rc.br.Discard(length)
		return status, keep, err
	}
	// No length: the body runs to the end of the connection.
	_, err = io.Copy(io.Discard, rc.br)
	return status, false, err
}

// discardChunked reads a chunked body to its end.
func (rc *rawConn) discardChunked() error {
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			// Trailers, then the empty line.
			for {
				t, err := rc.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := rc.br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}

// shiftedTail returns the first n events of recs again, in batches of
// tailBatchRows, with event times shifted by shiftMs and ids by idShift:
// new events continuing the log, with its distribution.
func shiftedTail(schema *arrow.Schema, recs []arrow.RecordBatch, n int, shiftMs, idShift int64) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rows := 0
	for _, rec := range recs {
		ids := rec.Column(0).(*array.Int64).Int64Values()
		users := rec.Column(1).(*array.Int64).Int64Values()
		tss := rec.Column(2).(*array.Timestamp).TimestampValues()
		amounts := rec.Column(3).(*array.Float64).Float64Values()
		for i := range ids[:min(len(ids), n-rows)] {
			b.Field(0).(*array.Int64Builder).Append(ids[i] + idShift)
			b.Field(1).(*array.Int64Builder).Append(users[i])
			b.Field(2).(*array.TimestampBuilder).Append(tss[i] + arrow.Timestamp(shiftMs))
			b.Field(3).(*array.Float64Builder).Append(amounts[i])
			rows++
			if rows%tailBatchRows == 0 {
				out = append(out, b.NewRecordBatch())
			}
		}
	}
	if rows%tailBatchRows != 0 {
		out = append(out, b.NewRecordBatch())
	}
	return out
}

// gatedSource is a source.Source that returns the log's batches, then
// waits at a gate: after open it returns the tail's batches, each at its
// due time for a fixed event rate; after stop (or at the end of the tail)
// it ends with io.EOF. It keeps a pipeline running and idle while lookups
// are measured, and then ingesting at a known rate.
type gatedSource struct {
	schema     *arrow.Schema
	log, tail  []arrow.RecordBatch
	rate       int
	next       int
	gate, done chan struct{}
	openOnce   sync.Once
	stopOnce   sync.Once
	opened     time.Time
	tailRows   int
}

func newGatedSource(schema *arrow.Schema, log, tail []arrow.RecordBatch, rate int) *gatedSource {
	return &gatedSource{schema: schema, log: log, tail: tail, rate: rate, gate: make(chan struct{}), done: make(chan struct{})}
}

func (s *gatedSource) Schema() *arrow.Schema { return s.schema }

func (s *gatedSource) open() {
	s.openOnce.Do(func() { s.opened = time.Now(); close(s.gate) })
}

func (s *gatedSource) stop() { s.stopOnce.Do(func() { close(s.done) }) }

func (s *gatedSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if s.next < len(s.log) {
		rec := s.log[s.next]
		s.next++
		rec.Retain()
		return rec, nil
	}
	select {
	case <-s.gate:
	case <-s.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	i := s.next - len(s.log)
	if i >= len(s.tail) {
		return nil, io.EOF
	}
	due := s.opened.Add(time.Duration(float64(s.tailRows) / float64(s.rate) * float64(time.Second)))
	timer := time.NewTimer(time.Until(due))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rec := s.tail[i]
	s.next++
	s.tailRows += int(rec.NumRows())
	rec.Retain()
	return rec, nil
}

func (s *gatedSource) Close() error { return nil }
