package main

import (
	"context"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/volga-go/volga/bench/internal/gen"
	"github.com/volga-go/volga/bench/internal/goloop"
	"github.com/volga-go/volga/bench/internal/volgarun"
	"github.com/volga-go/volga/bench/internal/workload"
)

// runVolgaBatch runs the query in volga's batch mode over the Parquet file,
// with a callback sink that folds every output row into the checksum.
func runVolgaBatch(ctx context.Context, c config) (result, error) {
	return runVolgaBatchWith(ctx, c, batchOptions(c))
}

// batchOptions are the options of a volga-batch engine: the workload's
// parallelism and channel depth, and for the workloads over the events
// sorted by user (-by-user), the promise of that order.
func batchOptions(c config) volgarun.Options {
	o := volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth}
	if strings.HasSuffix(c.Workload, "-by-user") {
		o.ClusteredBy = []string{"user_id"}
	}
	return o
}

// runVolgaBatchClustered is volga-batch with the run ordering its input
// by user first (volga.WithClusterInput): output key by key.
func runVolgaBatchClustered(ctx context.Context, c config) (result, error) {
	return runVolgaBatchWith(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth, ClusterInput: []string{"user_id"}})
}

// runVolgaBatchHeld is volga-batch over features-4-by-user's input
// without the promise of its order: rows wait for the end of the input.
func runVolgaBatchHeld(ctx context.Context, c config) (result, error) {
	return runVolgaBatchWith(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth})
}

func runVolgaBatchWith(ctx context.Context, c config, o volgarun.Options) (result, error) {
	start := time.Now()
	src, err := volgarun.Parquet(c.Decoders, c.Input.Log)
	if err != nil {
		return result{}, err
	}
	var sum workload.Features4Checksum
	err = volgarun.Run(ctx, workload.Features4Query, "tx", src, o,
		func(_ context.Context, rec arrow.RecordBatch) error { return sum.AddRecord(rec) })
	if err != nil {
		return result{}, err
	}
	return result{Seconds: time.Since(start).Seconds(), Checksum: sum}, nil
}

// runGoLoop computes the features with the hand-written loop, reading the
// same Parquet file.
func runGoLoop(_ context.Context, c config) (result, error) {
	start := time.Now()
	f := goloop.NewFeatures4()
	_, err := gen.ScanParquet(c.Input.Log, []string{"id", "user_id", "ts", "amount"}, 64*1024, func(rec arrow.RecordBatch) error {
		ids := rec.Column(0).(*array.Int64).Int64Values()
		users := rec.Column(1).(*array.Int64).Int64Values()
		tss := rec.Column(2).(*array.Timestamp).TimestampValues()
		amounts := rec.Column(3).(*array.Float64).Float64Values()
		for i := range ids {
			f.Add(ids[i], users[i], int64(tss[i]), amounts[i])
		}
		return nil
	})
	if err != nil {
		return result{}, err
	}
	sum := f.Finish()
	return result{Seconds: time.Since(start).Seconds(), Checksum: sum}, nil
}

// runVolgaStream runs the query in volga's streaming mode. The input file
// (prepared by prepareStream4) already holds the events in their shuffled
// arrival order; before the clock starts it is read into memory as batches
// of -batch-rows rows. The timed part is the pipeline run with watermarks
// on and a sink that only folds rows into the checksum. Peak RSS includes
// the in-memory input.
func runVolgaStream(ctx context.Context, c config) (result, error) {
	schema, recs, err := gen.ReadParquet(c.Input.Arrival, nil, c.BatchRows)
	if err != nil {
		return result{}, err
	}
	runtime.GC()
	start := time.Now()
	var sum workload.Features4Checksum
	src := volgarun.Memory(schema, recs)
	err = volgarun.Run(ctx, workload.Features4Query, "tx", src,
		volgarun.Options{Streaming: true, MaxOutOfOrder: c.MaxOutOfOrder, Parallelism: c.Parallelism, WatermarkInterval: c.WMInterval},
		func(_ context.Context, rec arrow.RecordBatch) error { return sum.AddRecord(rec) })
	if err != nil {
		return result{}, err
	}
	return result{Seconds: time.Since(start).Seconds(), Checksum: sum}, nil
}

