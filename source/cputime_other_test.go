//go:build !unix

package source_test

import "time"

// processCPU is not measured here: it returns 0.
func processCPU() time.Duration { return 0 }
