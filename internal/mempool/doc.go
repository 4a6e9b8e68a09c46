// Package mempool is an Arrow memory.Allocator that reuses the buffers
// freed to it, for memory that lives briefly and in bulk: the Parquet
// pages a source decodes and the result arrays a window task builds
// before they are copied into the batches a run writes.
//
// Go's allocator hands out fresh memory for every such buffer and takes
// it back only after a garbage collection, so a run that builds and drops
// a gigabyte of results this way grows its heap, faults its pages in, and
// collects more often than the memory it holds needs. The pool gives a
// freed buffer to the next allocation of its size class instead.
//
// A buffer must not be used once freed, as the Arrow contract says of
// any released buffer; with Go's allocator a use after Release goes
// unnoticed, with the pool it reads another array's values. The engine
// therefore only gives pooled arrays to code of its own that copies them
// before anything leaves it. A buffer never freed (an array never
// released) is simply collected.
package mempool
