package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/console"
)

var (
	importRE = regexp.MustCompile(`from "\./([a-z]+\.js)"`)
	srcRE    = regexp.MustCompile(`(?:src|href)="([a-z]+\.(?:js|css))"`)
)

// The page and every file it loads are served without a token, with the
// policy headers, and hold no inline script or style; / and /console
// lead to the page; nothing else is listed.
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

}

// The page's own fetch of the API passes; the same from another site
// does not, token or not; nothing the API answers may be stored. A link
// from another site opens the page: its files hold no data.
func TestPageFetchesSameOriginOnly(t *testing.T) {
	url := serve(t, fake(t))
	auth := "Bearer " + token
	sameOrigin := map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": url}
	res, _ := fetch(t, url+"/api/v1/routes", sameOrigin)
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
