package pipeline

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/volga-go/volga/internal/testhook"
)

// SetCheckpointTestHooks sets a function called by the window
// operators' checkpoint encoders for each key they encode, and one called
// when a task has written its state for a checkpoint, until the returned
// function undoes it.
func SetCheckpointTestHooks(encode func(id int32), delivered func(epoch uint64)) (undo func()) {
	undoEncode := testhook.SetCheckpointEncode(encode)
	oldHook := taskDoneHook
	taskDoneHook = delivered
	return func() {
		taskDoneHook = oldHook
		undoEncode()
	}
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

// HeldPartEpoch returns the epoch of the last checkpoint that took late
// rows a task of a later stage held (lateHold), 0 for none.
func HeldPartEpoch() uint64 { return heldPartEpoch.Load() }
