package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"

	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/volgarun"
	"github.com/volga-go/volga/bench/internal/workload"
)

// The checkpoint workload (BENCHMARKS.md) and the durable-state engines of
// stream-4 and features-4.
//
// # checkpoint
//
//	go run ./cmd/bench -workload checkpoint -keys 1000000
//
// The input is the stream-4 input (features-4 events in shuffled arrival
// order, -max-out-of-order bound) with -events events spread uniformly over
// -keys users instead of 100 000, read into memory as batches of
// -batch-rows rows. The query is features-4 in streaming mode, so every
// user is one key of window state. Engine "volga" runs three pipelines one
// after the other on one file:// bucket (in a temporary directory, with the
// state stores), each a new volga.Pipeline started on that bucket:
//
//  1. load: the first half of the events (rounded to a batch), no periodic
//     checkpoint; then Pipeline.Stop, which takes the run's only (final)
//     checkpoint: the first of the bucket, a full one. full_seconds,
//     full_mb and full_stall_ms are its CheckpointInfo Duration (barrier to
//     manifest: store backup, upload, manifest), Bytes and Stall;
//     keys_in_state the window operators' distinct keys
//     (volga_window_keys) at that moment.
//  2. incremental: resumes from that checkpoint, reads the next
//     -incr-events events (default keys/10, touching about 10% of the
//     keys; incr_keys is the exact number of distinct users in the slice),
//     then Stop: its final checkpoint continues the chain, an incremental
//     one (incr_seconds, incr_mb, incr_stall_ms).
//     restore_seconds is this run's restore time: from the call of Run to
//     the first output row reaching the sink. That takes opening the
//     bucket, downloading the full checkpoint and loading it into Badger,
//     every window task reading its keys back into memory (the output
//     merger emits nothing before every task has restored), and one input
//     batch, whose watermark releases rows held since run 1.
//     restore_store_seconds is the part up to the source being sought to
//     the checkpoint's position (the store is loaded; window tasks restore
//     after that).
//  3. checkpointing: resumes again (restore2_seconds, measured the same
//     way, from a full and an incremental backup) and reads the rest of
//     the input to its end with periodic checkpoints every
//     -checkpoint-interval (default 2 s here), ending with the final
//     checkpoint of a bounded input. ckpt_events_per_s is the rest's
//     events over the time from the source's first batch (after the
//     restore) to Run's return, final checkpoint included.
//     ckpt_max_output_gap_ms is the longest time between two output
//     batches of this run, whatever held them up (CheckpointInfo.Stall is
//     the longest time a window task stood still for a checkpoint: its
//     step at the barrier or the end of its writing; the changed keys
//     are encoded beside the task, since 2026-12-02, in slices on the
//     task before, and the store backup and the upload run in the
//     background).
//
// max_stall_ms is the longest CheckpointInfo.Stall of every checkpoint of
// the three runs (full ones included); max_incr_stall_ms that of the
// incremental ones only (the target: <= 100 ms). Every checkpoint is also
// listed on stderr.
//
// The three runs' outputs together are the output of one uninterrupted
// run: engine "volga-stream" is that run (same input, same source type, no
// checkpoints), and the parent compares the checksums. Its
// tail_events_per_s is measured like ckpt_events_per_s over the same rest
// of the input, for the ratio line, and its max_output_gap_ms over the
// whole run.
//
// # Durable-state engines of stream-4 and features-4
//
// volga-stream-ckpt is volga-stream (stream-4) with WithCheckpoints to a
// file:// bucket in a temporary directory every -checkpoint-interval
// (default 10 s); its time includes the final checkpoint. volga-stream-
// budget is volga-stream with WithMemoryBudget(-memory-budget-mb) and no
// checkpoints; its peak RSS includes the in-memory input (input_mb), and
// heap_live_peak_mb is the largest live heap the garbage collector
// measured (runtime/metrics /gc/heap/live:bytes, sampled every 20 ms). Both
// report max_output_gap_ms (see ckpt_max_output_gap_ms).
// volga-batch-ckpt and volga-batch-budget are the same for features-4 in
// batch mode (Parquet source). Each prints a ratio line against the plain
// engine of the same run.
//
// The flags of this file are registered here rather than in config, and
// handed to the child by ckptChildArgs.

