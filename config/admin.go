package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// The admin API's rules, written once: what a token must be, which
// listen addresses need one and TLS, and where the router keeps the token
// it generates. check-config applies them (validateAdmin); the router
// (router.AdminServer.Start) and the CLI (AdminEndpoint, admin_endpoint.go) call the
// same functions.

// MinAdminTokenLen is the shortest admin token accepted, in bytes: a
// token is a password anyone who reaches the listener may guess at.
const MinAdminTokenLen = 16

// maxTokenFile bounds what is read of a token file: a token is a line.
const maxTokenFile = 4096

// ErrWeakToken: an admin token too short or holding white space or
// control characters (it travels in an HTTP header). Its text has no
// package prefix: it is wrapped by the key or the file it comes from.
var ErrWeakToken = errors.New("weak admin token")

// CheckAdminToken says what is wrong with an admin token, if anything.
// The error never holds the token.
func CheckAdminToken(token string) error {
	if len(token) < MinAdminTokenLen {
		return fmt.Errorf("%w: %d bytes, want at least %d (e.g. head -c 32 /dev/urandom | base64)", ErrWeakToken, len(token), MinAdminTokenLen)
	}
	if i := strings.IndexFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("%w: white space or a control character at byte %d", ErrWeakToken, i)
	}
	return nil
}

// AdminOff reports whether the admin API is disabled (listen "" or off).
func (c *Config) AdminOff() bool { return c.Admin.Listen == "" || c.Admin.Listen == "off" }

// LoopbackListen reports whether listen (host:port) takes connections from
// this host only: localhost or a loopback address. An empty host, 0.0.0.0,
// :: or any other name or address is reachable from elsewhere.
func LoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// AdminToken returns the configured admin token: admin.token, or what
// admin.token_file holds (white space trimmed, checked as
// CheckAdminToken). "" when neither is set: the router then uses the token
// it generates at GeneratedTokenPath.
func (c *Config) AdminToken() (string, error) {
	if c.Admin.TokenFile == "" {
		return c.Admin.Token, nil // checked by validateAdmin
	}
	tok, err := ReadTokenFile(c.Admin.TokenFile)
	if err != nil {
		return "", fmt.Errorf("config: admin.token_file: %w", err)
	}
	return tok, nil
}

// ReadTokenFile reads an admin token from path: its content, white space
// trimmed, checked as CheckAdminToken. An empty file is an error, never
// "no token".
func ReadTokenFile(path string) (string, error) {
	f, err := ownfile.OpenRegular(path) // a FIFO would hang the start
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	return ReadToken(f, path)
}

// ReadToken reads an admin token from r, the file name, as ReadTokenFile
// does: for a caller that opened the file itself to check it first.
func ReadToken(r io.Reader, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s: over %d bytes: not a token", name, maxTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	if err := CheckAdminToken(tok); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return tok, nil
}

// GeneratedTokenPath is where the router keeps the admin token it
// generates when none is configured: beside the state file, named after
// the router (fedrouter-<router_id>.admin-token), mode 0600.
func (c *Config) GeneratedTokenPath() string {
	return filepath.Join(filepath.Dir(c.StatePath()), "fedrouter-"+c.RouterID+".admin-token")
}

// MaxSocketPath is the longest Unix socket path the kernel takes
// (sun_path is 108 bytes with its terminating NUL on Linux).
const MaxSocketPath = 107

// AdminSocketPath is the Unix socket on which a single router serves its
// admin API to the local CLI, beside the state file (in the private state
// directory): fedrouter-<router_id>.admin.sock. ok is false when the
// router serves none: a cluster member (it keeps no state directory), or
// a path too long for a socket (the CLI then uses admin.listen and the
// token).
func (c *Config) AdminSocketPath() (path string, ok bool) {
	path = filepath.Join(filepath.Dir(c.StatePath()), "fedrouter-"+c.RouterID+".admin.sock")
	return path, c.Cluster == nil && !c.AdminOff() && len(path) <= MaxSocketPath
}

// hostNameRE is a DNS name as admin.names takes it: no port, no scheme.
var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\.?$`)

// validateAdmin checks the admin section: listen, token, names, TLS, and
// that a listener reachable from other hosts has a configured token and
// TLS (or allow_plaintext).
func (c *Config) validateAdmin() []string {
	var p []string
	add := func(format string, args ...any) {
		p = append(p, c.at("admin")+": "+fmt.Sprintf(format, args...))
	}
	a := c.Admin
	if c.AdminOff() {
		return nil
	}
	listenErr := checkListen(a.Listen)
	if listenErr != nil {
		add("admin.listen %q: %v", a.Listen, listenErr)
	}
	if a.Token != "" && a.TokenFile != "" {
		add("admin: give token or token_file, not both")
	}
	if a.Token != "" {
		if err := CheckAdminToken(a.Token); err != nil {
			add("admin.token: %v", err)
		}
	}
	// The CLI reading this file may not see the router's files, and
	// check-config may not be allowed to read them: judged (files.go).
	if a.TokenFile != "" {
		if _, err := ReadTokenFile(a.TokenFile); c.judged("admin.token_file", err) {
			add("admin.token_file: %v", err)
		}
	}
	for _, n := range a.Names {
		if !hostNameRE.MatchString(n) {
			add("admin.names: %q: want a host name (no port, no scheme)", n)
		}
	}
	switch t := a.TLS; {
	case (t.CertFile == "") != (t.KeyFile == ""):
		add("admin.tls: cert_file and key_file go together")
	case t.CertFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); c.judged("admin.tls", err) {
			add("admin.tls: %v", err)
		}
	}
	if listenErr == nil && !LoopbackListen(a.Listen) {
		if a.Token == "" && a.TokenFile == "" {
			add("admin.listen %q is reachable from other hosts: set admin.token_file (or token); a token is generated only for a loopback listen", a.Listen)
		}
		if a.TLS.CertFile == "" && !a.AllowPlaintext {
			add("admin.listen %q is reachable from other hosts and would carry the token in clear: set admin.tls (cert_file, key_file), or allow_plaintext: true behind a TLS proxy", a.Listen)
		}
	}
	return p
}

// checkListen is the rule of admin.listen's host:port: a port the CLI
// can find from this file, 1..65535 (port 0 would pick one at random,
// where no client reads it).
func checkListen(listen string) error {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return errors.New("want host:port (or off)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a port number 1..65535 (port 0 picks one at random, which the CLI cannot find)", port)
	}
	return nil
}
