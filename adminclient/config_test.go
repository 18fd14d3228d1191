package adminclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
)

func parseConfig(t *testing.T, dir, admin string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(dir, "router.yaml"),
		[]byte("router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"+admin+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFromConfig: the CLI reaches a router from its configuration file
// alone, the generated token included.
func TestFromConfig(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte("from-the-file-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := parseConfig(t, dir, "").GeneratedTokenPath()
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
		url, o, err := FromConfig(parseConfig(t, dir, c.admin))
		if err != nil || url != c.url || o.Token != c.token || o.CAFile != c.ca {
			t.Errorf("%s: %q %+v %v; want %s, token %s, CA %q", c.admin, url, o, err, c.url, c.token, c.ca)
		}
	}
	if _, _, err := FromConfig(parseConfig(t, dir, "admin: {listen: off}")); !errors.Is(err, ErrAdminOff) {
		t.Errorf("listen off: %v", err)
	}
	empty := t.TempDir()
	want := filepath.Join(empty, "fedrouter-r1.admin-token")
	if _, _, err := FromConfig(parseConfig(t, empty, "")); err == nil || !strings.Contains(err.Error(), "no admin token at "+want+" yet") {
		t.Errorf("before the router's first start: %v", err)
	}
	if err := os.WriteFile(want, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := FromConfig(parseConfig(t, empty, "")); err == nil || !strings.Contains(err.Error(), "weak admin token: 0 bytes") {
		t.Errorf("an emptied token file: %v", err)
	}
}

// TestTLS: an https router is reached with its certificate as CAFile, and
// not without it.
func TestTLS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	certFile, keyFile, err := routertest.WriteSelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := router.NewAdminServer(routertest.New(routertest.Options{RouterID: "tls"}),
		router.AdminOptions{Listen: "127.0.0.1:0", Token: testToken, CertFile: certFile, KeyFile: keyFile, Log: zerolog.Nop()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	url := srv.Scheme() + "://" + srv.Addr()
	c, err := New(url, Options{Token: testToken, CAFile: certFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ri, err := c.Router(context.Background()); err != nil || ri.RouterID != "tls" {
		t.Fatalf("over TLS: %+v %v", ri, err)
	}
	untrusting, err := New(url, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusting.Close()
	if _, err := untrusting.Router(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	if _, err := New(url, Options{CAFile: keyFile}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a key as CA file: %v", err)
	}
}
