//go:build amd64 || arm64

package prefetch

// addr prefetches the cache line of address p (in assembly).
func addr(p uintptr)
