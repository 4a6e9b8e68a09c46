package testutil

import (
	"math/rand/v2"
	"os"
	"strconv"
)

// Seeds returns the seeds a randomized test runs with: 1..n (only 1 under
// the race detector), or only the seed in the environment variable
// VOLGA_SEED when it is set (to replay a failure reported with its seed).
func Seeds(n int) []uint64 {
	if s := os.Getenv("VOLGA_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return []uint64{v}
		}
	}
	if Race {
		n = 1
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// Rand returns a deterministic generator for seed.
func Rand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// Scale returns n, or a third of it under the race detector.
func Scale(n int) int {
	if Race {
		return max(1, n/3)
	}
	return n
}
