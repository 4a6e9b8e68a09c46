package pipeline

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SetCheckpointTestHooks sets how long a window task writes checkpoint
// state at a time and a function called when a task has written its
// state for a checkpoint, until the returned function undoes it.
func SetCheckpointTestHooks(slice time.Duration, delivered func(epoch uint64)) (undo func()) {
	oldSlice, oldHook := checkpointSlice, taskDoneHook
	checkpointSlice, taskDoneHook = slice, delivered
	return func() { checkpointSlice, taskDoneHook = oldSlice, oldHook }
}

// SetBatchReleaseRows sets the least number of rows a window task of a
// batch run lets wait before releasing them early, until the returned
// function undoes it.
func SetBatchReleaseRows(n int) (undo func()) {
	old := batchReleaseRows
	batchReleaseRows = n
	return func() { batchReleaseRows = old }
}

// SetReleaseMaxRows sets the most rows a window task of a batch run lets
// wait, with and without per-value windows, until the returned function
// undoes it.
func SetReleaseMaxRows(rows, perValue int) (undo func()) {
	oldRows, oldPerValue := releaseMaxRows, perValueRows
	releaseMaxRows, perValueRows = rows, perValue
	return func() { releaseMaxRows, perValueRows = oldRows, oldPerValue }
}

// SetMergeChunk sets the rows a merger writes at most in one batch (and
// lets come between merges), until the returned function undoes it.
func SetMergeChunk(n int) (undo func()) {
	old := mergeChunk
	mergeChunk = n
	return func() { mergeChunk = old }
}

// ResultMergeRuns is the number of runs so far that merged the tasks'
// results onto the input batches.
func ResultMergeRuns() int64 { return resultMergeRuns.Load() }

// DestRuns is the number of runs so far whose tasks wrote their results
// in place (window.Dest).
func DestRuns() int64 { return destRuns.Load() }

// SetHeldWarnRows sets how many rows a batch run reads without releasing
// any before it logs a warning, until the returned function undoes it.
func SetHeldWarnRows(n int64) (undo func()) {
	old := heldWarnRows
	heldWarnRows = n
	return func() { heldWarnRows = old }
}

// SetResultMerging turns merging results onto the input on or off (as
// runs of an earlier version did not), until the returned function undoes
// it.
func SetResultMerging(on bool) (undo func()) {
	old := resultMergingOn
	resultMergingOn = on
	return func() { resultMergingOn = old }
}

// SetInterleaveBackfill lets backfills read events and spine interleaved
// or not, until the returned function undoes it.
func SetInterleaveBackfill(on bool) (undo func()) {
	old := interleaveBackfill
	interleaveBackfill = on
	return func() { interleaveBackfill = old }
}

// SetResultPool sets the allocator of the window tasks' results in runs
// without RunOptions.Mem, until the returned function undoes it.
func SetResultPool(a memory.Allocator) (undo func()) {
	old := resultPool
	resultPool = a
	return func() { resultPool = old }
}
