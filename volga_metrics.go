package volga

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/watermark"
)

// WithMetrics exports the pipeline's metrics on reg, Prometheus style:
// the application passes the registerer in (a fresh prometheus.Registry,
// or prometheus.DefaultRegisterer if it wants the global one); nothing is
// registered anywhere without this option. A nil reg exports nothing.
//
// The metrics are registered when the pipeline starts running (Run, or
// Backfill), which fails if a pipeline of the same name (see WithName) is
// already registered on reg; they stay registered afterwards, since a
// finished pipeline still answers lookups. Every metric carries the
// label pipeline="<name>".
//
// Counters of the run are read when reg is scraped, not updated per row:
//
//	volga_source_rows_total                rows read from the source
//	volga_sink_rows_total                  rows written to the sink
//	volga_filtered_rows_total              rows removed by WHERE
//	volga_late_rows_total{outcome}         late rows: "dropped" (not applied; to the late sink)
//	                                       or "applied" (within WithAllowedLateness)
//	volga_dead_letters_total{origin}       rows not processed: "source" (records the source
//	                                       could not decode, for sources that count them) or
//	                                       "engine" (rows the engine refused: a NULL event time)
//	volga_watermark_seconds                the watermark, as Unix seconds (streaming)
//	volga_watermark_lag_seconds            wall-clock time minus the watermark (streaming)
//	volga_pipeline_running                 1 while Run runs, 0 before and after
//	volga_window_input_rows_total{stage}   rows into the window operators of a stage (sliding,
//	                                       tumbling or hopping)
//	volga_window_output_rows_total{stage}  rows out of them
//	volga_window_keys{stage}               distinct keys held in window state
//	volga_window_resident_keys{stage}      of those, keys whose state is in memory (not
//	                                       quiet keys let go, nor keys evicted to the store)
//	volga_window_retained_rows{stage}      rows held in window state for frames and lookups
//	volga_window_pending_rows{stage}       rows waiting for the watermark
//	volga_window_quiet_keys_total{stage}   times a quiet key's rows were let go (no frame
//	                                       or lookup could reach them any more)
//	volga_window_forgotten_keys_total{stage}
//	                                       quiet keys forgotten altogether, entry and all
//	                                       (once many, and as many as the others)
//	volga_window_evicted_keys_total{stage} key states dropped from memory for WithMemoryBudget
//	                                       (written to the store first when changed)
//	volga_window_loaded_keys_total{stage,for}
//	                                       key states read back from the store: "ingest" (a row
//	                                       of the key) or "lookup" (read, not kept)
//	volga_window_row_pages_total{stage,op} pages of a long frame's rows "written" to the store,
//	                                       "read" back for ingest, or read for a "lookup"
//	volga_window_checkpoint_copies_total{stage}
//	                                       key states copied because a row changed them while
//	                                       a checkpoint's encoder was reading them
//	volga_lookup_duration_seconds          histogram of Pipeline.Lookup latencies
//	volga_lookup_errors_total              lookups that returned an error
//	volga_checkpoints_total{outcome}       checkpoints "completed" or "failed" (WithCheckpoints)
//	volga_checkpoint_epoch                 epoch of the latest completed checkpoint
//	volga_checkpoint_bytes                 bytes the latest checkpoint uploaded
//	volga_checkpoint_duration_seconds      barrier to manifest, latest checkpoint
//	volga_checkpoint_step_seconds{step}    its steps: "write" (tasks write changed keys to the
//	                                       store), "backup" (store backup), "upload" (to the bucket)
//	volga_checkpoint_stall_seconds         longest time a window task stood still for the
//	                                       latest checkpoint (see pipeline.CheckpointInfo.Stall)
//	volga_checkpoint_timestamp_seconds     when the latest checkpoint completed (Unix seconds;
//	                                       alert on time() minus it)
//
// The checkpoint gauges are absent until a checkpoint completes.
// The watermark gauges are absent before the first watermark, in Batch
// mode, and once the source has ended. The window metrics cover sliding
// (OVER) windows, summed over the tasks of a stage (stage="0" is the first
// PARTITION BY key set); reading them walks each operator's keys under its
// lock, which is cheap next to a scrape interval. HTTP lookups are counted
// by the handler: see request.NewMetrics.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) {
		if reg == nil {
			c.run.Observer = nil
			return
		}
		// A new collector per pipeline, even when the Option value is
		// reused.
		c.run.Observer = &pipelineMetrics{reg: reg, now: time.Now}
	}
}