// ckptFlags are the flags of the checkpoint workload and of the
// durable-state engines.
var ckptFlags struct {
	Keys       int
	Interval   time.Duration
	IncrEvents int
	BudgetMB   int64
	Dir        string
}

func init() {
	flag.IntVar(&ckptFlags.Keys, "keys", 1_000_000, "checkpoint: distinct keys (users) of the events, i.e. keys of window state")
	flag.DurationVar(&ckptFlags.Interval, "checkpoint-interval", 0, "checkpoint, volga-*-ckpt: time between periodic checkpoints (0: 2 s for the checkpoint workload, 10 s for the volga-*-ckpt engines)")
	flag.IntVar(&ckptFlags.IncrEvents, "incr-events", 0, "checkpoint: events read between the full and the incremental checkpoint (0: keys/10)")
	flag.Int64Var(&ckptFlags.BudgetMB, "memory-budget-mb", 64, "volga-*-budget: WithMemoryBudget, in MiB")
	flag.StringVar(&ckptFlags.Dir, "checkpoint-dir", "", "checkpoint, volga-*-ckpt: directory for the buckets and state stores (default: a new temporary directory, removed afterwards)")
}

// ckptSteps formats the steps of a checkpoint's duration (see
// volga.CheckpointInfo).
func ckptSteps(info volga.CheckpointInfo) string {
	return fmt.Sprintf("write_s=%.3f backup_s=%.3f upload_s=%.3f", info.Write.Seconds(), info.Backup.Seconds(), info.Upload.Seconds())
}

// ckptChildArgs returns this file's flags for the child process.
func ckptChildArgs() []string {
	return []string{
		fmt.Sprintf("-keys=%d", ckptFlags.Keys),
		"-checkpoint-interval=" + ckptFlags.Interval.String(),
		fmt.Sprintf("-incr-events=%d", ckptFlags.IncrEvents),
		fmt.Sprintf("-memory-budget-mb=%d", ckptFlags.BudgetMB),
		"-checkpoint-dir=" + ckptFlags.Dir,
	}
}

// checkpointGen is the generator configuration of the checkpoint workload.
func checkpointGen(c config) gen.Features4 {
	g := gen.NewFeatures4(c.Events, c.Seed)
	g.Users = ckptFlags.Keys
	return g
}

// prepareCheckpoint prepares the arrival-order input of the checkpoint
// workload (-keys users).
func prepareCheckpoint(c config) (input, error) {
	if ckptFlags.Keys <= 0 {
		return input{}, fmt.Errorf("-keys must be positive")
	}
	start := time.Now()
	g := checkpointGen(c)
	arrival, created, err := gen.EnsureArrivalParquet(c.DataDir, g, c.MaxOutOfOrder)
	if err != nil {
		return input{}, err
	}
	if created {
		fmt.Fprintf(os.Stderr, "# generated %s in %.1fs\n", arrival, time.Since(start).Seconds())
	}
	return input{Log: filepath.Join(c.DataDir, g.FileName()), Arrival: arrival}, nil
}

// phasedSource is a replayable in-memory source over batches it does not
// own, with a stop point: when the next batch is stopAt, Read calls onStop
// (Pipeline.Stop) once and waits for its context to end, so the run ends
// with a final checkpoint at exactly that batch. Position is the index of
// the next batch.
type phasedSource struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	next   int
	stopAt int // -1: read to the end (io.EOF)
	onStop func()
	// mark is a batch index; marked is when Read returned it. seeked is
	// when Seek was called, first when Read first returned a batch.
	mark          int
	marked        time.Time
	seeked, first time.Time
}

func (s *phasedSource) Schema() *arrow.Schema { return s.schema }

func (s *phasedSource) Read(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.stopAt >= 0 && s.next >= s.stopAt {
		if s.onStop != nil {
			s.onStop()
			s.onStop = nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.next >= len(s.recs) {
		return nil, io.EOF
	}
	now := time.Now()
	if s.first.IsZero() {
		s.first = now
	}
	if s.next == s.mark {
		s.marked = now
	}
	rec := s.recs[s.next]
	s.next++
	rec.Retain()
	return rec, nil
}

func (s *phasedSource) Position() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(s.next)), nil
}

