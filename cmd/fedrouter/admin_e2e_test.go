package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/router/routertest"
)

// These run the binary with a broker that is never there: the admin API
// serves while the router retries, so no broker (and no lock) is needed.

// adminConfig writes a router configuration with the given admin section
// (and state file) into dir.
func adminConfig(t *testing.T, dir, admin string) string {
	t.Helper()
	yaml := "router_id: adm\nbrokers:\n  - {name: gone, url: 'amqp://127.0.0.1:1', profile: generic}\n" +
		"reconnect: {min: 1s, max: 2s}\nlog: {level: info, format: json}\nstate_file: state/routes.json\n" + admin + "\n"
	yaml = withAdminPort(t, yaml)
	path := filepath.Join(dir, "router.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// exitOf runs the binary to its end and returns its output and status. A
// run that does not end within 30 s (a router that started when it should
// have refused) is killed: status -1.
func exitOf(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin := binary(t) // built first: the build is not the run's to time
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestRunRefusesUnsafeAdmin: an admin API open to other hosts without a
// token, a short token and an empty token file stop check-config and
// the start (status 2, the problem named) before anything listens.
func TestRunRefusesUnsafeAdmin(t *testing.T) {
	parallelE2E(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-token")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, admin, want string }{
		{"every interface, no token", "admin: {listen: '0.0.0.0:9595'}",
			`admin.listen "0.0.0.0:9595" is reachable from other hosts: set admin.token_file (or token)`},
		{"one-character token", "admin: {token: x}", "admin.token: weak admin token: 1 bytes, want at least 16"},
		{"empty token file", "admin: {token_file: '" + empty + "'}", "admin.token_file: " + empty + ": weak admin token: 0 bytes"},
	} {
		cfg := adminConfig(t, t.TempDir(), c.admin)
		for _, args := range [][]string{{"check-config", cfg}, {"run", "--config", cfg}} {
			out, code := exitOf(t, args...)
			if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, "admin API listening") {
				t.Errorf("%s: fedrouter %s: exit %d, want 2 and %q:\n%s", c.name, args[0], code, c.want, out)
			}
		}
	}
}

// TestRunGeneratesTokenForCLI: with no token configured the router makes
// one on its first start (0600, beside the state file, its path logged and
// never the token), the CLI finds it through --config, a request without
// it or from a web page is refused, and a restart keeps it.
func TestRunGeneratesTokenForCLI(t *testing.T) {
	parallelE2E(t)
	dir := t.TempDir()
	p := startRouter(t, adminConfig(t, dir, "admin: {listen: '127.0.0.1:0'}"))
	path := filepath.Join(dir, "state", "fedrouter-adm.admin-token")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated token file %s: %v %v, want mode 0600", path, fi, err)
	}
	tok, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	log := p.out.String()
	if !strings.Contains(log, `"token_file":"`+path+`"`) || !strings.Contains(log, "admin API token generated") || strings.Contains(log, token) {
		t.Fatalf("start log: the path not given, or the token shown:\n%s", log)
	}
	if out, code := p.cli("broker", "list"); code != 0 || !strings.Contains(out, "gone") {
		t.Fatalf("CLI with FEDROUTER_CONFIG: exit %d:\n%s", code, out)
	}
	cmd := exec.Command(binary(t), "broker", "list", "--router", p.admin)
	cmd.Env = append(os.Environ(), "FEDROUTER_CONFIG=", "FEDROUTER_TOKEN=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "missing admin token") || !strings.Contains(string(out), "--config") {
		t.Fatalf("CLI without the token: %v:\n%s", err, out)
	}
	// A web page's form-free POST: refused, though the router has a token
	// the page does not know anyway.
	req, err := http.NewRequest("POST", p.admin+"/api/v1/routes/flush", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Authorization", "Bearer "+token)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != 403 {
		t.Fatalf("cross-origin text/plain flush: %d, want 403", resp.StatusCode)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	p = startRouter(t, p.config)
	if again, err := os.ReadFile(path); err != nil || string(again) != string(tok) || !strings.Contains(p.out.String(), "generated at an earlier start") {
		t.Fatalf("restart: token kept %v (%v):\n%s", string(again) == string(tok), err, p.out.String())
	}
	if out, code := p.cli("route", "list"); code != 0 {
		t.Fatalf("CLI after the restart: exit %d:\n%s", code, out)
	}
}

// TestRunServesTLS: admin.tls serves the API over HTTPS from the
// certificate and key files; the CLI, given the router's file, trusts its
// certificate and finds its token file.
func TestRunServesTLS(t *testing.T) {
	parallelE2E(t)
	dir := t.TempDir()
	certFile, keyFile, err := routertest.WriteSelfSigned(dir)
	if err != nil {
		t.Fatal(err)
	}
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte("tls-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, adminConfig(t, dir, "admin: {listen: '127.0.0.1:0', token_file: '"+tf+"', tls: {cert_file: '"+certFile+"', key_file: '"+keyFile+"'}}"))
	if !strings.HasPrefix(p.admin, "https://127.0.0.1:") {
		t.Fatalf("admin API at %s, want https", p.admin)
	}
	if out, code := p.cli("broker", "list"); code != 0 || !strings.Contains(out, "gone") {
		t.Fatalf("CLI over TLS: exit %d:\n%s", code, out)
	}
	// Without --config nothing says to trust the certificate.
	cmd := exec.Command(binary(t), "broker", "list", "--router", p.admin, "--token-file", tf)
	cmd.Env = append(os.Environ(), "FEDROUTER_CONFIG=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "certificate") {
		t.Fatalf("CLI without the CA: %v:\n%s", err, out)
	}
	cmd = exec.Command(binary(t), "broker", "list", "--router", p.admin, "--token-file", tf, "--ca-file", certFile)
	cmd.Env = append(os.Environ(), "FEDROUTER_CONFIG=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CLI with --ca-file and --token-file: %v:\n%s", err, out)
	}
}
