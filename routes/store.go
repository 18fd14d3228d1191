package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The state file keeps the durable routes added at runtime, so they come
// back after a restart. Configured routes are not in it: the config file
// is their home. Format (version 1):
//
//	{"version": 1, "routes": [Spec, ...]}
const stateVersion = 1

type stateFile struct {
	Version int    `json:"version"`
	Routes  []Spec `json:"routes"`
}

// LoadState reads the durable runtime routes from path. A missing file is
// an empty list; a damaged one is an error naming the file, so the router
// does not start and silently forget routes.
func LoadState(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("routes: state file: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("routes: state file %s is damaged (%w); move it away to start without its routes", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("routes: state file %s has version %d, this fedrouter reads version %d", path, st.Version, stateVersion)
	}
	for i, s := range st.Routes {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("routes: state file %s: route %d (%s): %w", path, i, s, err)
		}
	}
	return st.Routes, nil
}

// SaveState writes routes to path atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory. A crash leaves either
// the old file or the new one, never a torn one.
func SaveState(path string, routes []Spec) error {
	data, err := json.MarshalIndent(stateFile{Version: stateVersion, Routes: routes}, "", "  ")
	if err != nil {
		return fmt.Errorf("routes: encode state: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("routes: state directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("routes: state file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("routes: write state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("routes: sync state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("routes: close state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("routes: replace state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename is durable once the directory is
		d.Close()
	}
	return nil
}
