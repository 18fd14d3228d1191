//go:build unix

package ownfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes an exclusive lock (flock) on the file at path, creating it
// (mode 0600, under Open's rules), and writes this process's pid in it.
// The lock lasts until release is called or the process ends, however it
// ends. Held by another process, it fails at once with a *HeldError.
func Lock(path string) (release func() error, err error) {
	f, err := Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		held := &HeldError{Path: path, Pid: readPid(f)}
		_ = f.Close() // not ours: nothing was written
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, held
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := writePid(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil // closing the descriptor releases the lock
}

func readPid(f *os.File) int {
	b, _ := io.ReadAll(io.LimitReader(f, 32)) // a best effort for the message
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// HeldError: the lock is held by another process.
type HeldError struct {
	Path string
	Pid  int // 0 when the holder's pid could not be read
}

func (e *HeldError) Error() string {
	pid := "pid unknown"
	if e.Pid > 0 {
		pid = "pid " + strconv.Itoa(e.Pid)
	}
	return fmt.Sprintf("%s is locked by another process (%s): one fedrouter at a time may use this state", e.Path, pid)
}