func (s *phasedSource) Seek(pos []byte) error {
	if len(pos) != 8 || binary.BigEndian.Uint64(pos) > uint64(len(s.recs)) {
		return errors.New("phasedSource: bad position")
	}
	s.next = int(binary.BigEndian.Uint64(pos))
	s.seeked = time.Now()
	return nil
}

func (s *phasedSource) Close() error { return nil }

// ckptRun is what one pipeline run of the checkpoint workload observed.
type ckptRun struct {
	infos      []volga.CheckpointInfo
	start, end time.Time
	firstOut   time.Time
	// maxGap is the longest time between two consecutive output batches
	// (from the first on): how long the pipeline's output stood still,
	// checkpoint pauses of the window tasks included.
	maxGap time.Duration
	src    *phasedSource
	keys   float64 // volga_window_keys when Run returned
}

func (r ckptRun) since(t time.Time) float64 {
	if t.IsZero() {
		return math.NaN()
	}
	return t.Sub(r.start).Seconds()
}

// ckptOptions are what a pipeline run of the checkpoint workload varies.
type ckptOptions struct {
	bucketURL string // "" for no checkpoints
	interval  time.Duration
	budget    int64
	metrics   bool
}

// runPhase runs the features-4 query in streaming mode over src with the
// given options, folding the output into sum (and handing it to onRec
// when set).
func runPhase(ctx context.Context, c config, src *phasedSource, o ckptOptions, sum *workload.Features4Checksum, onRec func(arrow.RecordBatch)) (ckptRun, error) {
	r := ckptRun{src: src}
	var mu sync.Mutex
	var lastOut time.Time
	out := func(_ context.Context, rec arrow.RecordBatch) error {
		if rec.NumRows() > 0 {
			now := time.Now()
			if r.firstOut.IsZero() {
				r.firstOut = now
			} else {
				r.maxGap = max(r.maxGap, now.Sub(lastOut))
			}
			lastOut = now
		}
		if onRec != nil {
			onRec(rec)
		}
		return sum.AddRecord(rec)
	}
	opts := []volga.Option{
		volga.WithSource("tx", src),
		volga.WithSink(sink.NewCallback(out)),
		volga.WithMode(volga.Streaming),
		volga.WithMaxOutOfOrder(c.MaxOutOfOrder),
		volga.WithWatermarkInterval(c.WMInterval),
	}
	if c.Parallelism > 0 {
		opts = append(opts, volga.WithParallelism(c.Parallelism))
	}
	if o.bucketURL != "" {
		opts = append(opts, volga.WithCheckpoints(o.bucketURL, o.interval),
			volga.WithOnCheckpoint(func(info volga.CheckpointInfo) {
				mu.Lock()
				r.infos = append(r.infos, info)
				mu.Unlock()
			}))
	}
	if o.budget > 0 {
		opts = append(opts, volga.WithMemoryBudget(o.budget))
	}
	var reg *prometheus.Registry
	if o.metrics {
		reg = prometheus.NewRegistry()
		opts = append(opts, volga.WithMetrics(reg))
	}
	p, err := volga.SQL(workload.Features4Query, opts...)
	if err != nil {
		return r, err
	}
	src.onStop = p.Stop
	r.start = time.Now()
	err = p.Run(ctx)
	r.end = time.Now()
	if err != nil {
		return r, err
	}
	if reg != nil {
		r.keys = gatherSum(reg, "volga_window_keys")
	}
	return r, nil
}

