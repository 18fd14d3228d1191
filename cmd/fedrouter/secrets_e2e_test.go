package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// canary is the mark every secret of TestSecretsNeverShown carries: it
// must appear in no log line, no CLI output and no API answer.
const canary = "LeakCanary"

// TestSecretsNeverShown runs the router's fault paths with distinctive
// secrets (issue 17, finding 6) and greps everything it printed and
// answered for them: check-config on bad broker and management URLs
// holding passwords; a router (debug log) with a broker reached with a
// password from the environment, one with a wrong password in its URL,
// one at an unreachable port with credentials in the URL, a management
// API unreachable with credentials in its URL; routes added through the
// CLI and the API naming brokers by URLs with credentials, bad route
// requests, and every list, the metrics and the shutdown.
func TestSecretsNeverShown(t *testing.T) {
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	secret := func(what string) string {
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return canary + "-" + what + "-" + hex.EncodeToString(b)
	}
	user := "leak" + strings.ReplaceAll(brokertest.UniqueName(t, "u"), ".", "")
	pwGood, pwWrong, pwURL, pwMgmt := secret("good"), secret("wrong"), secret("url"), secret("mgmt")
	t.Setenv("FEDROUTER_LEAKTEST_PASSWORD", pwGood)
	t.Setenv("FEDROUTER_LEAKTEST_TOKEN", secret("token"))
	t.Setenv("FEDROUTER_LEAKTEST_SECRET", secret("topology"))
	rabbitUser(t, bs[0].MgmtURL, user, pwGood)
	var seen bytes.Buffer // everything the router and the CLI printed or answered

	// check-config on bad addresses.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	badYAML := fmt.Sprintf(`router_id: leak
brokers:
  - {name: a, url: 'amqp://%[1]s:%[2]s@127.0.0.1:notaport', profile: generic}
  - {name: b, url: 'http://%[1]s:%[2]s@127.0.0.1', profile: generic}
  - {name: c, url: 'amqp://%[1]s:%[2]s@', profile: generic}
  - {name: d, url: 'amqp://%[1]s:%[2]s@remote.example', profile: rabbitmq, require_tls: true, management: {url: 'http://%[1]s:%[2]s@remote.example:15672'}}
  - {name: e, urls: ['amqp://%[1]s:%[2]s/@x@127.0.0.1', 'amqp://%[1]s:%%zz%[2]s@h'], profile: generic}
  - {name: f, url: 'amqp://h', profile: rabbitmq, management: {url: 'ftp://%[1]s:%[2]s@h'}}
`, user, pwURL)
	if err := os.WriteFile(bad, []byte(badYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := exitOf(t, "check-config", bad)
	seen.WriteString(out)
	if code != 2 || strings.Count(out, "URL") < 6 {
		t.Fatalf("check-config of bad URLs: exit %d, want 2 and each URL named:\n%s", code, out)
	}

	// A running router on the fault paths.
	config := filepath.Join(dir, "router.yaml")
	yaml := fmt.Sprintf(`router_id: leak
brokers:
  - {name: good, url: %[1]q, profile: rabbitmq, username: %[3]s, password: '${FEDROUTER_LEAKTEST_PASSWORD}',
     management: {url: %[2]q, username: %[3]s, password: '${FEDROUTER_LEAKTEST_PASSWORD}'}}
  - {name: wrongpw, url: 'amqp://%[3]s:%[4]s@%[5]s', profile: rabbitmq, management: {url: 'http://%[3]s:%[6]s@127.0.0.1:1'}}
  - {name: gone, url: 'amqp://%[3]s:%[7]s@127.0.0.1:1', profile: generic}
reconnect: {min: 100ms, max: 1s}
admin: {listen: '127.0.0.1:0', token: '${FEDROUTER_LEAKTEST_TOKEN}'}
topology: {secret: '${FEDROUTER_LEAKTEST_SECRET}', refresh: 1s, max_age: 3s, control_address: %[8]s}
log: {level: debug, format: json}
routes:
  - {kind: queue, src: good, dest: wrongpw, exchange: amq.fanout, queue: %[9]s}
  - {kind: queue, src: gone, dest: good, exchange: amq.fanout, queue: q}
`, bs[0].URL, bs[0].MgmtURL, user, pwWrong, bs[1].Addr(), pwMgmt, pwURL, brokertest.UniqueName(t, "leakctl"), brokertest.UniqueName(t, "leakq"))
	yaml = withAdminPort(t, yaml)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = exitOf(t, "check-config", config)
	seen.WriteString(out)
	if code != 0 {
		t.Fatalf("check-config: exit %d:\n%s", code, out)
	}
	p := startRouter(t, config)
	brokertest.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		out, _ := p.cli("broker", "list")
		for _, want := range []string{"good", "wrongpw", "gone"} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("broker list:\n%s", out)
			}
		}
		// The password from the environment works; the others fail.
		if !regexp.MustCompile(`"broker":"good","state":"Operational"`).MatchString(p.out.String()) {
			return fmt.Errorf("broker good (password from the environment) not Operational yet")
		}
		for _, b := range []string{"wrongpw", "gone"} {
			if !regexp.MustCompile(`"broker":"` + b + `".*"last_error"`).MatchString(p.out.String()) {
				return fmt.Errorf("no connection failure of %s logged yet", b)
			}
		}
		return nil
	})
	for _, args := range [][]string{
		{"queue", "add", "amqp://" + user + ":" + pwURL + "@127.0.0.1:9", "good", "amq.fanout", "q"},
		{"queue", "add", "good", user + ":" + pwURL + "@127.0.0.1:9", "amq.fanout", "q"},
		{"route", "add", "good", "amqp://" + user + ":" + pwURL + "@h", "amq.fanout", "k"},
		{"queue", "add", "wrongpw", "good", "amq.fanout", brokertest.UniqueName(t, "leakq2")},
		{"queue", "add", "good", "good", "amq.fanout", "q"},
		{"broker", "list"}, {"broker", "list", "--json"}, {"route", "list"}, {"route", "list", "--json"},
		{"link", "list"}, {"link", "list", "--json"}, {"route", "map"}, {"topology"},
		{"route", "flush", "amqp://" + user + ":" + pwURL + "@127.0.0.1:9"},
	} {
		out, _ := p.cli(args...)
		seen.WriteString(out)
	}
	token := os.Getenv("FEDROUTER_LEAKTEST_TOKEN")
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/v1/brokers", ""}, {"GET", "/api/v1/routes", ""}, {"GET", "/api/v1/links", ""},
		{"GET", "/api/v1/router", ""}, {"GET", "/api/v1/topology", ""}, {"GET", "/metrics", ""}, {"GET", "/readyz", ""},
		{"POST", "/api/v1/routes", `{"kind":"queue","src":"amqp://` + user + `:` + pwURL + `@127.0.0.1:9","dest":"good","exchange":"x","queue":"q"}`},
		{"POST", "/api/v1/routes", `{"kind":"queue","src":"good","dest":"` + user + `:` + pwURL + `@h:1","exchange":"x","queue":"q"}`},
		{"POST", "/api/v1/routes", `{"kind":"queue","src":"good","dest":"amqp://` + user + `:` + pwURL + `@[::1","exchange":"x","queue":"q"}`},
		{"POST", "/api/v1/routes/delete", `{"kind":"queue","src":"amqp://` + user + `:` + pwURL + `@h","dest":"good","exchange":"x","queue":"q"}`},
	} {
		seen.WriteString(apiCall(t, p.admin, token, req.method, req.path, req.body))
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait() // its output is what is judged
	seen.WriteString(p.out.String())
	state, _ := os.ReadDir(dir)
	for _, e := range state {
		if e.Name() == "router.yaml" || e.Name() == "bad.yaml" || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			seen.Write(b)
		}
	}

	for i, line := range strings.Split(seen.String(), "\n") {
		if strings.Contains(line, canary) {
			t.Errorf("a secret shown (line %d): %s", i+1, line)
		}
	}
	if !strings.Contains(seen.String(), "xxxxx") {
		t.Errorf("nothing redacted: the fault paths were not reached")
	}
	t.Logf("%d lines judged", strings.Count(seen.String(), "\n"))
}

// rabbitUser creates a RabbitMQ user with every permission on "/" through
// the management API (as guest) and deletes it at cleanup.
func rabbitUser(t *testing.T, mgmt, user, password string) {
	t.Helper()
	call := func(method, path, body string) error {
		req, err := http.NewRequest(method, mgmt+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.SetBasicAuth("guest", "guest")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }() // read below; nothing to report
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, msg)
		}
		return nil
	}
	if err := call("PUT", "/api/users/"+user, fmt.Sprintf(`{"password":%q,"tags":""}`, password)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := call("DELETE", "/api/users/"+user, ""); err != nil {
			t.Logf("removing test user: %v", err)
		}
	})
	if err := call("PUT", "/api/permissions/%2F/"+user, `{"configure":".*","write":".*","read":".*"}`); err != nil {
		t.Fatal(err)
	}
}

// apiCall sends one request to the admin API and returns the status and
// the answer's body.
func apiCall(t *testing.T, admin, token, method, path, body string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }() // read below; nothing to report
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// The request itself holds secrets: only the answer is judged.
	return fmt.Sprintf("%s: %s\n%s\n", method, resp.Status, b)
}
