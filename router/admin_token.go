package router

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// AdminToken returns the token the admin API requires: the configured one
// (admin.token, admin.token_file), else the one this router generated at
// cfg.GeneratedTokenPath() on its first start — secure by default, with no
// setting. path is that file when it is used ("" for a configured token),
// created reports that this call made it; main logs the path, never the
// token.
func AdminToken(cfg *config.Config) (token, path string, created bool, err error) {
	token, err = cfg.AdminToken()
	if err != nil || token != "" {
		return token, "", false, err
	}
	path = cfg.GeneratedTokenPath()
	token, created, err = loadOrCreateToken(path)
	if err != nil {
		return "", path, false, fmt.Errorf("admin API: generated token %s: %w", path, err)
	}
	return token, path, created, nil
}

// loadOrCreateToken reads the token file at path, or makes it: 32 random
// bytes, base64url, mode 0600. The file appears whole or not at all (a
// temporary file linked into place), so neither a CLI reading it nor a
// second router starting at once sees it half written.
func loadOrCreateToken(path string) (string, bool, error) {
	tok, err := readOwnTokenFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	dir := filepath.Dir(path)
	if err := ownfile.PrepareDir(dir); err != nil {
		return "", false, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false, err
	}
	tok = base64.RawURLEncoding.EncodeToString(raw)
	f, err := os.CreateTemp(dir, ".admin-token-*") // mode 0600
	if err != nil {
		return "", false, err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // linked or failed: the temporary name goes either way
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, err
	}
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		tok, err = readOwnTokenFile(path) // another router made it first: use that one
		return tok, false, err
	} else if err != nil {
		return "", false, err
	}
	return tok, true, nil
}

// readOwnTokenFile reads a generated token under ownfile's rules: no
// symbolic link, no FIFO, a file of this user's that no other may read or
// write. In a shared directory someone could have put a token they know
// there first.
func readOwnTokenFile(path string) (string, error) {
	f, err := ownfile.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, ownfile.ErrUnsafe) {
		return "", fmt.Errorf("%w; or delete it for a new token", err)
	}
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	return config.ReadToken(f, path)
}
