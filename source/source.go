package source

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Source produces Arrow record batches. The engine owns the goroutine that
// calls Read; a Source need not be safe for concurrent use.
//
// Read returns the next batch, or io.EOF once a bounded source is
// exhausted. The caller releases each returned batch. Read must return
// promptly with ctx.Err() when ctx is cancelled.
type Source interface {
	Schema() *arrow.Schema
	Read(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// Seeker is implemented by replayable sources. Position describes the
// next row Read would return; Seek moves to a position earlier returned by
// Position.
type Seeker interface {
	Position() ([]byte, error)
	Seek(pos []byte) error
}

// Projector is implemented by sources that can leave columns out: only
// the named columns are then decoded, and Schema and every batch Read
// returns hold only them. The engine calls it with the columns a pipeline
// uses, so that a source opened with every column decodes no more than it
// needs.
type Projector interface {
	// Project narrows the source to the named columns of its Schema (a
	// name not in it is an error naming it; an empty list is an error).
	// Each source documents the order of the columns it keeps. It must be
	// called before the first Read and returns an error after.
	Project(columns []string) error
}

// Partitioned is implemented by sources whose input is split into
// partitions that each make their own event-time progress, such as the
// partitions of a Kafka topic. Every batch such a source's Read returns
// holds rows of one partition only.
//
// The engine keeps one watermark per partition (a watermark.Bounded fed
// with the event times of that partition's batches) and combines them by
// minimum with a watermark.Combiner of Partitions() inputs, so that rows
// of a partition that lags behind the others are not late merely because
// another partition is ahead. A partition that delivers nothing for longer
// than the idle timeout (watermark.WithIdleTimeout) stops holding the
// combined watermark back, so a quiet partition does not stall the
// pipeline; a partition the source does not read at the moment (one
// another member of a consumer group reads) holds nothing back if the
// source implements Assigning. The engine
// looks at the clock only when Read returns: a partitioned source whose
// partitions can all go quiet should return an empty batch when nothing
// has come for a while (the Kafka source does after its IdleWake, one
// second by default), so that rows a quiet partition held back go out
// without waiting for the next record.
type Partitioned interface {
	// Partitions returns the number of partitions. It does not change
	// while the source is open.
	Partitions() int
	// PartitionOf returns the partition, in [0, Partitions()), of a batch
	// returned by Read or of a slice of one, or -1 for any other batch.
	PartitionOf(rec arrow.RecordBatch) int
}

// Assigning is implemented by a Partitioned source whose partitions are
// not all read by it all the time, such as a member of a Kafka consumer
// group, which reads the partitions the group assigns it. The engine asks
// it after every Read: a partition the source does not read at the moment
// holds the watermark back no more than an idle one, with no idle timeout
// needed. A partition assigned again counts again from its last
// watermark; until its rows catch up with the pipeline's watermark they
// are late (like those of an idle partition waking up).
type Assigning interface {
	// Reading reports whether the source reads partition p (in [0,
	// Partitions())) at the moment. It is called from the goroutine that
	// calls Read.
	Reading(p int) bool
}

// DeadLetter is an input record the source could not decode. It is handed
// to the dead-letter handler and counted; the source carries on.
type DeadLetter struct {
	// Source names the input (a path or topic).
	Source string
	// Offset locates the record: a 1-based line number for text files.
	Offset int64
	// Raw is the undecoded record.
	Raw []byte
	// Reason says what was wrong with it.
	Reason string
}

// DeadLetterFunc receives dead letters. It is called from the goroutine
// that calls Read.
type DeadLetterFunc func(DeadLetter)
