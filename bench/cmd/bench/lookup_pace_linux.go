//go:build linux

package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// pacer sleeps for short durations precisely: a Linux timerfd read
// through the runtime's network poller, so the wait ends when the kernel's
// high-resolution timer fires (tens of µs of slack) instead of at the next
// millisecond, which is how finely Go's own timers wake a process that is
// otherwise idle (epoll_wait takes milliseconds, golang/go#53824). The
// waiting goroutine holds no thread and burns no CPU.
type pacer struct {
	f  *os.File
	fd int
}

// newPacer returns a pacer, or an error when the kernel has no timerfd.
func newPacer() (*pacer, error) {
	const tfdNonblock, tfdCloexec, clockMonotonic = syscall.O_NONBLOCK, syscall.O_CLOEXEC, 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("timerfd_create: %w", errno)
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller.
	return &pacer{f: os.NewFile(fd, "timerfd"), fd: int(fd)}, nil
}

// sleep waits for d (nothing when d <= 0).
func (p *pacer) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	// struct itimerspec: it_interval (zero: one shot), it_value.
	spec := [4]int64{0, 0, int64(d / time.Second), int64(d % time.Second)}
	if _, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(p.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("timerfd_settime: %w", errno)
	}
	var expirations [8]byte
	_, err := p.f.Read(expirations[:])
	return err
}

func (p *pacer) close() { p.f.Close() }
