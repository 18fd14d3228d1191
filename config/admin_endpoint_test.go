package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseAdmin(t *testing.T, dir, admin string) *Config {
	t.Helper()
	cfg, err := Parse(filepath.Join(dir, "router.yaml"),
		[]byte("router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"+admin+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestAdminEndpoint: the CLI reaches a router from its configuration file
// alone, the generated token included.
func TestAdminEndpoint(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte("from-the-file-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := parseAdmin(t, dir, "").GeneratedTokenPath()
	if err := os.WriteFile(gen, []byte("generated-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		admin, url, token, ca string
	}{
		{"", "http://127.0.0.1:9595", "generated-0123456789", ""},
		{"admin: {listen: 'localhost:9000'}", "http://localhost:9000", "generated-0123456789", ""},
		{"admin: {listen: '[::1]:9000', token: inline-token-0123456}", "http://[::1]:9000", "inline-token-0123456", ""},
		{"admin: {listen: '0.0.0.0:9000', token_file: '" + tf + "', allow_plaintext: true}", "http://127.0.0.1:9000", "from-the-file-0123", ""},
		{"admin: {listen: '[::]:9000', token_file: '" + tf + "', allow_plaintext: true}", "http://[::1]:9000", "from-the-file-0123", ""},
		{"admin: {listen: ':9000', token_file: '" + tf + "', tls: {cert_file: /x/c.pem, key_file: /x/k.pem}}", "https://127.0.0.1:9000", "from-the-file-0123", "/x/c.pem"},
	} {
		e, err := parseAdmin(t, dir, c.admin).AdminEndpoint()
		if err != nil || e.URL != c.url || e.Token != c.token || e.CAFile != c.ca {
			t.Errorf("%s: %+v %v; want %s, token %s, CA %q", c.admin, e, err, c.url, c.token, c.ca)
		}
	}
	if _, err := parseAdmin(t, dir, "admin: {listen: off}").AdminEndpoint(); !errors.Is(err, ErrAdminOff) {
		t.Errorf("listen off: %v", err)
	}
	empty := t.TempDir()
	want := filepath.Join(empty, "fedrouter-r1.admin-token")
	if _, err := parseAdmin(t, empty, "").AdminEndpoint(); err == nil || !strings.Contains(err.Error(), "no admin token at "+want+" yet") {
		t.Errorf("before the router's first start: %v", err)
	}
	if err := os.WriteFile(want, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseAdmin(t, empty, "").AdminEndpoint(); err == nil || !strings.Contains(err.Error(), "weak admin token: 0 bytes") {
		t.Errorf("an emptied token file: %v", err)
	}
}