// DefaultName is the name of a pipeline without WithName.
const DefaultName = pipeline.DefaultName

// WithName names the pipeline in its metrics (the pipeline label, see
// WithMetrics) and its log lines (default DefaultName, "volga"), so that several
// pipelines can share a registry and a log.
func WithName(name string) Option { return func(c *config) { c.run.Name = name } }

// ErrMetricsRegistered is returned (wrapped) by Run when WithMetrics's
// registerer already holds the metrics of a pipeline of the same name.
var ErrMetricsRegistered = errors.New("volga: metrics of a pipeline of this name are already registered")

// pipelineMetrics is the prometheus.Collector of one pipeline and the
// pipeline.Observer that registers it when the run starts. The run's
// counters are read at scrape time; only lookups are observed as they
// happen (a histogram cannot be derived from counters).
type pipelineMetrics struct {
	reg prometheus.Registerer
	now func() time.Time
	// transient unregisters the metrics when the run stops: a Group's
	// partition pipeline, whose partition may move to another member
	// and come back.
	transient bool

	// Set by RunStarted before the collector is registered, read-only
	// after.
	stats *pipeline.Stats
	live  *pipeline.Live

	running      atomic.Bool
	lookups      prometheus.Histogram
	lookupErrors prometheus.Counter

	sourceRows, sinkRows, filtered, late, dead                   *prometheus.Desc
	watermark, lag, runningDesc                                  *prometheus.Desc
	winIn, winOut, winKeys, winResident, winRetained, winPending *prometheus.Desc
	winQuiet, winForgotten                                       *prometheus.Desc
	winEvicted, winLoaded, winPages, winCopies                   *prometheus.Desc
	ckTotal, ckEpoch, ckBytes, ckDuration, ckStall               *prometheus.Desc
	ckTime, ckStep                                               *prometheus.Desc
}

