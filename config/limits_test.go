package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret file too short — empty above all, which would turn flooding
// off silently while multi-hop routes still expect it — is an error at
// check-config (when the file is readable there) and at start (issue 17,
// finding 7).
func TestSecretFileTooShort(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "\n", "short", strings.Repeat("s", MinSecretLen-1)} {
		f := filepath.Join(dir, "secret")
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Parse("f.yaml", []byte(routeConfig("topology: {secret_file: '"+f+"'}")))
		if err == nil || !strings.Contains(err.Error(), "f.yaml:5: topology: secret_file "+f+" holds") {
			t.Errorf("secret file %q: check-config says %v", content, err)
		}
		cfg := DefaultConfig()
		cfg.Topology.SecretFile = f
		if _, err := cfg.TopologySecret(); err == nil || !strings.Contains(err.Error(), "at least 32") {
			t.Errorf("secret file %q: at start %v", content, err)
		}
	}
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(strings.Repeat("g", MinSecretLen)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("f.yaml", []byte(routeConfig("topology: {secret_file: '"+good+"'}")))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cfg.TopologySecret(); err != nil || len(s) != MinSecretLen {
		t.Fatalf("a good secret file: %d bytes, %v", len(s), err)
	}
	// Not readable where check-config runs: judged at start only.
	if _, err := Parse("f.yaml", []byte(routeConfig("topology: {secret_file: '"+filepath.Join(dir, "absent")+"'}"))); err != nil {
		t.Errorf("an unreadable secret file at check-config: %v", err)
	}
}

// Names of any length were accepted (1 MB queue names reached brokers):
// every name a route or the file carries is at most 255 bytes, refused
// with its field named (issue 17, finding 7).
func TestLongNamesRefused(t *testing.T) {
	long := strings.Repeat("n", 256)
	cases := []struct{ yaml, want string }{
		{"routes:\n  - {kind: queue, src: a, dest: b, exchange: x, queue: " + long + "}", "f.yaml:6: route b(ex=x) <= a(queue=" + long + "): queue is 256 bytes long, at most 255"},
		{"routes:\n  - {kind: exchange, src: a, dest: b, exchange: " + long + ", key: k}", "exchange is 256 bytes long"},
		{"routes:\n  - {kind: exchange, src: a, dest: b, exchange: x, key: " + long + "}", "key is 256 bytes long"},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(routeConfig(c.yaml)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	_, err := Parse("f.yaml", []byte("router_id: "+long+"\nbrokers:\n  - {name: "+long+", url: 'amqp://h', profile: generic}\n"))
	if err == nil || !strings.Contains(err.Error(), "f.yaml:1: router_id is 256 bytes long, at most 255") ||
		!strings.Contains(err.Error(), "f.yaml:3: broker name is 256 bytes long, at most 255") {
		t.Errorf("long router_id and broker name: %v", err)
	}
	if _, err := Parse("f.yaml", []byte(routeConfig("routes:\n  - {kind: queue, src: a, dest: b, exchange: x, queue: "+long[:255]+"}"))); err != nil {
		t.Errorf("a 255-byte queue name: %v", err)
	}
}

// require_tls refuses a broker's plain amqp:// URL at check-config, with
// the line and without the password (issue 17, finding 7).
func TestRequireTLS(t *testing.T) {
	y := "router_id: r\nbrokers:\n  - {name: a, url: 'amqp://u:s3cret@h', profile: generic, require_tls: true}\n"
	_, err := Parse("f.yaml", []byte(y))
	if err == nil || !strings.Contains(err.Error(), `f.yaml:3: broker "a": URL "amqp://u:xxxxx@h": require_tls is set: use amqps://`) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("require_tls: %v", err)
	}
	y = "router_id: r\nbrokers:\n  - {name: a, url: 'amqps://u:s3cret@h', profile: generic, require_tls: true}\n"
	if _, err := Parse("f.yaml", []byte(y)); err != nil {
		t.Fatalf("require_tls with amqps: %v", err)
	}
}

// An inline secret and a secret_file obey one rule: at least MinSecretLen
// bytes (an inline one used to need 16).
func TestInlineSecretLength(t *testing.T) {
	short := strings.Repeat("s", MinSecretLen-1)
	if _, err := Parse("f.yaml", []byte(routeConfig("topology: {secret: "+short+"}"))); err == nil ||
		!strings.Contains(err.Error(), "secret is 31 bytes; a network secret needs at least 32") || strings.Contains(err.Error(), short) {
		t.Fatalf("a 31-byte inline secret: %v", err)
	}
	if _, err := Parse("f.yaml", []byte(routeConfig("topology: {secret: "+short+"s}"))); err != nil {
		t.Fatalf("a 32-byte inline secret: %v", err)
	}
}
