package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/volga-go/volga/window"
)

// Observer watches runs and lookups from outside the executor, so that
// metrics (package volga's WithMetrics) need no code in the hot path: the
// executor only calls these methods at the edges of a run and around each
// lookup, and the observer reads counters (Stats, Live.WindowStats) when it
// needs them. Methods may be called from several goroutines.
type Observer interface {
	// RunStarted is called by Compiled.Run before any goroutine starts,
	// with the options in effect (defaults applied; Stats set, Live set
	// when the caller gave one). A non-nil error aborts the run, which
	// returns it.
	RunStarted(opt RunOptions) error
	// RunStopped is called as Run returns, with its error.
	RunStopped(err error)
	// LookupDone is called after each Live.Lookup of a started pipeline
	// with how long it took and its error.
	LookupDone(d time.Duration, err error)
}

// DefaultName is the name of a pipeline that RunOptions.Name leaves empty.
const DefaultName = "volga"

// summaryInterval is how often a run summarizes late rows and dead
// letters at debug level, when there are new ones.
const summaryInterval = 10 * time.Second

// runObserved is runner.run with the logging and the Observer around it:
// start and stop at Info, a failure at Error, late rows and dead letters
// summarized at Debug (at most once per summaryInterval, and at the end),
// never one line per row.
func (r *runner) runObserved(ctx context.Context) (err error) {
	if r.opt.Name == "" {
		r.opt.Name = DefaultName
	}
	obs := r.opt.Observer
	if obs != nil {
		if err := obs.RunStarted(r.opt); err != nil {
			return err
		}
		defer func() { obs.RunStopped(err) }()
		r.opt.Live.setObserver(obs)
	}
	log := r.opt.Logger.With(slog.String("pipeline", r.opt.Name))
	log.LogAttrs(ctx, slog.LevelInfo, "volga: pipeline started",
		slog.String("mode", r.opt.Mode.String()), slog.Int("parallelism", r.opt.Parallelism),
		slog.String("table", r.c.Plan.Table))
	start := time.Now()
	lctx := context.WithoutCancel(ctx) // the end of a cancelled run is logged too
	var sum lateSummary
	finish := func() {}
	if log.Enabled(ctx, slog.LevelDebug) {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(summaryInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					sum.log(lctx, log, r.stats.Snapshot())
				case <-stop:
					return
				}
			}
		}()
		finish = func() {
			close(stop)
			<-done
			sum.log(lctx, log, r.stats.Snapshot())
		}
	}
	err = r.run(ctx)
	finish()
	st := r.stats.Snapshot()
	attrs := []slog.Attr{
		slog.String("mode", r.opt.Mode.String()), slog.Duration("elapsed", time.Since(start)),
		slog.Int64("rows_in", st.RowsIn), slog.Int64("rows_out", st.RowsOut),
		slog.Int64("late_dropped", st.LateDropped), slog.Int64("dead_letters", st.DeadLetters+st.SourceDeadLetters),
	}
	switch {
	case err == nil:
		log.LogAttrs(lctx, slog.LevelInfo, "volga: pipeline stopped", attrs...)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		log.LogAttrs(lctx, slog.LevelInfo, "volga: pipeline stopped", append(attrs, slog.String("reason", err.Error()))...)
	default:
		var oe *operatorError
		if errors.As(err, &oe) {
			attrs = append(attrs, slog.String("operator", oe.op), slog.Int("stage", oe.stage), slog.Int("task", oe.task))
		}
		log.LogAttrs(lctx, slog.LevelError, "volga: pipeline failed", append(attrs, slog.Any("error", err))...)
	}
	return err
}

// lateSummary remembers what was last logged, to log only increases.
type lateSummary struct {
	lateDropped, lateApplied, dead, sourceDead int64
}

// log writes one debug line per kind of count that grew since the last
// call, with the increase and the total.
func (s *lateSummary) log(ctx context.Context, log *slog.Logger, st StatsSnapshot) {
	if d := st.LateDropped - s.lateDropped; d > 0 || st.LateApplied > s.lateApplied {
		log.LogAttrs(ctx, slog.LevelDebug, "volga: late rows",
			slog.Int64("dropped", d), slog.Int64("applied", st.LateApplied-s.lateApplied),
			slog.Int64("dropped_total", st.LateDropped), slog.Int64("applied_total", st.LateApplied))
	}
	if d, sd := st.DeadLetters-s.dead, st.SourceDeadLetters-s.sourceDead; d > 0 || sd > 0 {
		log.LogAttrs(ctx, slog.LevelDebug, "volga: dead letters",
			slog.Int64("engine", d), slog.Int64("source", sd),
			slog.Int64("engine_total", st.DeadLetters), slog.Int64("source_total", st.SourceDeadLetters))
	}
	s.lateDropped, s.lateApplied, s.dead, s.sourceDead = st.LateDropped, st.LateApplied, st.DeadLetters, st.SourceDeadLetters
}

// operatorError is an error of one operator task; its message is the
// wrapped error's, the rest is context for logs.
type operatorError struct {
	op          string
	stage, task int
	err         error
}

func (e *operatorError) Error() string { return e.err.Error() }
func (e *operatorError) Unwrap() error { return e.err }

// setObserver makes Lookup report to o. l may be nil.
func (l *Live) setObserver(o Observer) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obs = o
}

// WindowStats returns the counters of the window operators, sliding and
// tumbling/hopping, by stage and task (nil for a task that has not
// started yet): rows in and out, late rows, keys, rows retained and rows
// pending, keys let go and forgotten. Each sliding-window operator is read
// under its lock, in time linear in its number of keys; it is meant for
// metrics scrapes, not for hot loops.
func (l *Live) WindowStats() [][]*window.Stats {
	l.mu.RLock()
	ops, groups := l.ops, l.groups
	l.mu.RUnlock()
	out := make([][]*window.Stats, len(ops))
	for s, tasks := range ops {
		out[s] = make([]*window.Stats, len(tasks))
		for t := range tasks {
			l.mu.RLock()
			op, gop := ops[s][t], groups[s][t]
			l.mu.RUnlock()
			var st window.Stats
			switch {
			case op != nil:
				st = op.Stats()
			case gop != nil:
				st = gop.Stats()
			default:
				continue
			}
			out[s][t] = &st
		}
	}
	return out
}
