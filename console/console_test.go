package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/console/consoletest"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

const token = "console-test-token-0123456789"

// network is what the fake router reports: paris-1 attached to paris and
// london, london-1 (heard from) to london and tokyo, whose link is up
// or not.
func network(tokyoUp bool) *topology.Snapshot {
	tokyo := "down"
	if tokyoUp {
		tokyo = "up"
	}
	return &topology.Snapshot{Router: "paris-1", Radius: 2,
		Routers: []topology.RouterView{{Router: "paris-1", Self: true}, {Router: "london-1"}},
		Brokers: []topology.BrokerView{
			{Name: "london", Routers: []topology.Attachment{{Router: "paris-1", State: "Operational"}, {Router: "london-1", State: "Operational"}}},
			{Name: "paris", Routers: []topology.Attachment{{Router: "paris-1", State: "Operational"}}},
			{Name: "tokyo", Routers: []topology.Attachment{{Router: "london-1", State: "Operational"}}},
		},
		Links: []topology.LinkView{
			{From: "paris", To: "london", Cost: 1, State: "up", Router: "paris-1"},
			{From: "london", To: "paris", Cost: 1, State: "up", Router: "paris-1"},
			{From: "london", To: "tokyo", Cost: 3, State: tokyo, Router: "london-1"},
		},
		Routes: []topology.BrokerRoutes{{Broker: "paris", Routes: []topology.RouteView{
			{Dest: "london", NextHop: "london", Cost: 1, Hops: 1}, {Dest: "tokyo", NextHop: "london", Cost: 4, Hops: 2}}}},
	}
}

// fake is a router attached to paris and london, with a route to each of
// london and tokyo.
func fake(t *testing.T) *routertest.Service {
	t.Helper()
	since := time.Now().Add(-3 * time.Minute)
	svc := routertest.New(routertest.Options{RouterID: "paris-1", Known: []string{"paris", "london", "tokyo"},
		Added: routes.Status{State: routes.StateWaiting},
		Brokers: []amqp.Status{
			{Broker: "london", State: amqp.Operational, Since: since, URL: "amqp://london:5672", Generation: 1},
			{Broker: "paris", State: amqp.Operational, Since: since, URL: "amqp://paris:5672", Generation: 1},
		}})
	svc.SetTopology(network(true))
	svc.AddConfig(routes.Spec{Kind: routes.KindQueue, Src: "paris", Dest: "london", Exchange: "amq.direct", Queue: "orders"},
		routes.Counters{Forwarded: 1234, InFlight: 7})
	if _, err := svc.AddRoute(context.Background(), routes.Spec{Kind: routes.KindQueue, Src: "paris", Dest: "tokyo", Exchange: "amq.direct", Queue: "to-tokyo"}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// serve starts the admin API over svc and returns its URL.
func serve(t *testing.T, svc router.Service) string {
	t.Helper()
	url, _ := serveStop(t, svc)
	return url
}

// serveStop is serve, with a function that stops the server.
func serveStop(t *testing.T, svc router.Service) (string, func()) {
	t.Helper()
	srv := router.NewAdminServer(svc, router.AdminOptions{Listen: "127.0.0.1:0", Token: token, Log: zerolog.Nop()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop) // a second Close is a no-op
	return "http://" + srv.Addr(), stop
}

func fetch(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }() // read to the end below; nothing to learn from closing
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

var (
	importRE = regexp.MustCompile(`from "\./([a-z]+\.js)"`)
	srcRE    = regexp.MustCompile(`(?:src|href)="([a-z]+\.(?:js|css))"`)
)

// The page and every file it loads are served without a token, with the
// policy headers, and hold no inline script or style; the API behind
// them still wants the token and is never cached.
func TestFilesServedWithPolicy(t *testing.T) {
	url := serve(t, fake(t))
	res, page := fetch(t, url+console.Prefix, nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %d %s", console.Prefix, res.StatusCode, res.Header.Get("Content-Type"))
	}
	for k, want := range map[string]string{"Content-Security-Policy": console.CSP, "X-Content-Type-Options": "nosniff",
		"X-Frame-Options": "DENY", "Cache-Control": "no-cache", "Cross-Origin-Resource-Policy": "same-origin"} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if regexp.MustCompile(`<script(?:\s+type="module")?>`).MatchString(page) || strings.Contains(page, " style=") || strings.Contains(page, "on"+"click=") {
		t.Errorf("index.html has inline script or style:\n%s", page)
	}
	// Every file the page names, and every module those import, is served.
	queue, seen := []string{}, map[string]bool{}
	for _, m := range srcRE.FindAllStringSubmatch(page, -1) {
		queue = append(queue, m[1])
	}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if seen[f] {
			continue
		}
		seen[f] = true
		res, body := fetch(t, url+console.Prefix+f, nil)
		ct := res.Header.Get("Content-Type")
		if res.StatusCode != 200 || !(strings.HasPrefix(ct, "text/javascript") || strings.HasPrefix(ct, "text/css")) {
			t.Errorf("GET %s: %d %s", f, res.StatusCode, ct)
		}
		for _, m := range importRE.FindAllStringSubmatch(body, -1) {
			queue = append(queue, m[1])
		}
	}
	for _, f := range []string{"app.js", "api.js", "graph.js", "tables.js", "dom.js", "console.css"} {
		if !seen[f] {
			t.Errorf("%s is not loaded by the page (loaded: %v)", f, seen)
		}
	}

	for path, want := range map[string]int{"/": http.StatusFound, "/console": http.StatusTemporaryRedirect,
		"/console/nothing.js": http.StatusNotFound, "/console/js/": http.StatusNotFound} {
		if res, _ := fetch(t, url+path, nil); res.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, res.StatusCode, want)
		}
	}
	if res, _ := fetch(t, url+"/", nil); res.Header.Get("Location") != console.Prefix {
		t.Errorf("GET /: Location %q", res.Header.Get("Location"))
	}

	// The page's own fetch passes; the same from another site does not,
	// token or not; nothing the API answers may be stored.
	auth := "Bearer " + token
	sameOrigin := map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": url}
	res, _ = fetch(t, url+"/api/v1/routes", sameOrigin)
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page's fetch: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	for name, h := range map[string]map[string]string{
		"cross-site":           {"Authorization": auth, "Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
		"same-site":            {"Authorization": auth, "Sec-Fetch-Site": "same-site"},
		"another origin":       {"Authorization": auth, "Origin": "http://evil.example"},
		"another port of ours": {"Authorization": auth, "Origin": strings.Replace(url, "127.0.0.1", "localhost", 1)},
	} {
		if res, body := fetch(t, url+"/api/v1/routes", h); res.StatusCode != http.StatusForbidden || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s fetch: %d %q, want 403 not stored", name, res.StatusCode, body)
		}
	}
	// A link from another site opens the page (its files hold no data).
	if res, _ := fetch(t, url+console.Prefix, map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}); res.StatusCode != 200 {
		t.Errorf("navigation from another site: %d", res.StatusCode)
	}
}

