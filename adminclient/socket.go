package adminclient

import (
	"context"
	"net"
	"path/filepath"

	"github.com/fedrouter/fedrouter/config"
)

// LocalURL is the base URL of calls over the Unix socket: the host only
// fills the Host header (the router accepts localhost).
const LocalURL = "http://localhost"

// LocalSocket is the Unix socket of the router that runs with cfg, when
// this process runs beside it: the router serves one (config's
// AdminSocketPath) and this user may enter its private state directory
// (its own user, or root). The CLI then talks to the router there, with no
// token: a process that took the admin port while the router is stopped
// gets nothing, and the throttle of strangers' wrong tokens never applies.
// When the router is not running the call fails; it never falls back to
// TCP with the token.
func LocalSocket(cfg *config.Config) (string, bool) {
	path, ok := cfg.AdminSocketPath()
	if !ok {
		return "", false
	}
	if !mayEnter(filepath.Dir(path)) {
		return "", false // not beside the router, or it never ran: admin.listen and the token
	}
	return path, true
}

// socketDialer dials the Unix socket at path whatever address it is
// asked for.
func socketDialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
}
