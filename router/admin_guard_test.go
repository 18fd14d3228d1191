package router

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestGuardTable: each request a browser page, a rebinding DNS name or a
// guesser can send, and the gate's answer. Every refusal here was served
// before the gate (a text/plain POST from Origin evil.example got 201).
func TestGuardTable(t *testing.T) {
	g := newGuard(testToken, "127.0.0.1:9595", []string{"router1.example.com"}, zerolog.Nop())
	type req struct {
		method, path, host, token string
		header                    map[string]string
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"Content-Type": "application/json"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const local = "127.0.0.1:9595"
	cases := []struct {
		name   string
		req    req
		status int    // 0: let through
		want   string // in the refusal
	}{
		{"the CLI", req{"GET", "/api/v1/routes", local, testToken, nil}, 0, ""},
		{"a write from the CLI", req{"POST", "/api/v1/routes", local, testToken, jsonCT}, 0, ""},
		{"json with a charset", req{"POST", "/api/v1/routes", local, testToken, with("Content-Type", "application/json; charset=utf-8")}, 0, ""},
		{"localhost", req{"GET", "/api/v1/routes", "localhost:9595", testToken, nil}, 0, ""},
		{"::1", req{"GET", "/api/v1/routes", "[::1]:9595", testToken, nil}, 0, ""},
		{"another IP address", req{"GET", "/api/v1/routes", "10.1.2.3:9595", testToken, nil}, 0, ""},
		{"a configured name", req{"GET", "/api/v1/routes", "router1.example.com:9595", testToken, nil}, 0, ""},
		{"a configured name, any case, trailing dot", req{"GET", "/api/v1/routes", "ROUTER1.Example.com.", testToken, nil}, 0, ""},
		{"same origin", req{"POST", "/api/v1/routes", local, testToken, with("Origin", "http://127.0.0.1:9595")}, 0, ""},
		{"a user typing the URL", req{"GET", "/metrics", local, testToken, map[string]string{"Sec-Fetch-Site": "none"}}, 0, ""},
		{"lower-case bearer", req{"GET", "/api/v1/routes", local, "", map[string]string{"Authorization": "bearer " + testToken}}, 0, ""},

		{"DNS rebinding", req{"POST", "/api/v1/routes/flush", "evil.example:9595", testToken, jsonCT}, 403, `Host "evil.example:9595" is not a name of this router`},
		{"rebinding to a name like ours", req{"GET", "/api/v1/routes", "router1.example.com.evil.example", testToken, nil}, 403, "not a name of this router"},
		{"no Host", req{"GET", "/api/v1/routes", "", testToken, nil}, 403, `Host ""`},
		{"a page's text/plain POST", req{"POST", "/api/v1/routes", local, testToken, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}}, 403, `cross-origin request refused (Origin "http://evil.example")`},
		{"a foreign Origin with json", req{"POST", "/api/v1/routes/flush", local, testToken, with("Origin", "http://evil.example")}, 403, "cross-origin request refused"},
		{"Origin null", req{"POST", "/api/v1/routes/flush", local, testToken, with("Origin", "null")}, 403, "cross-origin request refused"},
		{"Origin on another port of ours", req{"POST", "/api/v1/routes/flush", local, testToken, with("Origin", "http://127.0.0.1:8080")}, 403, "cross-origin request refused"},
		{"a cross-site read", req{"GET", "/api/v1/routes", local, testToken, map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-site request refused (Sec-Fetch-Site: cross-site)"},
		{"text/plain without Origin", req{"POST", "/api/v1/routes", local, testToken, map[string]string{"Content-Type": "text/plain"}}, 415, `POST needs Content-Type: application/json (got "text/plain")`},
		{"a form", req{"POST", "/api/v1/routes/flush", local, testToken, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, "needs Content-Type: application/json"},
		{"a write without Content-Type", req{"DELETE", "/api/v1/routes/abc", local, testToken, nil}, 415, `DELETE needs Content-Type: application/json (got "")`},
		{"no token", req{"GET", "/api/v1/routes", local, "", nil}, 401, "missing admin token"},
		{"a prefix of the token", req{"GET", "/api/v1/routes", local, testToken[:16], nil}, 401, "wrong admin token"},
		{"the token and more", req{"GET", "/api/v1/routes", local, testToken + "x", nil}, 401, "wrong admin token"},
		{"basic auth", req{"GET", "/metrics", local, "", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}}, 401, "missing admin token"},
		{"healthz needs no token", req{"GET", "/healthz", local, "", nil}, 0, ""},
		{"the console's page needs no token", req{"GET", "/console/", local, "", nil}, 0, ""},
		{"the console's script needs no token", req{"GET", "/console/app.js", local, "", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + local}}, 0, ""},
		{"a link from another site opens the console", req{"GET", "/console/", local, "", map[string]string{"Sec-Fetch-Site": "cross-site"}}, 0, ""},
		{"/ leads to the console", req{"GET", "/", local, "", nil}, 0, ""},
		{"the console's fetch", req{"GET", "/api/v1/routes", local, testToken, map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": "http://" + local}}, 0, ""},
		{"the console's fetch without the token", req{"GET", "/api/v1/routes", local, "", map[string]string{"Sec-Fetch-Site": "same-origin"}}, 401, "missing admin token"},
		{"another site's fetch with the token", req{"GET", "/api/v1/topology", local, testToken, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}}, 403, "cross-origin request refused"},
		{"the console at a rebinding name", req{"GET", "/console/", "evil.example:9595", "", nil}, 403, "not a name of this router"},
		{"a write to the console's path", req{"POST", "/console/", local, "", jsonCT}, 401, "missing admin token"},
		{"the API by way of the console's path", req{"GET", "/console/../api/v1/routes", local, "", nil}, 401, "missing admin token"},
		{"healthz checks the Host", req{"GET", "/healthz", "evil.example", "", nil}, 403, "not a name of this router"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.req.method, c.req.path, nil)
			r.Host = c.req.host
			if c.req.token != "" {
				r.Header.Set("Authorization", "Bearer "+c.req.token)
			}
			for k, v := range c.req.header {
				r.Header.Set(k, v)
			}
			ref := g.admit(r, time.Unix(1000, 0))
			switch {
			case c.status == 0 && ref != nil:
				t.Fatalf("refused with %d %q", ref.status, ref.msg)
			case c.status == 0:
			case ref == nil:
				t.Fatalf("let through, want %d", c.status)
			case ref.status != c.status || !strings.Contains(ref.msg, c.want):
				t.Fatalf("refused with %d %q, want %d %q", ref.status, ref.msg, c.status, c.want)
			case strings.Contains(ref.msg, testToken[:16]):
				t.Fatalf("the refusal repeats the token: %q", ref.msg)
			}
		})
	}
}

