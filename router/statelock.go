package router

import (
	"fmt"
	"path/filepath"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// LockState makes this process the only router using its state file,
// before anything in the state directory is read or written: an exclusive
// lock on <state file>.lock, held until release (or the process's end,
// however it ends). A second router given the same state stops at once
// with an error naming the pid that holds it, having changed nothing. The
// directory is checked first (ownfile.CheckDir): others must not be able
// to write in it. A cluster member keeps no state file: nothing to lock.
func LockState(cfg *config.Config) (release func() error, err error) {
	if cfg.Cluster != nil {
		return func() error { return nil }, nil
	}
	path := cfg.StatePath()
	if err := ownfile.PrepareDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("router: state directory: %w", err)
	}
	release, err = ownfile.Lock(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("router: state file %s: %w", path, err)
	}
	return release, nil
}
