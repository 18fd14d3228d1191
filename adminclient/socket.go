package adminclient

import (
	"context"
	"net"
	"path/filepath"
)

// LocalURL is the base URL of calls over the Unix socket: the host only
// fills the Host header (the router accepts localhost).
const LocalURL = "http://localhost"

// UsableSocket says whether this process runs beside the router that
// serves its admin API on the Unix socket at path (config's
// AdminSocketPath, when it says the router serves one): this user may
// enter the router's private state directory (its own user, or root). The CLI then talks to the router there, with no
// token: a process that took the admin port while the router is stopped
// gets nothing, and the throttle of strangers' wrong tokens never applies.
// When the router is not running the call fails; it never falls back to
// TCP with the token.
// Otherwise (not beside the router, or it never ran) the CLI uses
// admin.listen and the token.
func UsableSocket(path string) bool { return mayEnter(filepath.Dir(path)) }

// socketDialer dials the Unix socket at path whatever address it is
// asked for.
func socketDialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
}
