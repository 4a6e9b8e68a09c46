package volga

import (
	"context"
	"fmt"
	"time"

	"gocloud.dev/blob"
	// The bucket URL schemes WithCheckpoints understands out of the box.
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/volga-go/volga/pipeline"
	"github.com/volga-go/volga/statestore"
)

// CheckpointInfo describes a completed checkpoint; see WithOnCheckpoint.
type CheckpointInfo = pipeline.CheckpointInfo

// WithCheckpoints makes the pipeline take a consistent checkpoint of its
// state every interval (0: every 10 s) into the bucket at bucketURL
// (gocloud.dev/blob: file:///var/lib/volga/ckpt, mem://, or
// s3://bucket?region=...&prefix=features/ ...), and, when the bucket
// already holds one, resume from the latest complete checkpoint: state
// restored, the source sought to where that checkpoint was taken. The
// source must be replayable (files, Kafka: source.Seeker). With a
// transactional sink (the CSV, JSON-lines and Parquet file sinks) the
// output is exactly-once: after any crash and restart it equals the output
// of a run without one. Other sinks (Kafka, callbacks) get at least once
// the rows written after the checkpoint.
//
// A bounded input ends with a final checkpoint: started again with the
// same bucket, a finished run reads nothing twice. Use a bucket (or
// prefix) per pipeline: the path of an s3://, gs:// or azblob:// URL is
// a prefix in the bucket (s3://ckpt/features is
// s3://ckpt?prefix=features/), given as a path or as prefix=, not both. The run keeps its working state in a Badger store
// in WithStateDir (default: a temporary directory).
func WithCheckpoints(bucketURL string, interval time.Duration) Option {
	return func(c *config) {
		c.ckptURL = bucketURL
		c.ckpt().Interval = interval
	}
}

// WithCheckpointBucket is WithCheckpoints with a bucket the caller opened
// (and closes after Run returns).
func WithCheckpointBucket(b *blob.Bucket, interval time.Duration) Option {
	return func(c *config) {
		c.ckptURL = ""
		c.ckpt().Bucket = b
		c.ckpt().Interval = interval
	}
}

// WithCheckpointRetain keeps the last n complete checkpoints (default 3).
func WithCheckpointRetain(n int) Option { return func(c *config) { c.ckpt().Retain = n } }

// WithOnCheckpoint calls f after each completed checkpoint.
func WithOnCheckpoint(f func(CheckpointInfo)) Option {
	return func(c *config) { c.ckpt().OnCheckpoint = f }
}

// WithMemoryBudget bounds the bytes of window state the pipeline holds
// in memory: the least recently used keys are evicted to the on-disk
// state store (Badger, in WithStateDir) and read back when a row or a
// lookup needs them, so state far larger than memory still runs. 0 (the
// default) keeps everything in memory.
func WithMemoryBudget(bytes int64) Option { return func(c *config) { c.run.MemoryBudget = bytes } }

// WithRowPaging bounds each key's memory whatever the length of its
// longest RANGE frame: the rows of that frame which no frame edge needs
// (a 30-day window's middle) are written to the on-disk state store in
// pages of about rows rows and read back when the frame's lower edge
// reaches them, while the frame's merge-only aggregates keep one state
// per tile. Memory per key then grows with window length / tile length,
// not with the events in the window. Results are unchanged. It cannot be
// combined with WithAllowedLateness or a lookup retention; lookups of a
// key read its pages. 1024 to 8192 rows is a sensible page.
func WithRowPaging(rows int) Option { return func(c *config) { c.run.PageRows = rows } }

// WithStateDir places the pipeline's state store (Badger) in dir, which is
// emptied when the run starts: the state comes from the checkpoint. A
// directory a running pipeline's store holds (in this process or another)
// is refused with statestore.ErrDirInUse and left alone. The default is a
// temporary directory removed when the run ends.
func WithStateDir(dir string) Option { return func(c *config) { c.run.StateDir = dir } }

func (c *config) ckpt() *pipeline.Checkpointing {
	if c.run.Checkpoints == nil {
		c.run.Checkpoints = &pipeline.Checkpointing{}
	}
	return c.run.Checkpoints
}

// openCheckpointBucket opens the bucket of WithCheckpoints; the returned
// function closes it.
func (c *config) openCheckpointBucket(ctx context.Context) (func(), error) {
	if c.ckptURL == "" {
		return func() {}, nil
	}
	u, err := checkpointBucketURL(c.ckptURL)
	if err != nil {
		return nil, err
	}
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("volga: opening the checkpoint bucket %s: %w", c.ckptURL, err)
	}
	c.run.Checkpoints.Bucket = b
	if dir, ok := statestore.SyncDir(u); ok {
		c.run.Checkpoints.SyncDir = dir
	}
	return func() { _ = b.Close() }, nil
}
