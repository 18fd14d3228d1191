package router

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/router/routertest"
)

// send is one raw request to the harness's server, as a browser or an
// attacker would write it.
func (h *adminHarness) send(method, path string, header map[string]string, host string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(`{"kind":"queue","dest":"b","src":"a","exchange":"amq.direct","queue":"orders"}`))
	if err != nil {
		h.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, string(body)
}

// TestAdminRefusesBrowserAttacks: the requests a web page can make a
// browser send to the loopback listener — a text/plain POST from another
// origin (CSRF), any request through a rebinding DNS name — are refused
// and change nothing, even with the token (as if the browser held it).
func TestAdminRefusesBrowserAttacks(t *testing.T) {
	h := startAdmin(t)
	bearer := "Bearer " + testToken
	for _, c := range []struct {
		name, method, path, host string
		header                   map[string]string
		status                   int
	}{
		{"CSRF: text/plain POST from evil.example", "POST", "/api/v1/routes", "",
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Authorization": bearer}, 403},
		{"CSRF: flush from evil.example", "POST", "/api/v1/routes/flush", "",
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Authorization": bearer}, 403},
		{"text/plain POST", "POST", "/api/v1/routes", "",
			map[string]string{"Content-Type": "text/plain", "Authorization": bearer}, 415},
		{"DNS rebinding: POST", "POST", "/api/v1/routes", "evil.example:9595",
			map[string]string{"Content-Type": "application/json", "Authorization": bearer}, 403},
		{"DNS rebinding: read", "GET", "/api/v1/routes", "evil.example:9595",
			map[string]string{"Authorization": bearer}, 403},
	} {
		resp, body := h.send(c.method, c.path, c.header, c.host)
		if resp.StatusCode != c.status || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.status)
		}
	}
	if n := len(h.svc.Routes()); n != 0 {
		t.Fatalf("%d routes added by refused requests", n)
	}
	// What the CLI sends still works.
	if resp, body := h.send("POST", "/api/v1/routes", map[string]string{"Content-Type": "application/json", "Authorization": bearer}, ""); resp.StatusCode != 201 {
		t.Fatalf("a proper add: %d %s", resp.StatusCode, body)
	}
}

// TestAdminThrottlesOverHTTP: wrong tokens in a row from one address get
// 429 with Retry-After, the right token too, and the block is logged.
func TestAdminThrottlesOverHTTP(t *testing.T) {
	h := startAdmin(t)
	for range throttleMax {
		if status, out := h.do("GET", "/api/v1/routes", "guess-guess-guess-guess", nil); status != 401 {
			t.Fatalf("wrong token: %d %s", status, out)
		}
	}
	resp, body := h.send("GET", "/api/v1/routes", map[string]string{"Authorization": "Bearer " + testToken}, "")
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || err != nil || ra < 1 || ra > int(throttleBlock.Seconds()) || !strings.Contains(body, "too many wrong admin tokens from 127.0.0.1") {
		t.Fatalf("after %d wrong tokens: %d Retry-After %q %s", throttleMax, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if status, _ := h.do("GET", "/healthz", "", nil); status != 200 {
		t.Fatalf("healthz while turned away: %d", status)
	}
	if log := h.log.String(); !strings.Contains(log, "turned away after too many wrong tokens") || strings.Contains(log, testToken) {
		t.Fatalf("block not logged, or the token logged:\n%s", log)
	}
}

// TestAdminStartRefusesUnsafeOptions: the server itself refuses to serve
// without a token, with a short one, or beyond loopback in clear.
func TestAdminStartRefusesUnsafeOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		o    AdminOptions
		want string
	}{
		{"no token", AdminOptions{Listen: "127.0.0.1:0"}, "admin API: no token"},
		{"one-character token", AdminOptions{Listen: "127.0.0.1:0", Token: "x"}, "admin API: token: weak admin token: 1 bytes, want at least 16"},
		{"every interface in clear", AdminOptions{Listen: "0.0.0.0:0", Token: testToken}, "admin API: 0.0.0.0:0 is reachable from other hosts and would carry the token in clear"},
		{"a missing certificate", AdminOptions{Listen: "127.0.0.1:0", Token: testToken, CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"},
			"admin API: TLS certificate /nonexistent/c.pem, key /nonexistent/k.pem: open /nonexistent/c.pem: no such file or directory"},
	} {
		s := NewAdminServer(newFakeService(), c.o)
		err := s.Start()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if s.Addr() != "" {
			t.Errorf("%s: listening on %s", c.name, s.Addr())
		}
	}
}

// TestAdminTLS: with a certificate and key the API is HTTPS only; a client
// trusting the certificate gets in with the token.
func TestAdminTLS(t *testing.T) {
	certFile, keyFile, err := routertest.WriteSelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := startAdmin(t, func(o *AdminOptions) { o.CertFile, o.KeyFile = certFile, keyFile; o.Log = zerolog.Nop() })
	if !strings.HasPrefix(h.base, "https://127.0.0.1:") {
		t.Fatalf("base %s", h.base)
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := h.hc.Transport.(*http.Transport)
	tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	h.expect("GET", "/api/v1/routes", nil, http.StatusOK, "[]")
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated)
	h.expect("GET", "/console/", nil, http.StatusOK, "<title>fedrouter console</title>") // the web console: same port, same TLS
	// Plain HTTP to the TLS port gets nowhere near the API.
	plain := &http.Transport{}
	defer plain.CloseIdleConnections()
	resp, err := (&http.Client{Transport: plain}).Get("http://" + h.srv.Addr() + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read to the end
		if resp.StatusCode == 200 {
			t.Fatalf("plain HTTP served: %s", body)
		}
	}
}
