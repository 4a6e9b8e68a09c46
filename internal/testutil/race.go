//go:build race

package testutil

// Race reports whether the race detector is on; randomized tests run
// fewer and smaller trials then.
const Race = true