// RunStarted builds the metrics with the run's name and registers them.
func (m *pipelineMetrics) RunStarted(opt pipeline.RunOptions) error {
	m.stats, m.live = opt.Stats, opt.Live
	labels := prometheus.Labels{"pipeline": opt.Name}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	m.sourceRows = desc("volga_source_rows_total", "Rows read from the source.")
	m.sinkRows = desc("volga_sink_rows_total", "Rows written to the sink.")
	m.filtered = desc("volga_filtered_rows_total", "Rows removed by the WHERE clause.")
	m.late = desc("volga_late_rows_total", "Rows that arrived behind the watermark, by outcome: dropped (sent to the late sink) or applied (within the allowed lateness).", "outcome")
	m.dead = desc("volga_dead_letters_total", "Rows not processed, by origin: source (could not be decoded) or engine (no event time).", "origin")
	m.watermark = desc("volga_watermark_seconds", "The source watermark, as Unix time in seconds.")
	m.lag = desc("volga_watermark_lag_seconds", "Wall-clock time minus the watermark, in seconds.")
	m.runningDesc = desc("volga_pipeline_running", "1 while the pipeline runs, 0 otherwise.")
	m.winIn = desc("volga_window_input_rows_total", "Rows into the window operators (sliding, tumbling or hopping) of a stage.", "stage")
	m.winOut = desc("volga_window_output_rows_total", "Rows emitted by the window operators (sliding, tumbling or hopping) of a stage.", "stage")
	m.winKeys = desc("volga_window_keys", "Distinct keys held in the window state of a stage.", "stage")
	m.winResident = desc("volga_window_resident_keys", "Keys of a stage whose window state is in memory: not quiet keys let go, nor keys evicted to the state store.", "stage")
	m.winRetained = desc("volga_window_retained_rows", "Rows held in the window state of a stage for frames and lookups.", "stage")
	m.winPending = desc("volga_window_pending_rows", "Rows of a stage waiting for the watermark.", "stage")
	m.winQuiet = desc("volga_window_quiet_keys_total", "Times the rows of a quiet key of a stage were let go: none could be in a frame or a lookup any more.", "stage")
	m.winForgotten = desc("volga_window_forgotten_keys_total", "Quiet keys of a stage forgotten altogether, entry and all: a key that comes back is new again.", "stage")
	m.winEvicted = desc("volga_window_evicted_keys_total", "Key states of a stage dropped from memory to stay within the memory budget, written to the state store first when they had changed.", "stage")
	m.winLoaded = desc("volga_window_loaded_keys_total", "Key states of a stage read back from the state store, by what needed them: ingest (a row of the key) or lookup (a lookup reads the state and does not keep it).", "stage", "for")
	m.winPages = desc("volga_window_row_pages_total", "Pages of rows of a stage's long frames (row paging), by operation: written to the state store, read back for ingest, or read for a lookup.", "stage", "op")
	m.winCopies = desc("volga_window_checkpoint_copies_total", "Key states of a stage copied because a row changed them while a checkpoint's encoder was reading them.", "stage")
	m.ckTotal = desc("volga_checkpoints_total", "Checkpoints by outcome: completed or failed.", "outcome")
	m.ckEpoch = desc("volga_checkpoint_epoch", "Epoch of the latest completed checkpoint.")
	m.ckBytes = desc("volga_checkpoint_bytes", "Bytes uploaded by the latest completed checkpoint.")
	m.ckDuration = desc("volga_checkpoint_duration_seconds", "Time from barrier to manifest of the latest completed checkpoint.")
	m.ckStep = desc("volga_checkpoint_step_seconds", "Time of each step of the latest completed checkpoint: write (the window tasks write their changed keys to the state store), backup (the store's backup into a local file) and upload (to the bucket, with the manifest).", "step")
	m.ckStall = desc("volga_checkpoint_stall_seconds", "Longest time a window task stood still for the latest completed checkpoint: at its barrier, and ending its writing.")
	m.ckTime = desc("volga_checkpoint_timestamp_seconds", "When the latest checkpoint completed, as Unix time in seconds.")
	m.lookups = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "volga_lookup_duration_seconds", Help: "Time taken by Pipeline.Lookup, in seconds.",
		ConstLabels: labels,
		// 10µs to about 0.65s: in-process lookups take microseconds.
		Buckets: prometheus.ExponentialBuckets(1e-5, 4, 9),
	})
	m.lookupErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "volga_lookup_errors_total", Help: "Pipeline.Lookup calls that returned an error.",
		ConstLabels: labels,
	})
	if err := m.reg.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return fmt.Errorf("%w: pipeline %q on this registerer; give each pipeline its own name with volga.WithName", ErrMetricsRegistered, opt.Name)
		}
		return fmt.Errorf("volga: registering the metrics of pipeline %q: %w", opt.Name, err)
	}
	m.running.Store(true)
	return nil
}

// RunStopped marks the pipeline stopped; its metrics stay registered,
// but those of a Group's partition (transient).
func (m *pipelineMetrics) RunStopped(error) {
	m.running.Store(false)
	if m.transient {
		m.reg.Unregister(m)
	}
}

// LookupDone observes one lookup.
func (m *pipelineMetrics) LookupDone(d time.Duration, err error) {
	m.lookups.Observe(d.Seconds())
	if err != nil {
		m.lookupErrors.Inc()
	}
}

// Describe implements prometheus.Collector.
func (m *pipelineMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		m.sourceRows, m.sinkRows, m.filtered, m.late, m.dead, m.watermark, m.lag, m.runningDesc,
		m.winIn, m.winOut, m.winKeys, m.winResident, m.winRetained, m.winPending, m.winQuiet, m.winForgotten,
		m.winEvicted, m.winLoaded, m.winPages, m.winCopies,
		m.ckTotal, m.ckEpoch, m.ckBytes, m.ckDuration, m.ckStall, m.ckTime, m.ckStep,
	} {
		ch <- d
	}
	m.lookups.Describe(ch)
	m.lookupErrors.Describe(ch)
}