// gatherSum sums the values of the gauge name in reg.
func gatherSum(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return math.NaN()
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

// ckptInput is the in-memory input of the checkpoint workload and its
// phase boundaries (batch indexes).
type ckptInput struct {
	schema            *arrow.Schema
	recs              []arrow.RecordBatch
	rows              []int64 // rows before batch i (len(recs)+1 entries)
	loadEnd, incrEnd  int
	loadKeys, incrKey int // distinct users in the load slice, in the incremental slice
}

func loadCkptInput(c config) (*ckptInput, error) {
	schema, recs, err := gen.ReadParquet(c.Input.Arrival, nil, c.BatchRows)
	if err != nil {
		return nil, err
	}
	if len(recs) < 3 {
		return nil, fmt.Errorf("checkpoint: %d input batches; need at least 3 (more -events or fewer -batch-rows)", len(recs))
	}
	in := &ckptInput{schema: schema, recs: recs, rows: make([]int64, len(recs)+1)}
	for i, rec := range recs {
		in.rows[i+1] = in.rows[i] + rec.NumRows()
	}
	total := in.rows[len(recs)]
	in.loadEnd = max(1, sort64(in.rows, total/2))
	incr := int64(ckptFlags.IncrEvents)
	if incr <= 0 {
		incr = int64(max(1, ckptFlags.Keys/10))
	}
	in.incrEnd = min(len(recs)-1, max(in.loadEnd+1, sort64(in.rows, in.rows[in.loadEnd]+incr)))
	in.loadKeys = distinctUsers(recs[:in.loadEnd])
	in.incrKey = distinctUsers(recs[in.loadEnd:in.incrEnd])
	return in, nil
}

// sort64 returns the first batch index i with rows[i] >= n.
func sort64(rows []int64, n int64) int {
	i, _ := slices.BinarySearch(rows, n)
	return min(i, len(rows)-1)
}

func distinctUsers(recs []arrow.RecordBatch) int {
	seen := map[int64]struct{}{}
	for _, rec := range recs {
		idx := rec.Schema().FieldIndices("user_id")
		for _, u := range rec.Column(idx[0]).(*array.Int64).Int64Values() {
			seen[u] = struct{}{}
		}
	}
	return len(seen)
}

func (in *ckptInput) release() {
	for _, r := range in.recs {
		r.Release()
	}
}

func (in *ckptInput) source(stopAt int) *phasedSource {
	return &phasedSource{schema: in.schema, recs: in.recs, stopAt: stopAt, mark: in.incrEnd}
}

// ckptDir returns the directory for buckets and state stores and a
// function removing it when it was made here.
func ckptDir(name string) (string, func(), error) {
	if ckptFlags.Dir != "" {
		d := filepath.Join(ckptFlags.Dir, name)
		if err := os.RemoveAll(d); err != nil {
			return "", nil, err
		}
		return d, func() {}, os.MkdirAll(d, 0o755)
	}
	d, err := os.MkdirTemp("", "volga-bench-"+name+"-*")
	if err != nil {
		return "", nil, err
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}

// fileBucket makes the directory of a file:// bucket and returns its URL.
func fileBucket(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// never is an interval no run of the workload reaches: the runs that
// measure one checkpoint take only their final one.
const never = 1000 * time.Hour

// ckptReport is the checkpoint workload's outcome, for the result lines
// and the test.
type ckptReport struct {
	runs [3]ckptRun
	in   *ckptInput
}

// runCheckpointSequence runs the three pipelines of the checkpoint
// workload (see the top of this file); onRec, when set, receives every
// output batch of the three runs in order.
func runCheckpointSequence(ctx context.Context, c config, in *ckptInput, dir string, sum *workload.Features4Checksum, onRec func(arrow.RecordBatch)) (ckptReport, error) {
	rep := ckptReport{in: in}
	bucket, err := fileBucket(filepath.Join(dir, "bucket"))
	if err != nil {
		return rep, err
	}
	interval := ckptFlags.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	phases := []struct {
		name     string
		stopAt   int
		interval time.Duration
	}{
		{"load", in.loadEnd, never},
		{"incremental", in.incrEnd, never},
		{"checkpointing", -1, interval},
	}
	for i, ph := range phases {
		runtime.GC()
		r, err := runPhase(ctx, c, in.source(ph.stopAt), ckptOptions{bucketURL: bucket, interval: ph.interval, metrics: i == 0}, sum, onRec)
		if err != nil {
			return rep, fmt.Errorf("run %d (%s): %w", i+1, ph.name, err)
		}
		rep.runs[i] = r
		for _, info := range r.infos {
			fmt.Fprintf(os.Stderr, "# checkpoint run=%d (%s) epoch=%d kind=%s final=%t mb=%.2f seconds=%.3f stall_ms=%.1f %s\n",
				i+1, ph.name, info.Epoch, info.Kind, info.Final, float64(info.Bytes)/(1<<20), info.Duration.Seconds(), ms(info.Stall), ckptSteps(info))
		}
		if i < 2 && len(r.infos) != 1 {
			return rep, fmt.Errorf("run %d (%s): %d checkpoints, want exactly one (the final one)", i+1, ph.name, len(r.infos))
		}
	}
	if k := rep.runs[0].infos[0].Kind; k != "full" {
		fmt.Fprintf(os.Stderr, "# warning: the first checkpoint is %s, not full\n", k)
	}
	if k := rep.runs[1].infos[0].Kind; k != "incremental" {
		fmt.Fprintf(os.Stderr, "# warning: the checkpoint after the slice is %s, not incremental\n", k)
	}
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lines renders the report (see the top of this file for each figure).
func (rep ckptReport) lines(c config) []string {
	in, r1, r2, r3 := rep.in, rep.runs[0], rep.runs[1], rep.runs[2]
	full, incr := r1.infos[0], r2.infos[0]
	var maxStall, maxIncr time.Duration
	n := 0
	for _, r := range rep.runs {
		for _, info := range r.infos {
			n++
			maxStall = max(maxStall, info.Stall)
			if info.Kind == "incremental" {
				maxIncr = max(maxIncr, info.Stall)
			}
		}
	}
	tailRows := in.rows[len(in.recs)] - in.rows[in.incrEnd]
	tail := math.NaN()
	if !r3.src.first.IsZero() {
		tail = float64(tailRows) / r3.end.Sub(r3.src.first).Seconds()
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	return []string{
		fmt.Sprintf("workload=checkpoint keys=%d full_seconds=%.3f full_mb=%.1f incr_seconds=%.3f incr_mb=%.2f max_stall_ms=%.1f restore_seconds=%.2f",
			ckptFlags.Keys, full.Duration.Seconds(), mb(full.Bytes), incr.Duration.Seconds(), mb(incr.Bytes), ms(maxStall), r2.since(r2.firstOut)),
		fmt.Sprintf("workload=checkpoint keys=%d keys_in_state=%.0f load_events=%d load_keys=%d full_stall_ms=%.1f incr_events=%d incr_keys=%d incr_stall_ms=%.1f max_incr_stall_ms=%.1f restore_store_seconds=%.2f restore2_seconds=%.2f tail_events=%d checkpoints=%d interval=%s ckpt_events_per_s=%.0f ckpt_max_output_gap_ms=%.0f",
			ckptFlags.Keys, r1.keys, in.rows[in.loadEnd], in.loadKeys, ms(full.Stall), in.rows[in.incrEnd]-in.rows[in.loadEnd], in.incrKey, ms(incr.Stall), ms(maxIncr),
			r2.since(r2.src.seeked), r3.since(r3.firstOut), tailRows, n, phasesInterval(), tail, ms(r3.maxGap)),
	}
}

func phasesInterval() time.Duration {
	if ckptFlags.Interval > 0 {
		return ckptFlags.Interval
	}
	return 2 * time.Second
}

// runCheckpoint is engine "volga" of the checkpoint workload.
func runCheckpoint(ctx context.Context, c config) (result, error) {
	in, err := loadCkptInput(c)
	if err != nil {
		return result{}, err
	}
	defer in.release()
	dir, cleanup, err := ckptDir("checkpoint")
	if err != nil {
		return result{}, err
	}
	defer cleanup()
	var sum workload.Features4Checksum
	rep, err := runCheckpointSequence(ctx, c, in, dir, &sum, nil)
	if err != nil {
		return result{}, err
	}
	secs := 0.0
	for _, r := range rep.runs {
		secs += r.end.Sub(r.start).Seconds()
	}
	return result{Seconds: secs, Checksum: sum, Lines: rep.lines(c)}, nil
}

// runCheckpointPlain is engine "volga-stream" of the checkpoint workload:
// one uninterrupted run over the same input, no checkpoints.
func runCheckpointPlain(ctx context.Context, c config) (result, error) {
	in, err := loadCkptInput(c)
	if err != nil {
		return result{}, err
	}
	defer in.release()
	runtime.GC()
	var sum workload.Features4Checksum
	r, err := runPhase(ctx, c, in.source(-1), ckptOptions{}, &sum, nil)
	if err != nil {
		return result{}, err
	}
	tailRows := in.rows[len(in.recs)] - in.rows[in.incrEnd]
	line := fmt.Sprintf("workload=checkpoint engine=volga-stream tail_events=%d tail_events_per_s=%.0f max_output_gap_ms=%.0f",
		tailRows, float64(tailRows)/r.end.Sub(r.src.marked).Seconds(), ms(r.maxGap))
	return result{Seconds: r.end.Sub(r.start).Seconds(), Checksum: sum, Lines: []string{line}}, nil
}

// printCheckpointRatios prints the checkpointing run's events/s over the
// plain run's on the same rest of the input.
func printCheckpointRatios(wl string, done []measured) {
	ck, plain := lineValue(done, "volga", "ckpt_events_per_s"), lineValue(done, "volga-stream", "tail_events_per_s")
	if !math.IsNaN(ck) && !math.IsNaN(plain) {
		fmt.Printf("workload=%s ratio=volga(checkpointing)/volga-stream tail_events_per_s=%.2f\n", wl, ck/plain)
	}
}

// lineValue finds key=value in the report lines of engine and returns
// the value; NaN when absent.
func lineValue(done []measured, engine, key string) float64 {
	for _, m := range done {
		if m.engine != engine {
			continue
		}
		for _, l := range m.Lines {
			if v, ok := parseLine(l)[key]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					return f
				}
			}
		}
	}
	return math.NaN()
}

// parseLine splits a result line into its key=value fields.
func parseLine(l string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(l) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}

// Durable-state engines of stream-4 and features-4.

// runVolgaStreamCkpt is volga-stream with checkpoints.
func runVolgaStreamCkpt(ctx context.Context, c config) (result, error) {
	return runVolgaStreamDurable(ctx, c, true)
}

// runVolgaStreamBudget is volga-stream with a memory budget.
func runVolgaStreamBudget(ctx context.Context, c config) (result, error) {
	return runVolgaStreamDurable(ctx, c, false)
}

func durableInterval() time.Duration {
	if ckptFlags.Interval > 0 {
		return ckptFlags.Interval
	}
	return 10 * time.Second
}

func runVolgaStreamDurable(ctx context.Context, c config, ckpt bool) (result, error) {
	schema, recs, err := gen.ReadParquet(c.Input.Arrival, nil, c.BatchRows)
	if err != nil {
		return result{}, err
	}
	var inputBytes int64
	for _, r := range recs {
		inputBytes += util.TotalRecordSize(r)
	}
	src := &phasedSource{schema: schema, recs: recs, stopAt: -1, mark: -1}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	o := ckptOptions{}
	engine := "volga-stream-budget"
	if ckpt {
		engine = "volga-stream-ckpt"
		dir, cleanup, err := ckptDir(engine)
		if err != nil {
			return result{}, err
		}
		defer cleanup()
		if o.bucketURL, err = fileBucket(filepath.Join(dir, "bucket")); err != nil {
			return result{}, err
		}
		o.interval = durableInterval()
	} else {
		o.budget = ckptFlags.BudgetMB << 20
	}
	runtime.GC()
	stopSampling := sampleHeap()
	var sum workload.Features4Checksum
	r, err := runPhase(ctx, c, src, o, &sum, nil)
	heapPeak := stopSampling()
	if err != nil {
		return result{}, err
	}
	res := result{Seconds: r.end.Sub(r.start).Seconds(), Checksum: sum}
	if ckpt {
		res.Lines = []string{ckptSummary(c.Workload, engine, r.infos) + fmt.Sprintf(" max_output_gap_ms=%.0f", ms(r.maxGap))}
	} else {
		res.Lines = []string{fmt.Sprintf("workload=%s engine=%s budget_mb=%d input_mb=%.0f heap_live_peak_mb=%.0f max_output_gap_ms=%.0f",
			c.Workload, engine, ckptFlags.BudgetMB, float64(inputBytes)/(1<<20), float64(heapPeak)/(1<<20), ms(r.maxGap))}
	}
	return res, nil
}

// ckptSummary is the report line of a run with periodic checkpoints.
func ckptSummary(wl, engine string, infos []volga.CheckpointInfo) string {
	var maxStall, total time.Duration
	var last volga.CheckpointInfo
	for _, info := range infos {
		maxStall = max(maxStall, info.Stall)
		total += info.Duration
		last = info
		fmt.Fprintf(os.Stderr, "# %s checkpoint epoch=%d kind=%s final=%t mb=%.2f seconds=%.3f stall_ms=%.1f %s\n",
			engine, info.Epoch, info.Kind, info.Final, float64(info.Bytes)/(1<<20), info.Duration.Seconds(), ms(info.Stall), ckptSteps(info))
	}
	return fmt.Sprintf("workload=%s engine=%s interval=%s checkpoints=%d max_stall_ms=%.1f final_seconds=%.3f final_mb=%.1f",
		wl, engine, durableInterval(), len(infos), ms(maxStall), last.Duration.Seconds(), float64(last.Bytes)/(1<<20))
}

// sampleHeap samples the live heap as of the last garbage collection
// (runtime/metrics) every 20 ms until the returned function is called,
// which returns the largest sample.
func sampleHeap() func() uint64 {
	const name = "/gc/heap/live:bytes"
	done := make(chan struct{})
	res := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: name}}
		var peak uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if s[0].Value.Kind() == metrics.KindUint64 {
				peak = max(peak, s[0].Value.Uint64())
			}
			select {
			case <-done:
				res <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-res }
}

// runVolgaBatchCkpt is volga-batch with checkpoints.
func runVolgaBatchCkpt(ctx context.Context, c config) (result, error) {
	return runVolgaBatchDurable(ctx, c, true)
}

// runVolgaBatchBudget is volga-batch with a memory budget.
func runVolgaBatchBudget(ctx context.Context, c config) (result, error) {
	return runVolgaBatchDurable(ctx, c, false)
}

func runVolgaBatchDurable(ctx context.Context, c config, ckpt bool) (result, error) {
	start := time.Now()
	src, err := volgarun.Parquet(c.Decoders, c.Input.Log)
	if err != nil {
		return result{}, err
	}
	defer src.Close()
	var (
		sum   workload.Features4Checksum
		mu    sync.Mutex
		infos []volga.CheckpointInfo
	)
	opts := []volga.Option{
		volga.WithSource("tx", src),
		volga.WithSink(sink.NewCallback(func(_ context.Context, rec arrow.RecordBatch) error { return sum.AddRecord(rec) })),
		volga.WithMode(volga.Batch),
	}
	if c.Parallelism > 0 {
		opts = append(opts, volga.WithParallelism(c.Parallelism))
	}
	engine := "volga-batch-budget"
	if ckpt {
		engine = "volga-batch-ckpt"
		dir, cleanup, err := ckptDir(engine)
		if err != nil {
			return result{}, err
		}
		defer cleanup()
		bucket, err := fileBucket(filepath.Join(dir, "bucket"))
		if err != nil {
			return result{}, err
		}
		opts = append(opts, volga.WithCheckpoints(bucket, durableInterval()), volga.WithOnCheckpoint(func(info volga.CheckpointInfo) {
			mu.Lock()
			infos = append(infos, info)
			mu.Unlock()
		}))
	} else {
		opts = append(opts, volga.WithMemoryBudget(ckptFlags.BudgetMB<<20))
	}
	p, err := volga.SQL(workload.Features4Query, opts...)
	if err != nil {
		return result{}, err
	}
	stopSampling := sampleHeap()
	err = p.Run(ctx)
	heapPeak := stopSampling()
	if err != nil {
		return result{}, err
	}
	res := result{Seconds: time.Since(start).Seconds(), Checksum: sum}
	if ckpt {
		res.Lines = []string{ckptSummary(c.Workload, engine, infos)}
	} else {
		res.Lines = []string{fmt.Sprintf("workload=%s engine=%s budget_mb=%d heap_live_peak_mb=%.0f",
			c.Workload, engine, ckptFlags.BudgetMB, float64(heapPeak)/(1<<20))}
	}
	return res, nil
}

// durableRatios returns a Ratios function: printRatios against baseline,
// then each durable-state engine against plain (events/s, time, RSS).
func durableRatios(baseline, plain string) func(string, []measured) {
	return func(wl string, done []measured) {
		printRatios(wl, baseline, done)
		var p *measured
		for i := range done {
			if done[i].engine == plain {
				p = &done[i]
			}
		}
		if p == nil {
			return
		}
		for _, m := range done {
			if strings.HasPrefix(m.engine, plain+"-") {
				fmt.Printf("workload=%s ratio=%s/%s events_per_s=%.2f time=%.2f rss=%.2f\n",
					wl, m.engine, plain, p.Seconds/m.Seconds, m.Seconds/p.Seconds, m.peakRSSMB/p.peakRSSMB)
			}
		}
	}
}
