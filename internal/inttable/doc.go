// Package inttable maps int64 keys to int32 ids in one open-addressing
// array: Fibonacci hashing, linear probing, kept at most half full.
//
// It stands in for map[int64]int32 on paths that look a key up for
// every input row (a window's key index, a clustered source's grouping
// of rows by key). A lookup of a key not in cache costs one cache miss
// where Go's map reads a control word and then a slot; on features-4 the
// key index was 5 % of the CPU with a map.
//
// The hashing helpers (Home, Shift, HalfFullSize) serve other
// open-addressing tables of the module with the same layout rules.
package inttable
