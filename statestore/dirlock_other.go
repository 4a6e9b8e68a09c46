//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package statestore

import "os"

// lockDir does nothing where there is no flock (Windows, where the files
// of an open store cannot be removed anyway, and others).
func lockDir(*os.File) (func(), error) { return func() {}, nil }
