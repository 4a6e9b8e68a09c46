//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package statestore

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes the lock Badger takes on its directory (an exclusive
// flock of the directory itself) without waiting, and returns its
// release; it fails with ErrDirInUse when an open store holds it.
func lockDir(f *os.File) (func(), error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, ErrDirInUse
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