// TestGuardThrottlesWrongTokens: after throttleMax wrong tokens a client
// gets 429 with Retry-After, its token not looked at (the right one too),
// until the block ends; other clients are not affected.
func TestGuardThrottlesWrongTokens(t *testing.T) {
	g := newGuard(testToken, "127.0.0.1:9595", nil, zerolog.Nop())
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	send := func(remote, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/api/v1/routes", nil)
		r.Host, r.RemoteAddr = "127.0.0.1:9595", remote
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const guesser, other = "192.0.2.7:40000", "192.0.2.8:40000"
	for i := range throttleMax {
		if w := send(guesser, fmt.Sprintf("guess-%d-0123456789", i)); w.Code != 401 {
			t.Fatalf("guess %d: %d, want 401", i, w.Code)
		}
		now = now.Add(time.Second)
	}
	w := send(guesser, testToken)
	if w.Code != 429 || w.Header().Get("Retry-After") != "59" || !strings.Contains(w.Body.String(), "too many wrong admin tokens from 192.0.2.7: try again in 59s") {
		t.Fatalf("after %d wrong tokens, the right one: %d Retry-After %q %s", throttleMax, w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := send("192.0.2.7:40001", testToken); w.Code != 429 {
		t.Fatalf("the same address from another port: %d, want 429", w.Code)
	}
	if w := send(other, testToken); w.Code != 200 {
		t.Fatalf("another client: %d, want 200", w.Code)
	}
	now = now.Add(throttleBlock)
	if w := send(guesser, testToken); w.Code != 200 {
		t.Fatalf("after the block: %d, want 200", w.Code)
	}
}

func TestThrottleWindowAndBound(t *testing.T) {
	th := newThrottle()
	t0 := time.Unix(1000, 0)
	// Wrong tokens spread wider than the window never block.
	for i := range 3 * throttleMax {
		if b := th.fail("a", t0.Add(time.Duration(i)*throttleWindow/time.Duration(throttleMax-1))); b != 0 {
			t.Fatalf("failure %d blocked for %s: the window should have restarted", i, b)
		}
	}
	// A bounded map: finished entries go first, then the oldest.
	th = newThrottle()
	th.capacity = 3
	th.fail("old", t0)
	th.fail("mid", t0.Add(30*time.Second))
	for range throttleMax {
		th.fail("blocked", t0.Add(40*time.Second))
	}
	later := t0.Add(throttleWindow + 10*time.Second) // "old" has finished
	th.fail("new1", later)
	if th.size() != 3 || waitOf(th, "blocked", later) == 0 {
		t.Fatalf("after new1: %d clients, blocked waits %s", th.size(), waitOf(th, "blocked", later))
	}
	th.fail("new2", later) // none finished ("mid" counts until t0+90s): the oldest, "mid", goes
	th.mu.Lock()
	_, midKept := th.clients["mid"]
	th.mu.Unlock()
	if th.size() != 3 || midKept || waitOf(th, "blocked", later) == 0 {
		t.Fatalf("after new2: %d clients, mid kept %v", th.size(), midKept)
	}
}

func TestClientKey(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.1:5":              "192.0.2.1",
		"[::ffff:192.0.2.1]:5":     "192.0.2.1",
		"[2001:db8:1:2:3::4]:5":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::9]:6": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:7":         "fe80::/64",
		"not an address":           "not an address",
	} {
		if got := clientKey(addr); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", addr, got, want)
		}
	}
}
