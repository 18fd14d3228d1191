package adminclient

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"

	"github.com/fedrouter/fedrouter/config"
)

// ErrAdminOff: the router's configuration turns the admin API off.
var ErrAdminOff = errors.New("adminclient: the admin API is off (admin.listen)")

// FromConfig is how to reach the router that runs with cfg, read the way
// the router reads it: the admin API's URL (admin.listen; https with
// admin.tls; a listen on every interface is reached on loopback) and
// Options holding its token — admin.token, admin.token_file, or else the
// token the router generated on its first start (config's
// GeneratedTokenPath) — and, with TLS, the router's own certificate as
// CAFile. The caller adds Timeout and Trace, and may replace any of it.
func FromConfig(cfg *config.Config) (string, Options, error) {
	if cfg.AdminOff() {
		return "", Options{}, ErrAdminOff
	}
	host, port, err := net.SplitHostPort(cfg.Admin.Listen)
	if err != nil {
		return "", Options{}, fmt.Errorf("adminclient: admin.listen %q: %w", cfg.Admin.Listen, err)
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if err == nil && ip.Is6() {
			host = "::1"
		}
	}
	var o Options
	scheme := "http"
	if cfg.Admin.TLS.CertFile != "" {
		scheme, o.CAFile = "https", cfg.Admin.TLS.CertFile
	}
	if o.Token, err = cfg.AdminToken(); err != nil {
		return "", Options{}, fmt.Errorf("adminclient: %w", err)
	}
	if o.Token == "" {
		path := cfg.GeneratedTokenPath()
		if o.Token, err = config.ReadTokenFile(path); errors.Is(err, fs.ErrNotExist) {
			return "", Options{}, fmt.Errorf("adminclient: no admin token at %s yet: the router writes it there when it starts", path)
		} else if err != nil {
			return "", Options{}, fmt.Errorf("adminclient: the router's generated admin token: %w", err)
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port), o, nil
}
