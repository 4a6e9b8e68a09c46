// Package volgarun is the one place where the benchmarks and the oracle
// tests call the engine's public API, so that a change of that API is a
// change here only.
package volgarun

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/volga-go/volga"
	"github.com/volga-go/volga/sink"
	"github.com/volga-go/volga/source"

	"github.com/volga-go/volga/bench/internal/rows"
)

// Options selects how a query runs.
type Options struct {
	// Streaming runs in volga.Streaming mode with watermarks; otherwise
	// volga.Batch.
	Streaming bool
	// MaxOutOfOrder is the bounded out-of-orderness of the watermark
	// (streaming only).
	MaxOutOfOrder time.Duration
	// Parallelism is the number of window tasks; 0 keeps the engine's
	// default.
	Parallelism int
	// LookupRetention keeps window state for lookups at times down to
	// this far behind the watermark (volga.WithLookupRetention).
	LookupRetention time.Duration
	// WatermarkInterval advances the watermark at most once per interval
	// (volga.WithWatermarkInterval; streaming only).
	WatermarkInterval time.Duration
	// ChannelDepth is volga.WithChannelDepth; 0 keeps the engine's
	// default.
	ChannelDepth int
	// ClusteredBy is volga.WithClusteredBy (batch only).
	ClusteredBy []string
	// ClusterInput is volga.WithClusterInput (batch only).
	ClusterInput []string
}

// Run compiles query with src bound to table and runs it, handing every
// output batch to fn (which must Retain a batch it keeps).
func Run(ctx context.Context, query, table string, src source.Source, o Options, fn func(context.Context, arrow.RecordBatch) error) error {
	p, err := compile(query, table, src, o, fn)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// Compile compiles query like Run without running it, for callers that
// need the pipeline itself: its Lookup, Handler and Stats (the lookup
// workload).
func Compile(query, table string, src source.Source, o Options, fn func(context.Context, arrow.RecordBatch) error) (*volga.Pipeline, error) {
	return compile(query, table, src, o, fn)
}

func compile(query, table string, src source.Source, o Options, fn func(context.Context, arrow.RecordBatch) error) (*volga.Pipeline, error) {
	mode := volga.Batch
	if o.Streaming {
		mode = volga.Streaming
	}
	opts := []volga.Option{
		volga.WithSource(table, src),
		volga.WithSink(sink.NewCallback(fn)),
		volga.WithMode(mode),
	}
	if o.Streaming {
		opts = append(opts, volga.WithMaxOutOfOrder(o.MaxOutOfOrder), volga.WithWatermarkInterval(o.WatermarkInterval))
	}
	if o.ChannelDepth > 0 {
		opts = append(opts, volga.WithChannelDepth(o.ChannelDepth))
	}
	if o.Parallelism > 0 {
		opts = append(opts, volga.WithParallelism(o.Parallelism))
	}
	if o.LookupRetention > 0 {
		opts = append(opts, volga.WithLookupRetention(o.LookupRetention))
	}
	if len(o.ClusteredBy) > 0 {
		opts = append(opts, volga.WithClusteredBy(o.ClusteredBy...))
	}
	if len(o.ClusterInput) > 0 {
		opts = append(opts, volga.WithClusterInput(o.ClusterInput...))
	}
	return volga.SQL(query, opts...)
}

// Collect runs query like Run and returns its whole output as rows, in
// the order the engine emitted them.
func Collect(ctx context.Context, query, table string, src source.Source, o Options) (rows.Table, error) {
	var out rows.Table
	p, err := compile(query, table, src, o, func(_ context.Context, rec arrow.RecordBatch) error {
		out.Rows = append(out.Rows, rows.FromRecords(rec.Schema(), []arrow.RecordBatch{rec}).Rows...)
		return nil
	})
	if err != nil {
		return out, err
	}
	for _, f := range p.Schema().Fields() {
		out.Names = append(out.Names, f.Name)
	}
	return out, p.Run(ctx)
}

// Memory returns an in-memory source over recs.
func Memory(schema *arrow.Schema, recs []arrow.RecordBatch) source.Source {
	return source.NewMemory(schema, recs...)
}

// Parquet returns a source reading the Parquet files at paths, decoding
// row groups on decoders goroutines (0: the source's default).
func Parquet(decoders int, paths ...string) (source.Source, error) {
	var opts []source.Option
	if decoders > 0 {
		opts = append(opts, source.WithDecoders(decoders))
	}
	p, err := source.NewParquetFiles(paths, opts...)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ReadAll reads src to its end (io.EOF) and returns its rows, closing it.
func ReadAll(ctx context.Context, src source.Source) (rows.Table, error) {
	defer src.Close()
	out := rows.Table{}
	for _, f := range src.Schema().Fields() {
		out.Names = append(out.Names, f.Name)
	}
	for {
		rec, err := src.Read(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, rows.FromRecords(rec.Schema(), []arrow.RecordBatch{rec}).Rows...)
		rec.Release()
	}
}
