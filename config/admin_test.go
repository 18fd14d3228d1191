package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAdminConfigRules: each unsafe admin section is refused at
// check-config, with the whole problem list, at the admin line.
func TestAdminConfigRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty", "")
	blank := write("blank", " \n\n")
	short := write("short", "abc\n")
	junkCert, junkKey := write("cert.pem", "not a cert"), write("key.pem", "not a key")
	const tok = "0123456789abcdef"
	cases := []struct {
		name  string
		admin []string
		want  []string
	}{
		{"one-character token", []string{"admin: {token: x}"},
			[]string{`f.yaml:5: admin.token: weak admin token: 1 bytes, want at least 16 (e.g. head -c 32 /dev/urandom | base64)`}},
		{"15 bytes", []string{"admin: {token: 0123456789abcde}"},
			[]string{`f.yaml:5: admin.token: weak admin token: 15 bytes, want at least 16 (e.g. head -c 32 /dev/urandom | base64)`}},
		{"white space in the token", []string{"admin: {token: '01234567 89abcdef'}"},
			[]string{`f.yaml:5: admin.token: weak admin token: white space or a control character at byte 8`}},
		{"empty token file", []string{"admin: {token_file: " + empty + "}"},
			[]string{`f.yaml:5: admin.token_file: ` + empty + `: weak admin token: 0 bytes, want at least 16 (e.g. head -c 32 /dev/urandom | base64)`}},
		{"blank token file", []string{"admin: {token_file: " + blank + "}"},
			[]string{`f.yaml:5: admin.token_file: ` + blank + `: weak admin token: 0 bytes, want at least 16 (e.g. head -c 32 /dev/urandom | base64)`}},
		{"short token file", []string{"admin: {token_file: " + short + "}"},
			[]string{`f.yaml:5: admin.token_file: ` + short + `: weak admin token: 3 bytes, want at least 16 (e.g. head -c 32 /dev/urandom | base64)`}},
		{"every interface without a token", []string{"admin: {listen: '0.0.0.0:9595'}"},
			[]string{`f.yaml:5: admin.listen "0.0.0.0:9595" is reachable from other hosts: set admin.token_file (or token); a token is generated only for a loopback listen`,
				`f.yaml:5: admin.listen "0.0.0.0:9595" is reachable from other hosts and would carry the token in clear: set admin.tls (cert_file, key_file), or allow_plaintext: true behind a TLS proxy`}},
		{"no host, a token, no TLS", []string{"admin: {listen: ':9595', token: " + tok + "}"},
			[]string{`f.yaml:5: admin.listen ":9595" is reachable from other hosts and would carry the token in clear: set admin.tls (cert_file, key_file), or allow_plaintext: true behind a TLS proxy`}},
		{"a name without a token", []string{"admin: {listen: 'router1.example.com:9595', allow_plaintext: true}"},
			[]string{`f.yaml:5: admin.listen "router1.example.com:9595" is reachable from other hosts: set admin.token_file (or token); a token is generated only for a loopback listen`}},
		{"cert without key", []string{"admin: {tls: {cert_file: " + junkCert + "}}"},
			[]string{`f.yaml:5: admin.tls: cert_file and key_file go together`}},
		{"cert and key that are not PEM", []string{"admin: {tls: {cert_file: " + junkCert + ", key_file: " + junkKey + "}}"},
			[]string{`f.yaml:5: admin.tls: tls: failed to find any PEM data in certificate input`}},
		{"names with a port and a scheme", []string{"admin: {names: ['r1.example.com:9595', 'https://r1', 'r1.example.com']}"},
			[]string{`f.yaml:5: admin.names: "r1.example.com:9595": want a host name (no port, no scheme)`,
				`f.yaml:5: admin.names: "https://r1": want a host name (no port, no scheme)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(routeConfig(c.admin...)))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error", err)
			}
			if !slices.Equal(ce.Problems, c.want) {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(ce.Problems, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// TestAdminConfigAccepted: what an operator may choose.
func TestAdminConfigAccepted(t *testing.T) {
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, admin := range []string{
		"admin: {listen: '127.0.0.1:9595'}", // loopback: the router generates the token
		"admin: {listen: 'localhost:9595'}", // localhost is loopback
		"admin: {listen: '[::1]:9595'}",     // so is ::1
		"admin: {listen: off, token: x}",    // off: nothing else is judged
		"admin: {listen: '0.0.0.0:9595', token_file: '" + tf + "', allow_plaintext: true}",
		"admin: {listen: '0.0.0.0:9595', token_file: /nonexistent/token, allow_plaintext: true}", // judged at start
		"admin: {tls: {cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem}}",            // judged at start
		"admin: {names: [r1.example.com, r1]}",
	} {
		if _, err := Parse("f.yaml", []byte(routeConfig(admin))); err != nil {
			t.Errorf("%s: %v", admin, err)
		}
	}
}

// TestAdminTokenFileAtStart: the router's read of token_file applies the
// check-config rules, and an empty file is an error, not "no token".
func TestAdminTokenFileAtStart(t *testing.T) {
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("f.yaml", []byte(routeConfig("admin: {token_file: '"+tf+"'}")))
	if err != nil {
		t.Fatal(err)
	}
	// Emptied after check-config, before the start.
	if err := os.WriteFile(tf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.AdminToken()
	if !errors.Is(err, ErrWeakToken) || tok != "" || !strings.Contains(err.Error(), "config: admin.token_file: "+tf+": weak admin token: 0 bytes") {
		t.Fatalf("empty token_file at start: %q, %v", tok, err)
	}
	if err := os.WriteFile(tf, []byte(strings.Repeat("x", maxTokenFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.AdminToken(); err == nil || !strings.Contains(err.Error(), "over 4096 bytes") {
		t.Fatalf("huge token_file: %v", err)
	}
}

func TestLoopbackListen(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:9595": true, "127.1.2.3:1": true, "localhost:9595": true, "LOCALHOST:1": true, "[::1]:9595": true,
		"0.0.0.0:9595": false, ":9595": false, "[::]:9595": false, "10.0.0.5:9595": false, "router1:9595": false,
		"localhost.evil.example:1": false, "127.0.0.1": false,
	} {
		if got := LoopbackListen(listen); got != want {
			t.Errorf("LoopbackListen(%q) = %v, want %v", listen, got, want)
		}
	}
}

func TestGeneratedTokenPath(t *testing.T) {
	for _, c := range []struct{ file, stateFile, want string }{
		{"/etc/fedrouter/router.yaml", "", "/etc/fedrouter/fedrouter-r.admin-token"},
		{"/etc/fedrouter/router.yaml", "/var/lib/fedrouter/routes.json", "/var/lib/fedrouter/fedrouter-r.admin-token"},
		{"/etc/fedrouter/router.yaml", "state/r.json", "/etc/fedrouter/state/fedrouter-r.admin-token"},
	} {
		y := routeConfig()
		if c.stateFile != "" {
			y += "state_file: " + c.stateFile + "\n"
		}
		cfg, err := Parse(c.file, []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.GeneratedTokenPath(); got != c.want {
			t.Errorf("state_file %q: %q, want %q", c.stateFile, got, c.want)
		}
	}
}
