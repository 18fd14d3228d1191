//go:build unix

package ownfile

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

const (
	noFollow = syscall.O_NOFOLLOW // the last name must not be a symbolic link
	nonBlock = syscall.O_NONBLOCK // opening a FIFO returns at once
)

// owner is the uid owning the file.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// describeOpenError says why an open with noFollow|nonBlock failed, in the
// words of these rules: ELOOP is a symbolic link, ENXIO a FIFO no one
// reads.
func describeOpenError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s is a symbolic link: refused, the router follows none to its own files (remove it): %w", path, ErrUnsafe)
	case errors.Is(err, syscall.ENXIO):
		return fmt.Errorf("%s is a FIFO or device, not a regular file: %w", path, ErrUnsafe)
	}
	return err
}
