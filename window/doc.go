// Package window holds the window operators: the state machines that keep
// each key's rows and aggregates and emit features as the watermark
// advances.
//
// Operator serves sliding (OVER) windows. Push buffers rows; Advance(wm)
// releases every pending row with event time <= wm, puts each key's rows
// in (event time, arrival) order, appends them to the key's retained rows
// and slides every frame (RANGE, RANGE ... AND e PRECEDING, UNBOUNDED,
// ROWS, EXCLUDE CURRENT ROW) over them through the aggregates' agg.Window
// contract: retraction for retractable aggregates, deques or two-stack
// queues for the others, so a row costs O(1) amortised whatever the
// frame's length; merge-only aggregates of RANGE frames keep one state per
// epoch-aligned tile (agg.Tiler). Rows are dropped once no frame, allowed
// lateness or lookup retention needs them. With row paging
// (Config.PageRows) the longest frame's middle rows wait in the state
// store, so a key's memory grows with frame length / tile length, not
// with its events. Batch mode is the same operator released
// once by the End watermark (or as time-ordered input goes); over input
// clustered by key, FinishBefore releases the keys the input has moved
// past whatever their times, and drops their states. PushRows
// takes some rows of a batch other operators share, without copying them
// (string arguments are interned, one owned copy per distinct value, for
// as long as a column's values keep repeating); AdvanceResults hands over
// the released rows' results alone, in arrival order, for a caller that
// has the rows; with PushRowsTo it writes fixed-width results straight
// into the shared batch's Dest, at the rows' positions, and reports the
// rows done. Late rows are returned to the caller, or
// applied within the allowed lateness. A key with no row for longer than
// its longest frame (plus the allowed lateness and the lookup retention)
// is quiet: its rows and its aggregates' state are let go (RANGE frames
// only, without row paging). Without a store the key keeps 16 bytes
// besides its entry; with one it leaves memory once a checkpoint has
// written what is left. Once at least 65 536 keys are quiet (and, with a
// store, out of memory) and as many as the others, they are forgotten
// altogether, entries, bookkeeping and stored states (not with ew_avg,
// whose values depend on row numbers), so that a stream whose keys come
// and go holds about its live keys, in memory and in the store. Probe
// rows (backfill spines) get frames without being stored; a key that
// only ever had probes is let go like a quiet key once they are older
// than its longest frame. Lookup answers point-in-time
// queries under a read lock, merging pre-aggregated tiles for long
// frames.
//
// GroupOperator serves tumbling and hopping windows (GROUP BY key,
// tumble/hop): one set of aggregate states per key and epoch-aligned
// window, emitted once the watermark shows the window complete; over
// input clustered by key (GroupConfig.Clustered, FinishBefore), once the
// input has moved past the key, key by key. Like Operator, it takes some
// rows of a shared batch with PushRows, copying only their times and
// arguments. It forgets the keys with no open window and no row waiting
// once they are many (a million, and as many as the live ones), so that
// a stream whose keys come and go holds its live keys, not every key it
// has seen.
package window