func TestOpen(t *testing.T) {
	for _, c := range []struct {
		method, path string
		open         bool
	}{
		{"GET", "/", true}, {"GET", "/console", true}, {"GET", "/console/", true}, {"HEAD", "/console/app.js", true},
		{"POST", "/console/", false}, {"GET", "/console/../api/v1/routes", false}, {"GET", "/console/./app.js", false},
		{"GET", "/console//app.js", false}, {"GET", "/api/v1/routes", false}, {"GET", "/consoles", false}, {"GET", "/metrics", false},
	} {
		r, err := http.NewRequest(c.method, "http://127.0.0.1:9595", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.URL.Path = c.path
		if got := console.Open(r); got != c.open {
			t.Errorf("%s %s: open %v, want %v", c.method, c.path, got, c.open)
		}
	}
}

// states reads what the page draws: each link's and route's state.
func states(p *consoletest.Page) (links, rows map[string]string, err error) {
	if links, err = p.Attrs("#graph [data-link]", "data-link", "data-state"); err != nil {
		return nil, nil, err
	}
	rows, err = p.Attrs("#routes [data-route]", "data-route", "data-state")
	return links, rows, err
}

func visible(p *consoletest.Page, id string) bool {
	var v bool
	p.Eval(fmt.Sprintf(`!document.getElementById(%q).hidden`, id), &v)
	return v
}

// In a real browser: a wrong token shows the error and no data; the
// right one shows the graph, the routes and the brokers, and a link
// coming up is drawn up at the next refresh.
func TestBrowserLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	svc := fake(t)
	url, stop := serveStop(t, svc)
	p := consoletest.Open(t, url+"/") // / redirects to the console
	p.WaitVisible("login-form")

	p.Login("not-the-token-0123456789")
	var msg string
	p.Poll(10*time.Second, "the wrong token's error", func() error {
		p.Eval(`document.getElementById("login-error").hidden ? "" : document.getElementById("login-error").textContent`, &msg)
		if !strings.Contains(msg, "Wrong token") {
			return fmt.Errorf("error shown: %q", msg)
		}
		return nil
	})
	links, rows, err := states(p)
	if err != nil {
		t.Fatal(err)
	}
	var stored, where, text string
	p.Eval(`sessionStorage.getItem("fedrouter.admin-token") || ""`, &stored)
	p.Eval(`location.href`, &where)
	p.Eval(`document.body.innerText`, &text)
	if visible(p, "console") || len(links) > 0 || len(rows) > 0 || stored != "" || strings.Contains(where, "token") || strings.Contains(text, "london") {
		t.Fatalf("after a wrong token: console shown %v, links %v, routes %v, stored %q, at %s, text:\n%s", visible(p, "console"), links, rows, stored, where, text)
	}

	// The right token: everything drawn, the down link down.
	svc.SetTopology(network(false))
	p.Login(token)
	p.Poll(10*time.Second, "the console drawn", func() error {
		links, rows, err := states(p)
		if err != nil {
			return err
		}
		want := map[string]string{"paris|london": "up", "london|paris": "up", "london|tokyo": "down"}
		if fmt.Sprint(links) != fmt.Sprint(want) || len(rows) != 2 {
			return fmt.Errorf("links %v (want %v), routes %v", links, want, rows)
		}
		return nil
	})
	hops, err := p.Attrs(`#graph [data-nexthop]`, "data-link", "data-nexthop")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hops) != "map[paris|london:]" {
		t.Errorf("next hops drawn: %v, want paris|london only (both routes leave paris through london)", hops)
	}
	p.Eval(`document.body.innerText`, &text)
	for _, want := range []string{"paris-1", "1,234", "Operational", "Waiting", "orders", "london-1", "amqp://paris:5672"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q:\n%s", want, text)
		}
	}

	// The link comes up: drawn up at a refresh (every second).
	svc.SetTopology(network(true))
	took := p.Poll(5*time.Second, "london|tokyo drawn up", func() error {
		links, _, err := states(p)
		if err != nil {
			return err
		}
		if links["london|tokyo"] != "up" {
			return fmt.Errorf("london|tokyo is %q", links["london|tokyo"])
		}
		return nil
	})
	t.Logf("a link coming up was drawn up %s later", took.Round(time.Millisecond))
	t.Logf("screenshot: %s", p.Screenshot("console-fake.png"))

	// The router goes away: the page says so and keeps the last picture.
	stop()
	p.Poll(10*time.Second, "the router's absence shown", func() error {
		var state, msg string
		p.Eval(`document.getElementById("status").dataset.state`, &state)
		p.Eval(`document.getElementById("status").textContent`, &msg)
		links, _, err := states(p)
		if err != nil {
			return err
		}
		if state != "error" || !strings.Contains(msg, "did not answer") || !strings.Contains(msg, "last good refresh") || links["london|tokyo"] != "up" {
			return fmt.Errorf("status %s %q, links %v", state, msg, links)
		}
		return nil
	})

	// Log out: the data goes with the token.
	p.Click("logout")
	p.Poll(5*time.Second, "logged out", func() error {
		links, rows, err := states(p)
		if err != nil {
			return err
		}
		if len(links) > 0 || len(rows) > 0 || visible(p, "console") {
			return fmt.Errorf("still shown: %v %v", links, rows)
		}
		return nil
	})
	if probs := p.Problems(); len(probs) > 0 {
		t.Errorf("the page reported: %s", strings.Join(probs, "\n"))
	}
}

// Five wrong tokens from one address: the sixth attempt is told to wait,
// as the API's throttle says (docs/admin-api.md).
func TestBrowserThrottled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	p := consoletest.Open(t, serve(t, fake(t))+console.Prefix)
	msg := func() string {
		var m string
		p.Eval(`document.getElementById("login-error").textContent`, &m)
		return m
	}
	for i := range 6 {
		p.Eval(`document.getElementById("login-error").textContent = ""`, new(string))
		p.Login(fmt.Sprintf("wrong-token-%d-0123456789", i))
		p.Poll(10*time.Second, fmt.Sprintf("attempt %d answered", i+1), func() error {
			if msg() == "" {
				return errors.New("no message yet")
			}
			return nil
		})
	}
	if m := msg(); !strings.Contains(m, "Too many wrong tokens") || !strings.Contains(m, "try again in 60 s") {
		t.Errorf("after six wrong tokens: %q", m)
	}
	if probs := p.Problems(); len(probs) > 0 {
		t.Errorf("the page reported: %s", strings.Join(probs, "\n"))
	}
}
