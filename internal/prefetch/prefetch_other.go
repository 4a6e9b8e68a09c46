//go:build !amd64 && !arm64

package prefetch

// addr does nothing on architectures without a prefetch here.
func addr(p uintptr) {}
