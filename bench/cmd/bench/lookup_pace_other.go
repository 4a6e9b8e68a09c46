//go:build !linux

package main

import (
	"runtime"
	"time"
)

// pacer sleeps for short durations: a timer for all but the last 2 ms,
// then yielding until the time has come (see the Linux version).
type pacer struct{}

func newPacer() (*pacer, error) { return &pacer{}, nil }

func (p *pacer) sleep(d time.Duration) error {
	due := time.Now().Add(d)
	if d > 2*time.Millisecond {
		time.Sleep(d - 2*time.Millisecond)
	}
	for time.Now().Before(due) {
		runtime.Gosched()
	}
	return nil
}

func (p *pacer) close() {}
