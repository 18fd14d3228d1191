package router

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// listenSocket listens on the Unix socket at path for the local CLI. Its
// directory must be private (ownfile.CheckDir: the router's state
// directory, 0700); a socket left there by an earlier run is replaced (the
// caller holds the state lock, so no live router owns it), anything else
// at the path is an error. The socket is made mode 0600, and each peer's
// uid is checked where the platform says it (peerListener).
func listenSocket(path string) (net.Listener, error) {
	if err := ownfile.CheckDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: remove the one an earlier run left: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close() // the chmod's error is the one to report
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &peerListener{Listener: ln}, nil
}

// checkSocketPath refuses a file at the socket's path that is not a
// socket (one an earlier run left is replaced at start).
func checkSocketPath(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket %s: a file that is not a socket is there: remove it", path)
	}
	return nil
}

// peerListener admits the peers peerAllowed allows and closes the others
// at once.
type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if peerAllowed(c) {
			return c, nil
		}
		_ = c.Close() // refused: nothing was read
	}
}
