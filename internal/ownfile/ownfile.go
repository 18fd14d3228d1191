// Package ownfile opens the files a router keeps for itself — the state
// file, its journal, the generated admin token, the lock — refusing what
// another local user could have planted there: a symbolic link (followed,
// it lets them truncate or create a file of their choice), anything but a
// regular file (a FIFO hangs the start), a file another user owns or may
// read or write, a directory others may write to (they could swap the
// files in it).
package ownfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrUnsafe: a file or directory refused by these rules. Its text has no
// package prefix: it is wrapped by the path it is about.
var ErrUnsafe = errors.New("unsafe")

// Open opens path (flag as os.OpenFile; perm for a file it creates) the
// way the router opens its own files: never through a symbolic link,
// never blocking on a FIFO, and only a regular file owned by this
// process's user that no other user may read or write. A missing file is
// an error satisfying errors.Is(err, fs.ErrNotExist), as os.Open's.
func Open(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow|nonBlock, perm)
	if err != nil {
		return nil, describeOpenError(path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwnFile(path, fi)
	}
	if err != nil {
		_ = f.Close() // refused: the check's error is the one to report
		return nil, err
	}
	return f, nil
}

// OpenRegular opens path for reading, following symbolic links (an
// operator's file may be one, as a mounted secret is), but only if it is
// a regular file: a FIFO or a device would hang or flood the reader.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is a %s, not a regular file: %w", path, kind(fi.Mode()), ErrUnsafe)
	}
	if err != nil {
		_ = f.Close() // refused: the check's error is the one to report
		return nil, err
	}
	return f, nil
}

// ReadRegular reads the regular file at path, at most max bytes: a longer
// one is an error naming the path and the bound.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over %d bytes (%d MiB): refused", path, max, max>>20)
	}
	return b, nil
}

// checkOwnFile applies the rules of Open to what the open file is.
func checkOwnFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file: %w", path, kind(fi.Mode()), ErrUnsafe)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not this process's %d (another user could have written it): %w", path, uid, os.Getuid(), ErrUnsafe)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %#o: other users may read or write it (chmod 600 %s): %w", path, perm, path, ErrUnsafe)
	}
	return nil
}

// CheckDir refuses a directory other users could change: one that is
// group- or world-writable (/tmp is), or owned by a user other than this
// process's or root. dir itself may be reached through a symbolic link;
// what it resolves to is checked.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: %w", dir, ErrUnsafe)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("directory %s has mode %#o: other users may create, rename or delete files in it (use a private directory, e.g. mode 0700, or chmod go-w %s): %w", dir, perm, dir, ErrUnsafe)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("directory %s is owned by uid %d, not this process's %d nor root: %w", dir, uid, os.Getuid(), ErrUnsafe)
	}
	return nil
}

// PrepareDir creates dir (mode 0700) if it is missing, then checks it as
// CheckDir does.
func PrepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckDir(dir)
}

// OwnedByOther reports whether path exists and is owned by a user other
// than this process's: a file the router's own user may read where this
// one may not judge it (check-config run by another user).
func OwnedByOther(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	uid, ok := owner(fi)
	return ok && uid != os.Getuid()
}

// kind names a file type for an error.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}
