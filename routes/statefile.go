package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fedrouter/fedrouter/internal/ownfile"
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
	data, err := readOwn(path)
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

// RemoveStateTemp removes the temporary files SaveState leaves behind when
// the process is killed between creating one and renaming it (kill -9,
// power loss), and says how many went. The state file itself is never
// touched.
func RemoveStateTemp(path string) (int, error) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+".tmp"
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // no directory yet: nothing was ever saved
	}
	if err != nil {
		return 0, fmt.Errorf("routes: state directory: %w", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		f := filepath.Join(dir, e.Name())
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("routes: remove the leftover %s: %w", f, err)
		}
		n++
	}
	return n, nil
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
	if err := ownfile.PrepareDir(dir); err != nil {
		return fmt.Errorf("routes: state directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("routes: state file: %w", err)
	}
	// After the rename there is nothing to remove; before it, a failure
	// leaves a temporary file that a later save would not reuse: best
	// effort, the error that matters is the one returned.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := writeSynced(tmp, append(data, '\n')); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("routes: replace state: %w", err)
	}
	return syncDir(dir) // the rename is durable once the directory is
}

// readOwn reads one of the router's own files (the state file, the
// journal) under ownfile's rules: no symbolic link, a regular file of this
// user's that no other user may read or write.
func readOwn(path string) ([]byte, error) {
	f, err := ownfile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	return io.ReadAll(f)
}

// syncDir syncs a directory, so that the names created or renamed in it
// survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("routes: open state directory to sync it: %w", err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("routes: sync state directory: %w", serr)
	}
	if cerr != nil {
		return fmt.Errorf("routes: close state directory: %w", cerr)
	}
	return nil
}

// writeSynced writes data to f, syncs and closes it.
func writeSynced(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("routes: write state: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // the sync error is the one to report
		return fmt.Errorf("routes: sync state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("routes: close state: %w", err)
	}
	return nil
}

// DropSaved removes the routes with ids from the durable runtime routes
// at path (the state file and its journal) of a router that is not
// running: the caller holds the state lock. The routes left become the
// new state file and the journal is removed (its lines are in the file
// now; replayed over it, a crash between the two brings a dropped route
// back, and dropping it again is harmless). An id not saved is an error
// naming it, and nothing is changed. It returns the routes dropped.
func DropSaved(path string, ids []string) ([]Spec, error) {
	saved, _, err := LoadJournaled(path)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var kept, dropped []Spec
	for _, s := range saved {
		if want[s.ID()] {
			dropped = append(dropped, s)
			delete(want, s.ID())
			continue
		}
		kept = append(kept, s)
	}
	for _, id := range ids {
		if want[id] {
			return nil, fmt.Errorf("%w: no saved route has id %q (the state file %s; check-config names the routes to drop)", ErrNotFound, id, path)
		}
	}
	if err := SaveState(path, kept); err != nil {
		return nil, err
	}
	if err := os.Remove(path + JournalSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return dropped, fmt.Errorf("routes: remove the state journal: %w", err)
	}
	return dropped, nil
}
