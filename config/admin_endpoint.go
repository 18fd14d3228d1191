package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
)

// ErrAdminOff: the configuration turns the admin API off.
var ErrAdminOff = errors.New("config: the admin API is off (admin.listen)")

// AdminEndpoint is how a client reaches the admin API of the router that
// runs with a configuration: the API's base URL, the token, and, with
// TLS, the router's own certificate to trust. The CLI, fedbench and
// fedchaos pass it to adminclient (which does not import config: a client
// of the API needs none of what the router is built on).
type AdminEndpoint struct {
	URL    string
	Token  string
	CAFile string
}

// AdminEndpoint reads the configuration the way the router reads it: the
// URL from admin.listen (https with admin.tls; a listen on every
// interface is reached on loopback), the token from admin.token,
// admin.token_file, or else the one the router generated on its first
// start (GeneratedTokenPath).
func (c *Config) AdminEndpoint() (AdminEndpoint, error) {
	if c.AdminOff() {
		return AdminEndpoint{}, ErrAdminOff
	}
	host, port, err := net.SplitHostPort(c.Admin.Listen)
	if err != nil {
		return AdminEndpoint{}, fmt.Errorf("config: admin.listen %q: %w", c.Admin.Listen, err)
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if err == nil && ip.Is6() {
			host = "::1"
		}
	}
	var e AdminEndpoint
	scheme := "http"
	if c.Admin.TLS.CertFile != "" {
		scheme, e.CAFile = "https", c.Admin.TLS.CertFile
	}
	if e.Token, err = c.AdminToken(); err != nil {
		return AdminEndpoint{}, fmt.Errorf("config: %w", err)
	}
	if e.Token == "" {
		path := c.GeneratedTokenPath()
		if e.Token, err = ReadTokenFile(path); errors.Is(err, fs.ErrNotExist) {
			return AdminEndpoint{}, fmt.Errorf("config: no admin token at %s yet: the router writes it there when it starts", path)
		} else if err != nil {
			return AdminEndpoint{}, fmt.Errorf("config: the router's generated admin token: %w", err)
		}
	}
	e.URL = scheme + "://" + net.JoinHostPort(host, port)
	return e, nil
}
