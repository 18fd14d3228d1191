//go:build !unix

package ownfile

import "os"

// Lock: this platform has no flock; the lock file is made, not locked.
func Lock(path string) (release func() error, err error) {
	f, err := Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}

// HeldError: the lock is held by another process.
type HeldError struct {
	Path string
	Pid  int
}

func (e *HeldError) Error() string { return e.Path + " is locked by another process" }