// runVolgaBatchGroup runs the group-1 query in volga's batch mode over the
// Parquet file, with a callback sink that folds every window into the
// checksum.
func runVolgaBatchGroup(ctx context.Context, c config) (result, error) {
	return runVolgaBatchGroupWith(ctx, c, batchOptions(c))
}

// runVolgaBatchGroupClustered is runVolgaBatchGroup with the run
// ordering its input by user first (volga.WithClusterInput): output user
// by user.
func runVolgaBatchGroupClustered(ctx context.Context, c config) (result, error) {
	return runVolgaBatchGroupWith(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth, ClusterInput: []string{"user_id"}})
}

// runVolgaBatchGroupHeld is volga-batch over group-1-by-user's input
// without the promise of its order: windows wait for the end of the
// input.
func runVolgaBatchGroupHeld(ctx context.Context, c config) (result, error) {
	return runVolgaBatchGroupWith(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth})
}

func runVolgaBatchGroupWith(ctx context.Context, c config, o volgarun.Options) (result, error) {
	start := time.Now()
	src, err := volgarun.Parquet(c.Decoders, c.Input.Log)
	if err != nil {
		return result{}, err
	}
	var sum workload.GroupChecksum
	err = volgarun.Run(ctx, workload.GroupQuery, "tx", src, o,
		func(_ context.Context, rec arrow.RecordBatch) error { return sum.AddRecord(rec) })
	if err != nil {
		return result{}, err
	}
	return result{Seconds: time.Since(start).Seconds(), Group: &sum}, nil
}

// runVolgaBatchML3 runs the ml-3 query in volga's batch mode over the
// features-4 Parquet file, folding every output row into the checksum.
func runVolgaBatchML3(ctx context.Context, c config) (result, error) {
	return runVolgaBatchML3With(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth})
}

// runVolgaBatchML3Clustered is runVolgaBatchML3 with the run ordering its
// input by user first (volga.WithClusterInput): output key by key.
func runVolgaBatchML3Clustered(ctx context.Context, c config) (result, error) {
	return runVolgaBatchML3With(ctx, c, volgarun.Options{Parallelism: c.Parallelism, ChannelDepth: c.ChannelDepth, ClusterInput: []string{"user_id"}})
}

func runVolgaBatchML3With(ctx context.Context, c config, o volgarun.Options) (result, error) {
	start := time.Now()
	src, err := volgarun.Parquet(c.Decoders, c.Input.Log)
	if err != nil {
		return result{}, err
	}
	var sum workload.ML3Checksum
	err = volgarun.Run(ctx, workload.ML3Query, "tx", src, o,
		func(_ context.Context, rec arrow.RecordBatch) error { return sum.AddRecord(rec) })
	if err != nil {
		return result{}, err
	}
	return result{Seconds: time.Since(start).Seconds(), ML3: &sum}, nil
}

// runGoLoopML3 computes the ml-3 features with the hand-written loop,
// reading the same Parquet file.
func runGoLoopML3(_ context.Context, c config) (result, error) {
	start := time.Now()
	f := goloop.NewML3()
	_, err := gen.ScanParquet(c.Input.Log, []string{"id", "user_id", "ts", "amount", "merchant"}, 64*1024, func(rec arrow.RecordBatch) error {
		ids := rec.Column(0).(*array.Int64).Int64Values()
		users := rec.Column(1).(*array.Int64).Int64Values()
		tss := rec.Column(2).(*array.Timestamp).TimestampValues()
		amounts := rec.Column(3).(*array.Float64).Float64Values()
		merchants := rec.Column(4).(*array.String)
		for i := range ids {
			f.Add(ids[i], users[i], int64(tss[i]), amounts[i], merchants.Value(i))
		}
		return nil
	})
	if err != nil {
		return result{}, err
	}
	sum := f.Finish()
	return result{Seconds: time.Since(start).Seconds(), ML3: &sum}, nil
}