// Collect implements prometheus.Collector: it reads the run's counters.
func (m *pipelineMetrics) Collect(ch chan<- prometheus.Metric) {
	st := m.stats.Snapshot()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(m.sourceRows, st.RowsIn)
	counter(m.sinkRows, st.RowsOut)
	counter(m.filtered, st.Filtered)
	counter(m.late, st.LateDropped, "dropped")
	counter(m.late, st.LateApplied, "applied")
	counter(m.dead, st.SourceDeadLetters, "source")
	counter(m.dead, st.DeadLetters, "engine")
	if wm := st.Watermark; wm != watermark.None && wm != watermark.End {
		gauge(m.watermark, float64(wm)/1e3)
		gauge(m.lag, float64(m.now().UnixMilli()-wm)/1e3)
	}
	running := 0.0
	if m.running.Load() {
		running = 1
	}
	gauge(m.runningDesc, running)
	if st.Checkpoints > 0 || st.CheckpointFailures > 0 {
		counter(m.ckTotal, st.Checkpoints, "completed")
		counter(m.ckTotal, st.CheckpointFailures, "failed")
	}
	if st.Checkpoints > 0 {
		gauge(m.ckEpoch, float64(st.LastCheckpoint))
		gauge(m.ckBytes, float64(st.LastCheckpointBytes))
		gauge(m.ckDuration, st.LastCheckpointDuration.Seconds())
		gauge(m.ckStep, st.LastCheckpointWrite.Seconds(), "write")
		gauge(m.ckStep, st.LastCheckpointBackup.Seconds(), "backup")
		gauge(m.ckStep, st.LastCheckpointUpload.Seconds(), "upload")
		gauge(m.ckStall, st.LastCheckpointStall.Seconds())
		gauge(m.ckTime, float64(st.LastCheckpointTime.UnixMilli())/1e3)
	}
	if m.live != nil {
		for s, tasks := range m.live.WindowStats() {
			var sum struct {
				in, out, retained, quiet, forgotten int64
				evicted, loaded, lookupLoads        int64
				pagesOut, pagesIn, lookupPages      int64
				copies                              int64
				keys, resident, pending             int
				any                                 bool
			}
			for _, t := range tasks {
				if t == nil {
					continue
				}
				sum.any = true
				sum.in += t.RowsIn
				sum.out += t.RowsOut
				sum.retained += t.Retained
				sum.keys += t.Keys
				sum.resident += t.ResidentKeys
				sum.pending += t.Pending
				sum.quiet += t.QuietKeys
				sum.forgotten += t.ForgottenKeys
				sum.evicted += t.Evicted
				sum.loaded += t.Loaded
				sum.lookupLoads += t.LookupLoads
				sum.pagesOut += t.PagesWritten
				sum.pagesIn += t.PagesRead
				sum.lookupPages += t.LookupPages
				sum.copies += t.CheckpointCopies
			}
			if !sum.any {
				continue
			}
			stage := strconv.Itoa(s)
			counter(m.winIn, sum.in, stage)
			counter(m.winOut, sum.out, stage)
			gauge(m.winKeys, float64(sum.keys), stage)
			gauge(m.winResident, float64(sum.resident), stage)
			gauge(m.winRetained, float64(sum.retained), stage)
			gauge(m.winPending, float64(sum.pending), stage)
			counter(m.winQuiet, sum.quiet, stage)
			counter(m.winForgotten, sum.forgotten, stage)
			counter(m.winEvicted, sum.evicted, stage)
			counter(m.winLoaded, sum.loaded, stage, "ingest")
			counter(m.winLoaded, sum.lookupLoads, stage, "lookup")
			counter(m.winPages, sum.pagesOut, stage, "written")
			counter(m.winPages, sum.pagesIn, stage, "read")
			counter(m.winPages, sum.lookupPages, stage, "lookup")
			counter(m.winCopies, sum.copies, stage)
		}
	}
	m.lookups.Collect(ch)
	m.lookupErrors.Collect(ch)
}
